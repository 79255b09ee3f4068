/**
 * The C artefact (`gemm compile --emit c`): one self-contained C file for a
 * module of kernels, a header part and, behind `#define GEMMC_IMPLEMENTATION`,
 * the implementation (the single-file-library convention of stb). The PTX is
 * embedded as a string; `gemmc_load()` loads it through the CUDA driver API and
 * `gemmc_<kernel>_launch(stream, <tensors>, <dims>, <strides>, <scalars>)`
 * (ABI order; a runtime stride is an `int64_t` count of elements, DESIGN.md
 * §6.1, given always: C has no dense default) checks a launch
 * against the kernel's launch contract (backends/ptx/contract.ts, printed here
 * as a table per kernel and checked by the runtime of _c_runtime.ts) and
 * launches it asynchronously on the stream.
 *
 * A structured-sparse A (`A: f16[M, K] row sparse`, DESIGN §6.3) is two device pointers:
 * `A`, the kept values (`[batch?, M, K/2]` row-major), then `A_meta`, the canonical metadata
 * (u32 words, `[batch?, M, ceil(K / kPerWord)]` row-major); the table marks them (`sparse`
 * 1 and 2) and the runtime checks and sizes them by their stored extents, as contract.ts.
 *
 * Split-K kernels take two more arguments, `CUdeviceptr workspace, size_t
 * workspace_bytes`: the caller's workspace (checked like the Deno path's, and
 * zeroed by the caller before its first launch), or 0 for a workspace gemmc
 * allocates, zeroes and keeps per kernel (grown when the sizes need more; one
 * stream at a time may use it: give your own for concurrent launches).
 *
 * A grouped kernel (DESIGN §6.2) gets, instead of `_launch(...)` with sizes, a
 * problem struct `gemmc_<kernel>_problem` (its tensors' `CUdeviceptr`s, its
 * strides as `int64_t`, its dims as `uint32_t`, in table order),
 * `gemmc_<kernel>_table_bytes(count)`, `gemmc_<kernel>_table(problems, count,
 * table, table_bytes, &total_tiles)` (each problem checked as its ordinary launch
 * would be, the messages starting "Problem i: "; the table written as
 * backends/ptx/group_table.ts writes it), `gemmc_<kernel>_launch(stream,
 * device_table, count, total_tiles, <scalars>)` (the persistent grid from the
 * SM count and the kernel's occupancy, found once per gemmc_load()) and
 * `gemmc_<kernel>_run(stream, problems, count, host_table, device_table,
 * table_bytes, <scalars>)` (table, `cuMemcpyHtoDAsync`, launch).
 *
 * An sm90 kernel that loads its operands by TMA (docs/ARCHITECTURE.md §3.4) takes the same
 * arguments: its launch function builds each tensor map from the manifest's rule (printed as a
 * table, evaluated and encoded by backends/aot/_tensor_map_c.ts) and passes the 128-byte
 * `CUtensorMap`s by value after every other parameter.
 *
 * `gemmc_set_pdl(int on)` (backends/aot/_pdl_c.ts) turns programmatic dependent launch on or off
 * for every later launch of the file's kernels, ordinary and grouped: on, each goes through
 * `cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`; the launch
 * functions' signatures are the same either way.
 *
 * @module
 */

import type { CompiledKernel } from "../../compiler.ts";
import { ptxModule } from "../../compiler.ts";
import {
  type ContractTensor,
  type LaunchContract,
  launchContract,
  tensorView,
} from "../ptx/contract.ts";
import {
  C_RUNTIME_DECLS,
  C_RUNTIME_FUNCTIONS,
  C_RUNTIME_GROUPED,
  C_RUNTIME_INCLUDES,
  C_RUNTIME_TYPES,
} from "./_c_runtime.ts";
import type { KernelManifest } from "../ptx/manifest.ts";
import { problemContract } from "./_group.ts";
import { type TensorMapParam, tensorMapParams, withoutTensorMaps } from "../cuda/tensor_map.ts";
import {
  C_TMAP_FUNCTIONS,
  C_TMAP_TYPES,
  cTensorMapDocs,
  cTensorMapLaunch,
  cTensorMapTable,
} from "./_tensor_map_c.ts";
import { C_LAUNCH_FUNCTIONS, C_PDL_DECLS } from "./_pdl_c.ts";
import { pdlNotes } from "./_pdl_doc.ts";

/** C and C++ keywords a DSL name might be (they get a `_` appended), and the generated locals. */
const RESERVED = new Set(
  ("auto bool break case catch char class const continue default delete do double else enum " +
    "explicit export extern false float for friend goto if inline int long mutable namespace new " +
    "operator private protected public register restrict return short signed sizeof static " +
    "struct switch template this throw true try typedef typename union unsigned using virtual " +
    "void volatile while and or not xor stream workspace workspace_bytes").split(" "),
);

