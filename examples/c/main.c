/*
 * The C artefact in use: four gemmc kernels (kernels.gemm, compiled by
 * build.sh into build/gemmc_kernels.h) run on device buffers through the CUDA
 * driver API and checked against a CPU reference: hgemm, an s8 kernel, a
 * split-K kernel, and a grouped kernel running the experts of a
 * mixture-of-experts layer in one launch. Prints each kernel's largest error
 * and PASS or FAIL; exits 0 when all pass.
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

/* A random normal bf16 in +-[2^-4, 2): its bits, and its value. */
static uint16_t rand_bf16(void) {
  uint32_t sign = rnd() & 1, exp = 123 + rnd() % 4, mant = rnd() & 0x7f;
  return (uint16_t)(sign << 15 | exp << 7 | mant);
}
static double bf16_value(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
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

/*
 * Y = X W per expert, in one grouped launch: T tokens sorted by expert (X: bf16 [T, K] row), one
 * weight matrix per expert (W_g: bf16 [K, N] col, stored [N][K], back to back), Y: bf16 [T, N]
 * row; expert g takes the rows offs[g-1]..offs[g]. Two experts get no token. The bound: K + 8
 * f32 additions (2^-23 each, of the magnitudes) and the rounding to bf16 (2^-8 of the result).
 */
static int run_grouped(CUstream stream) {
  enum { E = 6, K = 136, N = 200 };
  static const int64_t counts[E] = {70, 0, 129, 3, 0, 40};
  int64_t offs[E + 1] = {0}, T, g, m, n, k;
  gemmc_experts_problem problems[E];
  size_t nx, nw, ny, i, table_bytes = gemmc_experts_table_bytes(E);
  uint16_t *x, *w, *y;
  unsigned char *host_table = malloc(table_bytes);
  double max_err = 0;
  long bad = 0;
  CUdeviceptr dx, dw, dy, dtable;
  gemmc_status s;
  for (g = 0; g < E; g++) offs[g + 1] = offs[g] + counts[g];
  T = offs[E];
  nx = (size_t)(T * K), nw = (size_t)(E * N * K), ny = (size_t)(T * N);
  x = malloc(nx * 2), w = malloc(nw * 2), y = malloc(ny * 2);
  for (i = 0; i < nx; i++) x[i] = rand_bf16();
  for (i = 0; i < nw; i++) w[i] = rand_bf16();
  dx = upload(x, nx * 2);
  dw = upload(w, nw * 2);
  dy = poisoned(ny * 2);
  CHECK_CU(cuMemAlloc(&dtable, table_bytes));
  for (g = 0; g < E; g++) {
    problems[g].X = dx + (CUdeviceptr)(offs[g] * K * 2);
    problems[g].W = dw + (CUdeviceptr)(g * N * K * 2);
    problems[g].Y = dy + (CUdeviceptr)(offs[g] * N * 2);
    problems[g].M = (uint32_t)counts[g];
    problems[g].K = K;
    problems[g].N = N;
  }
  /* A problem that breaks the contract is named; nothing is written or launched. */
  problems[2].X += 2;
  s = gemmc_experts_table(problems, E, host_table, table_bytes, 0);
  printf("refused table (status %d):\n%s\n", (int)s, gemmc_last_error());
  if (s != GEMMC_ERROR_INVALID_ARGUMENT || strncmp(gemmc_last_error(), "Problem 2: ", 11) != 0) {
    bad++;
  }
  problems[2].X -= 2;
  CHECK_GEMMC(gemmc_experts_run(stream, problems, E, host_table, dtable, table_bytes));
  CHECK_CU(cuStreamSynchronize(stream));
  CHECK_CU(cuMemcpyDtoH(y, dy, ny * 2));
  for (g = 0; g < E; g++) {
    for (m = offs[g]; m < offs[g + 1]; m++) {
      for (n = 0; n < N; n++) {
        double sum = 0, mag = 0, err;
        for (k = 0; k < K; k++) {
          double p = bf16_value(x[m * K + k]) * bf16_value(w[(g * N + n) * K + k]);
          sum += p;
          mag += fabs(p);
        }
        err = fabs(bf16_value(y[m * N + n]) - sum);
        if (!(err <= ldexp((double)(K + 8) * mag * (1 + 1.0 / 128), -23) + ldexp(fabs(sum), -8))) {
          bad++;
        }
        if (!(err <= max_err)) max_err = err;
      }
    }
  }
  CHECK_CU(cuMemFree(dx));
  CHECK_CU(cuMemFree(dw));
  CHECK_CU(cuMemFree(dy));
  CHECK_CU(cuMemFree(dtable));
  free(x);
  free(w);
  free(y);
  free(host_table);
  return report("experts", max_err, bad);
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
  ok &= run_grouped(stream);                /* six experts, two without tokens, one launch */

  gemmc_unload();
  CHECK_CU(cuStreamDestroy(stream));
  CHECK_CU(cuDevicePrimaryCtxRelease(dev));
  printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
