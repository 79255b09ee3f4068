/**
 * Running NVIDIA's `ptxas` on printed PTX: finding the binary, assembling
 * for a target's PTX spelling (ir/target.ts: `sm_80`, `sm_86`) with `-v`, and reading back what it says about each
 * kernel (registers, shared memory, stack frame, spills).
 *
 * @module
 */

import { type PtxTarget, TARGET_NAMES, TARGETS } from "../../ir/target.ts";

/** What `ptxas -v` reports for one entry. */
export interface PtxasKernelInfo {
  /** The entry name. */
  readonly name: string;
  /** Registers per thread. */
  readonly registers: number;
  /** Static shared memory in bytes (dynamic shared memory is not counted by ptxas). */
  readonly sharedBytes: number;
  /** Per-thread stack frame in bytes. */
  readonly stackFrameBytes: number;
  /** Bytes of register spill stores per thread. */
  readonly spillStoreBytes: number;
  /** Bytes of register spill loads per thread. */
  readonly spillLoadBytes: number;
  /** Constant memory in bytes, summed over the `cmem[i]` banks ptxas lists (bank 0 holds the
   * parameters). */
  readonly constBytes?: number;
  /** Named barriers used, where ptxas says. */
  readonly barriers?: number;
}

/** The outcome of one ptxas run. */
export interface PtxasResult {
  /** Whether ptxas accepted the PTX (exit status 0). */
  readonly ok: boolean;
  /** Everything ptxas printed (stdout, then stderr). */
  readonly log: string;
  /** The entries ptxas reported on, in the order of the `.entry` directives of the PTX. */
  readonly kernels: readonly PtxasKernelInfo[];
}

/**
 * The architectures ptxas may assemble gemmc's PTX for: the compile targets'
 * own (ir/target.ts), and sm_90, which runs every sm_80 instruction (a PTX
 * module's `.target` may be lower than ptxas's `-arch`, never higher).
 *
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { CUBIN_ARCHS } from "./ptxas.ts";
 * ok(CUBIN_ARCHS.includes("sm_80") && CUBIN_ARCHS.includes("sm_90"));
 * ```
 */
export const CUBIN_ARCHS: readonly CubinArch[] = Object.freeze([
  ...TARGET_NAMES.map((t) => TARGETS[t].ptx),
  "sm_90" as const,
]);

/** An architecture of {@link CUBIN_ARCHS}. */
export type CubinArch = PtxTarget | "sm_90";

/** Options of {@link runPtxas}. */
export interface PtxasOptions {
  /** The GPU architecture to assemble for. */
  readonly arch: CubinArch;
  /** The ptxas binary; by default {@link findPtxas} looks for one. */
  readonly ptxasPath?: string;
  /** Where ptxas writes the cubin; by default nowhere (`-o /dev/null`). */
  readonly output?: string;
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

function envPath(): string[] {
  try {
    return (Deno.env.get("PATH") ?? "").split(":").filter((d) => d !== "");
  } catch {
    return []; // No --allow-env: PATH is not consulted.
  }
}

/**
 * Finds a ptxas binary: the explicit path if it names a file, else the first
 * `ptxas` on `PATH`, else `/usr/local/bin/ptxas`, else `/usr/local/cuda/bin/ptxas`.
 *
 * @param explicit A path given by the user (`--ptxas-path`).
 * @returns The path, or null when there is no ptxas.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { findPtxas } from "./ptxas.ts";
 * const p = findPtxas();
 * ok(p === null || p.endsWith("ptxas"));
 * ```
 */
export function findPtxas(explicit?: string): string | null {
  const candidates = [
    ...(explicit !== undefined ? [explicit] : []),
    ...envPath().map((d) => `${d}/ptxas`),
    "/usr/local/bin/ptxas",
    "/usr/local/cuda/bin/ptxas",
  ];
  return candidates.find(isFile) ?? null;
}

/**
 * Reads the per-kernel numbers out of `ptxas -v` output (the lines after
 * `Compiling entry function 'NAME'`: `Function properties for NAME`, the stack
 * frame and spill line, and `Used N registers[, used B barriers][, S bytes smem][, C bytes cmem[i]]...`).
 *
 * @param log What ptxas printed.
 * @returns One entry per kernel, in the order ptxas reported them.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { parsePtxasLog } from "./ptxas.ts";
 * const [k] = parsePtxasLog([
 *   "ptxas info    : Compiling entry function 'k' for 'sm_80'",
 *   "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
 *   "ptxas info    : Used 40 registers, 368 bytes cmem[0]",
 * ].join("\n"));
 * equal(k?.name, "k");
 * equal(k?.registers, 40);
 * equal(k?.constBytes, 368);
 * ```
 */
export function parsePtxasLog(log: string): PtxasKernelInfo[] {
  type Mutable = { -readonly [K in keyof PtxasKernelInfo]: PtxasKernelInfo[K] };
  const byName = new Map<string, Mutable>();
  const get = (name: string): Mutable => {
    let k = byName.get(name);
    if (k === undefined) {
      k = {
        name,
        registers: 0,
        sharedBytes: 0,
        stackFrameBytes: 0,
        spillStoreBytes: 0,
        spillLoadBytes: 0,
      };
      byName.set(name, k);
    }
    return k;
  };
  let cur: Mutable | undefined;
  const num = (line: string, re: RegExp): number | undefined => {
    const m = re.exec(line);
    return m === null ? undefined : Number(m[1]);
  };
  for (const line of log.split("\n")) {
    const entry = /Compiling entry function '([^']+)'/.exec(line) ??
      /Function properties for (\S+)/.exec(line);
    if (entry !== null) {
      cur = get(entry[1]!);
      continue;
    }
    if (cur === undefined) continue;
    const stack = num(line, /(\d+) bytes stack frame/);
    if (stack !== undefined) {
      cur.stackFrameBytes = stack;
      cur.spillStoreBytes = num(line, /(\d+) bytes spill stores/) ?? 0;
      cur.spillLoadBytes = num(line, /(\d+) bytes spill loads/) ?? 0;
      continue;
    }
    const regs = num(line, /Used (\d+) registers/);
    if (regs !== undefined) {
      cur.registers = regs;
      cur.sharedBytes = num(line, /(\d+) bytes smem/) ?? 0;
      const barriers = num(line, /used (\d+) barriers/);
      if (barriers !== undefined) cur.barriers = barriers;
      const cmem = [...line.matchAll(/(\d+) bytes cmem\[\d+\]/g)];
      if (cmem.length > 0) cur.constBytes = cmem.reduce((s, m) => s + Number(m[1]), 0);
    }
  }
  return [...byName.values()];
}