/** A DSL name as a C identifier. */
function cName(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`Name "${name}" is not a C name`);
  return RESERVED.has(name) || name.startsWith("gemmc_") ? `${name}_` : name;
}

/** A C string literal. */
function cString(s: string): string {
  return `"${s.replace(/[\\"?]/g, (c) => `\\${c}`).replace(/\n/g, "\\n").replace(/\t/g, "\\t")}"`;
}

/** The C type of a scalar's PTX type. */
const SCALAR_C_TYPE = { f32: "float", f64: "double", s32: "int32_t" } as const;

/**
 * A `gemmc_extent` initializer: a runtime dimension's number, a runtime
 * stride's (after the dims), or a constant.
 */
function extent(c: LaunchContract, d: string | number): string {
  if (typeof d === "number") return `{-1, ${d}LL}`;
  const i = [...c.dims, ...c.strides].findIndex((x) => x.name === d);
  if (i < 0) throw new Error(`Kernel "${c.name}": "${d}" is not a runtime dimension or stride`);
  return `{${i}, 0}`;
}

/** The `has, extent` pair of an optional view entry. */
function optExtent(c: LaunchContract, d: string | number | null): [string, string] {
  return d === null ? ["0", "{-1, 0}"] : ["1", extent(c, d)];
}

/** The view fields of a `gemmc_tensor` initializer (contract.ts TensorView). */
function viewFields(c: LaunchContract, t: ContractTensor): string {
  const v = tensorView(t);
  if (v === null) return "0, 0, 0, 0, 0, 0, {-1, 0}, {-1, 0}, {-1, 0}, {-1, 0}";
  const [hb, b] = optExtent(c, v.batch);
  const [hr, r] = optExtent(c, v.rows);
  const [hsb, sb] = optExtent(c, v.batchStride);
  const [hsm, sm] = optExtent(c, v.matrixStride);
  return `1, ${
    t.strides !== undefined ? 1 : 0
  }, ${hb}, ${hr}, ${hsb}, ${hsm}, ${b}, ${r}, ${sb}, ${sm}`;
}

/** A `gemmc_tensor` initializer. */
function tensorRow(c: LaunchContract, t: ContractTensor): string {
  if (!Number.isInteger(t.alignBytes)) {
    throw new Error(`Tensor "${t.name}": alignment of ${t.alignBytes} bytes is not whole`);
  }
  if (t.shape.length > 4) throw new Error(`Tensor "${t.name}": rank ${t.shape.length} above 4`);
  const shape = [...t.shape.map((d) => extent(c, d))];
  while (shape.length < 4) shape.push("{-1, 1}");
  const leading = t.leading === null ? "0, {-1, 1}" : `1, ${extent(c, t.leading)}`;
  return `  {${cString(t.name)}, ${cString(t.dtype)}, ${t.bits}ULL, ${t.output ? 1 : 0}, ` +
    `${t.role === "C" ? 1 : 0}, ${t.alignElems}LL, ${t.alignBytes}ULL, ${t.shape.length}, ` +
    `{${shape.join(", ")}}, ${leading}, ${viewFields(c, t)}, ` +
    `${t.sparse === undefined ? 0 : t.sparse.storage === "values" ? 1 : 2}, ` +
    `${t.sparse?.kPerWord ?? 0}LL}`;
}

/** A sparse A's pattern, by elements per metadata word (8 nibbles, each a group). */
function sparsePattern(kPerWord: number): string {
  const group = kPerWord / 8;
  return group === 2 ? "1:2" : group === 8 ? "4:8 in pairs" : "2:4";
}

/** A sparse A's stored contiguous extent as a doc shows it: `K/2`, or `ceil(K / 32)`. */
function storedDim(t: ContractTensor, d: string | number): string {
  const s = t.sparse!;
  if (typeof d === "number") {
    return String(s.storage === "values" ? d / 2 : Math.ceil(d / s.kPerWord));
  }
  return s.storage === "values" ? `${d}/2` : `ceil(${d} / ${s.kPerWord})`;
}

/**
 * The header's line about one tensor argument: its declaration and, for a sparse A's two
 * buffers, what they hold (contract.ts ContractTensor.sparse, manifest.ts ManifestParam.sparse).
 */
