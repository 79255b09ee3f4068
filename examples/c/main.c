/*
 * The C artefact in use: three gemmc kernels (kernels.gemm, compiled by
 * build.sh into build/gemmc_kernels.h) run on device buffers through the CUDA
 * driver API and checked against a CPU reference. Prints each kernel's
 * largest error and PASS or FAIL; exits 0 when all three pass.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GEMMC_IMPLEMENTATION
#include "gemmc_kernels.h"

#define CHECK_CU(call)                                                       \
  do {                                                                       \
    CUresult r_ = (call);                                                    \
    if (r_ != CUDA_SUCCESS) {                                                \
      const char *s_ = 0;                                                    \
      cuGetErrorString(r_, &s_);                                             \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, s_ ? s_ : "?"); \
      exit(2);                                                               \
    }                                                                        \
  } while (0)

#define CHECK_GEMMC(call)                                                    \
  do {                                                                       \
    gemmc_status s_ = (call);                                                \
    if (s_ != GEMMC_OK) {                                                    \
      fprintf(stderr, "%s:%d: %s: status %d:\n%s\n", __FILE__, __LINE__, #call, (int)s_, \
              gemmc_last_error());                                           \
      exit(2);                                                               \
    }                                                                        \
  } while (0)

/* xorshift64*: reproducible random inputs. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32);
}

/* A random normal f16 in +-[2^-5, 2): its bits, and its value. */
static uint16_t rand_f16(void) {
  uint32_t sign = rnd() & 1, exp = 10 + rnd() % 6, mant = rnd() & 0x3ff;
  return (uint16_t)(sign << 15 | exp << 10 | mant);
}
static double f16_value(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  double v = ldexp(1.0 + (h & 0x3ff) / 1024.0, exp - 15);
  return (h & 0x8000) ? -v : v;
}

/* The copies and memsets below run on the legacy default stream, which a non-blocking stream
 * does not wait for: each waits for its own work before a launch may read the buffer. */
static CUdeviceptr upload(const void *host, size_t bytes) {
  CUdeviceptr p;
  CHECK_CU(cuMemAlloc(&p, bytes));
  CHECK_CU(cuMemcpyHtoD(p, host, bytes));
  CHECK_CU(cuCtxSynchronize());
  return p;
}

/* An output buffer poisoned with 0xFF bytes (NaN for f32, -1 for s32). */
static CUdeviceptr poisoned(size_t bytes) {
  CUdeviceptr p;
  CHECK_CU(cuMemAlloc(&p, bytes));
  CHECK_CU(cuMemsetD8(p, 0xFF, bytes));
  CHECK_CU(cuCtxSynchronize());
  return p;
}

/* Reports a kernel's result: the largest error and PASS when every element is within its bound. */
static int report(const char *name, double max_err, long bad) {
  printf("%-14s max error %.3g  %s\n", name, max_err, bad == 0 ? "PASS" : "FAIL");
  if (bad) printf("%-14s %ld elements outside the bound\n", "", bad);
  return bad == 0;
}

/*
 * D = alpha * A B + beta * C (A: f16 [M, K] row, B: f16 [K, N] col), or D = A B
 * with split-K (skinny). The reference sums in double. The products of f16
 * values are exact in f32; the bound is that of K + 8 f32 additions (the sum,
 * the split-K partials, alpha and beta), each off by at most 2^-23 (tensor
 * cores may truncate): (K + 8) 2^-23 of the magnitudes.
 */
