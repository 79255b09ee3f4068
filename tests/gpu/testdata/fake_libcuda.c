/*
 * A fake libcuda for testing gemmc's FFI plumbing where no GPU exists: every
 * function gemmc binds, with the real C signatures, backed by host memory.
 * It runs no kernel; it records what it was given (launch geometry, the
 * kernel arguments read through kernelParams as the entry's .param types
 * say, JIT options) and counts live resources, so a test can check that
 * arguments arrive as the ABI says and that everything is released.
 *
 * Build: cc -shared -fPIC -o libfakecuda.so fake_libcuda.c
 * Use:   GEMMC_LIBCUDA=/path/libfakecuda.so
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef uint64_t CUdeviceptr;

enum { OK = 0, INVALID_VALUE = 1, INVALID_PTX = 218, NOT_FOUND = 500, INVALID_HANDLE = 400 };

static long live_allocs, live_modules, live_events, ctx_refs, launches;
static long live_streams, stream_launches;
struct stream { unsigned magic; };
static void *current_ctx;
static int fake_ctx_storage;

/* The last launch. */
static unsigned last_grid[3], last_block[3], last_smem;
static int last_nparams;
static char last_types[64][8];
static uint64_t last_bits[64];
static int dyn_smem_attr;
static int jit_opts_ok;

struct module { char *image; };
struct function { struct module *m; char name[128]; int smem_attr; };
struct event { int recorded; };

CUresult cuGetErrorName(CUresult e, const char **s) {
  switch (e) {
    case OK: *s = "CUDA_SUCCESS"; return OK;
    case INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return OK;
    case INVALID_PTX: *s = "CUDA_ERROR_INVALID_PTX"; return OK;
    case NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; return OK;
    case INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; return OK;
    default: *s = 0; return INVALID_VALUE;
  }
}
CUresult cuGetErrorString(CUresult e, const char **s) {
  switch (e) {
    case OK: *s = "no error"; return OK;
    case INVALID_VALUE: *s = "invalid argument"; return OK;
    case INVALID_PTX: *s = "a PTX JIT compilation failed"; return OK;
    case NOT_FOUND: *s = "named symbol not found"; return OK;
    case INVALID_HANDLE: *s = "invalid resource handle"; return OK;
    default: *s = 0; return INVALID_VALUE;
  }
}
CUresult cuInit(unsigned flags) { return flags == 0 ? OK : INVALID_VALUE; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return OK; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return OK; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  if (ordinal != 0) return INVALID_VALUE;
  *d = 0;
  return OK;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  if (d != 0 || len < 1) return INVALID_VALUE;
  snprintf(name, (size_t)len, "Fake GPU");
  return OK;
}
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
  if (d != 0) return INVALID_VALUE;
  switch (attr) {
    case 5: *v = 2147483647; return OK;
    case 6: case 7: *v = 65535; return OK;
    case 8: *v = 49152; return OK;
    case 13: *v = 1980000; return OK;
    case 16: *v = 132; return OK;
    case 36: *v = 3201000; return OK;
    case 37: *v = 6144; return OK;
    case 38: *v = 62914560; return OK;
    case 75: *v = 9; return OK;
    case 76: *v = 0; return OK;
    case 97: *v = 232448; return OK;
    default: return INVALID_VALUE;
  }
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
  if (d != 0) return INVALID_VALUE;
  *bytes = (size_t)1 << 30;
  return OK;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d) {
  if (d != 0) return INVALID_VALUE;
  *ctx = &fake_ctx_storage;
  ctx_refs++;
  return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  if (d != 0 || ctx_refs == 0) return INVALID_VALUE;
  ctx_refs--;
  return OK;
}
CUresult cuDevicePrimaryCtxReset_v2(CUdevice d) { return d == 0 ? OK : INVALID_VALUE; }
CUresult cuCtxSetCurrent(void *ctx) {
  if (ctx != 0 && ctx != &fake_ctx_storage) return INVALID_VALUE;
  current_ctx = ctx;
  return OK;
}
CUresult cuCtxSynchronize(void) { return current_ctx ? OK : INVALID_VALUE; }