function tensorDoc(t: ContractTensor): string {
  const address = `(address a multiple of ${t.alignBytes} bytes)`;
  if (t.sparse !== undefined) {
    const shape = t.shape.map((d, i) => i === t.shape.length - 1 ? storedDim(t, d) : String(d));
    const pattern = sparsePattern(t.sparse.kPerWord);
    if (t.sparse.storage === "values") {
      return ` *   ${t.name}: ${t.dtype}[${
        t.shape.join(", ")
      }] ${t.layout} sparse (${pattern} along ` +
        `${t.shape.at(-1)}): the kept values,\n *     ${t.dtype}[${shape.join(", ")}] row-major` +
        (t.bits < 8 ? ` (packed, ${8 / t.bits} a byte)` : "") + `, align ${t.alignElems} ` +
        `kept values ${address}`;
    }
    return ` *   ${t.name}: the metadata of the sparse A: uint32_t[${
      shape.join(", ")
    }] row-major,\n` +
      ` *     ${address}, canonical (numerics/sparse.ts: a 4-bit nibble a group of ` +
      `${t.sparse.kPerWord / 8} along ${t.shape.at(-1)}, the lowest\n *     group in the low ` +
      `bits; compressSparse or the Python artefact's compress_sparse write it)`;
  }
  return ` *   ${t.name}: ${t.dtype}[${t.shape.join(", ")}] ${t.layout}` +
    (t.strides !== undefined ? ` strides(${t.strides.join(", ")})` : "") +
    `, align ${t.alignElems} ${address}${t.output ? ", written" : ""}`;
}

/** The C names of a kernel's arguments, by kind. */
interface CArgs {
  readonly fn: string;
  readonly tensors: readonly string[];
  readonly dims: readonly string[];
  readonly strides: readonly string[];
  readonly scalars: readonly string[];
  readonly split: boolean;
  /** The TMA tensor maps (sm90) the launch function builds, after every other parameter. */
  readonly maps: readonly TensorMapParam[];
}

function cArgs(c: LaunchContract, maps: readonly TensorMapParam[], grouped = false): CArgs {
  // A grouped kernel's functions take these besides the scalars.
  const taken = new Set(grouped ? GROUPED_LOCALS : []);
  const scalar = (n: string) => {
    let x = cName(n);
    while (taken.has(x)) x += "_";
    return x;
  };
  return {
    fn: `gemmc_${cName(c.name)}`,
    tensors: c.tensors.map((t) => cName(t.name)),
    dims: c.dims.map((d) => cName(d.name)),
    strides: c.strides.map((s) => cName(s.name)),
    scalars: c.scalars.map((s) => scalar(s.name)),
    split: c.workspace !== null,
    maps,
  };
}

/** The parameter names of a grouped kernel's functions, which a scalar's name must avoid. */
const GROUPED_LOCALS = [
  "problems",
  "count",
  "table",
  "table_bytes",
  "total_tiles",
  "host_table",
  "device_table",
];

/**
 * The kernel's table: dimensions, tensors, scalars and the `gemmc_kernel` itself
 * (for a grouped kernel, those of one problem).
 */
function kernelTable(c: LaunchContract, a: CArgs, grouped: boolean): string {
  const p = a.fn;
  const g = c.gridPlan;
  const lines: string[] = [];
  const values = [...c.dims, ...c.strides];
  if (values.length > 0) {
    lines.push(
      `static const char *const ${p}_dims[${values.length}] = {${
        values.map((d) => cString(d.name)).join(", ")
      }};`,
    );
  }
  lines.push(
    `static const gemmc_tensor ${p}_tensors[${c.tensors.length}] = {`,
    c.tensors.map((t) => tensorRow(c, t)).join(",\n"),
    "};",
  );
  if (c.scalars.length > 0) {
    lines.push(
      `static const gemmc_scalar ${p}_scalars[${c.scalars.length}] = {${
        c.scalars.map((s) => `{${cString(s.name)}, ${cString(s.dtype)}}`).join(", ")
      }};`,
    );
  }
  const batch = g.batch === null ? "{-1, 1}, 0" : `${extent(c, g.batch)}, 1`;
  lines.push(
    `static const gemmc_kernel ${p}_kernel = {${cString(c.name)}, ${cString(c.entry)}, ` +
      `{${c.block.join(", ")}}, ${c.dynamicSmemBytes}, ${g.tileM}, ${g.tileN}, ${g.swizzle}, ` +
      `${g.splitK}, ${extent(c, g.m)}, ${extent(c, g.n)}, ${batch}, ` +
      `${
        c.workspace?.bytesPerTile ?? 0
      }ULL, ${c.tensors.length}, ${p}_tensors, ${c.dims.length}, ` +
      `${values.length > 0 ? `${p}_dims` : "0"}, ${c.strides.length}, ${c.scalars.length}, ` +
      `${c.scalars.length > 0 ? `${p}_scalars` : "0"}, ${grouped ? 1 : 0}, ` +
      `${g.persistent?.blocks ?? 0}, ${g.persistent?.cluster ?? 1}, ` +
      `${g.persistent?.clusterAxis === "n" ? 1 : 0}};`,
  );
  if (a.maps.length > 0) lines.push(cTensorMapTable(c, p, a.maps));
  return lines.join("\n");
}