static int run_f16(int split, int64_t M, int64_t N, int64_t K, CUstream stream) {
  size_t na = (size_t)(M * K), nb = (size_t)(K * N), nd = (size_t)(M * N), i;
  uint16_t *a = malloc(na * 2), *b = malloc(nb * 2);
  float *c = malloc(nd * 4), *d = malloc(nd * 4);
  float alpha = split ? 1.0f : 1.5f, beta = split ? 0.0f : -0.75f;
  double max_err = 0;
  long bad = 0;
  int64_t m, n, k;
  CUdeviceptr da, db, dc = 0, dd;
  for (i = 0; i < na; i++) a[i] = rand_f16();
  for (i = 0; i < nb; i++) b[i] = rand_f16();
  for (i = 0; i < nd; i++) c[i] = (float)((int)(rnd() % 2001) - 1000) / 256.0f;
  da = upload(a, na * 2);
  db = upload(b, nb * 2);
  dd = poisoned(nd * 4);
  if (split) {
    CHECK_GEMMC(gemmc_skinny_splitk_launch(stream, da, db, dd, M, K, N, 0, 0));
  } else {
    dc = upload(c, nd * 4);
    CHECK_GEMMC(gemmc_hgemm_launch(stream, da, db, dc, dd, M, K, N, alpha, beta));
  }
  CHECK_CU(cuStreamSynchronize(stream));
  CHECK_CU(cuMemcpyDtoH(d, dd, nd * 4));
  for (m = 0; m < M; m++) {
    for (n = 0; n < N; n++) {
      double sum = 0, mag = 0, want, err;
      for (k = 0; k < K; k++) {
        double p = f16_value(a[m * K + k]) * f16_value(b[n * K + k]);
        sum += p;
        mag += fabs(p);
      }
      want = alpha * sum + beta * c[m * N + n];
      err = fabs(d[m * N + n] - want);
      if (!(err <= ldexp((double)(K + 8) * (fabs(alpha) * mag + fabs(beta * c[m * N + n])), -23))) {
        bad++;
      }
      if (!(err <= max_err)) max_err = err;
    }
  }
  CHECK_CU(cuMemFree(da));
  CHECK_CU(cuMemFree(db));
  CHECK_CU(cuMemFree(dd));
  if (dc) CHECK_CU(cuMemFree(dc));
  free(a);
  free(b);
  free(c);
  free(d);
  return report(split ? "skinny_splitk" : "hgemm", max_err, bad);
}

/* D = A B in s8 x s8 -> s32: exact. */
static int run_s8(int64_t M, int64_t N, int64_t K, CUstream stream) {
  size_t na = (size_t)(M * K), nb = (size_t)(K * N), nd = (size_t)(M * N), i;
  int8_t *a = malloc(na), *b = malloc(nb);
  int32_t *d = malloc(nd * 4);
  double max_err = 0;
  long bad = 0;
  int64_t m, n, k;
  CUdeviceptr da, db, dd;
  for (i = 0; i < na; i++) a[i] = (int8_t)(rnd() & 0xff);
  for (i = 0; i < nb; i++) b[i] = (int8_t)(rnd() & 0xff);
  da = upload(a, na);
  db = upload(b, nb);
  dd = poisoned(nd * 4);
  CHECK_GEMMC(gemmc_igemm_s8_launch(stream, da, db, dd, M, K, N));
  CHECK_CU(cuStreamSynchronize(stream));
  CHECK_CU(cuMemcpyDtoH(d, dd, nd * 4));
  for (m = 0; m < M; m++) {
    for (n = 0; n < N; n++) {
      int64_t want = 0;
      double err;
      for (k = 0; k < K; k++) want += (int64_t)a[m * K + k] * b[n * K + k];
      err = fabs((double)d[m * N + n] - (double)want);
      if (err != 0) bad++;
      if (err > max_err) max_err = err;
    }
  }
  CHECK_CU(cuMemFree(da));
  CHECK_CU(cuMemFree(db));
  CHECK_CU(cuMemFree(dd));
  free(a);
  free(b);
  free(d);
  return report("igemm_s8", max_err, bad);
}

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  int ok = 1;
  gemmc_status s;
  CHECK_CU(cuInit(0));
  CHECK_CU(cuDeviceGet(&dev, 0));
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK_CU(cuCtxSetCurrent(ctx));
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK_GEMMC(gemmc_load());

  /* A launch that breaks the contract is refused before anything runs, with the reason. */
  s = gemmc_igemm_s8_launch(stream, 0, 0, 0, 128, 100, 128);
  printf("refused launch (status %d):\n%s\n", (int)s, gemmc_last_error());
  ok &= s == GEMMC_ERROR_INVALID_ARGUMENT;

  ok &= run_f16(0, 384, 320, 264, stream);  /* sizes off the tile: partial tiles */
  ok &= run_s8(256, 192, 512, stream);
  ok &= run_f16(1, 48, 136, 4096, stream);  /* few output tiles, a long K: split-K */

  gemmc_unload();
  CHECK_CU(cuStreamDestroy(stream));
  CHECK_CU(cuDevicePrimaryCtxRelease(dev));
  printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
