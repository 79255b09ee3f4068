/**
 * The state of printing one entry's body, and appending its lines.
 *
 * @module
 */

import type { Kernel, KernelParam, Op } from "../../ir/kernel.ts";
import { fillAfter } from "./_operands.ts";

/** The state of printing one entry's body. */
export interface Ctx {
  readonly kernel: Kernel;
  readonly params: ReadonlyMap<string, KernelParam>;
  /** The body's text so far (every line ends in `\n`). */
  text: string;
  /** What starts the current operation's lines: the indentation and any guard. */
  pre: string;
  labels: number;
  loops: number;
  halfTmp: boolean;
  divergent: boolean;
}

export type Simple = Exclude<Op, { op: "for" | "if" }>;
/** A renderer for each operation of `ops`: what the renderer tables are typed by. */
export type Renderers<ops extends Simple["op"]> = {
  readonly [K in ops]: (o: Extract<Op, { op: K }>, cx: Ctx) => void;
};

/** Appends one instruction line: {@link Ctx.pre}, the filled template, `;`. */
export function put(cx: Ctx, tpl: string, holes: Readonly<Record<string, string>>): void {
  cx.text = fillAfter(cx.text + cx.pre, tpl, holes) + ";\n";
}

/** Appends one line without the `;` (a comment). */
export function putLine(cx: Ctx, tpl: string, holes: Readonly<Record<string, string>>): void {
  cx.text = fillAfter(cx.text + cx.pre, tpl, holes) + "\n";
}