/** The launch function's parameter list. */
function signature(c: LaunchContract, a: CArgs): string {
  return [
    "CUstream stream",
    ...a.tensors.map((t) => `CUdeviceptr ${t}`),
    ...a.dims.map((d) => `int64_t ${d}`),
    ...a.strides.map((s) => `int64_t ${s}`),
    ...c.scalars.map((s, i) => `${SCALAR_C_TYPE[s.ptx]} ${a.scalars[i]}`),
    ...(a.split ? ["CUdeviceptr workspace", "size_t workspace_bytes"] : []),
  ].join(", ");
}

/** The header part's comment and prototypes of one kernel. */
function kernelDecls(c: LaunchContract, a: CArgs): string {
  const doc = [
    `/**`,
    ` * Kernel "${c.name}" (entry ${c.entry}): ${c.block[0]} threads a block, ` +
    `${c.dynamicSmemBytes} bytes of dynamic shared memory.`,
    ` * Launches it on the stream after checking the launch (nothing is launched on an error:`,
    ` * GEMMC_ERROR_INVALID_ARGUMENT, gemmc_last_error() says why). Arguments:`,
    ...c.tensors.map(tensorDoc),
    ...c.dims.map((d) => ` *   ${d.name}: a runtime size, 0..2147483647`),
    ...c.strides.map((s) => ` *   ${s.name}: a runtime stride in elements, 0..2^63-1`),
    ...c.scalars.map((s) =>
      ` *   ${s.name}: ${s.dtype}, finite` +
      (s.default !== null ? ` (DSL default ${s.default})` : "")
    ),
    ...(a.split
      ? [
        ` *   workspace, workspace_bytes: split-K scratch of ${a.fn}_workspace_bytes() bytes,`,
        ` *     16-byte aligned, zeroed before its first launch (each launch leaves it zeroed);`,
        ` *     or 0 for one gemmc allocates and keeps (one stream at a time).`,
      ]
      : []),
    ...cTensorMapDocs(a.maps),
    ...pdlDoc(c),
    ` */`,
  ];
  const lines = [...doc, `gemmc_status ${a.fn}_launch(${signature(c, a)});`];
  if (a.split) {
    lines.push(
      `/** The split-K workspace bytes at these sizes (0 when a size is out of range). */`,
      `size_t ${a.fn}_workspace_bytes(${a.dims.map((d) => `int64_t ${d}`).join(", ") || "void"});`,
    );
  }
  return lines.join("\n");
}

/** A kernel's comment lines on launching it after gemmc_set_pdl(1) (backends/aot/_pdl_doc.ts). */
function pdlDoc(c: LaunchContract): string[] {
  return pdlNotes(c, "gemmc_set_pdl(1)").map((l) => ` * ${l}`);
}

