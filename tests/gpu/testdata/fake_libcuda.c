/*
 * A fake libcuda for testing gemmc's FFI plumbing where no GPU exists: every
 * function gemmc binds, with the real C signatures, backed by host memory.
 * It runs no kernel; it records what it was given (launch geometry, the
 * kernel arguments read through kernelParams as the entry's .param types
 * say, JIT options) and counts live resources, so a test can check that
 * arguments arrive as the ABI says and that everything is released. Tensor
 * maps (sm90's TMA) are encoded into a recognisable record of their arguments
 * (cuTensorMapEncodeTiled below), and a launch refuses one it did not encode.
 * cuLaunchKernelEx reads its CUlaunchConfig and attributes at cuda.h's offsets,
 * accepts only the programmatic-dependent-launch attribute and records it, then
 * launches as cuLaunchKernel does.
 *
 * Build: cc -shared -fPIC -o libfakecuda.so fake_libcuda.c
 * Use:   GEMMC_LIBCUDA=/path/libfakecuda.so
 */
#include <stddef.h>
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
/* Device to device (bench/llm.ts: the copy bandwidth and --copy's side): both ends must be
 * allocations of this fake, which are host memory. */
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (!dst || !src) return INVALID_VALUE;
  memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  return OK;
}
CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char c, size_t n) {
  memset((void *)(uintptr_t)p, c, n);
  return OK;
}

/*
 * cuTensorMapEncodeTiled (sm90's TMA, ir/tensor_map.ts), validated as the real one is: a
 * 64-byte aligned map, rank 1..5, a 16-byte aligned address, extents 1..2^32, strides positive
 * multiples of 16 below 2^40, boxes 1..256 (the inner one a multiple of 16 bytes, and at most
 * the swizzle's span with one), element strides 1..8, interleave none. The map it writes is
 * recognisable (the fake's layout, not the driver's): u32 magic "TMAP", u32 serial (1, 2, ...),
 * u32 dataType, u32 rank, u64 address at 16, u64 globalDim[5] at 24, u64 globalStrides[4] at
 * 64, u32 boxDim[5] at 96, u8 elementStrides[5] at 116, u8 interleave, swizzle, l2Promotion,
 * oobFill at 121..124. The last maps encoded are kept so that a launch can check that each
 * tensor map it receives is one of them, byte for byte.
 */
#define FAKE_MAPS 256
static unsigned char encoded_maps[FAKE_MAPS][128];
static uint32_t map_serial;
static long bad_map_launches;
static unsigned char last_maps[64][128];
static int map_element_bytes(unsigned t) {
  static const int bytes[13] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  return t < 13 ? bytes[t] : 0;
}
CUresult cuTensorMapEncodeTiled(void *map, unsigned dataType, unsigned rank, void *address,
                                const uint64_t *dims, const uint64_t *strides,
                                const uint32_t *box, const uint32_t *elementStrides,
                                unsigned interleave, unsigned swizzle, unsigned l2, unsigned oob) {
  int eb = map_element_bytes(dataType);
  if (!map || (uintptr_t)map % 64 != 0 || eb == 0 || rank < 1 || rank > 5) return INVALID_VALUE;
  if ((uintptr_t)address % 16 != 0 || !dims || !box || !elementStrides) return INVALID_VALUE;
  if (rank > 1 && !strides) return INVALID_VALUE;
  if (interleave != 0 || swizzle > 3 || l2 > 3 || oob > 1) return INVALID_VALUE;
  for (unsigned i = 0; i < rank; i++) {
    if (dims[i] < 1 || dims[i] > (1ULL << 32)) return INVALID_VALUE;
    if (box[i] < 1 || box[i] > 256 || elementStrides[i] < 1 || elementStrides[i] > 8) {
      return INVALID_VALUE;
    }
    if (i + 1 < rank && (strides[i] == 0 || strides[i] % 16 != 0 || strides[i] >= (1ULL << 40))) {
      return INVALID_VALUE;
    }
  }
  unsigned inner = box[0] * (unsigned)eb;
  if (inner % 16 != 0 || (swizzle > 0 && inner > (16u << swizzle))) return INVALID_VALUE;
  unsigned char m[128] = {0};
  uint32_t head[4] = {0x50414D54u, ++map_serial, dataType, rank};
  uint64_t a = (uint64_t)(uintptr_t)address;
  memcpy(m, head, 16);
  memcpy(m + 16, &a, 8);
  for (unsigned i = 0; i < rank; i++) {
    memcpy(m + 24 + 8 * i, &dims[i], 8);
    memcpy(m + 96 + 4 * i, &box[i], 4);
    m[116 + i] = (unsigned char)elementStrides[i];
    if (i + 1 < rank) memcpy(m + 64 + 8 * i, &strides[i], 8);
  }
  m[121] = (unsigned char)interleave; m[122] = (unsigned char)swizzle;
  m[123] = (unsigned char)l2; m[124] = (unsigned char)oob;
  memcpy(encoded_maps[map_serial % FAKE_MAPS], m, 128);
  memcpy(map, m, 128);
  return OK;
}
/* Whether 128 bytes are a map the fake encoded (among the last FAKE_MAPS), unchanged. */
static int fake_map_known(const void *p) {
  uint32_t head[2];
  memcpy(head, p, 8);
  if (head[0] != 0x50414D54u || head[1] == 0 || head[1] > map_serial ||
      map_serial - head[1] >= FAKE_MAPS) {
    return 0;
  }
  return memcmp(encoded_maps[head[1] % FAKE_MAPS], p, 128) == 0;
}
/* For the tests: the last launch's map in parameter i (0: none there), the encodes so far, and
 * the launches refused for a map the fake did not encode. */