/* Options as gemmc passes them: error log, its size, info log, its size, verbose, wall time. */
CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *opts, void **vals) {
  char *err = 0, *info = 0;
  size_t errSize = 0, infoSize = 0;
  int sizes_ok = 1;
  for (unsigned i = 0; i < n; i++) {
    switch (opts[i]) {
      case 5: err = (char *)vals[i]; break;
      case 6: errSize = (size_t)(uintptr_t)vals[i]; break;
      case 3: info = (char *)vals[i]; break;
      case 4: infoSize = (size_t)(uintptr_t)vals[i]; break;
      case 12: if ((uintptr_t)vals[i] != 1) sizes_ok = 0; break;
      case 2: break;
      default: return INVALID_VALUE;
    }
  }
  jit_opts_ok = sizes_ok && err && info && errSize == 65536 && infoSize == 65536;
  const char *text = (const char *)image;
  if (strstr(text, "FAKE_JIT_ERROR")) {
    int w = snprintf(err, errSize, "ptxas fatal   : fake error at line 7");
    for (unsigned i = 0; i < n; i++) if (opts[i] == 6) vals[i] = (void *)(uintptr_t)(w + 1);
    return INVALID_PTX;
  }
  int w = snprintf(info, infoSize, "ptxas info    : Used 42 registers (fake)");
  for (unsigned i = 0; i < n; i++) {
    if (opts[i] == 4) vals[i] = (void *)(uintptr_t)(w + 1);
    if (opts[i] == 6) vals[i] = (void *)(uintptr_t)0;
    if (opts[i] == 2) { float ms = 1.5f; memcpy(&vals[i], &ms, sizeof ms); }
  }
  struct module *m = calloc(1, sizeof *m);
  m->image = strdup(text);
  *mod = m;
  live_modules++;
  return OK;
}
CUresult cuModuleUnload(void *mod) {
  struct module *m = mod;
  if (!m) return INVALID_HANDLE;
  free(m->image);
  free(m);
  live_modules--;
  return OK;
}
CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
  struct module *m = mod;
  char pat[160];
  snprintf(pat, sizeof pat, ".entry %s(", name);
  if (!m || !strstr(m->image, pat)) return NOT_FOUND;
  struct function *f = calloc(1, sizeof *f);
  f->m = m;
  snprintf(f->name, sizeof f->name, "%s", name);
  *fn = f; /* leaked, as the driver's handles live with the module */
  return OK;
}
CUresult cuFuncSetAttribute(void *fn, int attr, int value) {
  if (!fn) return INVALID_HANDLE;
  if (attr != 8 || value < 0 || value > 232448) return INVALID_VALUE;
  dyn_smem_attr = value;
  ((struct function *)fn)->smem_attr = value; /* the limit is per function, as the driver's */
  return OK;
}
CUresult cuFuncGetAttribute(int *v, int attr, void *fn) {
  if (!fn) return INVALID_HANDLE;
  switch (attr) {
    case 0: *v = 1024; return OK;
    case 1: *v = 0; return OK;
    case 2: *v = 0; return OK;
    case 3: *v = 8; return OK;
    case 4: *v = 42; return OK;
    case 5: *v = 80; return OK;
    case 6: *v = 90; return OK;
    case 8: *v = dyn_smem_attr; return OK;
    default: return INVALID_VALUE;
  }
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  if (n == 0) return INVALID_VALUE;
  void *q = malloc(n);
  if (!q) return 2;
  *p = (CUdeviceptr)(uintptr_t)q;
  live_allocs++;
  return OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  if (!p) return INVALID_VALUE;
  free((void *)(uintptr_t)p);
  live_allocs--;
  return OK;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  memcpy((void *)(uintptr_t)dst, src, n);
  return OK;
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return OK;
}
CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char c, size_t n) {
  memset((void *)(uintptr_t)p, c, n);
  return OK;
}

/* Reads each argument through kernelParams with the type of the entry's .param declaration. */
CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned smem, void *stream, void **params, void **extra) {
  struct function *f = fn;
  if (!f || extra) return INVALID_VALUE;
  if (stream && ((struct stream *)stream)->magic != 0x57AE) return INVALID_HANDLE;
  if (stream) stream_launches++;
  if (smem > 49152 && (int)smem > f->smem_attr) return INVALID_VALUE;
  char pat[160];
  snprintf(pat, sizeof pat, ".entry %s(", f->name);
  const char *p = strstr(f->m->image, pat);
  const char *end = p ? strchr(p, ')') : 0;
  if (!p || !end) return NOT_FOUND;
  last_nparams = 0;
  for (const char *q = strstr(p, ".param ."); q && q < end && last_nparams < 64;
       q = strstr(q + 1, ".param .")) {
    char t[8] = {0};
    sscanf(q + 8, "%7[a-z0-9]", t);
    int i = last_nparams++;
    snprintf(last_types[i], sizeof last_types[i], "%s", t);
    uint64_t bits = 0;
    if (!strcmp(t, "u64") || !strcmp(t, "f64")) memcpy(&bits, params[i], 8);
    else memcpy(&bits, params[i], 4);
    last_bits[i] = bits;
  }
  last_grid[0] = gx; last_grid[1] = gy; last_grid[2] = gz;
  last_block[0] = bx; last_block[1] = by; last_block[2] = bz;
  last_smem = smem;
  launches++;
  return OK;
}
CUresult cuEventCreate(void **e, unsigned flags) {
  if (flags != 0) return INVALID_VALUE;
  *e = calloc(1, sizeof(struct event));
  live_events++;
  return OK;
}
CUresult cuEventRecord(void *e, void *stream) {
  if (!e || stream) return INVALID_HANDLE;
  ((struct event *)e)->recorded = 1;
  return OK;
}
CUresult cuEventSynchronize(void *e) { return e ? OK : INVALID_HANDLE; }
CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) {
  if (!a || !b || !((struct event *)a)->recorded || !((struct event *)b)->recorded) {
    return INVALID_HANDLE;
  }
  *ms = 0.25f;
  return OK;
}
CUresult cuEventDestroy_v2(void *e) {
  if (!e) return INVALID_HANDLE;
  free(e);
  live_events--;
  return OK;
}

