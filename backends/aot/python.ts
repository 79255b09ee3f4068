/**
 * The Python artefact (`gemm compile --emit py`): one self-contained Python
 * module per DSL file that embeds the PTX of its kernels and exposes one
 * function per kernel, `<kernel>(A, B, ..., out=None, stream=None, *, pdl=False,
 * **scalars)` (plus `workspace=None` for split-K, before the `*`), taking PyTorch tensors or
 * CuPy arrays; `pdl=True` launches as a programmatic dependent of the previous work in the
 * stream (backends/aot/_python_pdl.ts). The module's check tables are the kernels' launch contracts
 * (backends/ptx/contract.ts) rendered as Python data; the rules that read them
 * are the runtime text of backends/aot/_python_runtime.ts.
 *
 * A grouped kernel's function (DESIGN §6.2) runs one problem, and has two
 * attributes: `<kernel>.grouped(problems, stream=None, *, pdl=False, **scalars)` (a list of
 * dicts of tensors by name; returns the outputs) and, for a kernel of A, B and D
 * alone, `<kernel>.moe(a, b, d, offs, stream=None, *, pdl=False, **scalars)` (row offsets into
 * one packed operand, as `torch._grouped_mm`'s); backends/aot/_python_grouped.ts.
 *
 * @module
 */

import { type CompiledKernel, ptxModule } from "../../compiler.ts";
import { type Dtype, DTYPE_INFO } from "../../ir/dtype.ts";
import {
  type ContractTensor,
  type LaunchContract,
  launchContract,
  MAX_DIM,
  MAX_STRIDE,
  WORKSPACE_ALIGN_BYTES,
} from "../ptx/contract.ts";
import { PYTHON_RUNTIME, runtimeNames } from "./_python_runtime.ts";
import { PYTHON_SPARSE } from "./_python_sparse.ts";
import { pdlNotes } from "./_pdl_doc.ts";
import { problemContract } from "./_group.ts";
import { withoutTensorMaps } from "../cuda/tensor_map.ts";
import { pythonTensorMapDoc, pythonTensorMaps } from "./_python_tmap.ts";

/** The tensor libraries a generated module accepts. */
type Lib = "torch" | "cupy";

/**
 * gemmc dtype -> the accepted dtype names per library (the first is the one
 * an allocated `out` gets). Sub-byte dtypes (s4, u4, b1) are packed along the
 * contiguous dimension, the lowest index in the least significant bits, into
 * a 1-byte integer tensor whose contiguous extent is the packed one (K/2 for
 * s4 and u4, K/8 for b1). CuPy has no bfloat16: a CuPy bf16 array holds the
 * raw bits as uint16 (and an e4m3 or e5m2 one as uint8).
 * tf32 operands are float32 tensors.
 */
const DTYPE_TABLE: Readonly<Record<Dtype, Readonly<Record<Lib, readonly string[]>>>> = {
  f64: { torch: ["float64"], cupy: ["float64"] },
  f32: { torch: ["float32"], cupy: ["float32"] },
  tf32: { torch: ["float32"], cupy: ["float32"] },
  f16: { torch: ["float16"], cupy: ["float16"] },
  bf16: { torch: ["bfloat16"], cupy: ["uint16"] },
  // sm90's 8-bit floats: PyTorch's float8 dtypes (e4m3 the finite "fn" one); CuPy has none,
  // its arrays hold the raw bits as uint8.
  e4m3: { torch: ["float8_e4m3fn"], cupy: ["uint8"] },
  e5m2: { torch: ["float8_e5m2"], cupy: ["uint8"] },
  s32: { torch: ["int32"], cupy: ["int32"] },
  s8: { torch: ["int8"], cupy: ["int8"] },
  u8: { torch: ["uint8"], cupy: ["uint8"] },
  s4: { torch: ["uint8", "int8"], cupy: ["uint8", "int8"] },
  u4: { torch: ["uint8", "int8"], cupy: ["uint8", "int8"] },
  b1: { torch: ["uint8", "int8"], cupy: ["uint8", "int8"] },
};

