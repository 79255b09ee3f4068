/**
 * The fixed C text of the C artefact (backends/aot/c.ts): the status codes
 * and entry points every generated file declares, and the runtime behind
 * `#define GEMMC_IMPLEMENTATION` that checks a launch against a kernel's
 * contract table and launches it through the CUDA driver API (the launch call itself,
 * `gemmc_launch`, with or without programmatic dependent launch: backends/aot/_pdl_c.ts).
 *
 * The checks are those of `launchViolations` (backends/ptx/contract.ts), in
 * its order and with its messages, over tables c.ts prints from
 * `launchContract`; tests/aot_c_test.ts runs both on the same launches and
 * asks for the same messages, so the two cannot drift apart unseen. Two rules
 * have nothing to check in C: every tensor is an argument (no "no device
 * buffer"), and a `CUdeviceptr` carries no length (no buffer-length check;
 * the caller's split-K workspace comes with its byte count and is checked).
 *
 * @module
 */

import { MAX_DIM, WORKSPACE_ALIGN_BYTES } from "../ptx/contract.ts";

/** The header part's fixed declarations (inside the `extern "C"` block). */
export const C_RUNTIME_DECLS = `/** What every gemmc_* function returns. */
typedef enum gemmc_status {
  GEMMC_OK = 0,
  /** The launch breaks the kernel's contract: nothing was launched. */
  GEMMC_ERROR_INVALID_ARGUMENT = 1,
  /** gemmc_load() has not succeeded. */
  GEMMC_ERROR_NOT_LOADED = 2,
  /** A CUDA driver call failed. */
  GEMMC_ERROR_CUDA = 3,
  /** What was asked needs what this file was compiled without (gemmc_set_pdl: cuLaunchKernelEx). */
  GEMMC_ERROR_UNSUPPORTED = 4
} gemmc_status;

/**
 * Loads the embedded PTX into the current CUDA context (cuModuleLoadDataEx),
 * looks up every kernel and raises its dynamic shared-memory limit. Call it
 * once, with the context current, before any launch; again after
 * gemmc_unload(). Not thread-safe.
 */
gemmc_status gemmc_load(void);

/** Frees the split-K workspaces gemmc allocated and unloads the module. */
void gemmc_unload(void);

/**
 * Why the calling thread's last gemmc_* call failed: one line per problem
 * (every broken rule of a launch, each naming the tensor, size or scalar and
 * its value); "" after a success.
 */
const char *gemmc_last_error(void);
`;

/** The implementation's includes (outside `extern "C"`: C++'s <math.h> holds templates). */
export const C_RUNTIME_INCLUDES = `#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
`;

/** The implementation's types, inside its `extern "C"` block. */
export const C_RUNTIME_TYPES = `#if defined(__cplusplus)
#define GEMMC_TLS thread_local
#elif defined(_MSC_VER)
#define GEMMC_TLS __declspec(thread)
#else
#define GEMMC_TLS _Thread_local
#endif

/* A function a file with only grouped kernels leaves unused. */
#if defined(__GNUC__)
#define GEMMC_MAYBE_UNUSED __attribute__((unused))
#else
#define GEMMC_MAYBE_UNUSED
#endif

/* backends/ptx/contract.ts: MAX_DIM and WORKSPACE_ALIGN_BYTES. */
#define GEMMC_MAX_DIM ${MAX_DIM}LL
#define GEMMC_WORKSPACE_ALIGN ${WORKSPACE_ALIGN_BYTES}ULL

/*
 * A dimension of a shape, or a stride: runtime value number dim (the dims, then the strides),
 * or (dim < 0) the constant value.
 */
typedef struct gemmc_extent {
  int dim;
  long long value;
} gemmc_extent;

typedef struct gemmc_tensor {
  const char *name;
  const char *dtype;
  unsigned long long bits;
  int output;
  int is_c; /* role C: may be D itself, at the same address */
  long long align_elems;
  unsigned long long align_bytes;
  int rank;
  gemmc_extent shape[4];
  int has_leading;
  gemmc_extent leading;
  /* contract.ts TensorView (rank 2 and 3): batch x rows x leading, strides (has_*: declared). */
  int has_view, strided, has_batch, has_rows, has_sb, has_sm;
  gemmc_extent batch, rows, sb, sm;
  /*
   * contract.ts ContractTensor.sparse (a structured-sparse A, always row-major, K its last
   * dimension): 0 dense; 1 the kept values (K / 2 stored a row); 2 the metadata
   * (ceil(K / k_per_word) 32-bit words a row; bits is 32).
   */
  int sparse;
  long long k_per_word;
} gemmc_tensor;

typedef struct gemmc_scalar {
  const char *name;
  const char *dtype;
} gemmc_scalar;

typedef struct gemmc_kernel {
  const char *name;
  const char *entry;
  unsigned block[3];
  unsigned smem;
  long long tile_m, tile_n, swizzle, split_k;
  gemmc_extent m, n, batch;
  int has_batch;
  unsigned long long ws_per_tile; /* split-K workspace bytes per output tile; 0: none */
  int ntensors;
  const gemmc_tensor *tensors;
  int ndims;
  const char *const *dims; /* the names of the dims, then of the strides */
  int nstrides;
  int nscalars;
  const gemmc_scalar *scalars;
  int grouped; /* a grouped kernel's problem (DESIGN 6.2): no empty-grid rule; empty tensors may be null */
  long long persistent_blocks; /* a persistent kernel's blocks that run at once (grid x); 0: none */
  long long cluster; /* CTAs per cluster along x (the PTX's .reqnctapercluster); 1: none */
  int cluster_along_n; /* 1: a cluster's CTAs take a unit of tiles along N, else along M */
} gemmc_kernel;
`;