int fake_last_map(int i, unsigned char *out) {
  if (i < 0 || i >= last_nparams || strcmp(last_types[i], "tmap")) return 0;
  memcpy(out, last_maps[i], 128);
  return 1;
}
int fake_map_stats(int64_t *out) {
  out[0] = map_serial; out[1] = bad_map_launches;
  return 2;
}

/* Reads each argument through kernelParams with the type of the entry's .param declaration:
 * the launch of cuLaunchKernel and cuLaunchKernelEx alike. */
static CUresult fake_launch(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned smem, void *stream, void **params,
                            void **extra) {
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
    uint64_t bits = 0;
    if (!strcmp(t, "align")) {
      /* A tensor map by value (.param .align 64 .b8 NAME[128]): one the fake encoded. */
      const char *open = strchr(q, '[');
      if (!open || open > end || atoi(open + 1) != 128 || atoi(q + 14) != 64) return INVALID_VALUE;
      snprintf(t, sizeof t, "tmap");
      if (!fake_map_known(params[i])) { last_nparams = 0; bad_map_launches++; return INVALID_VALUE; }
      memcpy(last_maps[i], params[i], 128);
      memcpy(&bits, (const unsigned char *)params[i] + 16, 8); /* the map's global address */
    } else if (!strcmp(t, "u64") || !strcmp(t, "f64")) memcpy(&bits, params[i], 8);
    else memcpy(&bits, params[i], 4);
    snprintf(last_types[i], sizeof last_types[i], "%s", t);
    last_bits[i] = bits;
  }
  last_grid[0] = gx; last_grid[1] = gy; last_grid[2] = gz;
  last_block[0] = bx; last_block[1] = by; last_block[2] = bz;
  last_smem = smem;
  launches++;
  return OK;
}
static long plain_launches;
CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned smem, void *stream, void **params, void **extra) {
  CUresult r = fake_launch(fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra);
  if (r == OK) plain_launches++;
  return r;
}

/*
 * cuLaunchKernelEx (CUDA 11.8+) with the structs of cuda.h (CUDA 12 and 13, 64-bit), written
 * out here (the fake builds without the toolkit) and pinned to the header's offsets by the
 * static assertions (tests/launch_ex_layout_test.ts checks the same numbers against cuda.h and
 * backends/cuda/symbols.ts). The only attribute accepted is
 * CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (6) with a value of 0 or 1; any other
 * id, more than FAKE_MAX_ATTRS attributes, a null list, or a value union with bytes past the int
 * that are not 0 (gemmc zeroes them) is CUDA_ERROR_INVALID_VALUE, and nothing is launched. The
 * last call's attributes and stream are recorded (fake_launch_ex_stats).
 */