/** The implementation of one kernel's launch (and workspace size) function. */
function kernelImpl(c: LaunchContract, a: CArgs, index: number): string {
  const values = [...a.dims, ...a.strides];
  const dims = values.length > 0 ? "gemmc_dims" : "0";
  const scalars = a.scalars.length > 0 ? "gemmc_scalars" : "0";
  const valuesDecl = values.length > 0
    ? [
      `  const long long gemmc_dims[${values.length}] = {${
        values.map((d) => `(long long)${d}`).join(", ")
      }};`,
    ]
    : [];
  const dimsDecl = a.dims.length > 0
    ? [
      `  const long long gemmc_dims[${a.dims.length}] = {${
        a.dims.map((d) => `(long long)${d}`).join(", ")
      }};`,
    ]
    : [];
  const maps = cTensorMapLaunch(a.fn, a.maps, values.length > 0);
  const params = c.tensors.length + c.dims.length + c.strides.length + c.scalars.length +
    (a.split ? 1 : 0) + a.maps.length;
  const byParam = new Array<string>(params);
  a.maps.forEach((m, i) => byParam[m.param] = maps.params[i]!);
  c.tensors.forEach((t, i) => byParam[t.param] = `&${a.tensors[i]}`);
  c.dims.forEach((d, i) => byParam[d.param] = `&gemmc_u32[${i}]`);
  c.strides.forEach((s, i) => byParam[s.param] = `&gemmc_u64[${i}]`);
  c.scalars.forEach((s, i) => byParam[s.param] = `&${a.scalars[i]}`);
  if (c.workspace !== null) byParam[c.workspace.param] = "&gemmc_ws";
  if (byParam.some((x) => x === undefined) || byParam.length !== params) {
    throw new Error(`Kernel "${c.name}": parameters out of order`);
  }
  const lines = [
    `gemmc_status ${a.fn}_launch(${signature(c, a)}) {`,
    ...valuesDecl,
    `  const CUdeviceptr gemmc_ptrs[${a.tensors.length}] = {${a.tensors.join(", ")}};`,
    ...(a.scalars.length > 0
      ? [
        `  const double gemmc_scalars[${a.scalars.length}] = {${
          a.scalars.map((s) => `(double)${s}`).join(", ")
        }};`,
      ]
      : []),
    `  CUdeviceptr gemmc_ws = ${a.split ? "workspace" : "0"};`,
    ...(a.dims.length > 0 ? [`  uint32_t gemmc_u32[${a.dims.length}];`] : []),
    ...(a.strides.length > 0 ? [`  uint64_t gemmc_u64[${a.strides.length}];`] : []),
    `  long long gemmc_g[3];`,
    ...maps.decls,
    `  gemmc_status gemmc_s = gemmc_prepare(${index}, stream, ${dims}, gemmc_ptrs, ${scalars}, ` +
    `&gemmc_ws, ${a.split ? "(unsigned long long)workspace_bytes" : "0"}, gemmc_g);`,
    `  if (gemmc_s != GEMMC_OK) return gemmc_s;`,
    ...maps.encode,
    ...a.dims.map((d, i) => `  gemmc_u32[${i}] = (uint32_t)${d};`),
    ...a.strides.map((s, i) => `  gemmc_u64[${i}] = (uint64_t)${s};`),
    `  {`,
    `    void *gemmc_params[${params}] = {${byParam.join(", ")}};`,
    `    return gemmc_launch(${index}, stream, gemmc_g, gemmc_params);`,
    `  }`,
    `}`,
  ];
  if (a.split) {
    lines.push(
      "",
      `size_t ${a.fn}_workspace_bytes(${a.dims.map((d) => `int64_t ${d}`).join(", ") || "void"}) {`,
      ...dimsDecl,
      ...a.dims.map((d) => `  if (${d} < 0 || ${d} > GEMMC_MAX_DIM) return 0;`),
      `  return (size_t)gemmc_ws_need(&${a.fn}_kernel, ${a.dims.length > 0 ? "gemmc_dims" : "0"});`,
      `}`,
    );
  }
  return lines.join("\n");
}

/** A grouped kernel's problem fields (the table's but `tiles_before`), in table order. */
function problemFields(m: KernelManifest, c: LaunchContract) {
  return m.group!.fields.filter((f) => f.kind !== "tiles_before").map((f) => ({
    ...f,
    c: cName(f.name),
    type: f.kind === "tensor" ? "CUdeviceptr" : f.kind === "dim" ? "uint32_t" : "int64_t",
    // The value's index among the contract's dims then strides (tensors: among the tensors).
    index: f.kind === "tensor"
      ? c.tensors.findIndex((t) => t.name === f.name)
      : [...c.dims, ...c.strides].findIndex((d) => d.name === f.name),
  }));
}

/** The scalars of a grouped kernel's functions, as C parameters. */
function scalarParams(c: LaunchContract, a: CArgs): string[] {
  return c.scalars.map((s, i) => `${SCALAR_C_TYPE[s.ptx]} ${a.scalars[i]}`);
}