/** Options of {@link pythonModule}. */
export interface PythonModuleOptions {
  /** The DSL file the kernels came from, named in the module's header. */
  readonly source?: string;
}

const PY_KEYWORDS = new Set(
  ("False None True and as assert async await break class continue def del elif else except " +
    "finally for from global if import in is lambda nonlocal not or pass raise return try while " +
    "with yield").split(" "),
);

/** A Python value literal of JSON-like data, on one line. */
function pyFlat(v: unknown): string {
  if (v === null || v === undefined) return "None";
  if (typeof v === "boolean") return v ? "True" : "False";
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new Error(`Non-finite number ${v} in a Python table`);
    return String(v);
  }
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(pyFlat).join(", ")}]`;
  const entries = Object.entries(v as Record<string, unknown>);
  return `{${entries.map(([k, x]) => `${JSON.stringify(k)}: ${pyFlat(x)}`).join(", ")}}`;
}

/**
 * {@link pyFlat}, but a list or dict longer than 100 columns at `indent`
 * is spread over lines, one entry a line.
 */
function pyLiteral(v: unknown, indent = ""): string {
  const flat = pyFlat(v);
  if (indent.length + flat.length <= 100 || v === null || typeof v !== "object") return flat;
  const inner = indent + "    ";
  const lines = Array.isArray(v)
    ? v.map((x) => pyLiteral(x, inner))
    : Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${JSON.stringify(k)}: ${pyLiteral(x, inner)}`);
  const [open, close] = Array.isArray(v) ? ["[", "]"] : ["{", "}"];
  return `${open}\n${lines.map((l) => `${inner}${l},\n`).join("")}${indent}${close}`;
}

/** Python's builtins (3.11): a kernel function may not shadow one the runtime calls. */
const PY_BUILTINS = new Set(
  (
    "ArithmeticError AssertionError AttributeError BaseException BaseExceptionGroup " +
    "BlockingIOError BrokenPipeError BufferError BytesWarning ChildProcessError " +
    "ConnectionAbortedError ConnectionError ConnectionRefusedError ConnectionResetError " +
    "DeprecationWarning EOFError Ellipsis EncodingWarning EnvironmentError Exception " +
    "ExceptionGroup FileExistsError FileNotFoundError FloatingPointError FutureWarning " +
    "GeneratorExit IOError ImportError ImportWarning IndentationError IndexError " +
    "InterruptedError IsADirectoryError KeyError KeyboardInterrupt LookupError MemoryError " +
    "ModuleNotFoundError NameError NotADirectoryError NotImplemented NotImplementedError " +
    "OSError OverflowError PendingDeprecationWarning PermissionError ProcessLookupError " +
    "RecursionError ReferenceError ResourceWarning RuntimeError RuntimeWarning " +
    "StopAsyncIteration StopIteration SyntaxError SyntaxWarning SystemError SystemExit " +
    "TabError TimeoutError TypeError UnboundLocalError UnicodeDecodeError UnicodeEncodeError " +
    "UnicodeError UnicodeTranslateError UnicodeWarning UserWarning ValueError Warning " +
    "ZeroDivisionError abs aiter all anext any ascii bin bool breakpoint bytearray bytes " +
    "callable chr classmethod compile complex copyright credits delattr dict dir divmod " +
    "enumerate eval exec exit filter float format frozenset getattr globals hasattr hash help " +
    "hex id input int isinstance issubclass iter len license list locals map max memoryview " +
    "min next object oct open ord pow print property quit range repr reversed round set " +
    "setattr slice sorted staticmethod str sum super tuple type vars zi"
  ).split(" "),
);

/**
 * The module-level names of the runtime (its own, each starting with "_", and the public ones),
 * the sparse part's included (a module with a sparse A carries it; every module avoids its names,
 * so a kernel's Python name does not depend on another kernel).
 */