/** The implementation's fixed functions, after the kernel tables and the PTX. */
export const C_RUNTIME_FUNCTIONS = `static CUmodule gemmc_module;
static CUfunction gemmc_functions[GEMMC_KERNEL_COUNT];
static CUdeviceptr gemmc_owned_ws[GEMMC_KERNEL_COUNT];
static unsigned long long gemmc_owned_ws_bytes[GEMMC_KERNEL_COUNT];
/* A grouped kernel's resident blocks (SMs x blocks per SM), found at its first launch; 0: not yet. */
static unsigned gemmc_resident[GEMMC_KERNEL_COUNT];
static GEMMC_TLS char gemmc_error_text[8192];
static GEMMC_TLS size_t gemmc_error_len;
static GEMMC_TLS long long gemmc_error_problem = -1; /* >= 0: lines start "Problem i: " */

const char *gemmc_last_error(void) { return gemmc_error_text; }

static void gemmc_clear_error(void) {
  gemmc_error_text[0] = '\\0';
  gemmc_error_len = 0;
}

/* Appends one line to the thread's message (truncated past its buffer). */
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static void gemmc_add_error(const char *fmt, ...) {
  const size_t cap = sizeof gemmc_error_text;
  va_list ap;
  int n;
  if (gemmc_error_len + 2 >= cap) return;
  if (gemmc_error_len > 0) gemmc_error_text[gemmc_error_len++] = '\\n';
  if (gemmc_error_problem >= 0) {
    n = snprintf(gemmc_error_text + gemmc_error_len, cap - gemmc_error_len, "Problem %lld: ",
                 gemmc_error_problem);
    if (n < 0) n = 0;
    gemmc_error_len += (size_t)n < cap - gemmc_error_len ? (size_t)n : cap - gemmc_error_len - 1;
  }
  va_start(ap, fmt);
  n = vsnprintf(gemmc_error_text + gemmc_error_len, cap - gemmc_error_len, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  gemmc_error_len += (size_t)n < cap - gemmc_error_len ? (size_t)n : cap - gemmc_error_len - 1;
}

static gemmc_status gemmc_cuda_failed(const char *what, CUresult r) {
  const char *name = 0, *text = 0;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == 0) name = "CUDA error";
  if (cuGetErrorString(r, &text) != CUDA_SUCCESS || text == 0) text = "unknown error";
  gemmc_add_error("%s failed: %s (%d): %s", what, name, (int)r, text);
  return GEMMC_ERROR_CUDA;
}

gemmc_status gemmc_load(void) {
  char log[8192];
  CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2];
  CUresult r;
  int i;
  gemmc_clear_error();
  if (gemmc_module != 0) return GEMMC_OK;
  log[0] = '\\0';
  vals[0] = log;
  vals[1] = (void *)(size_t)sizeof log;
  r = cuModuleLoadDataEx(&gemmc_module, gemmc_ptx, 2, opts, vals);
  if (r != CUDA_SUCCESS) {
    gemmc_module = 0;
    log[sizeof log - 1] = '\\0';
    gemmc_cuda_failed("cuModuleLoadDataEx", r);
    if (log[0] != '\\0') gemmc_add_error("%s", log);
    return GEMMC_ERROR_CUDA;
  }
  for (i = 0; i < GEMMC_KERNEL_COUNT; i++) {
    const gemmc_kernel *k = gemmc_kernels[i];
    r = cuModuleGetFunction(&gemmc_functions[i], gemmc_module, k->entry);
    if (r == CUDA_SUCCESS && k->smem > 48u * 1024u) {
      r = cuFuncSetAttribute(gemmc_functions[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             (int)k->smem);
    }
    if (r != CUDA_SUCCESS) {
      gemmc_add_error("Kernel \\"%s\\" (%u bytes of dynamic shared memory):", k->name, k->smem);
      gemmc_cuda_failed("loading it", r);
      gemmc_unload();
      return GEMMC_ERROR_CUDA;
    }
  }
  return GEMMC_OK;
}

void gemmc_unload(void) {
  int i;
  for (i = 0; i < GEMMC_KERNEL_COUNT; i++) {
    if (gemmc_owned_ws[i] != 0) (void)cuMemFree(gemmc_owned_ws[i]);
    gemmc_owned_ws[i] = 0;
    gemmc_owned_ws_bytes[i] = 0;
    gemmc_functions[i] = 0;
    gemmc_resident[i] = 0;
  }
  if (gemmc_module != 0) (void)cuModuleUnload(gemmc_module);
  gemmc_module = 0;
}

static long long gemmc_extent_of(gemmc_extent e, const long long *dims) {
  return e.dim < 0 ? e.value : dims[e.dim];
}

static long long gemmc_ceil_div(long long a, long long b) { return (a + b - 1) / b; }

static unsigned long long gemmc_mul_sat(unsigned long long a, unsigned long long b) {
  if (a != 0 && b > ~0ULL / a) return ~0ULL;
  return a * b;
}

/* ir/grid.ts gridFor: [tilesM * swizzle, ceil(tilesN / swizzle), batch * splitK]; a
 * persistent kernel's [max(1, min(tiles, blocks)), 1, 1], with clusters of C CTAs
 * [C max(1, min(units, blocks / C)), 1, 1] over units of C tiles along M (or N). */
static void gemmc_grid(const gemmc_kernel *k, const long long *dims, long long g[3]) {
  long long tiles_m = gemmc_ceil_div(gemmc_extent_of(k->m, dims), k->tile_m);
  long long tiles_n = gemmc_ceil_div(gemmc_extent_of(k->n, dims), k->tile_n);
  long long batch = k->has_batch ? gemmc_extent_of(k->batch, dims) : 1;
  if (k->persistent_blocks > 0) {
    long long c = k->cluster;
    long long tiles = (k->cluster_along_n ? tiles_m * gemmc_ceil_div(tiles_n, c)
                                          : gemmc_ceil_div(tiles_m, c) * tiles_n) * batch;
    long long most = k->persistent_blocks / c;
    g[0] = c * (tiles < 1 ? 1 : tiles < most ? tiles : most);
    g[1] = 1;
    g[2] = 1;
    return;
  }
  g[0] = tiles_m * k->swizzle;
  g[1] = gemmc_ceil_div(tiles_n, k->swizzle);
  g[2] = batch * k->split_k;
}

/* ir/grid.ts workspaceBytes: one workspace tile per output tile (Stream-K: two per block). */
static unsigned long long gemmc_ws_need(const gemmc_kernel *k, const long long *dims) {
  long long g[3];
  unsigned long long tiles;
  gemmc_grid(k, dims, g);
  if (k->persistent_blocks > 0) return gemmc_mul_sat(2ULL * (unsigned long long)g[0], k->ws_per_tile);
  tiles = gemmc_mul_sat((unsigned long long)(g[0] / k->swizzle),
                        (unsigned long long)gemmc_ceil_div(gemmc_extent_of(k->n, dims), k->tile_n));
  tiles = gemmc_mul_sat(tiles, (unsigned long long)(g[2] / k->split_k));
  return gemmc_mul_sat(tiles, k->ws_per_tile);
}

static unsigned long long gemmc_add_sat(unsigned long long a, unsigned long long b) {
  return b > ~0ULL - a ? ~0ULL : a + b;
}

/* contract.ts viewValues: a view's extents and strides (strides not declared: dense). */
typedef struct gemmc_view {
  unsigned long long batch, rows, cont, sb, sm;
} gemmc_view;

static gemmc_view gemmc_view_of(const gemmc_tensor *t, const long long *dims) {
  gemmc_view v;
  v.cont = (unsigned long long)gemmc_extent_of(t->leading, dims);
  v.rows = t->has_rows ? (unsigned long long)gemmc_extent_of(t->rows, dims) : 1;
  v.batch = t->has_batch ? (unsigned long long)gemmc_extent_of(t->batch, dims) : 1;
  v.sm = t->has_sm ? (unsigned long long)gemmc_extent_of(t->sm, dims) : v.cont;
  v.sb = t->has_sb ? (unsigned long long)gemmc_extent_of(t->sb, dims) : gemmc_mul_sat(v.rows, v.sm);
  return v;
}

/*
 * contract.ts tensorBytes: ceil(elements * bits / 8); a strided tensor's elements from its first
 * to its last, (L-1)*sb + (rows-1)*sm + contiguous extent.
 */
static unsigned long long gemmc_tensor_bytes(const gemmc_tensor *t, const long long *dims) {
  unsigned long long e = 1;
  int i;
  if (t->strided) {
    gemmc_view v = gemmc_view_of(t, dims);
    if (v.batch == 0 || v.rows == 0 || v.cont == 0) return 0;
    e = gemmc_add_sat(gemmc_add_sat(gemmc_mul_sat(v.batch - 1, v.sb), gemmc_mul_sat(v.rows - 1, v.sm)),
                      v.cont);
    e = gemmc_mul_sat(e, t->bits);
    return e == ~0ULL ? e : (e + 7) / 8;
  }
  for (i = 0; i < t->rank; i++) {
    unsigned long long d = (unsigned long long)gemmc_extent_of(t->shape[i], dims);
    /* contract.ts storedExtent: a sparse A's metadata holds ceil(K / k_per_word) words a row. */
    if (t->sparse == 2 && i == t->rank - 1) {
      d = (unsigned long long)gemmc_ceil_div((long long)d, t->k_per_word);
    }
    e = gemmc_mul_sat(e, d);
  }
  e = gemmc_mul_sat(e, t->bits);
  if (e == ~0ULL) return e;
  /* The kept values hold K / 2 a row: ceil(elements * bits / 8) with K halved (K may be odd). */
  return t->sparse == 1 ? (e + 15) / 16 : (e + 7) / 8;
}

static unsigned long long gemmc_end(CUdeviceptr lo, unsigned long long bytes) {
  return bytes > ~0ULL - (unsigned long long)lo ? ~0ULL : (unsigned long long)lo + bytes;
}

/* A value as JavaScript prints it (only non-finite values are ever printed). */
static const char *gemmc_number_text(double v, char *buf, size_t n) {
  if (isnan(v)) return "NaN";
  if (isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  snprintf(buf, n, "%.17g", v);
  return buf;
}

/* A stride or extent as messages name it: "lda=1040", or a constant alone. */
static const char *gemmc_label(const gemmc_kernel *k, gemmc_extent e, unsigned long long v, char *buf,
                               size_t n) {
  if (e.dim < 0) snprintf(buf, n, "%llu", v);
  else snprintf(buf, n, "%s=%llu", k->dims[e.dim], v);
  return buf;
}

/* contract.ts strideViolations: a strided tensor's broken stride rules. */
static int gemmc_stride_violations(const gemmc_kernel *k, const gemmc_tensor *t, const long long *dims) {
  gemmc_view v = gemmc_view_of(t, dims);
  unsigned long long a = (unsigned long long)t->align_elems;
  char s[96], c[96];
  int bad = 0;
  if (t->has_sm) {
    gemmc_label(k, t->sm, v.sm, s, sizeof s);
    if (v.sm < v.cont) {
      gemmc_add_error("Tensor \\"%s\\" has matrix stride %s, less than its contiguous extent %s",
                      t->name, s, gemmc_label(k, t->leading, v.cont, c, sizeof c));
      bad++;
    }
    if (v.sm % a != 0) {
      gemmc_add_error("Tensor \\"%s\\" declares align %llu but its matrix stride %s is not a "
                      "multiple of %llu", t->name, a, s, a);
      bad++;
    }
  }
  if (t->has_sb) {
    unsigned long long need = gemmc_mul_sat(v.rows, v.sm);
    gemmc_label(k, t->sb, v.sb, s, sizeof s);
    if (v.sb < need && (v.sb != 0 || t->output)) {
      gemmc_add_error("Tensor \\"%s\\" has batch stride %s; %s %llu (%s)", t->name, s,
                      t->output ? "an output's must be at least" : "it must be 0 or at least", need,
                      t->has_rows ? "rows x matrix stride" : "its row length");
      bad++;
    }
    if (v.sb % a != 0) {
      gemmc_add_error("Tensor \\"%s\\" declares align %llu but its batch stride %s is not a "
                      "multiple of %llu", t->name, a, s, a);
      bad++;
    }
  }
  return bad;
}

/* contract.ts sameStrides: whether C (at D's address) lies as D does. */
static int gemmc_same_strides(const gemmc_tensor *c, const gemmc_tensor *d, const long long *dims) {
  gemmc_view x, y;
  if (!c->strided && !d->strided) return 1;
  if (!c->has_view || !d->has_view) return c->has_view == d->has_view;
  x = gemmc_view_of(c, dims);
  y = gemmc_view_of(d, dims);
  return x.sm == y.sm && (x.batch <= 1 || x.sb == y.sb);
}

/* contract.ts launchViolations' scalar rule: every scalar finite. */
static int gemmc_scalar_violations(const gemmc_kernel *k, const double *scalars) {
  int bad = 0, i;
  for (i = 0; i < k->nscalars; i++) {
    if (!isfinite(scalars[i])) {
      char buf[32];
      gemmc_add_error("Scalar \\"%s\\" is %s: a finite %s is needed", k->scalars[i].name,
                      gemmc_number_text(scalars[i], buf, sizeof buf), k->scalars[i].dtype);
      bad++;
    }
  }
  return bad;
}

/*
 * contract.ts launchViolations, rule by rule and message by message, for a
 * launch with the dimensions, tensor addresses and scalar values given (in
 * the contract's order; scalars 0: not checked); ws is the caller's split-K workspace (has_ws).
 * Returns the number of problems, each added to the thread's message.
 */
static int gemmc_violations(const gemmc_kernel *k, const long long *dims, const CUdeviceptr *ptrs,
                            const double *scalars, int has_ws, CUdeviceptr ws,
                            unsigned long long ws_bytes) {
  int bad = 0, sizes_ok = 1, i, j;
  unsigned long long lo[GEMMC_MAX_TENSORS], hi[GEMMC_MAX_TENSORS];
  for (i = 0; i < k->ndims; i++) {
    if (dims[i] < 0 || dims[i] > GEMMC_MAX_DIM) {
      gemmc_add_error("Kernel \\"%s\\": size %s=%lld is not an integer in 0..%lld", k->name,
                      k->dims[i], dims[i], GEMMC_MAX_DIM);
      bad++;
      sizes_ok = 0;
    }
  }
  if (sizes_ok && !k->grouped) {
    long long g[3];
    gemmc_grid(k, dims, g);
    if (g[0] < 1 || g[1] < 1 || g[2] < 1) {
      gemmc_add_error("Kernel \\"%s\\": the sizes give an empty grid [%lld, %lld, %lld]: "
                      "every output dimension must be at least 1", k->name, g[0], g[1], g[2]);
      bad++;
    }
  }
  /* Strides: the values after the dims, int64_t (negative: out of range). */
  for (i = k->ndims; i < k->ndims + k->nstrides; i++) {
    if (dims[i] < 0) {
      gemmc_add_error("Kernel \\"%s\\": stride %s=%lld is not an integer in 0..9223372036854775807",
                      k->name, k->dims[i], dims[i]);
      bad++;
      sizes_ok = 0;
    }
  }
  for (i = 0; i < k->ntensors; i++) {
    const gemmc_tensor *t = &k->tensors[i];
    if (sizes_ok && t->has_leading) {
      long long v = gemmc_extent_of(t->leading, dims);
      /* contract.ts storedExtent: the kept values hold v / 2 (odd v: a half), the metadata
         ceil(v / k_per_word) words. */
      long long s = t->sparse == 1 ? v / 2 : t->sparse == 2 ? gemmc_ceil_div(v, t->k_per_word) : v;
      int half = t->sparse == 1 && v % 2 != 0;
      if (half || s % t->align_elems != 0) {
        char dim[96], name[192];
        if (t->leading.dim < 0) snprintf(dim, sizeof dim, "%lld", v);
        else snprintf(dim, sizeof dim, "%s=%lld", k->dims[t->leading.dim], v);
        if (t->sparse == 0) snprintf(name, sizeof name, "%s", dim);
        else snprintf(name, sizeof name, "(the kept values, %s / 2 = %lld%s)", dim, s,
                      half ? ".5" : "");
        gemmc_add_error("Tensor \\"%s\\" declares align %lld but its leading dimension %s "
                        "is not a multiple of %lld", t->name, t->align_elems, name, t->align_elems);
        bad++;
      }
    }
    if (sizes_ok && t->strided) bad += gemmc_stride_violations(k, t, dims);
    if (ptrs[i] == 0 && k->grouped && sizes_ok && gemmc_tensor_bytes(t, dims) == 0) {
      /* A grouped problem's empty tensor (an expert without tokens): never read or written. */
    } else if (ptrs[i] == 0) {
      gemmc_add_error("Tensor \\"%s\\" has a null address", t->name);
      bad++;
    } else if ((unsigned long long)ptrs[i] % t->align_bytes != 0) {
      gemmc_add_error("Tensor \\"%s\\" at 0x%llx is not aligned to %llu bytes (align %lld of %s)",
                      t->name, (unsigned long long)ptrs[i], t->align_bytes, t->align_elems,
                      t->dtype);
      bad++;
    }
    lo[i] = (unsigned long long)ptrs[i];
    hi[i] = sizes_ok ? gemmc_end(ptrs[i], gemmc_tensor_bytes(t, dims)) : lo[i];
  }
  if (sizes_ok) {
    for (i = 0; i < k->ntensors; i++) {
      if (!k->tensors[i].output) continue;
      for (j = 0; j < k->ntensors; j++) {
        const gemmc_tensor *in = &k->tensors[j];
        int in_place = in->is_c && lo[j] == lo[i] && gemmc_same_strides(in, &k->tensors[i], dims);
        if (in->output || in_place) continue;
        if (lo[i] < hi[j] && lo[j] < hi[i] && hi[i] > lo[i] && hi[j] > lo[j]) {
          gemmc_add_error("Output \\"%s\\" overlaps input \\"%s\\"%s", k->tensors[i].name, in->name,
                          in->is_c ? " (C may only be D itself, at the same address)" : "");
          bad++;
        }
      }
    }
  }
  if (has_ws) {
    if (ws == 0) {
      gemmc_add_error("The split-K workspace has a null address");
      bad++;
    } else if ((unsigned long long)ws % GEMMC_WORKSPACE_ALIGN != 0) {
      gemmc_add_error("The split-K workspace at 0x%llx is not aligned to %llu bytes",
                      (unsigned long long)ws, GEMMC_WORKSPACE_ALIGN);
      bad++;
    }
    if (sizes_ok) {
      unsigned long long need = gemmc_ws_need(k, dims), wend = gemmc_end(ws, ws_bytes);
      if (ws_bytes < need) {
        gemmc_add_error("The split-K workspace holds %llu bytes; the sizes need %llu", ws_bytes,
                        need);
        bad++;
      }
      for (j = 0; j < k->ntensors; j++) {
        if (wend > (unsigned long long)ws && hi[j] > lo[j] && (unsigned long long)ws < hi[j] &&
            lo[j] < wend) {
          gemmc_add_error("The split-K workspace overlaps tensor \\"%s\\"", k->tensors[j].name);
          bad++;
        }
      }
    }
  }
  if (scalars != 0) bad += gemmc_scalar_violations(k, scalars);
  return bad;
}

/*
 * Checks a launch and readies it: the grid in g, and for a split-K kernel
 * without a caller's workspace (ws == 0) the workspace gemmc keeps for the
 * kernel, grown (after a cuStreamSynchronize) and zeroed on the stream when
 * the sizes need more.
 */
GEMMC_MAYBE_UNUSED
static gemmc_status gemmc_prepare(int index, CUstream stream, const long long *dims,
                                  const CUdeviceptr *ptrs, const double *scalars, CUdeviceptr *ws,
                                  unsigned long long ws_bytes, long long g[3]) {
  const gemmc_kernel *k = gemmc_kernels[index];
  int split = k->ws_per_tile > 0;
  CUresult r;
  gemmc_clear_error();
  if (gemmc_violations(k, dims, ptrs, scalars, split && *ws != 0, *ws, ws_bytes) > 0) {
    return GEMMC_ERROR_INVALID_ARGUMENT;
  }
  if (gemmc_module == 0) {
    gemmc_add_error("Kernel \\"%s\\": gemmc_load() has not succeeded", k->name);
    return GEMMC_ERROR_NOT_LOADED;
  }
  gemmc_grid(k, dims, g);
  if (split && *ws == 0) {
    unsigned long long need = gemmc_ws_need(k, dims);
    if (need > gemmc_owned_ws_bytes[index]) {
      if (gemmc_owned_ws[index] != 0) {
        r = cuStreamSynchronize(stream);
        if (r != CUDA_SUCCESS) return gemmc_cuda_failed("cuStreamSynchronize", r);
        (void)cuMemFree(gemmc_owned_ws[index]);
        gemmc_owned_ws[index] = 0;
        gemmc_owned_ws_bytes[index] = 0;
      }
      r = cuMemAlloc(&gemmc_owned_ws[index], (size_t)need);
      if (r != CUDA_SUCCESS) {
        gemmc_owned_ws[index] = 0;
        return gemmc_cuda_failed("cuMemAlloc (split-K workspace)", r);
      }
      gemmc_owned_ws_bytes[index] = need;
      r = cuMemsetD8Async(gemmc_owned_ws[index], 0, (size_t)need, stream);
      if (r != CUDA_SUCCESS) return gemmc_cuda_failed("cuMemsetD8Async (split-K workspace)", r);
    }
    *ws = gemmc_owned_ws[index];
  }
  return GEMMC_OK;
}
`;