/** The header part of a grouped kernel: its problem struct and its functions. */
function groupedDecls(m: KernelManifest, c: LaunchContract, a: CArgs): string {
  const f = a.fn;
  const fields = problemFields(m, c);
  const entry = m.group!.entryBytes;
  const scalars = scalarParams(c, a);
  const decl = (t: typeof c.tensors[number]) =>
    `${t.dtype}[${t.shape.join(", ")}] ${t.layout}` +
    (t.strides !== undefined ? ` strides(${t.strides.join(", ")})` : "") +
    `, align ${t.alignElems} (address a multiple of ${t.alignBytes} bytes)` +
    (t.output ? ", written" : "");
  return [
    `/**`,
    ` * Grouped kernel "${c.name}" (entry ${c.entry}, DESIGN 6.2): one launch runs a table of`,
    ` * problems; ${
      c.block[0]
    } threads a block, ${c.dynamicSmemBytes} bytes of dynamic shared memory.`,
    ` * One problem, as an ordinary launch of the kernel's form would take it:`,
    ...fields.map((x) =>
      ` *   ${x.c}: ` +
      (x.kind === "tensor"
        ? decl(c.tensors[x.index]!)
        : x.kind === "dim"
        ? "a runtime size, 0..2147483647 (0: the problem does nothing)"
        : "a runtime stride in elements, 0..2^63-1")
    ),
    ` * A tensor of 0 bytes (an expert without tokens) may have a null address.`,
    ...pdlDoc(c),
    ` */`,
    `typedef struct ${f}_problem {`,
    ...fields.map((x) => `  ${x.type} ${x.c};`),
    `} ${f}_problem;`,
    ``,
    `/** Bytes of one problem-table entry. */`,
    `enum { ${f}_entry_bytes = ${entry} };`,
    ``,
    `/** The bytes of a table of count problems: count * ${f}_entry_bytes. */`,
    `size_t ${f}_table_bytes(uint32_t count);`,
    ``,
    `/**`,
    ` * Checks every problem as its ordinary launch would be checked (each message starts`,
    ` * "Problem i: "), writes the table of count problems into the host buffer table`,
    ` * (table_bytes >= ${f}_table_bytes(count)), and stores the output tiles of all the`,
    ` * problems in *total_tiles (may be null). Nothing is written to *total_tiles on an error.`,
    ` */`,
    `gemmc_status ${f}_table(const ${f}_problem *problems, uint32_t count, void *table, ` +
    `size_t table_bytes, uint32_t *total_tiles);`,
    ``,
    `/**`,
    ` * Launches the kernel on the stream over a table of count problems already on the device`,
    ` * (8-byte aligned; written by ${f}_table, with its total_tiles), on the persistent grid`,
    ` * [min(total_tiles, resident blocks), 1, 1]: resident blocks are the device's SMs times the`,
    ` * kernel's blocks per SM (cuOccupancyMaxActiveBlocksPerMultiprocessor), found at the first`,
    ` * launch and kept until gemmc_unload(). The table must stay unchanged until the kernel ran.`,
    ...c.scalars.map((s, i) =>
      ` *   ${a.scalars[i]}: ${s.dtype}, finite, shared by every problem` +
      (s.default !== null ? ` (DSL default ${s.default})` : "")
    ),
    ` */`,
    `gemmc_status ${f}_launch(${
      [
        "CUstream stream",
        "CUdeviceptr table",
        "uint32_t count",
        "uint32_t total_tiles",
        ...scalars,
      ].join(", ")
    });`,
    ``,
    `/**`,
    ` * ${f}_table into host_table, then cuMemcpyHtoDAsync of it into device_table on the stream,`,
    ` * then ${f}_launch: both buffers hold table_bytes >= ${f}_table_bytes(count). A pageable`,
    ` * host_table may be reused when this returns; a pinned one only after the copy ran. Launches`,
    ` * on one stream may share device_table (the copy waits for the kernels before it).`,
    ` */`,
    `gemmc_status ${f}_run(${runParams(f, scalars)});`,
  ].join("\n");
}