const MODULE_NAMES = new Set([
  ...[...runtimeNames()].filter((n) => n.startsWith("_")),
  ...[...(PYTHON_SPARSE.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? [])].filter((n) => n.startsWith("_")),
  "compress_sparse",
  "decompress_sparse",
  "SparsePatternError",
  "GemmcLaunchError",
  "set_backend",
  "backend_name",
]);

/** What a kernel function's body uses besides its arguments. */
const FUNCTION_NAMES = new Set([
  "_launch",
  "_KERNELS",
  "out",
  "stream",
  "workspace",
  "pdl",
  "scalars",
]);

/** What a grouped kernel's functions use besides their arguments (`grouped`, `moe`). */
const GROUPED_NAMES = new Set([...FUNCTION_NAMES, "problems", "a", "b", "d", "offs", "p"]);

/** A Python identifier for a DSL name, clear of keywords, the names in `avoid` and `taken`. */
function pyName(name: string, avoid: ReadonlySet<string>, taken: ReadonlySet<string>): string {
  let n = name;
  while (PY_KEYWORDS.has(n) || avoid.has(n) || taken.has(n)) n += "_";
  return n;
}

/** What a kernel function's name may not be: a runtime name or a builtin. */
const KERNEL_AVOID = new Set([...MODULE_NAMES, ...PY_BUILTINS]);

/** The table of one kernel: its launch contract, its parameters in ABI order. */
function kernelTable(k: CompiledKernel, indent: string): string {
  const c = contractOf(k);
  const params = k.manifest.params.map((p) => [
    p.role === "workspace" ? "workspace" : p.kind,
    p.name,
    p.ptx,
  ]);
  const g = k.manifest.group;
  const { scalars } = argNames(c, g !== undefined);
  const tmaps = pythonTensorMaps(k.manifest);
  return pyLiteral({
    ...c,
    params,
    ...(tmaps.length > 0 ? { tmaps } : {}),
    scalarArgs: Object.fromEntries(scalars),
    ...(g !== undefined ? { group: { entryBytes: g.entryBytes, fields: g.fields } } : {}),
  }, indent);
}

/** The contract the module checks: the kernel's, or a grouped kernel's of one problem. */
function contractOf(k: CompiledKernel): LaunchContract {
  return k.manifest.group !== undefined
    ? problemContract(k.manifest)
    : launchContract(withoutTensorMaps(k.manifest));
}

/** The Python names of a kernel's input tensors and scalars (keyword arguments), by DSL name. */
function argNames(
  c: LaunchContract,
  grouped = false,
): { inputs: string[]; scalars: [string, string][] } {
  const taken = new Set<string>();
  const avoid = grouped ? GROUPED_NAMES : FUNCTION_NAMES;
  const name = (n: string) => {
    const p = pyName(n, avoid, taken);
    taken.add(p);
    return p;
  };
  const inputs = c.tensors.filter((t) => !t.output).map((t) => name(t.name));
  return { inputs, scalars: c.scalars.map((s) => [name(s.name), s.name]) };
}

/** A docstring's lines about the `pdl` keyword (backends/aot/_python_pdl.ts) for a kernel. */
function pdlDoc(c: LaunchContract): string[] {
  return [
    "pdl: True launches as a programmatic dependent of the previous work in the stream (sm_90+:",
    "    cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION): the kernel",
    "    may start while the previous kernel finishes. cuda-python only: the CuPy backend raises",
    "    RuntimeError (so do cuda-python bindings before CUDA 11.8), nothing launched. Default",
    "    False (cuLaunchKernel).",
    ...pdlNotes(c, "pdl=True").map((l) => "    " + l),
  ];
}

