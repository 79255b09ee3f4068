/**
 * The compiler driver: source text in, kernels (with every stage's IR) and
 * diagnostics out, as values. Nothing here prints.
 *
 * @module
 */

import { parseProgram, type ParseResult } from "./dsl/parse.ts";
import { checkProgram, type CheckResult } from "./dsl/check.ts";
import { type Diagnostic, renderDiagnostic } from "./dsl/diagnostics.ts";
import type { GemmKernel, Target } from "./ir/gemm.ts";
import { verifyGemm } from "./ir/verify_gemm.ts";
import { printGemm } from "./ir/print_gemm.ts";
import type { Kernel } from "./ir/kernel.ts";
import { printKernel } from "./ir/print_kernel.ts";
import { type DumpHook, runPipeline } from "./passes/pipeline_list.ts";
import { DiagnosticError } from "./dsl/diagnostics.ts";
import { printPtx } from "./backends/ptx/print.ts";
import { type KernelManifest, kernelManifest } from "./backends/ptx/manifest.ts";
import { isTargetName, targetList } from "./ir/target.ts";
import { LIMITS } from "./dsl/limits.ts";

/** Options shared by {@link parse}, {@link check} and {@link compile}. */
export interface SourceOptions {
  /** The file name used in diagnostics (default `"<input>"`). */
  readonly file?: string;
  /** Overrides every kernel's `target` schedule line. */
  readonly target?: Target;
}

/** Options of {@link compile}. */
export interface CompileOptions extends SourceOptions {
  /** Compile only the kernel of this name. */
  readonly kernel?: string;
  /** Expected sizes by dimension name (or M, N, K, L for the roles): the
   * default schedule is chosen for them; the kernel works for any size. */
  readonly sizeHints?: Readonly<Record<string, number>>;
  /** The SM count of the GPU the kernels are for (default: the target's
   * `defaultSms`, ir/target.ts: 108, an A100):
   * with known or hinted M and N the default tile weighs the waves of
   * blocks on that many SMs. */
  readonly sms?: number;
  /** Programmatic dependent launch (default false; sm90 only, no effect on other targets): the
   * kernel waits for the previous grid of its stream (`griddepcontrol.wait`) before its first
   * global access, after asking the L2 for its first k-tiles of B, and lets the next grid start
   * (`griddepcontrol.launch_dependents`) after its main loop. Launch it with the driver's
   * attribute (launch option `pdl`, `gemm run --pdl`) to overlap its start with the previous
   * kernel's end; launched the ordinary way it runs 1-3% slower than without them on the H200
   * (bench/NOTES.md 71), hence off by default. */
  readonly pdl?: boolean;
  /**
   * With `pdl`: tensors that the grid a launch depends on does not write (an LLM's weights),
   * by name. Their loads may start before `griddepcontrol.wait`: on sm90's TMA kernels the
   * producer fills the first stages of the ring with their boxes before the wait (those of at
   * least a quarter of a stage's bytes: passes/lower/early.ts `EARLY_MIN_STAGE_SHARE`;
   * the manifest's `pdl.early` lists what a kernel does read early), and the
   * mma.sync and cp.async kernels issue their prologue's copies of them before it (in place of
   * the L2 prefetch). A promise the compiler cannot check: under a programmatic dependent launch
   * after a grid that writes one of them, the kernel may read stale data. Each name must be an
   * input tensor of a compiled kernel (never its output).
   */
  readonly pdlEarly?: readonly string[];
  /**
   * With `pdl`: where the mma.sync main loop (sm90's cp.async-fed mma.sync kernels, the skinny
   * tiles of M <= 32 among them) lets the next grid start. `drain` (the default): after its main
   * loop has drained, as measured in bench/NOTES.md 71. `last-copy`: right after it issues its
   * last copy, `stages - 1` k-tiles before the end, so that the next grid's launch, set-up and
   * first L2 fetches overlap this grid's last k-tiles (an experiment, bench/NOTES.md 93; on an
   * H100 it lost 0.1-0.4 µs at M <= 16, NOTES 94; the H200 has not run it). Kernels of other forms
   * trigger where they did.
   */
  readonly pdlTrigger?: "drain" | "last-copy";
  /** Receives the IR after each pass (`--dump-after`). */
  readonly dump?: DumpHook;
}

/** One compiled kernel, with its IR at each stage that exists. */
export interface CompiledKernel {
  /** The kernel's name, as written after `kernel` in the source. */
  readonly name: string;
  /** The checked GEMM IR. */
  readonly gemm: GemmKernel;
  /** The textual form of {@link CompiledKernel.gemm}. */
  readonly gemmText: string;
  /** The GEMM IR after every pass (the complete plan). */
  readonly planned: GemmKernel;
  /** The kernel IR. */
  readonly kernel: Kernel;
  /** The textual form of {@link CompiledKernel.kernel} (printed on first use). */
  readonly kernelText: string;
  /** A PTX module holding this kernel alone (printed on first use). */
  readonly ptx: string;
  /** The launch manifest (grid as a plan; see {@link kernelManifest} for sizes). */
  readonly manifest: KernelManifest;
}