/** The grouped kernels' runtime (DESIGN §6.2), after the fixed functions: only in a file with one. */
export const C_RUNTIME_GROUPED =
  `/* Little-endian stores of a problem-table field (backends/ptx/group_table.ts). */
static void gemmc_put_u64(unsigned char *p, unsigned long long v) {
  int i;
  for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void gemmc_put_u32(unsigned char *p, unsigned long long v) {
  int i;
  for (i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* ir/kernel.ts problemTiles: ceil(M / tileM) * ceil(N / tileN) at valid sizes. */
static unsigned long long gemmc_problem_tiles(const gemmc_kernel *k, const long long *dims) {
  return (unsigned long long)gemmc_ceil_div(gemmc_extent_of(k->m, dims), k->tile_m) *
         (unsigned long long)gemmc_ceil_div(gemmc_extent_of(k->n, dims), k->tile_n);
}

/*
 * Checks problem i as an ordinary launch of the kernel's form (every line "Problem i: ...";
 * no empty-grid rule) and adds its tiles to *tiles. Returns the number of problems found.
 */
static int gemmc_check_problem(const gemmc_kernel *k, unsigned long long i, const long long *dims,
                               const CUdeviceptr *ptrs, unsigned long long *tiles) {
  int bad;
  gemmc_error_problem = (long long)i;
  bad = gemmc_violations(k, dims, ptrs, 0, 0, 0, 0);
  gemmc_error_problem = -1;
  if (bad == 0) *tiles = gemmc_add_sat(*tiles, gemmc_problem_tiles(k, dims));
  return bad;
}

/* The table's size check: count entries of entry bytes in a buffer of table_bytes. */
static int gemmc_table_fits(const gemmc_kernel *k, unsigned long long count,
                            unsigned long long entry, const void *table,
                            unsigned long long table_bytes) {
  unsigned long long need = gemmc_mul_sat(count, entry);
  if (count > 0 && table == 0) {
    gemmc_add_error("Kernel \\"%s\\": the host table is null", k->name);
    return 0;
  }
  if (table_bytes < need) {
    gemmc_add_error("Kernel \\"%s\\": the table holds %llu bytes; %llu problems need %llu",
                    k->name, table_bytes, count, need);
    return 0;
  }
  return 1;
}

/* The total tiles' rule (group_table.ts): at most 2^32 - 1. */
static int gemmc_tiles_fit(unsigned long long tiles) {
  if (tiles > 0xffffffffULL) {
    gemmc_add_error("The problems have %llu tiles: over 2^32 - 1", tiles);
    return 0;
  }
  return 1;
}

/* The blocks of kernel index that run at once: SMs x blocks per SM (found once, then kept). */
static gemmc_status gemmc_resident_blocks(int index, unsigned *blocks) {
  const gemmc_kernel *k = gemmc_kernels[index];
  if (gemmc_resident[index] == 0) {
    CUdevice dev;
    int sms = 0, per = 0;
    CUresult r = cuCtxGetDevice(&dev);
    if (r != CUDA_SUCCESS) return gemmc_cuda_failed("cuCtxGetDevice", r);
    r = cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    if (r != CUDA_SUCCESS) return gemmc_cuda_failed("cuDeviceGetAttribute", r);
    r = cuOccupancyMaxActiveBlocksPerMultiprocessor(&per, gemmc_functions[index],
                                                    (int)(k->block[0] * k->block[1] * k->block[2]),
                                                    (size_t)k->smem);
    if (r != CUDA_SUCCESS) return gemmc_cuda_failed("cuOccupancyMaxActiveBlocksPerMultiprocessor", r);
    gemmc_resident[index] = (unsigned)(sms > 0 ? sms : 1) * (unsigned)(per > 0 ? per : 1);
  }
  *blocks = gemmc_resident[index];
  return GEMMC_OK;
}

/*
 * Checks a grouped launch's arguments: the device table (null only without problems; 8-byte
 * aligned), the scalars (0: none), and that gemmc_load() succeeded.
 */
static gemmc_status gemmc_grouped_check(int index, CUdeviceptr table, unsigned long long count,
                                        const double *scalars) {
  const gemmc_kernel *k = gemmc_kernels[index];
  int bad = 0;
  if (count > 0 && table == 0) {
    gemmc_add_error("Kernel \\"%s\\": the problem table has a null address", k->name);
    bad++;
  } else if ((unsigned long long)table % 8 != 0) {
    gemmc_add_error("Kernel \\"%s\\": the problem table at 0x%llx is not aligned to 8 bytes",
                    k->name, (unsigned long long)table);
    bad++;
  }
  if (scalars != 0) bad += gemmc_scalar_violations(k, scalars);
  if (bad > 0) return GEMMC_ERROR_INVALID_ARGUMENT;
  if (gemmc_module == 0) {
    gemmc_add_error("Kernel \\"%s\\": gemmc_load() has not succeeded", k->name);
    return GEMMC_ERROR_NOT_LOADED;
  }
  return GEMMC_OK;
}

/*
 * Launches grouped kernel index (checked) with total_tiles tiles on the persistent grid
 * [min(total_tiles, resident blocks), 1, 1] (at least 1); params: the table's address, the
 * count, then the scalars.
 */
static gemmc_status gemmc_launch_grouped(int index, CUstream stream,
                                         unsigned long long total_tiles, void **params) {
  long long g[3];
  unsigned blocks = 1;
  gemmc_status s = gemmc_resident_blocks(index, &blocks);
  if (s != GEMMC_OK) return s;
  g[0] = (long long)(total_tiles < blocks ? total_tiles : blocks);
  if (g[0] < 1) g[0] = 1;
  g[1] = 1;
  g[2] = 1;
  return gemmc_launch(index, stream, g, params);
}
`;
