/**
 * The PTX printer: kernel IR (ir/kernel.ts) to one PTX module for a target
 * of ir/target.ts (`sm_80`, `sm_86`). It adds no semantics of its own
 * (docs/ARCHITECTURE.md §1): every instruction it prints is the meaning of
 * one kernel-IR operation, as written in the tables of _tables.ts
 * (operation → PTX template), and the simulator executes the very same
 * operations.
 *
 * What the printer adds beyond the operations, all of it plumbing:
 * - the module header, the shared-memory symbol and the entry signatures;
 * - register declarations (`.reg .TYPE %prefix<N>;`, names as
 *   {@link regName} gives them, so that the PTX and the kernel-IR text agree);
 * - branches and labels for `for` and `if`, with one scratch predicate
 *   `%tp0` for loop tests (declared only where a loop exists);
 * - for `cvt` from f16/bf16 of an immediate, a `mov.b16` of the bits into a
 *   scratch `%th0` first, as ptxas takes no immediate source there.
 *
 * Malformed IR (an operation/type pair PTX has no instruction for, a vector
 * width PTX lacks, a fragment of the wrong size) throws a {@link PtxError};
 * the printer never guesses.
 *
 * @module
 */

import type { Kernel, KernelParam, Reg, RegType } from "../../ir/kernel.ts";
import { opRegs, walkOps } from "../../ir/kernel.ts";
import { regName } from "../../ir/print_kernel.ts";
import { type PtxTarget, type Target, targetInfo } from "../../ir/target.ts";
import { WGMMA_BY_NAME } from "../../ir/wgmma_table.ts";
import { OP_TEMPLATES, PtxError, REG_PTX, SMEM_SYMBOL } from "./_tables.ts";
import type { Ctx } from "./_context.ts";
import { paramSymbol } from "./_render_regs.ts";
import { TENSOR_MAP_BYTES } from "../../ir/tensor_map.ts";
import { emitBody } from "./_control.ts";

export {
  BIN_PTX,
  CVT_PTX,
  type CvtRule,
  HALF_TMP,
  type ImmType,
  LOOP_PRED,
  MAD_PTX,
  MEM_PTX,
  type MemRule,
  MMA_OPERAND_REGS,
  OP_TEMPLATES,
  PtxError,
  REG_CLASS,
  REG_PTX,
  type RegClass,
  SMEM_SYMBOL,
  SREG_PTX,
  UN_PTX,
} from "./_tables.ts";
export { immText } from "./_operands.ts";

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

const PARAM_PTX: Readonly<Record<KernelParam["kind"], readonly KernelParam["ptx"][]>> = Object
  .freeze({
    tensor: ["u64"],
    dim: ["u32"],
    stride: ["u64"],
    scalar: ["u32", "s32", "f32", "f64", "u64"],
    table: ["u64"],
    count: ["u32"],
    tensormap: ["tmap"],
  });

function regPrefix(r: Reg): string {
  return regName(r).slice(1).replace(/\d+$/, "");
}

/** `.reg` declarations for every register the kernel lists or uses, by prefix. */
function regDecls(k: Kernel): string[] {
  // Register ids are small integers in practice: the type seen for each id in an array.
  const typeById: RegType[] = [];
  const max = new Map<RegType, number>();
  const note = (r: Reg) => {
    const id = r.id;
    if (!Number.isSafeInteger(id) || id < 0) {
      throw new PtxError(`Bad register id ${id} in kernel "${k.name}"`);
    }
    const seen = typeById[id];
    if (seen !== undefined && seen !== r.type) {
      throw new PtxError(`Register id ${id} is both ${seen} and ${r.type} in kernel "${k.name}"`);
    }
    // The map ends with the type of every id's last note (the same type, as checked above).
    if (seen === undefined) {
      typeById[id] = r.type;
      const m = max.get(r.type);
      if (m === undefined || id > m) max.set(r.type, id);
    }
  };
  k.regs.forEach(note);
  walkOps(k.body, (o) => {
    const { reads, writes } = opRegs(o);
    reads.forEach(note);
    writes.forEach(note);
  });
  const out: string[] = [];
  for (const t of Object.keys(REG_PTX) as RegType[]) {
    const m = max.get(t);
    if (m === undefined) continue;
    const prefix = regPrefix({ kind: "reg", id: 0, type: t });
    out.push(`.reg .${REG_PTX[t]} %${prefix}<${m + 1}>;`);
  }
  return out;
}

