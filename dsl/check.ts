/**
 * The checker: from the AST to checked GEMM IR kernels ({@link GemmKernel}),
 * or positioned diagnostics. It finds the contraction and the roles M, N, K
 * and batch from the structure of the statement, whatever the index names;
 * normalises operand layouts; decides the MMA type combination and the
 * accumulator; types the epilogue; reads the schedule block.
 *
 * Each kernel stops at its first error (so that one mistake gives one
 * diagnostic, never a cascade); other kernels of the file are still checked.
 *
 * @module
 */

import type {
  AccessAst,
  DimAst,
  ExprAst,
  KernelAst,
  ProgramAst,
  ScalarDeclAst,
  ScheduleLineAst,
  StatementAst,
  TensorDeclAst,
} from "./ast.ts";
import {
  type Diagnostic,
  diagnostic,
  type DiagnosticCode,
  DiagnosticError,
  lineColumn,
} from "./diagnostics.ts";
import { callableEpilogueFns, epilogueFn, type EpilogueFnName } from "../ir/epilogue.ts";
import {
  accNode,
  callNode,
  castNode,
  constNode,
  loadNode,
  scalarNode,
} from "../ir/epilogue_expr.ts";
import type {
  ComputeType,
  DimRef,
  Epilogue,
  EpilogueExpr,
  GemmKernel,
  Layout,
  MathMode,
  MathSpec,
  MatrixView,
  Param,
  Problem,
  Role,
  Schedule,
  ScheduleKey,
  Shape3,
  Span,
  Target,
  TensorParam,
} from "../ir/gemm.ts";
import { defaultAlign, type Dtype, DTYPE_INFO, isDtype } from "../ir/dtype.ts";
import { DEFAULT_TARGET, isTargetName, targetList } from "../ir/target.ts";

/** Options of the checker. */
export interface CheckOptions {
  /** Overrides the schedule's `target` line. */
  readonly target?: Target;
}

/** Checked kernels, and the diagnostics of the kernels that failed. */
export interface CheckResult {
  readonly kernels: readonly GemmKernel[];
  readonly diagnostics: readonly Diagnostic[];
}

interface Src {
  readonly file: string;
  readonly text: string;
}

/** The schedule keys of DESIGN.md §2, in the order the docs list them. */
export const SCHEDULE_KEYS: readonly ScheduleKey[] = Object.freeze(
  [
    "threadblock",
    "warp",
    "mma",
    "stages",
    "swizzle",
    "split_k",
    "math",
    "accumulate",
    "target",
  ] as const,
);

/** The functions the DSL calls by name (the table of ir/epilogue.ts). */
const FUNCTIONS: readonly EpilogueFnName[] = callableEpilogueFns();

/** Types an epilogue may cast to, read, or store. */
const EPILOGUE_DTYPES: readonly Dtype[] = ["f64", "f32", "f16", "bf16", "s32", "s8", "u8"];

const LEGAL_COMBOS = "f16 x f16 (accumulate f32 or f16), bf16 x bf16, f32|tf32 x f32|tf32, " +
  "f64 x f64, s8|u8 x s8|u8, s4|u4 x s4|u4, b1 x b1 (with popc)";

/**
 * Checks a parsed program.
 *
 * @param ast The program's AST.
 * @param source The file name and text the spans point into.
 * @param options Checker options.
 * @returns The kernels that checked, and the diagnostics of those that did not.
 * @example
 * ```ts
 * import { parseProgram } from "./parse.ts";
 * import { checkProgram } from "./check.ts";
 * const text = "kernel k { A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]\n" +
 *   " D[m, n] = A[m, k] * B[k, n] }";
 * const r = parseProgram(text, "k.gemm");
 * if (r.ok) console.assert(checkProgram(r.ast, { file: "k.gemm", text }).kernels.length === 1);
 * ```
 */
export function checkProgram(
  ast: ProgramAst,
  source: Src,
  options: CheckOptions = {},
): CheckResult {
  const kernels: GemmKernel[] = [];
  const diagnostics: Diagnostic[] = [];
  const seen = new Map<string, KernelAst>();
  for (const k of ast.kernels) {
    const prev = seen.get(k.name.text);
    if (prev !== undefined) {
      const { line } = lineColumn(source.text, prev.name.span.start);
      diagnostics.push(
        diagnostic(
          "E0121",
          `Duplicate kernel name "${k.name.text}": first defined at line ${line}`,
          source,
          k.name.span,
        ),
      );
      continue;
    }
    seen.set(k.name.text, k);
    try {
      kernels.push(new KernelChecker(k, source, options).check());
    } catch (e) {
      if (e instanceof DiagnosticError) diagnostics.push(...e.diagnostics);
      else throw e;
    }
  }
  return { kernels, diagnostics };
}