/** Options every PTX module of gemmc is printed with: at least one block per
 * SM, so that ptxas may use up to the target's `registersPerSm` / threads
 * registers (65536 / threads; CUTLASS's
 * `__launch_bounds__(threads, 1)`). */
export const PTX_OPTIONS = Object.freeze({ minBlocksPerSm: 1 });

/**
 * One PTX module holding several compiled kernels (they must share a target).
 *
 * @param kernels The kernels.
 * @returns The module text.
 */
export function ptxModule(kernels: readonly CompiledKernel[]): string {
  return printPtx(kernels.map((k) => k.kernel), PTX_OPTIONS);
}

/** The result of {@link compile}: `ok` when there are no diagnostics. */
export interface CompileResult {
  /** Whether every kernel compiled (no diagnostics). */
  readonly ok: boolean;
  /** The kernels that compiled, in source order. */
  readonly kernels: readonly CompiledKernel[];
  /** The diagnostics of the kernels that failed (empty when `ok`). */
  readonly diagnostics: readonly Diagnostic[];
}

/**
 * Parses DSL source into its AST.
 *
 * @param source The DSL text.
 * @param options `file` for diagnostics.
 * @returns The AST or a syntax diagnostic.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { parse } from "./compiler.ts";
 * ok(parse("kernel k { }").ok);
 * ```
 */
export function parse(source: string, options: SourceOptions = {}): ParseResult {
  return parseProgram(source, options.file ?? "<input>");
}

/**
 * Parses and checks DSL source into GEMM IR kernels.
 *
 * @param source The DSL text.
 * @param options `file` for diagnostics, `target` to override the schedule.
 * @returns The checked kernels and the diagnostics.
 * @throws {TypeError} For a `target` option that names no target.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { check } from "./compiler.ts";
 * const r = check("kernel k { A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]\n D[m, n] = A[m, k] * B[k, n] }");
 * equal(r.diagnostics.length, 0);
 * equal(r.kernels[0]?.problem.b.layout, "col");
 * ```
 */
export function check(source: string, options: SourceOptions = {}): CheckResult {
  if (options.target !== undefined && !isTargetName(options.target)) {
    // A misuse of the API, not an error in the source: no span to point at.
    throw new TypeError(`Unknown target "${options.target}": expected ${targetList()}`);
  }
  const file = options.file ?? "<input>";
  const p = parseProgram(source, file);
  const ast = p.ok ? p.ast : p.partial;
  if (ast === undefined) return { kernels: [], diagnostics: p.ok ? [] : p.diagnostics };
  const r = checkProgram(ast, { file, text: source }, {
    ...(options.target !== undefined ? { target: options.target } : {}),
  });
  for (const k of r.kernels) verifyGemm(k);
  if (p.ok) return r;
  // A syntax error: the other kernels' diagnostics too (dsl/resync.ts), in source order.
  const diagnostics = [...p.diagnostics, ...r.diagnostics]
    .sort((a, b) => a.span.start - b.span.start);
  return { kernels: r.kernels, diagnostics };
}

/**
 * Compiles DSL source: parse, check, and every later stage that exists.
 *
 * @param source The DSL text.
 * @param options File name, target, and which kernel.
 * @returns The kernels and diagnostics; `ok` is false when there are diagnostics.
 * @throws {TypeError} For a `target` that names no target, an `sms` that is not a
 *   positive integer, or a size hint that is not an integer in 0..2^31-1.
 * @example
 * ```ts
 * import { equal, ok } from "node:assert/strict";
 * import { compile } from "./compiler.ts";
 * const r = compile("kernel k { A: s8[M, K]\n B: s8[K, N] col\n D: s32[M, N]\n D[m, n] = A[m, k] * B[k, n] }");
 * ok(r.ok);
 * equal(r.kernels[0]?.gemm.math.acc, "s32");
 * ```
 */
export function compile(source: string, options: CompileOptions = {}): CompileResult {
  compileOptionProblem(options);
  const r = check(source, options);
  let kernels = r.kernels;
  const diagnostics = [...r.diagnostics];
  if (options.kernel !== undefined) {
    kernels = kernels.filter((k) => k.name === options.kernel);
  }
  earlyNamesProblem(kernels, options.pdlEarly);
  const compiled: CompiledKernel[] = [];
  for (const gemm of kernels) {
    try {
      const hinted = {
        ...gemm,
        ...(options.sizeHints === undefined
          ? {}
          : { sizeHints: hintsFor(gemm, options.sizeHints) }),
        ...(options.sms === undefined ? {} : { sms: options.sms }),
        ...(options.pdl === true ? { pdl: true as const } : {}),
        ...earlyOf(gemm, options.pdlEarly),
        ...(options.pdlTrigger === "last-copy" ? { pdlTrigger: "last-copy" as const } : {}),
      };
      const { gemm: planned, kernel } = runPipeline(
        hinted,
        options.dump === undefined ? undefined : options.dump,
      );
      compiled.push(compiledKernel(gemm, planned, kernel));
    } catch (e) {
      if (e instanceof DiagnosticError) diagnostics.push(...e.diagnostics);
      else throw e;
    }
  }
  // In source order: the checker's and the passes' diagnostics of every kernel interleaved.
  diagnostics.sort((a, b) => a.span.start - b.span.start);
  return { ok: diagnostics.length === 0, kernels: compiled, diagnostics };
}