/** The Python function of one kernel. */
function kernelFunction(k: CompiledKernel, fnName: string): string {
  if (k.manifest.group !== undefined) return groupedFunction(k, fnName);
  const c = launchContract(withoutTensorMaps(k.manifest));
  const inputs = c.tensors.filter((t) => !t.output);
  const output = c.tensors.find((t) => t.output)!;
  const { inputs: args, scalars } = argNames(c);
  const decl = (t: typeof c.tensors[number]) =>
    t.sparse !== undefined
      ? sparseDecl(t)
      : `${t.name}: ${t.dtype}[${t.shape.join(", ")}] ${t.layout}` +
        (t.strides !== undefined ? ` strides(${t.strides.join(", ")})` : "") +
        `, align ${t.alignElems}`;
  const sparse = c.tensors.some((t) => t.sparse !== undefined);
  const doc = [
    `Launches gemmc kernel "${c.name}" and returns ${output.name} (allocated when out is None).`,
    "",
    "Tensors (PyTorch CUDA tensors or CuPy arrays, dense in the declared layout; one declared",
    "with strides: any view whose contiguous dimension has stride 1, its strides the values):",
    ...inputs.map((t, i) => `    ${args[i]}: ${decl(t)}`),
    `    out (${output.name}): ${decl(output)}`,
    ...(sparse ? sparseCall(c, fnName, args) : []),
    ...(c.scalars.length > 0 ? ["Scalars (keyword arguments):"] : []),
    ...c.scalars.map((s, i) =>
      `    ${scalars[i]![0]}: ${s.dtype}` + (s.default !== null ? ` = ${s.default}` : " (required)")
    ),
    "stream: a torch/CuPy stream or a CUstream handle (default: the current stream).",
    ...pythonTensorMapDoc(k.manifest),
    ...(c.workspace !== null
      ? [
        `workspace: split-K scratch, ${c.workspace.bytesPerTile} bytes per output tile, ` +
        `${WORKSPACE_ALIGN_BYTES}-byte aligned, zeroed before its first use (each launch`,
        "    leaves it zeroed); default: one kept per device and stream.",
      ]
      : []),
    ...pdlDoc(c),
    "Raises GemmcLaunchError (a ValueError) naming the tensor and the value; nothing is launched.",
  ];
  const ws = c.workspace !== null ? ", workspace=None" : "";
  const wsArg = c.workspace !== null ? "workspace" : "None";
  return [
    `def ${fnName}(${[...args, "out=None", "stream=None"].join(", ")}${ws}, *, pdl=False, ` +
    "**scalars):",
    `    """${
      doc.map((l, i) => i === 0 || l === "" ? l : "    " + l).join("\n").replaceAll("\\", "\\\\")
    }\n    """`,
    `    return _launch(_KERNELS[${JSON.stringify(c.name)}], (${
      args.map((a) => a + ",").join(" ")
    }), out, stream, ${wsArg}, scalars, pdl)`,
  ].join("\n");
}

/** A sparse A's buffer as a kernel's docstring lists it (ContractTensor.sparse). */
function sparseDecl(t: ContractTensor): string {
  const s = t.sparse!;
  const k = t.shape.at(-1)!;
  const lead = t.shape.slice(0, -1).map(String);
  if (s.storage === "values") {
    const packed = t.bits < 8
      ? `, packed ${8 / t.bits} a byte (uint8/int8 [${
        [...lead, typeof k === "number" ? k / 4 : `${k}/4`].join(", ")
      }])`
      : "";
    return `${t.name}: ${t.dtype}[${t.shape.join(", ")}] row sparse: the kept values, ` +
      `[${
        [...lead, typeof k === "number" ? k / 2 : `${k}/2`].join(", ")
      }] row-major${packed}, align ${t.alignElems} kept values`;
  }
  const w = typeof k === "number" ? Math.ceil(k / s.kPerWord) : `ceil(${k} / ${s.kPerWord})`;
  return `${t.name}: the metadata of the sparse A, int32 or uint32 [${
    [...lead, w].join(", ")
  }] row-major`;
}

