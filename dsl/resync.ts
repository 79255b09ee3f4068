/**
 * Recovery after a syntax error: the source is cut at every `kernel` keyword
 * (outside comments) into kernel blocks, and each block other than the one
 * that holds the error is parsed on its own, so that one kernel's syntax
 * error does not hide the other kernels (their own syntax errors, or, once
 * checked, their diagnostics). A block is parsed as the source with
 * everything before it blanked (newlines kept), so every position in its AST
 * and its diagnostics is a position in the whole source.
 *
 * A block cannot be recovered where the grammar cannot resynchronise: text
 * between a kernel's `}` and the next `kernel` that is not a kernel belongs
 * to the block before it, which fails with the first error.
 *
 * @module
 */

/** One kernel block: its start and end offsets in the source. */
export interface KernelBlock {
  readonly start: number;
  readonly end: number;
}

/**
 * The most blocks recovered: each is parsed over the source up to its end,
 * so recovery costs the source's length times the blocks. Shortcut: past
 * this many kernels, the blocks after the first error's are not recovered.
 */
export const MAX_RECOVERED_BLOCKS = 64;

/**
 * Cuts a source into blocks at each `kernel` keyword outside a comment: the
 * text before the first (comments, blank lines), then one block a kernel.
 *
 * @param text The source.
 * @returns The blocks, covering the source in order.
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { kernelBlocks } from "./resync.ts";
 * const text = "// kernel in a comment\nkernel a { }\nkernel b { }\n";
 * deepEqual(kernelBlocks(text).map((b) => text.slice(b.start, b.end)), [
 *   "// kernel in a comment\n",
 *   "kernel a { }\n",
 *   "kernel b { }\n",
 * ]);
 * ```
 */
export function kernelBlocks(text: string): KernelBlock[] {
  // The DSL has no string literals: `//` always starts a comment.
  const code = text.replace(/\/\/[^\n]*/g, (c) => " ".repeat(c.length));
  const starts = [0];
  for (const m of code.matchAll(/(?<![A-Za-z0-9_])kernel(?![A-Za-z0-9_])/g)) {
    if (m.index > 0) starts.push(m.index);
  }
  return starts.map((start, i) => ({ start, end: starts[i + 1] ?? text.length }));
}

/**
 * The block a syntax error belongs to: the one it lies in, or the one before
 * when it lies at a block's `kernel` (the block before ended too early, as
 * when its `}` is missing).
 *
 * @param blocks The blocks of the source.
 * @param failure The offset where the parser failed.
 * @returns The block's index.
 */
export function failingBlock(blocks: readonly KernelBlock[], failure: number): number {
  const i = blocks.findIndex((b) => failure > b.start && failure <= b.end);
  return i === -1 ? 0 : i;
}

/**
 * The text a block is parsed as: the source with everything outside the
 * block blanked (spaces; newlines kept), so offsets, lines and columns are
 * those of the source. Only the text before the block is kept as blanks:
 * what follows is dropped.
 *
 * @param text The source.
 * @param b The block.
 * @returns The text to parse.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { blockText } from "./resync.ts";
 * equal(blockText("ab\ncd ef", { start: 6, end: 8 }), "  \n   ef");
 * ```
 */
export function blockText(text: string, b: KernelBlock): string {
  return text.slice(0, b.start).replace(/[^\n]/g, " ") + text.slice(b.start, b.end);
}