CUresult cuStreamCreate(void **s, unsigned flags) {
  if (flags != 1) return INVALID_VALUE; /* gemmc asks for CU_STREAM_NON_BLOCKING only */
  struct stream *st = calloc(1, sizeof(struct stream));
  st->magic = 0x57AE;
  *s = st;
  live_streams++;
  return OK;
}
CUresult cuStreamDestroy_v2(void *s) {
  if (!s || ((struct stream *)s)->magic != 0x57AE) return INVALID_HANDLE;
  ((struct stream *)s)->magic = 0;
  free(s);
  live_streams--;
  return OK;
}

/* For the test: counts of live resources and what the last launch received. */
int fake_stats(int64_t *out) {
  out[0] = live_allocs; out[1] = live_modules; out[2] = live_events; out[3] = ctx_refs;
  out[4] = launches; out[5] = current_ctx != 0; out[6] = jit_opts_ok; out[7] = dyn_smem_attr;
  out[8] = live_streams; out[9] = stream_launches;
  return 10;
}
int fake_last_launch(uint32_t *geometry, uint64_t *bits, char *types) {
  for (int i = 0; i < 3; i++) { geometry[i] = last_grid[i]; geometry[3 + i] = last_block[i]; }
  geometry[6] = last_smem;
  for (int i = 0; i < last_nparams; i++) {
    bits[i] = last_bits[i];
    memcpy(types + 8 * i, last_types[i], 8);
  }
  return last_nparams;
}

/* For the C artefact (backends/aot/c.ts, tests/aot_c_test.ts) and the Deno launch API
 * (backends/cuda/kernel.ts, tests/gpu/launch_test.ts): zeroing a split-K workspace on the stream,
 * waiting for the stream before it grows; the last memset and the counts, for the tests. */
static uint64_t last_memset[3];
static long memsets_async, stream_syncs;
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char c, size_t n, void *stream) {
  if (!p) return INVALID_VALUE;
  if (stream && ((struct stream *)stream)->magic != 0x57AE) return INVALID_HANDLE;
  memset((void *)(uintptr_t)p, c, n);
  last_memset[0] = p; last_memset[1] = c; last_memset[2] = n;
  memsets_async++;
  return OK;
}
CUresult cuStreamSynchronize(void *stream) {
  if (stream && ((struct stream *)stream)->magic != 0x57AE) return INVALID_HANDLE;
  stream_syncs++;
  return OK;
}
int fake_last_memset(uint64_t *out) {
  for (int i = 0; i < 3; i++) out[i] = last_memset[i];
  return 0;
}
int fake_launch_stats(int64_t *out) {
  out[0] = memsets_async; out[1] = stream_syncs; out[2] = launches;
  return 3;
}

/* For grouped launches (backends/cuda/grouped.ts, the C artefact): blocks of a function per
 * SM; the fake answers fake_occupancy (2 unless a test sets it; 0 above 1024 threads), counts
 * the calls in fake_occupancy_calls and records the arguments of the last call. */
int fake_occupancy = 2;
int fake_occupancy_calls;
static long occupancy_calls;
static int last_occ_threads;
static size_t last_occ_smem;
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *fn, int threads, size_t smem) {
  if (!fn || !n) return INVALID_HANDLE;
  occupancy_calls++;
  fake_occupancy_calls++;
  last_occ_threads = threads;
  last_occ_smem = smem;
  *n = threads > 1024 ? 0 : fake_occupancy;
  return OK;
}
int fake_occupancy_stats(int64_t *out) {
  out[0] = occupancy_calls; out[1] = last_occ_threads; out[2] = (int64_t)last_occ_smem;
  return 3;
}