/** The module docstring's example call of a kernel with a sparse A. */
function sparseExample(k: CompiledKernel, fnName: string): string[] {
  const c = launchContract(withoutTensorMaps(k.manifest));
  const { inputs: args } = argNames(c);
  const a = c.tensors.find((t) => t.sparse?.storage === "values")!;
  const call = c.tensors.filter((t) => !t.output).map((t, i) =>
    t === a ? `${args[i]}=values` : t.sparse !== undefined ? `${args[i]}=meta` : `${args[i]}=...`
  );
  return [
    `    values, meta = compress_sparse(${a.name}_dense, ${JSON.stringify(a.dtype)}, prune=True)`,
    `    ${c.tensors.find((t) => t.output)!.name} = ${fnName}(${call.join(", ")})`,
  ];
}

/** How a kernel with a sparse A is called (the docstring's lines). */
function sparseCall(c: LaunchContract, fnName: string, args: readonly string[]): string[] {
  const a = c.tensors.find((t) => t.sparse?.storage === "values")!;
  const inputs = c.tensors.filter((t) => !t.output);
  const call = inputs.map((t, i) =>
    t === a ? `${args[i]}=values` : t.sparse !== undefined ? `${args[i]}=meta` : `${args[i]}=...`
  );
  return [
    `${a.name} is structured-sparse (DESIGN 6.3): compress a dense ${a.name} [.., M, K] first, then`,
    `    values, meta = compress_sparse(${a.name}_dense, ${JSON.stringify(a.dtype)}, prune=True)`,
    `    ${fnName}(${call.join(", ")})`,
    "compress_sparse (in this module) keeps a torch input's device, gives the values in its",
    "dtype (s4/u4: packed uint8) and the metadata as int32: what the call takes as is; for",
    "CuPy, cupy.asarray() its numpy results. Without prune=True a dense A that breaks the",
    "pattern raises SparsePatternError.",
  ];
}