/** The implementation of a grouped kernel's functions. */
function groupedImpl(m: KernelManifest, c: LaunchContract, a: CArgs, index: number): string {
  const f = a.fn;
  const fields = problemFields(m, c);
  const g = m.group!;
  const entry = g.entryBytes;
  const scalars = scalarParams(c, a);
  const nValues = c.dims.length + c.strides.length;
  const values = [...c.dims, ...c.strides].map((d) =>
    `(long long)p->${fields.find((x) => x.name === d.name)!.c}`
  );
  const ptrs = c.tensors.map((t) => `p->${fields.find((x) => x.name === t.name)!.c}`);
  const puts = g.fields.map((x) =>
    x.kind === "tiles_before"
      ? `    gemmc_put_u32(e + ${x.offset}, gemmc_before);`
      : `    gemmc_put_${x.ptx}(e + ${x.offset}, (unsigned long long)p->${cName(x.name)});`
  );
  const byParam = m.params.map((p) => {
    if (p.kind === "table") return "&table";
    if (p.kind === "count") return "&count";
    const i = c.scalars.findIndex((s) => s.name === p.name);
    if (p.kind !== "scalar" || i < 0) throw new Error(`Kernel "${c.name}": parameter ${p.name}?`);
    return `&${a.scalars[i]}`;
  });
  const scalarArray = a.scalars.length > 0
    ? [
      `  const double gemmc_scalars[${a.scalars.length}] = {${
        a.scalars.map((s) => `(double)${s}`).join(", ")
      }};`,
    ]
    : [];
  const sc = a.scalars.length > 0 ? "gemmc_scalars" : "0";
  return [
    `size_t ${f}_table_bytes(uint32_t count) { return (size_t)count * ${entry}u; }`,
    ``,
    `gemmc_status ${f}_table(const ${f}_problem *problems, uint32_t count, void *table, ` +
    `size_t table_bytes, uint32_t *total_tiles) {`,
    `  unsigned long long gemmc_tiles = 0;`,
    `  uint32_t i;`,
    `  int gemmc_bad = 0;`,
    `  gemmc_clear_error();`,
    `  if (count > 0 && problems == 0) {`,
    `    gemmc_add_error("Kernel \\"%s\\": the problem list is null", ${f}_kernel.name);`,
    `    return GEMMC_ERROR_INVALID_ARGUMENT;`,
    `  }`,
    `  if (!gemmc_table_fits(&${f}_kernel, count, ${entry}ULL, table, ` +
    `(unsigned long long)table_bytes)) {`,
    `    return GEMMC_ERROR_INVALID_ARGUMENT;`,
    `  }`,
    `  for (i = 0; i < count; i++) {`,
    `    const ${f}_problem *p = &problems[i];`,
    ...(nValues > 0 ? [`    const long long gemmc_v[${nValues}] = {${values.join(", ")}};`] : []),
    `    const CUdeviceptr gemmc_p[${ptrs.length}] = {${ptrs.join(", ")}};`,
    `    unsigned char *e = (unsigned char *)table + (size_t)i * ${entry}u;`,
    `    unsigned long long gemmc_before = gemmc_tiles;`,
    `    if (gemmc_check_problem(&${f}_kernel, i, ${
      nValues > 0 ? "gemmc_v" : "0"
    }, gemmc_p, &gemmc_tiles) > 0) {`,
    `      gemmc_bad++;`,
    `      continue;`,
    `    }`,
    ...puts,
    `  }`,
    `  if (gemmc_bad == 0 && !gemmc_tiles_fit(gemmc_tiles)) gemmc_bad++;`,
    `  if (gemmc_bad > 0) return GEMMC_ERROR_INVALID_ARGUMENT;`,
    `  if (total_tiles != 0) *total_tiles = (uint32_t)gemmc_tiles;`,
    `  return GEMMC_OK;`,
    `}`,
    ``,
    `gemmc_status ${f}_launch(${
      ["CUstream stream", "CUdeviceptr table", "uint32_t count", "uint32_t total_tiles", ...scalars]
        .join(", ")
    }) {`,
    ...scalarArray,
    `  void *gemmc_params[${byParam.length}] = {${byParam.join(", ")}};`,
    `  gemmc_status gemmc_s;`,
    `  gemmc_clear_error();`,
    `  gemmc_s = gemmc_grouped_check(${index}, table, count, ${sc});`,
    `  if (gemmc_s != GEMMC_OK) return gemmc_s;`,
    `  return gemmc_launch_grouped(${index}, stream, total_tiles, gemmc_params);`,
    `}`,
    ``,
    `gemmc_status ${f}_run(${runParams(f, scalars)}) {`,
    ...scalarArray,
    `  uint32_t gemmc_tiles = 0;`,
    `  CUresult gemmc_r;`,
    `  gemmc_status gemmc_s = ${f}_table(problems, count, host_table, table_bytes, &gemmc_tiles);`,
    `  if (gemmc_s != GEMMC_OK) return gemmc_s;`,
    `  gemmc_s = gemmc_grouped_check(${index}, device_table, count, ${sc});`,
    `  if (gemmc_s != GEMMC_OK) return gemmc_s;`,
    `  if (count > 0) {`,
    `    gemmc_r = cuMemcpyHtoDAsync(device_table, host_table, (size_t)count * ${entry}u, stream);`,
    `    if (gemmc_r != CUDA_SUCCESS) return gemmc_cuda_failed("cuMemcpyHtoDAsync (problem table)", gemmc_r);`,
    `  }`,
    `  return ${f}_launch(${
      ["stream", "device_table", "count", "gemmc_tiles", ...a.scalars].join(", ")
    });`,
    `}`,
  ].join("\n");
}

/**
 * One self-contained C file for a module of kernels (see the module doc):
 * include it anywhere for the declarations; in one C or C++ file define
 * `GEMMC_IMPLEMENTATION` first for the implementation. Link with `-lcuda`.
 *
 * @param kernels The compiled kernels (one target).
 * @returns The C source.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { compile } from "../../compiler.ts";
 * import { cSource } from "./c.ts";
 * const ks = compile(`kernel k { A: f16[M, K] row  B: f16[K, N] col  D: f32[M, N] row
 *   D[m, n] = A[m, k] * B[k, n] }`).kernels;
 * const c = cSource(ks);
 * ok(c.includes("gemmc_status gemmc_k_launch(CUstream stream, CUdeviceptr A, CUdeviceptr B, " +
 *   "CUdeviceptr D, int64_t M, int64_t K, int64_t N);"));
 * ok(c.includes("#if defined(GEMMC_IMPLEMENTATION)"));
 * ```
 */