/**
 * Assembles PTX with `ptxas -arch=ARCH -v -o OUT FILE` (OUT is
 * {@link PtxasOptions.output}, by default `/dev/null`; the PTX goes through a
 * temporary file, removed afterwards) and reads the per-kernel resource report.
 *
 * @param ptx The PTX module.
 * @param opts The architecture, and optionally the ptxas binary and the cubin's path.
 * @returns Whether ptxas accepted it, its log and the per-kernel numbers.
 * @throws {Error} When no ptxas is found (see {@link findPtxas}).
 * @example
 * ```ts ignore
 * import { runPtxas, formatPtxasReport } from "./ptxas.ts";
 * const r = await runPtxas(ptxText, { arch: "sm_80" });
 * console.log(formatPtxasReport(r));
 * ```
 */
export async function runPtxas(ptx: string, opts: PtxasOptions): Promise<PtxasResult> {
  const bin = opts.ptxasPath ?? findPtxas();
  if (bin === null) throw new Error("Cannot run ptxas: not found on PATH or in /usr/local");
  const file = await Deno.makeTempFile({ prefix: "gemmc_", suffix: ".ptx" });
  try {
    await Deno.writeTextFile(file, ptx);
    const out = await new Deno.Command(bin, {
      args: [`-arch=${opts.arch}`, "-v", "-o", opts.output ?? "/dev/null", file],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const dec = new TextDecoder();
    const log = (dec.decode(out.stdout) + dec.decode(out.stderr)).replaceAll(file, "<ptx>");
    const order = [...ptx.matchAll(/\.entry\s+([A-Za-z_$][\w$]*)/g)].map((m) => m[1]!);
    const rank = (n: string) => {
      const i = order.indexOf(n);
      return i < 0 ? order.length : i;
    };
    const kernels = parsePtxasLog(log).sort((a, b) => rank(a.name) - rank(b.name));
    return { ok: out.success, log, kernels };
  } finally {
    await Deno.remove(file).catch(() => {});
  }
}

/**
 * A report of one ptxas run: a line per kernel,
 * `NAME: N registers, S bytes shared, F bytes stack frame, X bytes spill stores, Y bytes spill loads`;
 * for a rejected module, `ptxas failed:` and its log.
 *
 * @param result What {@link runPtxas} returned.
 * @returns The report, without a trailing newline.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { formatPtxasReport } from "./ptxas.ts";
 * const s = formatPtxasReport({ ok: true, log: "", kernels: [{ name: "k", registers: 40,
 *   sharedBytes: 0, stackFrameBytes: 0, spillStoreBytes: 0, spillLoadBytes: 0 }] });
 * equal(
 *   s,
 *   "k: 40 registers, 0 bytes shared, 0 bytes stack frame, " +
 *     "0 bytes spill stores, 0 bytes spill loads",
 * );
 * ```
 */
export function formatPtxasReport(result: PtxasResult): string {
  if (!result.ok) return `ptxas failed:\n${result.log.trimEnd()}`;
  return result.kernels.map((k) =>
    `${k.name}: ${k.registers} registers, ${k.sharedBytes} bytes shared, ` +
    `${k.stackFrameBytes} bytes stack frame, ${k.spillStoreBytes} bytes spill stores, ` +
    `${k.spillLoadBytes} bytes spill loads`
  ).join("\n");
}