/**
 * The default alignment of a tensor (DESIGN.md §2: 16 bytes), lowered when the
 * contiguous dimension is a literal that is not a multiple of it: then every
 * row start is aligned to the largest power of two dividing that literal, and
 * the default must say so (`A: s8[5000, 5000]` gets `align 8`).
 *
 * @param d The declaration.
 * @returns The alignment in elements.
 */
function literalAlign(d: TensorDeclAst): number {
  const full = defaultAlign(d.dtype);
  if (d.dims.length < 2) return full;
  const mat = d.dims.slice(-2);
  const contiguous = (d.layout?.value ?? "row") === "row" ? mat[1]! : mat[0]!;
  if (contiguous.kind !== "const") return full;
  let a = full;
  while (a > 1 && contiguous.value % a !== 0) a /= 2;
  // Sub-byte types need whole bytes.
  const minElems = Math.max(1, 8 / DTYPE_INFO[d.dtype].bits);
  return Math.max(a, Math.min(minElems, full));
}

function dimEq(a: DimRef, b: DimRef): boolean {
  return a.kind === "sym"
    ? b.kind === "sym" && a.name === b.name
    : b.kind === "const" && a.value === b.value;
}

function dimText(d: DimRef): string {
  return d.kind === "sym" ? d.name : String(d.value);
}

function toDimRef(d: DimAst): DimRef {
  return d.kind === "sym" ? { kind: "sym", name: d.name } : { kind: "const", value: d.value };
}

function cover(a: Span, b: Span): Span {
  return { start: Math.min(a.start, b.start), end: Math.max(a.end, b.end) };
}

/** A flattened product chain: its factors and whether an odd number of minus signs wrap it. */
interface Product {
  readonly root: ExprAst;
  readonly factors: readonly ExprAst[];
  readonly negated: boolean;
}

/** What the schedule block says, before it is split between the math and the schedule. */
interface ScheduleInfo {
  readonly schedule: Schedule;
  readonly spans: Partial<Record<ScheduleKey, Span>>;
  readonly math?: { value: "tf32" | "3xtf32" | "f32"; span: Span };
  readonly accumulate?: { value: Dtype; span: Span };
  readonly target?: Target;
}

class KernelChecker {
  readonly #k: KernelAst;
  readonly #src: Src;
  readonly #opts: CheckOptions;
  readonly #tensors = new Map<string, TensorDeclAst>();
  readonly #scalars = new Map<string, ScalarDeclAst>();
  /** index name -> the dim it spans, and where it was first bound. */
  readonly #binding = new Map<string, { dim: DimRef; tensor: string; span: Span }>();

  constructor(k: KernelAst, src: Src, opts: CheckOptions) {
    this.#k = k;
    this.#src = src;
    this.#opts = opts;
  }

  #fail(code: DiagnosticCode, message: string, span: Span): never {
    throw new DiagnosticError([diagnostic(code, message, this.#src, span)]);
  }

  #line(span: Span): number {
    return lineColumn(this.#src.text, span.start).line;
  }

  check(): GemmKernel {
    const statements: StatementAst[] = [];
    const scheduleLines: ScheduleLineAst[] = [];
    for (const item of this.#k.items) {
      switch (item.kind) {
        case "tensorDecl":
          this.#declareTensor(item);
          break;
        case "scalarDecl":
          this.#declareScalar(item);
          break;
        case "statement":
          statements.push(item);
          break;
        case "schedule":
          scheduleLines.push(...item.lines);
          break;
      }
    }
    const [stmt, extra] = statements;
    if (stmt === undefined) {
      this.#fail(
        "E0114",
        `Kernel "${this.#k.name.text}" has no statement: write one assignment such as ` +
          `"D[m, n] = A[m, k] * B[k, n]"`,
        this.#k.name.span,
      );
    }
    if (extra !== undefined) {
      this.#fail(
        "E0114",
        `A kernel holds exactly one statement: this is a second one (the first is at line ${
          this.#line(stmt.span)
        })`,
        extra.span,
      );
    }
    const sched = this.#schedule(scheduleLines);
    return this.#statement(stmt, sched);
  }

