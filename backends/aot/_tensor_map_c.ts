/**
 * Tensor maps in the C artefact (backends/aot/c.ts; sm90's TMA, docs/ARCHITECTURE.md §3.4):
 * each kernel's maps printed as a table of their rules (ir/tensor_map.ts `TensorMapSpec`,
 * from the manifest's `tmap`), the runtime function that evaluates a rule at a launch's
 * address and sizes with the checks and messages of `tensorMapArgs` and builds the map with
 * `cuTensorMapEncodeTiled`, and the lines of a launch function that build its maps into a
 * 128-byte aligned buffer and pass them by value after the other parameters.
 *
 * Shortcut: the maps are encoded at every launch (a few microseconds of host time); a cache
 * keyed by address and sizes would need a lock per kernel.
 *
 * @module
 */

import type { LaunchContract } from "../ptx/contract.ts";
import type { TensorMapParam } from "../cuda/tensor_map.ts";
import {
  TENSOR_MAP_BYTES,
  type TensorMapFactor,
  TMAP_DATA_TYPES,
  TMAP_L2_PROMOTION,
  TMAP_SWIZZLES,
} from "../../ir/tensor_map.ts";

/** Factors a product of the table may have. */
const MAX_FACTORS = 4;
/** The largest rank of a map (the driver's). */
const MAX_RANK = 5;

/** A factor as a `gemmc_extent`: a runtime dim's or stride's number, or a constant. */
function factor(c: LaunchContract, f: TensorMapFactor): string {
  if (typeof f === "number") return `{-1, ${f}LL}`;
  const i = [...c.dims, ...c.strides].findIndex((x) => x.name === f);
  if (i < 0) throw new Error(`Kernel "${c.name}": tensor map factor "${f}" is no dim or stride`);
  return `{${i}, 0}`;
}

/** One `gemmc_tmap` initializer. */
function mapRow(c: LaunchContract, m: TensorMapParam): string {
  const s = m.spec;
  const rank = s.dims.length;
  if (rank < 1 || rank > MAX_RANK || s.strides.length !== rank - 1 || s.box.length !== rank) {
    throw new Error(`Tensor map "${m.name}": rank ${rank} with ${s.strides.length} strides`);
  }
  const products = [...s.dims, ...s.strides];
  if (products.some((p) => p.length > MAX_FACTORS)) {
    throw new Error(`Tensor map "${m.name}": a product of more than ${MAX_FACTORS} factors`);
  }
  const counts = products.map((p) => p.length);
  const factors = products.map((p) => {
    const fs = p.map((f) => factor(c, f));
    while (fs.length < MAX_FACTORS) fs.push("{-1, 1}");
    return `{${fs.join(", ")}}`;
  });
  const tensor = c.tensors.findIndex((t) => t.name === s.tensor);
  if (tensor < 0) throw new Error(`Tensor map "${m.name}": no tensor "${s.tensor}"`);
  const box = [...s.box];
  while (box.length < MAX_RANK) box.push(1);
  return `  {"${m.name}", "${s.tensor}", ${tensor}, ${TMAP_DATA_TYPES[s.dataType]}, ` +
    `${s.elementBytes}ULL, ${rank}, {${counts.join(", ")}}, {${factors.join(", ")}}, ` +
    `{${box.join(", ")}}, ${TMAP_SWIZZLES[s.swizzle]}, ${s.swizzle}ULL, ${TMAP_L2_PROMOTION}}`;
}

/**
 * The table of a kernel's maps, `static const gemmc_tmap <fn>_tmaps[n]` (empty: none).
 *
 * @param c The kernel's contract (its dims and strides number the factors).
 * @param fn The kernel's C prefix (`gemmc_<kernel>`).
 * @param maps Its maps.
 * @returns The C text.
 */
export function cTensorMapTable(
  c: LaunchContract,
  fn: string,
  maps: readonly TensorMapParam[],
): string {
  if (maps.length === 0) return "";
  return [
    `/* ${fn}'s TMA tensor maps (the manifest's tmap rules, ir/tensor_map.ts). */`,
    `static const gemmc_tmap ${fn}_tmaps[${maps.length}] = {`,
    maps.map((m) => mapRow(c, m)).join(",\n"),
    "};",
  ].join("\n");
}