/** The Python function of a grouped kernel, with its `grouped` and `moe` attributes. */
function groupedFunction(k: CompiledKernel, fnName: string): string {
  const c = problemContract(k.manifest);
  const inputs = c.tensors.filter((t) => !t.output);
  const output = c.tensors.find((t) => t.output)!;
  const { inputs: args, scalars } = argNames(c, true);
  const decl = (t: typeof c.tensors[number]) =>
    `${t.name}: ${t.dtype}[${t.shape.join(", ")}] ${t.layout}` +
    (t.strides !== undefined ? ` strides(${t.strides.join(", ")})` : "") +
    `, align ${t.alignElems}`;
  const role = (r: string) => c.tensors.find((t) => t.role === r);
  const moe = c.tensors.length === 3 && role("A") && role("B") && role("D");
  const scalarDoc = [
    ...(c.scalars.length > 0 ? ["Scalars (keyword arguments, shared by every problem):"] : []),
    ...c.scalars.map((s, i) =>
      `    ${scalars[i]![0]}: ${s.dtype}` + (s.default !== null ? ` = ${s.default}` : " (required)")
    ),
    "stream: a torch/CuPy stream or a CUstream handle (default: the current stream).",
    ...pdlDoc(c),
  ];
  const q = JSON.stringify(c.name);
  const docstring = (lines: string[]) =>
    `    """${
      lines.map((l, i) => i === 0 || l === "" ? l : "    " + l).join("\n").replaceAll("\\", "\\\\")
    }\n    """`;
  const one = [
    `Launches grouped gemmc kernel "${c.name}" on one problem and returns ${output.name}.`,
    "",
    `The same as ${fnName}.grouped([{...}]) of one problem (DESIGN 6.2). Tensors:`,
    ...inputs.map((t, i) => `    ${args[i]}: ${decl(t)}`),
    `    out (${output.name}): ${decl(output)}`,
    ...scalarDoc,
    "Raises GemmcLaunchError (a ValueError); nothing is launched.",
  ];
  const grouped = [
    `Launches grouped gemmc kernel "${c.name}" once over a list of problems.`,
    "",
    "problems: a list of dicts of PyTorch CUDA tensors or CuPy arrays by tensor name, each",
    "    checked as the ordinary call would check it (sizes from the shapes; strided views",
    "    where declared); one without its output gets one allocated. A problem with M or N 0",
    "    does nothing (its tensors may be empty, even null). Tensors:",
    ...c.tensors.map((t) => `    ${decl(t)}`),
    ...scalarDoc,
    "The table is built on the host and copied on the stream into a device buffer kept per",
    "device and stream; the grid is [min(tiles, SMs x blocks per SM), 1, 1]. No problem: no launch.",
    "Returns each problem's output. Raises GemmcLaunchError (a ValueError), each line naming",
    'the problem ("Problem i: ..."); nothing is launched.',
  ];
  const moeDoc = [
    `Launches grouped gemmc kernel "${c.name}" on the mixture-of-experts form; returns d.`,
    "",
    `a (${role("A")?.name}): [T, ...] the tokens, sorted by expert (rows not contiguous).`,
    `b (${role("B")?.name}): [E, ...] one matrix per expert, b[g] as the ordinary call takes`,
    `    ${
      role("B")?.name
    } (e.g. col-major [K, N]: PyTorch weights [E, N, K] transposed, w.transpose(1, 2)).`,
    `d (${
      role("D")?.name
    }): [T, ...] the output (None: allocated); rows past the last offset untouched.`,
    "offs: E cumulative end rows (as torch._grouped_mm's offs): expert g takes rows",
    "    offs[g-1]..offs[g] (from 0 for g = 0). A list of ints, or an integer tensor: a GPU one",
    "    is copied to the host first (shortcut: that waits for the device).",
    ...scalarDoc,
    "The whole operands are checked once (every slice lies within them).",
    "Raises GemmcLaunchError (a ValueError); nothing is launched.",
  ];
  const hidden = `_gemmc_${fnName}`;
  return [
    `def ${fnName}(${[...args, "out=None", "stream=None"].join(", ")}, *, pdl=False, **scalars):`,
    docstring(one),
    `    p = dict(zip([${inputs.map((t) => JSON.stringify(t.name)).join(", ")}], (${
      args.map((a) => a + ",").join(" ")
    })))`,
    `    if out is not None:`,
    `        p[${JSON.stringify(output.name)}] = out`,
    `    return _grouped(_KERNELS[${q}], [p], stream, scalars, pdl)[0]`,
    "",
    "",
    `def ${hidden}_grouped(problems, stream=None, *, pdl=False, **scalars):`,
    docstring(grouped),
    `    return _grouped(_KERNELS[${q}], problems, stream, scalars, pdl)`,
    "",
    "",
    ...(moe
      ? [
        `def ${hidden}_moe(a, b, d, offs, stream=None, *, pdl=False, **scalars):`,
        docstring(moeDoc),
        `    return _moe(_KERNELS[${q}], a, b, d, offs, stream, scalars, pdl)`,
        "",
        "",
        `${fnName}.moe = ${hidden}_moe`,
      ]
      : []),
    `${fnName}.grouped = ${hidden}_grouped`,
    `del ${hidden}_grouped${moe ? `, ${hidden}_moe` : ""}`,
  ].join("\n");
}

/**
 * A Python module for compiled kernels: the PTX embedded, the launch
 * contracts as tables, the runtime, and one function per kernel.
 *
 * @param kernels The compiled kernels (one target).
 * @param options The source file name for the header.
 * @returns The module's text.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { compile } from "../../compiler.ts";
 * import { pythonModule } from "./python.ts";
 * const r = compile(`kernel k { A: f16[M, K] row  B: f16[K, N] col  D: f32[M, N] row
 *   D[m, n] = A[m, k] * B[k, n] }`);
 * const py = pythonModule(r.kernels);
 * ok(py.includes("def k(A, B, out=None, stream=None, *, pdl=False, **scalars):"));
 * ok(py.includes(".visible .entry k("));
 * ```
 */