enum { FAKE_ATTR_PDL = 6, FAKE_MAX_ATTRS = 8 };
typedef struct {
  int id;
  char pad[4];
  union { char pad[64]; int programmaticStreamSerializationAllowed; } value;
} fake_launch_attribute;
typedef struct {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  void *hStream;
  fake_launch_attribute *attrs;
  unsigned numAttrs;
} fake_launch_config;
_Static_assert(offsetof(fake_launch_config, gridDimX) == 0, "gridDimX");
_Static_assert(offsetof(fake_launch_config, gridDimY) == 4, "gridDimY");
_Static_assert(offsetof(fake_launch_config, gridDimZ) == 8, "gridDimZ");
_Static_assert(offsetof(fake_launch_config, blockDimX) == 12, "blockDimX");
_Static_assert(offsetof(fake_launch_config, blockDimY) == 16, "blockDimY");
_Static_assert(offsetof(fake_launch_config, blockDimZ) == 20, "blockDimZ");
_Static_assert(offsetof(fake_launch_config, sharedMemBytes) == 24, "sharedMemBytes");
_Static_assert(offsetof(fake_launch_config, hStream) == 32, "hStream");
_Static_assert(offsetof(fake_launch_config, attrs) == 40, "attrs");
_Static_assert(offsetof(fake_launch_config, numAttrs) == 48, "numAttrs");
_Static_assert(sizeof(fake_launch_config) == 56, "sizeof(CUlaunchConfig)");
_Static_assert(offsetof(fake_launch_attribute, value) == 8, "CUlaunchAttribute.value");
_Static_assert(sizeof(fake_launch_attribute) == 72, "sizeof(CUlaunchAttribute)");
static long ex_launches, pdl_launches, ex_refused;
static int64_t last_ex[4]; /* numAttrs, the last attribute's id, its int value, hStream */
CUresult cuLaunchKernelEx(const fake_launch_config *config, void *fn, void **params,
                          void **extra) {
  if (!config || config->numAttrs > FAKE_MAX_ATTRS ||
      (config->numAttrs > 0 && !config->attrs)) {
    ex_refused++;
    return INVALID_VALUE;
  }
  int pdl = 0;
  for (unsigned i = 0; i < config->numAttrs; i++) {
    const fake_launch_attribute *a = &config->attrs[i];
    int v = a->value.programmaticStreamSerializationAllowed;
    int clean = 1;
    for (size_t b = sizeof(int); b < sizeof a->value.pad; b++) clean &= a->value.pad[b] == 0;
    if (a->id != FAKE_ATTR_PDL || (v != 0 && v != 1) || !clean) {
      ex_refused++;
      return INVALID_VALUE;
    }
    pdl = v;
  }
  CUresult r = fake_launch(fn, config->gridDimX, config->gridDimY, config->gridDimZ,
                           config->blockDimX, config->blockDimY, config->blockDimZ,
                           config->sharedMemBytes, config->hStream, params, extra);
  if (r != OK) return r;
  ex_launches++;
  if (pdl) pdl_launches++;
  const fake_launch_attribute *last = config->numAttrs > 0
    ? &config->attrs[config->numAttrs - 1] : 0;
  last_ex[0] = config->numAttrs;
  last_ex[1] = last ? last->id : -1;
  last_ex[2] = last ? last->value.programmaticStreamSerializationAllowed : -1;
  last_ex[3] = (int64_t)(uintptr_t)config->hStream;
  return OK;
}
/* For the tests: cuLaunchKernel's launches, cuLaunchKernelEx's, those of them with PDL allowed,
 * the last cuLaunchKernelEx's numAttrs, attribute id, attribute value and stream, and the
 * cuLaunchKernelEx calls refused for their configuration. */
int fake_launch_ex_stats(int64_t *out) {
  out[0] = plain_launches; out[1] = ex_launches; out[2] = pdl_launches;
  for (int i = 0; i < 4; i++) out[3 + i] = last_ex[i];
  out[7] = ex_refused;
  return 8;
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