/** A product as a doc shows it: `K`, `M*K`, `64`. */
function product(p: readonly TensorMapFactor[]): string {
  return p.length === 0 ? "1" : p.join("*");
}

/**
 * The header's lines about a kernel's maps: what the launch function builds and passes.
 *
 * @param maps The kernel's maps.
 * @returns Comment lines (` * ...`).
 */
export function cTensorMapDocs(maps: readonly TensorMapParam[]): string[] {
  if (maps.length === 0) return [];
  return [
    ` * Built by the launch function and passed by value after the other parameters (sm90's TMA:`,
    ` * a ${TENSOR_MAP_BYTES}-byte CUtensorMap each, cuTensorMapEncodeTiled, a CUDA 12+ driver; zeros`,
    ` * outside the extents; a refused map is GEMMC_ERROR_INVALID_ARGUMENT or GEMMC_ERROR_CUDA):`,
    ...maps.map((m) => {
      const s = m.spec;
      return ` *   ${m.name}: tensor ${s.tensor} as ${s.dataType}, extents [${
        s.dims.map(product).join(", ")
      }] (innermost first), strides [${s.strides.map(product).join(", ")}] elements, box [${
        s.box.join(", ")
      }], ${s.swizzle === 0 ? "no swizzle" : `${s.swizzle}-byte swizzle`}`;
    }),
  ];
}

/**
 * A launch function's lines that build its maps, after `gemmc_prepare` succeeded (locals
 * `gemmc_ptrs`, `gemmc_dims` and `gemmc_s` in scope), and the `kernelParams` entry of each.
 *
 * @param fn The kernel's C prefix.
 * @param maps Its maps.
 * @param values Whether the kernel has dims or strides (`gemmc_dims` exists).
 * @returns The declaration, the encoding lines and the parameter of each map.
 */
export function cTensorMapLaunch(
  fn: string,
  maps: readonly TensorMapParam[],
  values: boolean,
): { decls: string[]; encode: string[]; params: string[] } {
  if (maps.length === 0) return { decls: [], encode: [], params: [] };
  const n = maps.length;
  return {
    decls: [
      `  /* The maps, ${TENSOR_MAP_BYTES}-byte aligned whatever the C standard's alignas. */`,
      `  unsigned char gemmc_map_store[${n * TENSOR_MAP_BYTES + 127}];`,
      `  CUtensorMap *gemmc_maps = (CUtensorMap *)(((uintptr_t)gemmc_map_store + 127) & ~(uintptr_t)127);`,
    ],
    encode: maps.map((_, i) =>
      `  gemmc_s = gemmc_encode_tmap(&${fn}_kernel, &${fn}_tmaps[${i}], ` +
      `gemmc_ptrs[${fn}_tmaps[${i}].tensor_index], ` +
      `${values ? "gemmc_dims" : "0"}, &gemmc_maps[${i}]);\n` +
      `  if (gemmc_s != GEMMC_OK) return gemmc_s;`
    ),
    params: maps.map((_, i) => `&gemmc_maps[${i}]`),
  };
}

/** The C type of a map's rule, in the implementation's types. */
export const C_TMAP_TYPES = `/*
 * A TMA tensor map's rule (ir/tensor_map.ts TensorMapSpec): the tensor, the element type
 * (CUtensorMapDataType), the rank, each extent (innermost first) then each stride (elements)
 * as a product of factors (gemmc_extent: a dim or stride, or a constant), the box, the
 * swizzle (CUtensorMapSwizzle and its bytes) and the L2 promotion.
 */
typedef struct gemmc_tmap {
  const char *name;
  const char *tensor;
  int tensor_index;
  int data_type;
  unsigned long long element_bytes;
  int rank;
  int nfactors[${2 * MAX_RANK - 1}];
  gemmc_extent factors[${2 * MAX_RANK - 1}][${MAX_FACTORS}];
  unsigned box[${MAX_RANK}];
  int swizzle;
  unsigned long long swizzle_bytes;
  int l2_promotion;
} gemmc_tmap;
`;