export function pythonModule(
  kernels: readonly CompiledKernel[],
  options: PythonModuleOptions = {},
): string {
  if (kernels.length === 0) throw new Error("pythonModule: no kernels");
  const taken = new Set<string>();
  const fnNames = kernels.map((k) => {
    const n = pyName(k.name, KERNEL_AVOID, taken);
    taken.add(n);
    return n;
  });
  const ptxLines = ptxModule(kernels).split("\n").map((l) => JSON.stringify(l));
  const dtypes = Object.fromEntries(
    (Object.keys(DTYPE_INFO) as Dtype[]).map((d) => [d, DTYPE_TABLE[d]]),
  );
  const from = options.source !== undefined ? ` from ${options.source}` : "";
  const sparseIdx = kernels.flatMap((k, i) =>
    k.manifest.group === undefined && k.manifest.params.some((p) => p.sparse !== undefined)
      ? [i]
      : []
  );
  const sparse = sparseIdx.map((i) => fnNames[i]!);
  const example = sparseIdx.length > 0 ? sparseExample(kernels[sparseIdx[0]!]!, sparse[0]!) : [];
  const sparseNames = sparse.length > 0
    ? ["compress_sparse", "decompress_sparse", "SparsePatternError"]
    : [];
  return [
    `# Generated by gemmc (gemm compile --emit py)${from}. Do not edit.`,
    `"""gemmc kernels: ${fnNames.join(", ")}.`,
    "",
    "Each function checks its arguments against the kernel's launch contract",
    "(dtype, shape, layout, alignment, device, sizes, scalars, overlap) and raises",
    "GemmcLaunchError before anything runs, then launches on the given stream",
    "(default: the current PyTorch or CuPy stream) and returns the output.",
    "The PTX is loaded through cuda-python or CuPy: set_backend(), or the",
    'environment variable GEMMC_PY_BACKEND ("auto", "cuda-python", "cupy").',
    "pdl=True (every function, keyword only) launches as a programmatic dependent of the",
    "previous work in the stream (sm_90+, cuLaunchKernelEx; cuda-python only).",
    "Sub-byte dtypes (s4, u4, b1) are packed along the contiguous dimension into",
    "uint8/int8 tensors; bf16 CuPy arrays hold the raw bits as uint16.",
    ...(sparse.length > 0
      ? [
        "",
        `Structured-sparse A (${sparse.join(", ")}; DESIGN 6.3): such a kernel takes A as two`,
        "tensors, the kept values A ([.., M, K/2] row-major; s4/u4 packed uint8 [.., M, K/4])",
        "and the metadata A_meta (int32 or uint32 [.., M, ceil(K / (8 * group))] row-major).",
        "compress_sparse(a, dtype, prune=False) -> (values, meta) makes both from a dense A",
        "(numpy, or torch: torch results on its device, meta int32), e.g.",
        ...example,
        "decompress_sparse(values, meta, dtype, K) is its inverse; SparsePatternError (a",
        "ValueError) is what compress_sparse raises for a dense A that breaks the pattern.",
        "Both need numpy.",
      ]
      : []),
    '"""',
    "",
    `__all__ = [${
      ["GemmcLaunchError", "set_backend", "backend_name", ...sparseNames, ...fnNames].map((n) =>
        JSON.stringify(n)
      )
        .join(", ")
    }]`,
    "",
    `_MAX_DIM = ${MAX_DIM}`,
    `_MAX_STRIDE = ${MAX_STRIDE}`,
    `_WORKSPACE_ALIGN_BYTES = ${WORKSPACE_ALIGN_BYTES}`,
    `_DTYPES = ${pyLiteral(dtypes)}`,
    "# The launch contract of every kernel (backends/ptx/contract.ts launchContract).",
    "_KERNELS = {",
    ...kernels.map((k) => `    ${JSON.stringify(k.name)}: ${kernelTable(k, "    ")},`),
    "}",
    '_PTX = "\\n".join([',
    ...ptxLines.map((l) => `    ${l},`),
    "])",
    PYTHON_RUNTIME + (sparse.length > 0 ? PYTHON_SPARSE : ""),
    ...kernels.map((k, i) => "\n" + kernelFunction(k, fnNames[i]!) + "\n"),
  ].join("\n");
}