/** Options of {@link printPtx}. */
export interface PrintPtxOptions {
  /**
   * Emit `.minnctapersm N` after `.maxntid` (off by default). A performance
   * hint only: with `.maxntid` alone, ptxas 13 for sm_80 may squeeze a kernel
   * that has to spill anyway into 32 registers (aiming at full occupancy);
   * `.minnctapersm 1` lets it use up to 65536 / threads registers instead.
   */
  readonly minBlocksPerSm?: number;
}

/** Appends the lines of one `.entry` to `out`. */
function printEntry(k: Kernel, opts: PrintPtxOptions, out: string[]): void {
  if (!IDENT.test(k.name)) throw new PtxError(`Kernel name "${k.name}" is not a PTX identifier`);
  const own = k.minBlocksPerSm;
  const target = targetInfo(k.target);
  if (
    own !== undefined &&
    (!Number.isInteger(own) || own < 1 || own * k.threads > target.maxThreadsPerSm)
  ) {
    throw new PtxError(`Kernel "${k.name}": ${own} blocks of ${k.threads} threads per SM`);
  }
  // The kernel's own occupancy, or the module's floor, whichever is higher.
  // setmaxnreg needs the register count at entry, which `.minnctapersm` gives ptxas.
  let setsRegs = false;
  walkOps(k.body, (o) => {
    if (o.op === "setmaxnreg") setsRegs = true;
  });
  const floor = opts.minBlocksPerSm ?? (setsRegs ? 1 : undefined);
  const minBlocks = own === undefined ? floor : Math.max(own, floor ?? 1);
  const most = target.maxThreadsPerBlock;
  if (!Number.isInteger(k.threads) || k.threads < 1 || k.threads > most) {
    throw new PtxError(`Kernel "${k.name}": ${k.threads} threads per block is not 1..${most}`);
  }
  const params = new Map<string, KernelParam>();
  for (const p of k.params) {
    if (!IDENT.test(p.name)) {
      throw new PtxError(`Parameter "${p.name}" of kernel "${k.name}" is not a PTX identifier`);
    }
    if (params.has(p.name)) {
      throw new PtxError(`Duplicate parameter "${p.name}" in kernel "${k.name}"`);
    }
    if (!PARAM_PTX[p.kind].includes(p.ptx)) {
      throw new PtxError(`Parameter "${p.name}": a ${p.kind} is not passed as .${p.ptx}`);
    }
    params.set(p.name, p);
  }
  const cx: Ctx = {
    kernel: k,
    params,
    text: "",
    pre: "",
    labels: 0,
    loops: 0,
    halfTmp: false,
    divergent: false,
  };
  emitBody(k.body, cx, "  ");
  const decls = regDecls(k);
  if (cx.loops > 0) decls.push(`.reg .pred %tp<1>; // scratch: loop tests`);
  if (cx.halfTmp) decls.push(`.reg .b16 %th<1>; // scratch: f16/bf16 immediates`);
  const sig = k.params.map((p, i) =>
    `  .param ${
      p.ptx === "tmap"
        ? `.align 64 .b8 ${paramSymbol(p)}[${TENSOR_MAP_BYTES}]`
        : `.${p.ptx} ${paramSymbol(p)}`
    }${i + 1 < k.params.length ? "," : ""}`
  );
  out.push(
    `// ${k.name}: ${k.threads} threads, ${k.dynamicSmemBytes} bytes of dynamic shared memory`,
    `.visible .entry ${k.name}(`,
    ...sig,
    ")",
    `.maxntid ${k.threads}, 1, 1`,
    ...(minBlocks === undefined ? [] : [`.minnctapersm ${minBlocks}`]),
    ...((k.cluster ?? 1) > 1 ? [`.reqnctapercluster ${k.cluster}, 1, 1`] : []),
    "{",
    ...decls.map((d) => `  ${d}`),
    "",
  );
  // The body (every line ending in a newline) and the `ret`, as one line of the module.
  out.push(`${cx.text}  ${OP_TEMPLATES.ret};`, "}");
}

/**
 * The PTX target of a gemmc target (its row's `ptx`, ir/target.ts).
 *
 * @param t `sm80` or `sm86`.
 * @returns `sm_80` or `sm_86`.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { ptxTarget } from "./print.ts";
 * equal(ptxTarget("sm86"), "sm_86");
 * ```
 */