/** The runtime's encoder: tensorMapArgs' checks and messages, then cuTensorMapEncodeTiled. */
export const C_TMAP_FUNCTIONS =
  `/* A product of a map's rule at the launch's values (saturating). */
static unsigned long long gemmc_tmap_product(const gemmc_tmap *m, int p, const long long *values) {
  unsigned long long v = 1;
  int i;
  for (i = 0; i < m->nfactors[p]; i++) {
    v = gemmc_mul_sat(v, (unsigned long long)gemmc_extent_of(m->factors[p][i], values));
  }
  return v;
}

/*
 * ir/tensor_map.ts tensorMapArgs, check for check and message for message (the first broken
 * rule), then cuTensorMapEncodeTiled into out (interleave none, element strides 1, zeros
 * outside the extents).
 */
static gemmc_status gemmc_encode_tmap(const gemmc_kernel *k, const gemmc_tmap *m,
                                      CUdeviceptr address, const long long *values,
                                      CUtensorMap *out) {
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], ones[5] = {1, 1, 1, 1, 1};
  CUresult r;
  int i;
  if ((unsigned long long)address % 16 != 0) {
    gemmc_add_error("Tensor map of %s: address 0x%llx is not 16-byte aligned", m->tensor,
                    (unsigned long long)address);
    return GEMMC_ERROR_INVALID_ARGUMENT;
  }
  for (i = 0; i < m->rank; i++) {
    unsigned long long d = gemmc_tmap_product(m, i, values);
    if (d < 1 || d > (1ULL << 32)) {
      gemmc_add_error("Tensor map of %s: extent %llu of dimension %d is not 1 .. 2^32", m->tensor,
                      d, i);
      return GEMMC_ERROR_INVALID_ARGUMENT;
    }
    dims[i] = (cuuint64_t)d;
  }
  for (i = 0; i + 1 < m->rank; i++) {
    unsigned long long s = gemmc_mul_sat(gemmc_tmap_product(m, m->rank + i, values),
                                         m->element_bytes);
    if (s % 16 != 0 || s == 0 || s >= (1ULL << 40)) {
      gemmc_add_error("Tensor map of %s: stride of dimension %d is %llu bytes, not a positive "
                      "multiple of 16 below 2^40", m->tensor, i + 1, s);
      return GEMMC_ERROR_INVALID_ARGUMENT;
    }
    strides[i] = (cuuint64_t)s;
  }
  for (i = 0; i < m->rank; i++) {
    if (m->box[i] < 1 || m->box[i] > 256) {
      gemmc_add_error("Tensor map of %s: box %u of dimension %d is not 1 .. 256", m->tensor,
                      m->box[i], i);
      return GEMMC_ERROR_INVALID_ARGUMENT;
    }
    box[i] = (cuuint32_t)m->box[i];
  }
  if (m->swizzle_bytes > 0 && m->box[0] * m->element_bytes > m->swizzle_bytes) {
    gemmc_add_error("Tensor map of %s: a box row of %llu bytes exceeds the %llu-byte swizzle",
                    m->tensor, m->box[0] * m->element_bytes, m->swizzle_bytes);
    return GEMMC_ERROR_INVALID_ARGUMENT;
  }
  r = cuTensorMapEncodeTiled(out, (CUtensorMapDataType)m->data_type, (cuuint32_t)m->rank,
                             (void *)(uintptr_t)address, dims, strides, box, ones,
                             CU_TENSOR_MAP_INTERLEAVE_NONE, (CUtensorMapSwizzle)m->swizzle,
                             (CUtensorMapL2promotion)m->l2_promotion,
                             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    gemmc_add_error("Kernel \\"%s\\": the tensor map %s of tensor \\"%s\\":", k->name, m->name,
                    m->tensor);
    return gemmc_cuda_failed("cuTensorMapEncodeTiled", r);
  }
  return GEMMC_OK;
}
`;
