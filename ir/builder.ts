/**
 * A small builder for kernel-IR programs: allocates typed registers and
 * collects operations into nested bodies.
 *
 * @module
 */

import type { ForOp, IfOp, Imm, Op, Operand, Reg, RegType } from "./kernel.ts";

/**
 * An immediate operand.
 *
 * @param value The value.
 * @returns The operand.
 */
export function imm(value: number): Imm {
  return { kind: "imm", value };
}

/** Builds the body of a kernel. */
export class KernelBuilder {
  readonly regs: Reg[] = [];
  #stack: Op[][] = [[]];

  /**
   * A new register.
   *
   * @param type Its type.
   * @param name A hint for readers of the IR.
   * @returns The register.
   */
  reg(type: RegType, name?: string): Reg {
    const r: Reg = name === undefined
      ? { kind: "reg", id: this.regs.length, type }
      : { kind: "reg", id: this.regs.length, type, name };
    this.regs.push(r);
    return r;
  }

  /**
   * Appends an operation to the current body.
   *
   * @param o The operation.
   */
  emit(o: Op): void {
    this.#stack[this.#stack.length - 1]!.push(o);
  }

  /**
   * Emits a loop whose body is built by `f`.
   *
   * @param iv The induction register (u32).
   * @param from Start.
   * @param to End (exclusive).
   * @param step Step.
   * @param f Builds the body.
   */
  for(iv: Reg, from: Operand, to: Operand, step: number, f: () => void): void {
    this.#stack.push([]);
    f();
    const body = this.#stack.pop()!;
    this.emit({ op: "for", iv, from, to, step, body } satisfies ForOp);
  }

  /**
   * Emits a conditional.
   *
   * @param cond The predicate.
   * @param uniform Whether the predicate is block-uniform.
   * @param then Builds the then-branch.
   * @param otherwise Builds the else-branch.
   * @param negate Branch on `!cond`.
   */
  if(cond: Reg, uniform: boolean, then: () => void, otherwise?: () => void, negate = false): void {
    this.#stack.push([]);
    then();
    const t = this.#stack.pop()!;
    this.#stack.push([]);
    otherwise?.();
    const e = this.#stack.pop()!;
    this.emit({ op: "if", cond, negate, uniform, then: t, otherwise: e } satisfies IfOp);
  }

  /**
   * Takes back an operation emitted into the current body, when what it
   * computed turned out to be unused (the caller knows nothing reads it).
   *
   * @param o The operation, as emitted.
   * @returns Whether it was found (and removed).
   */
  retract(o: Op): boolean {
    const body = this.#stack[this.#stack.length - 1]!;
    const i = body.lastIndexOf(o);
    if (i < 0) return false;
    body.splice(i, 1);
    return true;
  }

  /** The finished top-level body. */
  get body(): readonly Op[] {
    if (this.#stack.length !== 1) throw new Error("KernelBuilder: unbalanced nesting");
    return this.#stack[0]!;
  }
}