export function cSource(kernels: readonly CompiledKernel[]): string {
  if (kernels.length === 0) throw new Error("No kernel to emit");
  const grouped = kernels.map((k) => k.manifest.group !== undefined);
  const contracts = kernels.map((k, i) =>
    grouped[i] ? problemContract(k.manifest) : launchContract(withoutTensorMaps(k.manifest))
  );
  const args = contracts.map((c, i) => cArgs(c, tensorMapParams(kernels[i]!.manifest), grouped[i]));
  const tmaps = args.some((a) => a.maps.length > 0);
  const fns = args.map((a) => a.fn);
  const twice = fns.find((f, i) => fns.indexOf(f) !== i);
  if (twice !== undefined) throw new Error(`Two kernels are named "${twice}" in C`);
  const ptx = ptxModule(kernels).split(/(?<=\n)/).map(cString).join("\n");
  const maxTensors = Math.max(1, ...contracts.map((c) => c.tensors.length));
  const names = contracts.map((c) => c.name).join(", ");
  return [
    `/*`,
    ` * Generated by gemmc (gemm compile --emit c): kernels ${names}, for ${
      kernels[0]!.manifest.target
    }.`,
    ` *`,
    ` * Include this file wherever you call the kernels; in exactly one C or C++ file,`,
    ` * #define GEMMC_IMPLEMENTATION before including it. Link with -lcuda.`,
    ` * With a CUDA context current: gemmc_load(), then gemmc_<kernel>_launch(...) any number of`,
    ` * times (asynchronous on the stream), then gemmc_unload(). Every function returns a`,
    ` * gemmc_status; gemmc_last_error() says why one failed. gemmc_set_pdl(1) makes every later`,
    ` * launch a programmatic dependent launch (cuLaunchKernelEx; sm_90+; default off).`,
    ` */`,
    `#ifndef GEMMC_GENERATED_H`,
    `#define GEMMC_GENERATED_H`,
    `#include <cuda.h>`,
    `#include <stddef.h>`,
    `#include <stdint.h>`,
    ``,
    `#ifdef __cplusplus`,
    `extern "C" {`,
    `#endif`,
    ``,
    C_RUNTIME_DECLS,
    C_PDL_DECLS,
    contracts.map((c, i) =>
      grouped[i] ? groupedDecls(kernels[i]!.manifest, c, args[i]!) : kernelDecls(c, args[i]!)
    ).join("\n\n"),
    ``,
    `#ifdef __cplusplus`,
    `}`,
    `#endif`,
    `#endif /* GEMMC_GENERATED_H */`,
    ``,
    `#if defined(GEMMC_IMPLEMENTATION) && !defined(GEMMC_IMPLEMENTATION_DONE)`,
    `#define GEMMC_IMPLEMENTATION_DONE`,
    C_RUNTIME_INCLUDES,
    `#ifdef __cplusplus`,
    `extern "C" {`,
    `#endif`,
    ``,
    C_RUNTIME_TYPES,
    ...(tmaps ? [C_TMAP_TYPES] : []),
    `#define GEMMC_KERNEL_COUNT ${contracts.length}`,
    `#define GEMMC_MAX_TENSORS ${maxTensors}`,
    ``,
    contracts.map((c, i) => kernelTable(c, args[i]!, grouped[i]!)).join("\n\n"),
    ``,
    `static const gemmc_kernel *const gemmc_kernels[GEMMC_KERNEL_COUNT] = {${
      fns.map((f) => `&${f}_kernel`).join(", ")
    }};`,
    ``,
    `static const char gemmc_ptx[] =`,
    ptx + ";",
    ``,
    C_RUNTIME_FUNCTIONS,
    C_LAUNCH_FUNCTIONS,
    ...(grouped.some((x) => x) ? [C_RUNTIME_GROUPED] : []),
    ...(tmaps ? [C_TMAP_FUNCTIONS] : []),
    contracts.map((c, i) =>
      grouped[i] ? groupedImpl(kernels[i]!.manifest, c, args[i]!, i) : kernelImpl(c, args[i]!, i)
    ).join("\n\n"),
    ``,
    `#ifdef __cplusplus`,
    `}`,
    `#endif`,
    `#endif /* GEMMC_IMPLEMENTATION */`,
    ``,
  ].join("\n");
}

/** The parameters of a grouped kernel's `_run` function, as declared and as defined. */
function runParams(f: string, scalars: readonly string[]): string {
  return [
    "CUstream stream",
    `const ${f}_problem *problems`,
    "uint32_t count",
    "void *host_table",
    "CUdeviceptr device_table",
    "size_t table_bytes",
    ...scalars,
  ].join(", ");
}