  #checkNewName(name: { text: string; span: Span }): void {
    const prev = this.#tensors.get(name.text) ?? this.#scalars.get(name.text);
    if (prev !== undefined) {
      this.#fail(
        "E0102",
        `Duplicate declaration of "${name.text}": first declared at line ${
          this.#line(prev.name.span)
        }`,
        name.span,
      );
    }
  }

  #declareTensor(d: TensorDeclAst): void {
    this.#checkNewName(d.name);
    if (d.dims.length > 3) {
      this.#fail(
        "E0117",
        `Tensor "${d.name.text}" has rank ${d.dims.length}: tensors have rank 1, 2 or 3 (batch first)`,
        d.span,
      );
    }
    for (const dim of d.dims) {
      if (dim.kind === "const" && dim.value <= 0) {
        this.#fail("E0117", `Dimension sizes must be positive: got ${dim.value}`, dim.span);
      }
    }
    if (d.layout?.value === "col" && d.dims.length === 1) {
      this.#fail(
        "E0117",
        `Tensor "${d.name.text}" has rank 1: a vector has no "col" layout`,
        d.layout.span,
      );
    }
    if (d.align !== null) {
      const a = d.align.value;
      const bits = DTYPE_INFO[d.dtype].bits;
      const max = defaultAlign(d.dtype);
      if (a < 1 || (a & (a - 1)) !== 0) {
        this.#fail("E0117", `Alignment must be a power of two: got ${a}`, d.align.span);
      }
      if (a > max) {
        this.#fail(
          "E0117",
          `Alignment ${a} of "${d.name.text}" exceeds 16 bytes: at most ${max} elements of ${d.dtype}`,
          d.align.span,
        );
      }
      if ((a * bits) % 8 !== 0) {
        this.#fail(
          "E0117",
          `Alignment ${a} of "${d.name.text}" is not a whole byte: ${d.dtype} needs at least ${
            8 / bits
          } elements`,
          d.align.span,
        );
      }
    }
    this.#tensors.set(d.name.text, d);
  }

  #declareScalar(d: ScalarDeclAst): void {
    this.#checkNewName(d.name);
    if (d.dtype !== "f32" && d.dtype !== "f64" && d.dtype !== "s32") {
      this.#fail(
        "E0117",
        `Scalar "${d.name.text}" has dtype "${d.dtype}": scalars are f32, f64 or s32`,
        d.dtypeSpan,
      );
    }
    if (d.default !== null && d.dtype === "s32") {
      const v = d.default.value;
      if (!Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31) {
        this.#fail(
          "E0117",
          `Default "${d.default.text}" of s32 scalar "${d.name.text}" is not a 32-bit integer`,
          d.default.span,
        );
      }
    }
    this.#scalars.set(d.name.text, d);
  }

  // ---- schedule ---------------------------------------------------------

  #schedule(lines: readonly ScheduleLineAst[]): ScheduleInfo {
    const spans: Partial<Record<ScheduleKey, Span>> = {};
    const s: {
      -readonly [K in keyof Schedule]: Schedule[K];
    } = {};
    let math: { value: "tf32" | "3xtf32" | "f32"; span: Span } | undefined;
    let accumulate: { value: Dtype; span: Span } | undefined;
    let target: Target | undefined;
    let prevLine = -1;
    for (const l of lines) {
      const key = l.key.text;
      const line = this.#line(l.span);
      if (line === prevLine) {
        this.#fail(
          "E0122",
          `One schedule setting a line: "${key}" shares line ${line} with another setting`,
          l.key.span,
        );
      }
      prevLine = line;
      if (!(SCHEDULE_KEYS as readonly string[]).includes(key)) {
        this.#fail(
          "E0110",
          `Unknown schedule key "${key}": expected one of ${SCHEDULE_KEYS.join(", ")}`,
          l.key.span,
        );
      }
      const k = key as ScheduleKey;
      const prev = spans[k];
      if (prev !== undefined) {
        this.#fail(
          "E0111",
          `Repeated schedule key "${key}": first given at line ${this.#line(prev)}`,
          l.key.span,
        );
      }
      spans[k] = l.span;
      const v = l.value.text;
      const vs = l.value.span;
      switch (k) {
        case "threadblock":
          s.threadblock = this.#shape(k, v, vs);
          break;
        case "warp":
          s.warp = this.#shape(k, v, vs);
          break;
        case "mma":
          s.mma = this.#shape(k, v, vs);
          break;
        case "stages":
          s.stages = this.#positiveInt(k, v, vs);
          break;
        case "swizzle": {
          const n = this.#positiveInt(k, v, vs);
          if ((n & (n - 1)) !== 0 || n > 16) {
            this.#fail(
              "E0112",
              `Malformed value "${v}" for "swizzle": expected 1, 2, 4, 8 or 16`,
              vs,
            );
          }
          s.swizzle = n;
          break;
        }
        case "split_k":
          s.splitK = this.#positiveInt(k, v, vs);
          break;
        case "math":
          if (v !== "tf32" && v !== "3xtf32" && v !== "f32") {
            this.#fail(
              "E0112",
              `Malformed value "${v}" for "math": expected tf32, 3xtf32 or f32`,
              vs,
            );
          }
          math = { value: v, span: vs };
          break;
        case "accumulate":
          if (!isDtype(v)) {
            this.#fail("E0112", `Malformed value "${v}" for "accumulate": expected a dtype`, vs);
          }
          accumulate = { value: v, span: vs };
          break;
        case "target":
          if (!isTargetName(v)) {
            this.#fail(
              "E0112",
              `Malformed value "${v}" for "target": expected ${targetList()}`,
              vs,
            );
          }
          target = v;
          break;
      }
    }
    return {
      schedule: s,
      spans,
      ...(math !== undefined ? { math } : {}),
      ...(accumulate !== undefined ? { accumulate } : {}),
      ...(target !== undefined ? { target } : {}),
    };
  }

  #shape(key: string, v: string, span: Span): Shape3 {
    const m = /^([0-9]+)x([0-9]+)x([0-9]+)$/.exec(v);
    if (m === null) {
      this.#fail(
        "E0112",
        `Malformed shape "${v}" for "${key}": expected MxNxK, such as 128x128x32`,
        span,
      );
    }
    const [mm, nn, kk] = [Number(m[1]), Number(m[2]), Number(m[3])];
    if (mm <= 0 || nn <= 0 || kk <= 0) {
      this.#fail(
        "E0112",
        `Malformed shape "${v}" for "${key}": every extent must be positive`,
        span,
      );
    }
    return { m: mm, n: nn, k: kk };
  }

  #positiveInt(key: string, v: string, span: Span): number {
    if (!/^[0-9]+$/.test(v) || Number(v) <= 0) {
      this.#fail("E0112", `Malformed value "${v}" for "${key}": expected a positive integer`, span);
    }
    return Number(v);
  }

  // ---- the statement ----------------------------------------------------

  /** Resolves an access: tensor exists, rank matches, indices distinct, dims bound. */
  #access(a: AccessAst): TensorDeclAst {
    const name = a.tensor.text;
    const t = this.#tensors.get(name);
    if (t === undefined) {
      if (this.#scalars.has(name)) {
        this.#fail("E0118", `"${name}" is a scalar, not a tensor: it cannot be indexed`, a.span);
      }
      this.#fail("E0101", `Unknown tensor "${name}"`, a.tensor.span);
    }
    if (a.indices.length !== t.dims.length) {
      this.#fail(
        "E0103",
        `Tensor "${name}" has rank ${t.dims.length} but is accessed with ${a.indices.length} ${
          a.indices.length === 1 ? "index" : "indices"
        }`,
        a.span,
      );
    }
    const seen = new Set<string>();
    a.indices.forEach((ix, i) => {
      if (seen.has(ix.text)) {
        this.#fail(
          "E0119",
          `Index "${ix.text}" appears twice in one access of "${name}": diagonals are not GEMMs`,
          ix.span,
        );
      }
      seen.add(ix.text);
      const dimAst = t.dims[i]!;
      const dim = toDimRef(dimAst);
      const prev = this.#binding.get(ix.text);
      if (prev === undefined) {
        this.#binding.set(ix.text, { dim, tensor: name, span: ix.span });
      } else if (!dimEq(prev.dim, dim)) {
        this.#fail(
          "E0104",
          `Index "${ix.text}" spans two different dimensions: "${
            dimText(prev.dim)
          }" of "${prev.tensor}" (line ${this.#line(prev.span)}) and "${
            dimText(dim)
          }" of "${name}"`,
          ix.span,
        );
      }
    });
    return t;
  }

  /** Visits every access and name of an expression, in source order. */
  #resolve(e: ExprAst, output: string): void {
    switch (e.kind) {
      case "access":
        if (e.tensor.text === output) {
          this.#fail(
            "E0118",
            `The output "${output}" cannot be read on the right-hand side: pass it as a separate C tensor`,
            e.span,
          );
        }
        this.#access(e);
        return;
      case "number":
        return;
      case "name": {
        const n = e.name.text;
        if (this.#tensors.has(n)) {
          this.#fail("E0118", `"${n}" is a tensor: index it, as in ${n}[...]`, e.span);
        }
        if (!this.#scalars.has(n)) this.#fail("E0101", `Unknown name "${n}"`, e.span);
        return;
      }
      case "neg":
        return this.#resolve(e.operand, output);
      case "paren":
        return this.#resolve(e.inner, output);
      case "binary":
        this.#resolve(e.lhs, output);
        return this.#resolve(e.rhs, output);
      case "call": {
        const f = e.callee.text;
        const row = (FUNCTIONS as readonly string[]).includes(f) ? epilogueFn(f) : undefined;
        const arity = row?.arity ?? (isDtype(f) ? 1 : undefined);
        if (arity === undefined) {
          this.#fail(
            "E0116",
            `Unknown function "${f}": expected one of ${
              FUNCTIONS.join(", ")
            }, or a cast named by a dtype (${EPILOGUE_DTYPES.join(", ")})`,
            e.callee.span,
          );
        }
        if (isDtype(f) && !EPILOGUE_DTYPES.includes(f)) {
          this.#fail(
            "E0116",
            `Cannot cast to "${f}" in an epilogue: casts are to ${EPILOGUE_DTYPES.join(", ")}`,
            e.callee.span,
          );
        }
        if (e.args.length !== arity) {
          this.#fail(
            "E0116",
            `Function "${f}" takes ${arity} argument${
              arity === 1 ? "" : "s"
            }, got ${e.args.length}`,
            e.span,
          );
        }
        for (const a of e.args) this.#resolve(a, output);
        return;
      }
      case "popc":
        this.#resolve(e.lhs, output);
        return this.#resolve(e.rhs, output);
    }
  }

  /** Every product chain of an expression (maximal, flattened through parens and minus). */
  #products(e: ExprAst, out: Product[]): void {
    if (e.kind === "binary" && e.op === "*") {
      const factors: ExprAst[] = [];
      let neg = false;
      const walk = (x: ExprAst): void => {
        if (x.kind === "binary" && x.op === "*") {
          walk(x.lhs);
          walk(x.rhs);
        } else if (x.kind === "paren") {
          // Parentheses group, they add no factor: `(A[m, k]) * B[k, n]` is a contraction.
          walk(x.inner);
        } else if (x.kind === "neg") {
          neg = !neg;
          walk(x.operand);
        } else factors.push(x);
      };
      walk(e);
      out.push({ root: e, factors, negated: neg });
      for (const f of factors) this.#products(f, out);
      return;
    }
    switch (e.kind) {
      case "access":
      case "number":
      case "name":
        return;
      case "neg":
        return this.#products(e.operand, out);
      case "paren":
        return this.#products(e.inner, out);
      case "binary":
        this.#products(e.lhs, out);
        return this.#products(e.rhs, out);
      case "call":
        for (const a of e.args) this.#products(a, out);
        return;
      case "popc":
        out.push({ root: e, factors: [e.lhs, e.rhs], negated: false });
        return;
    }
  }

  #accesses(e: ExprAst, out: AccessAst[]): void {
    switch (e.kind) {
      case "access":
        out.push(e);
        return;
      case "number":
      case "name":
        return;
      case "neg":
        return this.#accesses(e.operand, out);
      case "paren":
        return this.#accesses(e.inner, out);
      case "binary":
        this.#accesses(e.lhs, out);
        return this.#accesses(e.rhs, out);
      case "call":
        for (const a of e.args) this.#accesses(a, out);
        return;
      case "popc":
        out.push(e.lhs, e.rhs);
        return;
    }
  }

  #statement(
    stmt: StatementAst,
    sched: ScheduleInfo,
  ): GemmKernel {
    // The output.
    const target = stmt.target;
    const outName = target.tensor.text;
    if (this.#scalars.has(outName)) {
      this.#fail(
        "E0115",
        `The output "${outName}" is a scalar: the output must be a tensor`,
        target.span,
      );
    }
    const outDecl = this.#access(target);
    if (outDecl.dims.length < 2) {
      this.#fail(
        "E0115",
        `The output "${outName}" has rank ${outDecl.dims.length}: a GEMM output is a matrix (rank 2) or a batch of them (rank 3)`,
        target.span,
      );
    }
    if (!EPILOGUE_DTYPES.includes(outDecl.dtype)) {
      this.#fail(
        "E0120",
        `The output "${outName}" has dtype "${outDecl.dtype}": outputs are ${
          EPILOGUE_DTYPES.join(", ")
        }`,
        outDecl.dtypeSpan,
      );
    }
    const lhs = target.indices.map((i) => i.text);
    const batchIx = lhs.length === 3 ? lhs[0]! : null;
    const rowIx = lhs[lhs.length - 2]!;
    const colIx = lhs[lhs.length - 1]!;

    this.#resolve(stmt.expr, outName);

    // Summed indices and the contraction.
    const all: AccessAst[] = [];
    this.#accesses(stmt.expr, all);
    const summed = (a: AccessAst) => a.indices.filter((i) => !lhs.includes(i.text));
    const summedAccesses = all.filter((a) => summed(a).length > 0);
    const products: Product[] = [];
    this.#products(stmt.expr, products);
    const candidates = products.filter((p) =>
      p.factors.filter((f) => f.kind === "access" && summed(f).length > 0).length >= 2
    );
    if (candidates.length === 0) {
      const stray = summedAccesses[0];
      if (stray !== undefined) {
        const ix = summed(stray)[0]!;
        this.#fail(
          "E0105",
          `No contraction: index "${ix.text}" is summed over "${stray.tensor.text}" alone; a contraction multiplies two tensors that share it`,
          stray.span,
        );
      }
      this.#fail(
        "E0105",
        `No contraction: no index is summed; a GEMM needs a product such as A[${rowIx}, k] * B[k, ${colIx}]`,
        stmt.expr.span,
      );
    }
    if (candidates.length > 1) {
      this.#fail(
        "E0106",
        `More than one contraction: the kernel computes one main loop; this is a second product over a summed index`,
        candidates[1]!.root.span,
      );
    }
    const main = candidates[0]!;
    const sumFactors = main.factors.filter((f): f is AccessAst =>
      f.kind === "access" && summed(f).length > 0
    );
    if (sumFactors.length > 2) {
      this.#fail(
        "E0107",
        `A contraction of more than two tensors: ${
          sumFactors.map((f) => `"${f.tensor.text}"`).join(", ")
        } share summed indices; a GEMM multiplies exactly two`,
        sumFactors[2]!.span,
      );
    }
    for (const a of summedAccesses) {
      if (!sumFactors.includes(a)) {
        this.#fail(
          "E0108",
          `Tensor "${a.tensor.text}" is indexed by the summed index "${
            summed(a)[0]!.text
          }" outside the contraction: epilogue tensors are indexed by output indices only`,
          a.span,
        );
      }
    }
    const [x, y] = sumFactors as [AccessAst, AccessAst];
    const sx = summed(x).map((i) => i.text);
    const sy = summed(y).map((i) => i.text);
    for (const [p, sp, q, sq] of [[x, sx, y, sy], [y, sy, x, sx]] as const) {
      for (const i of sp) {
        if (!sq.includes(i)) {
          this.#fail(
            "E0119",
            `Index "${i}" is summed but appears only in "${p.tensor.text}", not in "${q.tensor.text}"`,
            p.indices.find((ix) => ix.text === i)!.span,
          );
        }
      }
    }
    if (sx.length !== 1) {
      this.#fail(
        "E0119",
        `The contraction sums over ${sx.length} indices (${
          sx.map((i) => `"${i}"`).join(", ")
        }): a GEMM sums over exactly one`,
        cover(x.span, y.span),
      );
    }
    const kIx = sx[0]!;

    // Roles.
    const roleOf = (a: AccessAst): "A" | "B" => {
      const has = (i: string) => a.indices.some((ix) => ix.text === i);
      if (has(rowIx) && has(colIx)) {
        this.#fail(
          "E0119",
          `Operand "${a.tensor.text}" has both output indices "${rowIx}" and "${colIx}": each operand of the contraction carries one`,
          a.span,
        );
      }
      if (!has(rowIx) && !has(colIx)) {
        this.#fail(
          "E0119",
          `Operand "${a.tensor.text}" has neither output index "${rowIx}" nor "${colIx}"`,
          a.span,
        );
      }
      return has(rowIx) ? "A" : "B";
    };
    const rx = roleOf(x);
    const ry = roleOf(y);
    if (rx === ry) {
      const missing = rx === "A" ? colIx : rowIx;
      this.#fail(
        "E0115",
        `Output index "${missing}" does not appear in the contraction: "${x.tensor.text}" and "${y.tensor.text}" both carry "${
          rx === "A" ? rowIx : colIx
        }"`,
        cover(x.span, y.span),
      );
    }
    const aAcc = rx === "A" ? x : y;
    const bAcc = rx === "A" ? y : x;
    const aDecl = this.#tensors.get(aAcc.tensor.text)!;
    const bDecl = this.#tensors.get(bAcc.tensor.text)!;
    if (aDecl === bDecl) {
      // The kernel takes one pointer per role; A·A would need the same tensor as A and B.
      this.#fail(
        "E0118",
        `Tensor "${aDecl.name.text}" is both operands of the contraction: declare the second operand as its own tensor`,
        bAcc.span,
      );
    }

    const view = (
      acc: AccessAst,
      decl: TensorDeclAst,
      first: string,
      second: string,
    ): MatrixView => {
      const ix = acc.indices.map((i) => i.text);
      const batched = batchIx !== null && ix.includes(batchIx);
      if (batched && ix[0] !== batchIx) {
        this.#fail(
          "E0119",
          `The batch index "${batchIx}" must be the first index of "${acc.tensor.text}"`,
          acc.span,
        );
      }
      if (ix.length === 3 && !batched) {
        this.#fail(
          "E0119",
          `"${acc.tensor.text}" has rank 3 but its first index "${ix[0]}" is not the batch index${
            batchIx === null ? " (the output has no batch)" : ` "${batchIx}"`
          }`,
          acc.span,
        );
      }
      const mat = batched ? ix.slice(1) : ix;
      if (mat.length !== 2) {
        this.#fail(
          "E0103",
          `Operand "${acc.tensor.text}" must be a matrix indexed by "${first}" and "${second}"`,
          acc.span,
        );
      }
      const layout: Layout = decl.layout?.value ?? "row";
      const contiguous = layout === "row" ? mat[1]! : mat[0]!;
      return {
        tensor: acc.tensor.text,
        layout: contiguous === second ? "row" : "col",
        batched,
      };
    };
    const aView = view(aAcc, aDecl, rowIx, kIx);
    const bView = view(bAcc, bDecl, kIx, colIx);
    const dView = view(target, outDecl, rowIx, colIx);

    const dimOf = (i: string): DimRef => this.#binding.get(i)!.dim;
    const problem: Problem = {
      m: dimOf(rowIx),
      n: dimOf(colIx),
      k: dimOf(kIx),
      batch: batchIx === null ? null : dimOf(batchIx),
      indices: { m: rowIx, n: colIx, k: kIx, batch: batchIx },
      a: aView,
      b: bView,
      d: dView,
    };

    const math = this.#math(aDecl, bDecl, main, sched);

    // The epilogue.
    const roles = new Map<string, Role>([
      [aDecl.name.text, "A"],
      [bDecl.name.text, "B"],
      [outName, "D"],
    ]);
    const views: MatrixView[] = [];
    const epi = this.#epilogue(
      stmt.expr,
      main,
      { rowIx, colIx, batchIx },
      math,
      outDecl,
      roles,
      views,
      sumFactors,
    );

    // Parameters in declaration order.
    const params: Param[] = [];
    const dims: string[] = [];
    for (const item of this.#k.items) {
      if (item.kind === "tensorDecl") {
        const role = roles.get(item.name.text);
        if (role === undefined) {
          this.#fail(
            "E0117",
            `Tensor "${item.name.text}" is declared but not used`,
            item.name.span,
          );
        }
        for (const d of item.dims) {
          if (d.kind === "sym" && !dims.includes(d.name)) dims.push(d.name);
        }
        params.push(
          {
            kind: "tensor",
            name: item.name.text,
            dtype: item.dtype,
            dims: item.dims.map(toDimRef),
            layout: item.layout?.value ?? "row",
            align: item.align?.value ?? literalAlign(item),
            role,
            span: item.span,
          } satisfies TensorParam,
        );
      } else if (item.kind === "scalarDecl") {
        params.push({
          kind: "scalar",
          name: item.name.text,
          dtype: item.dtype,
          default: item.default?.value ?? null,
          span: item.span,
        });
      }
    }

    return {
      kind: "gemm",
      name: this.#k.name.text,
      target: this.#opts.target ?? sched.target ?? DEFAULT_TARGET,
      params,
      dims,
      problem,
      math,
      epilogue: { ...epi, views },
      schedule: sched.schedule,
      plan: {},
      scheduleSpans: sched.spans,
      span: this.#k.span,
      source: this.#src,
    };
  }

  #math(
    a: TensorDeclAst,
    b: TensorDeclAst,
    main: Product,
    sched: ScheduleInfo,
  ): MathSpec {
    const ta = a.dtype;
    const tb = b.dtype;
    const span = main.root.kind === "popc" ? main.root.span : cover(
      main.factors.find((f) => f.kind === "access" && f.tensor.text === a.name.text)!.span,
      main.factors.find((f) => f.kind === "access" && f.tensor.text === b.name.text)!.span,
    );
    const popc = main.root.kind === "popc" ? main.root.op : null;
    const illegal = (why: string): never =>
      this.#fail(
        "E0109",
        `Illegal operand types "${ta}" x "${tb}"${why}: legal are ${LEGAL_COMBOS}`,
        span,
      );
    const isF32 = (t: Dtype) => t === "f32" || t === "tf32";
    const isI8 = (t: Dtype) => t === "s8" || t === "u8";
    const isI4 = (t: Dtype) => t === "s4" || t === "u4";
    let acc: Dtype;
    let legalAcc: readonly Dtype[];
    if (popc !== null) {
      if (ta !== "b1" || tb !== "b1") illegal(" for popc (it takes b1 operands)");
      acc = "s32";
      legalAcc = ["s32"];
    } else if (ta === "b1" || tb === "b1") {
      return illegal(" (b1 operands need popc(A & B) or popc(A ^ B))");
    } else if (ta === "f16" && tb === "f16") {
      acc = "f32";
      legalAcc = ["f32", "f16"];
    } else if (ta === "bf16" && tb === "bf16") {
      acc = "f32";
      legalAcc = ["f32"];
    } else if (isF32(ta) && isF32(tb)) {
      acc = "f32";
      legalAcc = ["f32"];
    } else if (ta === "f64" && tb === "f64") {
      acc = "f64";
      legalAcc = ["f64"];
    } else if ((isI8(ta) && isI8(tb)) || (isI4(ta) && isI4(tb))) {
      acc = "s32";
      legalAcc = ["s32"];
    } else {
      return illegal("");
    }
    if (sched.accumulate !== undefined) {
      const want = sched.accumulate.value;
      if (!legalAcc.includes(want)) {
        this.#fail(
          "E0113",
          `Cannot accumulate in "${want}" with "${ta}" x "${tb}" operands: legal is ${
            legalAcc.join(" or ")
          }${want === "f16" ? " (f16 accumulation needs f16 operands)" : ""}`,
          sched.accumulate.span,
        );
      }
      acc = want;
    }
    let mode: MathMode = "tensor";
    if (sched.math !== undefined) {
      if (!isF32(ta) || !isF32(tb)) {
        this.#fail(
          "E0123",
          `"math ${sched.math.value}" applies to f32 operands only; these are "${ta}" x "${tb}"`,
          sched.math.span,
        );
      }
      mode = sched.math.value === "tf32"
        ? "tensor"
        : sched.math.value === "3xtf32"
        ? "3xtf32"
        : "simt";
    }
    return {
      a: ta,
      b: tb,
      mmaA: isF32(ta) && mode !== "simt" ? "tf32" : ta,
      mmaB: isF32(tb) && mode !== "simt" ? "tf32" : tb,
      acc,
      mode,
      op: popc === "&" ? "and.popc" : popc === "^" ? "xor.popc" : "mul",
    };
  }

  #epilogue(
    expr: ExprAst,
    main: Product,
    ix: { rowIx: string; colIx: string; batchIx: string | null },
    math: MathSpec,
    out: TensorDeclAst,
    roles: Map<string, Role>,
    views: MatrixView[],
    sumFactors: readonly AccessAst[],
  ): Omit<Epilogue, "views"> {
    let isFloat = DTYPE_INFO[out.dtype].float || math.acc === "f64" ||
      DTYPE_INFO[math.acc].float;
    const visit = (e: ExprAst): EpilogueExpr => {
      if (e === main.root) {
        const rest = main.factors.filter((f) =>
          main.root.kind === "popc" || !(sumFactors as readonly ExprAst[]).includes(f)
        );
        let r: EpilogueExpr = accNode();
        if (main.root.kind !== "popc") {
          // Keep the source order of the other factors around the accumulator.
          const firstSum = main.factors.findIndex((f) => !rest.includes(f));
          const before = main.factors.slice(0, firstSum).filter((f) => rest.includes(f));
          const after = main.factors.slice(firstSum).filter((f) => rest.includes(f));
          for (const f of before.reverse()) r = callNode("mul", [visit(f), r]);
          for (const f of after) r = callNode("mul", [r, visit(f)]);
        }
        return main.negated ? callNode("neg", [r]) : r;
      }
      switch (e.kind) {
        case "access": {
          const t = this.#tensors.get(e.tensor.text)!;
          if (!EPILOGUE_DTYPES.includes(t.dtype)) {
            this.#fail(
              "E0120",
              `Epilogue tensor "${t.name.text}" has dtype "${t.dtype}": epilogue tensors are ${
                EPILOGUE_DTYPES.join(", ")
              }`,
              e.span,
            );
          }
          if (DTYPE_INFO[t.dtype].float) isFloat = true;
          const names = e.indices.map((i) => i.text);
          const batched = ix.batchIx !== null && names.includes(ix.batchIx);
          if (batched && names[0] !== ix.batchIx) {
            this.#fail(
              "E0119",
              `The batch index "${ix.batchIx}" must be the first index of "${e.tensor.text}"`,
              e.span,
            );
          }
          const rows = names.includes(ix.rowIx);
          const cols = names.includes(ix.colIx);
          const prevRole = roles.get(e.tensor.text);
          const role: Role = rows && cols ? "C" : "bias";
          if (prevRole !== undefined && prevRole !== role) {
            this.#fail(
              "E0118",
              `Tensor "${e.tensor.text}" is used as ${prevRole} and as ${role}`,
              e.span,
            );
          }
          roles.set(e.tensor.text, role);
          if (rows && cols) {
            const mat = batched ? names.slice(1) : names;
            const contiguous = (t.layout?.value ?? "row") === "row" ? mat[1] : mat[0];
            const layout = contiguous === ix.colIx ? "row" : "col";
            const prev = views.find((v) => v.tensor === e.tensor.text);
            if (prev === undefined) views.push({ tensor: e.tensor.text, layout, batched });
            else if (prev.layout !== layout || prev.batched !== batched) {
              // One view per epilogue matrix: a load carries no index order of its own.
              this.#fail(
                "E0118",
                `Tensor "${e.tensor.text}" is read in two different index orders: an epilogue matrix is read one way`,
                e.span,
              );
            }
          }
          return loadNode(e.tensor.text, rows, cols, batched);
        }
        case "number":
          if (!Number.isInteger(e.value) || /[.eE]/.test(e.text)) isFloat = true;
          return constNode(e.value);
        case "name": {
          const s = this.#scalars.get(e.name.text)!;
          if (DTYPE_INFO[s.dtype].float) isFloat = true;
          return scalarNode(e.name.text);
        }
        case "neg":
          return callNode("neg", [visit(e.operand)]);
        case "paren":
          return visit(e.inner);
        case "binary":
          return callNode(e.op === "+" ? "add" : e.op === "-" ? "sub" : "mul", [
            visit(e.lhs),
            visit(e.rhs),
          ]);
        case "call": {
          const f = e.callee.text;
          const args = e.args.map(visit);
          if (isDtype(f)) {
            if (DTYPE_INFO[f].float) isFloat = true;
            return castNode(f, args[0]!);
          }
          const row = epilogueFn(f);
          if (row !== undefined && row.spelling.kind === "call") {
            if (row.domain === "float") isFloat = true;
            return callNode(f as EpilogueFnName, args);
          }
          throw new Error(`Unchecked function "${f}"`);
        }
        case "popc":
          throw new Error("A popc outside the contraction was not rejected");
      }
    };
    const e = visit(expr);
    const compute: ComputeType = math.acc === "f64" ? "f64" : isFloat ? "f32" : "s32";
    return { compute, expr: e };
  }
}
