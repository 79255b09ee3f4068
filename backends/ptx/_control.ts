/**
 * Bodies and structured control flow of the PTX printer: `for` and `if` as
 * branches and labels around the rendered operations, and errors that name the
 * kernel and the operation.
 *
 * @module
 */

import type { ForOp, IfOp, Op, Operand } from "../../ir/kernel.ts";
import { printBody, regName } from "../../ir/print_kernel.ts";
import { OP_TEMPLATES, PtxError } from "./_tables.ts";
import { expect, guardText, immText, opd } from "./_operands.ts";
import { type Ctx, put } from "./_context.ts";
import { RENDER, render } from "./_render.ts";

/** `e` with the kernel and the operation named, when it is a {@link PtxError}. */
function locatedError(cx: Ctx, where: () => string, e: unknown): unknown {
  if (!(e instanceof PtxError)) return e;
  return new PtxError(`Kernel "${cx.kernel.name}": ${e.message}: at "${where()}"`);
}

/** Runs `f`, naming the kernel and the operation in any {@link PtxError} it throws. */
function located<T>(cx: Ctx, where: () => string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw locatedError(cx, where, e);
  }
}

/** The kernel-IR text of one simple operation (for error messages). */
function opText(o: Op): string {
  const text: string[] = [];
  printBody([o], "", text);
  return text.join(" ");
}

/** Appends the lines of `body` at `indent`, structured operations as branches and labels. */
export function emitBody(body: readonly Op[], cx: Ctx, indent: string): void {
  // No closure here captures `o`: that would allocate a context per operation.
  for (const o of body) {
    switch (o.op) {
      case "for":
        emitFor(o, cx, indent);
        break;
      case "if":
        emitIf(o, cx, indent);
        break;
      case "comment":
        cx.pre = indent;
        RENDER.comment(o, cx);
        break;
      default: {
        const g = "guard" in o ? o.guard : undefined;
        try {
          if (g !== undefined) expect("guard", "pred", g.pred);
          cx.pre = g === undefined ? indent : indent + guardText(g);
          render(o, cx);
        } catch (e) {
          throw opError(cx, o, e);
        }
      }
    }
  }
}

/** {@link locatedError} for a simple operation (out of line: a closure over `o` in
 * {@link emitBody} would allocate a context per operation). */
function opError(cx: Ctx, o: Op, e: unknown): unknown {
  return locatedError(cx, () => opText(o), e);
}

function label(cx: Ctx, n: number): void {
  cx.text += `$L_${n}:\n`;
}

function emitFor(o: ForOp, cx: Ctx, indent: string): void {
  const iv = regName(o.iv);
  const ir = (x: Operand) => (x.kind === "reg" ? regName(x) : String(x.value));
  const head = () => `for ${iv} = ${ir(o.from)} to ${ir(o.to)} step ${o.step}`;
  const [from, to, step] = located(cx, head, () => {
    expect("for", "i32", o.iv, o.from, o.to);
    if (!Number.isSafeInteger(o.step) || o.step <= 0) {
      throw new PtxError(`step ${o.step} is not a positive integer`);
    }
    return [opd(o.from, "u32"), opd(o.to, "u32"), immText(o.step, "u32")];
  });
  cx.loops++;
  const top = cx.labels++;
  const end = cx.labels++;
  cx.text += `${indent}// for ${iv} = ${from} to ${to} step ${step}\n`;
  cx.pre = indent;
  put(cx, OP_TEMPLATES.forInit, { iv, from });
  // A zero trip count skips the body; constant bounds need no run-time test.
  if (o.from.kind === "reg" || o.to.kind === "reg") {
    put(cx, OP_TEMPLATES.forEnter, { iv, to });
    put(cx, OP_TEMPLATES.forSkip, { label: `$L_${end}` });
  } else if (Number(from) >= Number(to)) {
    put(cx, OP_TEMPLATES.branch, { uni: ".uni", label: `$L_${end}` });
  }
  label(cx, top);
  emitBody(o.body, cx, indent + "  ");
  cx.pre = indent;
  put(cx, OP_TEMPLATES.forStep, { iv, step });
  put(cx, OP_TEMPLATES.forTest, { iv, to });
  put(cx, OP_TEMPLATES.forBack, { label: `$L_${top}` });
  label(cx, end);
}

function emitIf(o: IfOp, cx: Ctx, indent: string): void {
  const other = cx.labels++;
  const end = o.otherwise.length > 0 ? cx.labels++ : other;
  const uni = o.uniform ? ".uni" : "";
  const cond = `${o.negate ? "!" : ""}${regName(o.cond)}`;
  located(cx, () => `if ${cond}`, () => expect("if", "pred", o.cond));
  cx.text += `${indent}// if${o.uniform ? ".uniform" : ""} ${cond}\n`;
  // Branch around the then-part when the condition fails.
  cx.pre = indent;
  put(cx, OP_TEMPLATES.branchIf, {
    not: o.negate ? "" : "!",
    p: regName(o.cond),
    uni,
    label: `$L_${other}`,
  });
  const outer = cx.divergent;
  cx.divergent = outer || !o.uniform;
  emitBody(o.then, cx, indent + "  ");
  if (o.otherwise.length > 0) {
    cx.pre = indent;
    put(cx, OP_TEMPLATES.branch, { uni, label: `$L_${end}` });
    label(cx, other);
    cx.text += `${indent}// else\n`;
    emitBody(o.otherwise, cx, indent + "  ");
  }
  cx.divergent = outer;
  label(cx, end);
}