/** A kernel's share of the option `pdlEarly`: its input tensors among the names. */
function earlyOf(gemm: GemmKernel, names: readonly string[] | undefined): {
  pdlEarly?: readonly string[];
} {
  const inputs = gemm.params.filter((p) =>
    p.kind === "tensor" && p.name !== gemm.problem.d.tensor && names?.includes(p.name) === true
  );
  return inputs.length === 0 ? {} : { pdlEarly: inputs.map((p) => p.name) };
}

/** Refuses a `pdlEarly` name that is no input tensor of any kernel compiled (a typo, or an
 * output: the previous grid's reads of it would race with this one's writes). */
function earlyNamesProblem(kernels: readonly GemmKernel[], names: readonly string[] | undefined) {
  for (const name of names ?? []) {
    if (kernels.some((k) => k.problem.d.tensor === name)) {
      throw new TypeError(`Option pdlEarly: "${name}" is a kernel's output, not an input`);
    }
    if (!kernels.some((k) => earlyOf(k, [name]).pdlEarly !== undefined)) {
      throw new TypeError(`Option pdlEarly: "${name}" is no input tensor of the kernels compiled`);
    }
  }
}

/**
 * Refuses API options out of their range, as the CLI's option parsing does
 * (bad_inputs: NaN or negative `sms` and size hints were taken as given).
 */
function compileOptionProblem(options: CompileOptions): void {
  if (options.pdlEarly !== undefined && options.pdlEarly.length > 0 && options.pdl !== true) {
    throw new TypeError("Option pdlEarly needs pdl (it moves loads before griddepcontrol.wait)");
  }
  const trigger = options.pdlTrigger;
  if (trigger !== undefined && trigger !== "drain" && trigger !== "last-copy") {
    throw new TypeError(`Option pdlTrigger must be "drain" or "last-copy", got ${trigger}`);
  }
  if (trigger === "last-copy" && options.pdl !== true) {
    throw new TypeError("Option pdlTrigger needs pdl (it moves griddepcontrol.launch_dependents)");
  }
  const sms = options.sms;
  if (sms !== undefined && !(Number.isInteger(sms) && sms > 0 && sms <= MAX_HINT)) {
    throw new TypeError(`Option sms must be an integer in 1..${MAX_HINT}, got ${sms}`);
  }
  for (const [name, v] of Object.entries(options.sizeHints ?? {})) {
    if (!(Number.isInteger(v) && v >= 0 && v <= MAX_HINT)) {
      throw new TypeError(`Size hint ${name}=${v} must be an integer in 0..${MAX_HINT}`);
    }
  }
}

/** The largest size hint or SM count: the largest runtime size (dsl/limits.ts). */
const MAX_HINT = LIMITS.runtimeSize.value;

/**
 * A {@link CompiledKernel} whose texts of the kernel IR and of the PTX are
 * printed on first use and then kept: most callers read one of them or none,
 * and printing is most of the cost of compiling. They are getters, read as
 * the fields they were (also by `JSON.stringify` and object spread).
 */
function compiledKernel(gemm: GemmKernel, planned: GemmKernel, kernel: Kernel): CompiledKernel {
  let kernelText: string | undefined;
  let ptx: string | undefined;
  return {
    name: gemm.name,
    gemm,
    gemmText: printGemm(gemm),
    planned,
    kernel,
    get kernelText(): string {
      return kernelText ??= printKernel(kernel);
    },
    get ptx(): string {
      return ptx ??= printPtx([kernel], PTX_OPTIONS);
    },
    manifest: kernelManifest(gemm, kernel),
  };
}

/** Size hints by the kernel's dimension names (role letters M, N, K, L accepted). */
function hintsFor(k: GemmKernel, given: Readonly<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  const roles = [
    ["M", k.problem.m],
    ["N", k.problem.n],
    ["K", k.problem.k],
    ["L", k.problem.batch],
  ] as const;
  for (const d of k.dims) {
    const role = roles.find(([, r]) => r !== null && r.kind === "sym" && r.name === d);
    const v = given[d] ?? (role !== undefined ? given[role[0]] : undefined);
    if (v !== undefined) out[d] = v;
  }
  return out;
}

/**
 * Renders diagnostics as the CLI prints them.
 *
 * @param diagnostics The diagnostics.
 * @param source The text their spans point into.
 * @returns The rendered text.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { check, formatDiagnostics } from "./compiler.ts";
 * const src = "kernel k {\n  D[m, n] = X[m, k] * B[k, n]\n}";
 * const r = check(src, { file: "k.gemm" });
 * ok(formatDiagnostics(r.diagnostics, src).startsWith("k.gemm:2:"));
 * ```
 */
export function formatDiagnostics(diagnostics: readonly Diagnostic[], source: string): string {
  return diagnostics.map((d) => renderDiagnostic(d, source)).join("");
}