export function ptxTarget(t: Target): PtxTarget {
  return targetInfo(t).ptx;
}

/**
 * Prints kernels as one PTX module: the header (`.version 8.0`, the kernels'
 * common `.target`, `.address_size 64`), the dynamic shared-memory symbol
 * `gemmc_smem`, and one `.visible .entry` per kernel, its parameters in the
 * kernel's order (named `param_NAME`), `.maxntid THREADS, 1, 1`, its register
 * declarations and its body.
 *
 * @param kernels The kernels; they must share one target and have distinct names.
 * @param opts Performance hints for ptxas (none by default).
 * @returns The PTX text, ending in a newline.
 * @throws {PtxError} When the kernels are empty, disagree on the target, or an
 * operation has no PTX form.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { printPtx } from "./print.ts";
 * const ptx = printPtx([{
 *   kind: "kernel", name: "nop", target: "sm80", params: [], threads: 32,
 *   dynamicSmemBytes: 0, regs: [], body: [],
 *   grid: { tileM: 1, tileN: 1, swizzle: 1, splitK: 1, m: 1, n: 1, batch: null },
 * }]);
 * ok(ptx.includes(".visible .entry nop("));
 * ```
 */
export function printPtx(kernels: readonly Kernel[], opts: PrintPtxOptions = {}): string {
  const mb = opts.minBlocksPerSm;
  if (mb !== undefined && (!Number.isInteger(mb) || mb < 1)) {
    throw new PtxError(`Bad minBlocksPerSm ${mb}: a positive integer`);
  }
  const first = kernels[0];
  if (first === undefined) throw new PtxError("Cannot print a PTX module without kernels");
  const names = new Set<string>();
  for (const k of kernels) {
    if (k.target !== first.target) {
      throw new PtxError(
        `Kernels of one module must share a target: "${first.name}" is ${first.target}, "${k.name}" is ${k.target}`,
      );
    }
    if (names.has(k.name)) throw new PtxError(`Duplicate kernel name "${k.name}"`);
    names.add(k.name);
  }
  const needs = moduleNeeds(kernels, targetInfo(first.target).ptxVersion);
  const out = [
    "//",
    "// Generated by gemmc from the kernel IR.",
    "//",
    "",
    `.version ${needs.version}`,
    `.target ${ptxTarget(first.target)}`,
    ".address_size 64",
    "",
    `.extern .shared .align ${needs.smemAlign} .b8 ${SMEM_SYMBOL}[];`,
  ];
  for (const k of kernels) {
    out.push("");
    printEntry(k, opts, out);
  }
  return out.join("\n") + "\n";
}

/** `mma.sp::ordered_metadata` needs PTX ISA 8.5. */
const ORDERED_METADATA_PTX = "8.5";

/** What a module's kernels need of its header: the PTX version (the target's, raised to
 * 8.5 where a kernel uses `mma.sp::ordered_metadata` and to a wgmma row's own version,
 * 8.4 for mixed integers), and the shared symbol's alignment (1,024 bytes with wgmma or TMA,
 * whose 128-byte swizzle acts on absolute addresses: ir/wgmma_table.ts `WGMMA_SMEM`;
 * 128 otherwise, so every other module stays the same byte for byte). */
function moduleNeeds(
  kernels: readonly Kernel[],
  version: string,
): { version: string; smemAlign: number } {
  const num = (v: string) => v.split(".").map(Number) as [number, number];
  const above = (x: string, y: string) => {
    const [a, b] = num(x);
    const [c, d] = num(y);
    return a > c || (a === c && b > d);
  };
  let v = version;
  let smemAlign = 128;
  for (const k of kernels) {
    walkOps(k.body, (o) => {
      if (o.op === "mma" && o.ordered === true && above(ORDERED_METADATA_PTX, v)) {
        v = ORDERED_METADATA_PTX;
      }
      // A TMA box in the 128-byte swizzle lands on 1024-byte boundaries too.
      if (o.op === "tma") smemAlign = 1024;
      if (o.op === "wgmma") {
        smemAlign = 1024;
        const need = WGMMA_BY_NAME.get(o.shape)?.ptxVersion;
        if (need !== undefined && above(need, v)) v = need;
      }
    });
  }
  return { version: v, smemAlign };
}
