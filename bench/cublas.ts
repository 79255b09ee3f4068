/**
 * cuBLAS through `Deno.dlopen` (libcublas.so.13, .12 or .so), only what the
 * GPU benchmark needs: a handle, and `cublasGemmEx` for the benchmark's
 * problems, row-major D = A (row-major M x K) * B (column-major K x N), the
 * "TN" layout of gemmc's benchmark kernels.
 *
 * cuBLAS is column-major; a row-major M x N matrix is its N x M transpose, so
 * D^T = B^T A^T: `gemmEx(opT, opN, m = N, n = M, k = K, B, ldb = K, A,
 * lda = K, D, ldd = N)`.
 *
 * @module
 */

/** cudaDataType values. */
export const CUDA_R = Object.freeze({ f32: 0, f64: 1, f16: 2, s8: 3, s32: 10, bf16: 14 });
/** cublasComputeType_t values. */
export const CUBLAS_COMPUTE = Object.freeze({
  f16: 64,
  f32: 68,
  f32FastTf32: 77,
  f64: 70,
  s32: 72,
});

const SYMBOLS = {
  cublasCreate_v2: { parameters: ["buffer"], result: "i32" },
  cublasDestroy_v2: { parameters: ["pointer"], result: "i32" },
  cublasGemmEx: {
    parameters: [
      "pointer", // handle
      "i32", // transa
      "i32", // transb
      "i32", // m
      "i32", // n
      "i32", // k
      "buffer", // alpha (host)
      "u64", // A
      "i32", // Atype
      "i32", // lda
      "u64", // B
      "i32", // Btype
      "i32", // ldb
      "buffer", // beta (host)
      "u64", // C
      "i32", // Ctype
      "i32", // ldc
      "i32", // computeType
      "i32", // algo
    ],
    result: "i32",
  },
} as const;

type Lib = Deno.DynamicLibrary<typeof SYMBOLS>;

/** The benchmark types (`f32`: our `math f32`; `3xtf32`: our `math 3xtf32`; cuBLAS computes both in true f32). */
export type BlasType = "f16" | "bf16" | "tf32" | "s8" | "f64" | "f32" | "3xtf32";

/** A cuBLAS handle. */
export class Cublas {
  readonly #lib: Lib;
  readonly #handle: Deno.PointerValue;
  /** The library file that was loaded. */
  readonly path: string;

  private constructor(lib: Lib, handle: Deno.PointerValue, path: string) {
    this.#lib = lib;
    this.#handle = handle;
    this.path = path;
  }

  /**
   * Loads cuBLAS and creates a handle (the CUDA context must be current).
   *
   * @returns The handle.
   */
  static open(): Cublas {
    let lib: Lib | null = null;
    let path = "";
    const errors: string[] = [];
    for (const p of ["libcublas.so.13", "libcublas.so.12", "libcublas.so"]) {
      try {
        lib = Deno.dlopen(p, SYMBOLS);
        path = p;
        break;
      } catch (e) {
        errors.push(`${p}: ${(e as Error).message}`);
      }
    }
    if (lib === null) throw new Error(`Cannot load cuBLAS: ${errors.join("; ")}`);
    const slot = new BigUint64Array(1);
    const st = lib.symbols.cublasCreate_v2(slot);
    if (st !== 0) throw new Error(`cublasCreate_v2 failed with status ${st}`);
    return new Cublas(lib, Deno.UnsafePointer.create(slot[0]!), path);
  }

  /**
   * D (row-major M x N) = A (row-major M x K) * B (column-major K x N).
   *
   * @param t The type: operands and output as the benchmark kernels declare them.
   * @param m M.
   * @param n N.
   * @param k K.
   * @param a Device address of A.
   * @param b Device address of B.
   * @param d Device address of D.
   */
  gemmTN(t: BlasType, m: number, n: number, k: number, a: bigint, b: bigint, d: bigint): void {
    const cfg = {
      f16: { ab: CUDA_R.f16, c: CUDA_R.f16, compute: CUBLAS_COMPUTE.f32, scalar: "f32" },
      bf16: { ab: CUDA_R.bf16, c: CUDA_R.bf16, compute: CUBLAS_COMPUTE.f32, scalar: "f32" },
      tf32: { ab: CUDA_R.f32, c: CUDA_R.f32, compute: CUBLAS_COMPUTE.f32FastTf32, scalar: "f32" },
      s8: { ab: CUDA_R.s8, c: CUDA_R.s32, compute: CUBLAS_COMPUTE.s32, scalar: "s32" },
      f64: { ab: CUDA_R.f64, c: CUDA_R.f64, compute: CUBLAS_COMPUTE.f64, scalar: "f64" },
      // True f32 (the handle's default math mode: no TF32), for both of our
      // f32-accurate modes: cuBLAS has no 3xtf32 of its own.
      f32: { ab: CUDA_R.f32, c: CUDA_R.f32, compute: CUBLAS_COMPUTE.f32, scalar: "f32" },
      "3xtf32": { ab: CUDA_R.f32, c: CUDA_R.f32, compute: CUBLAS_COMPUTE.f32, scalar: "f32" },
    }[t];
    const scalar = (v: number) =>
      cfg.scalar === "f32"
        ? new Uint8Array(new Float32Array([v]).buffer)
        : cfg.scalar === "f64"
        ? new Uint8Array(new Float64Array([v]).buffer)
        : new Uint8Array(new Int32Array([v]).buffer);
    const st = this.#lib.symbols.cublasGemmEx(
      this.#handle,
      1, // B^T
      0, // A^T as stored
      n,
      m,
      k,
      scalar(1),
      b,
      cfg.ab,
      k,
      a,
      cfg.ab,
      k,
      scalar(0),
      d,
      cfg.c,
      n,
      cfg.compute,
      -1, // CUBLAS_GEMM_DEFAULT
    );
    if (st !== 0) throw new Error(`cublasGemmEx (${t}, ${m}x${n}x${k}) failed with status ${st}`);
  }

  /** Destroys the handle and unloads the library. */
  close(): void {
    this.#lib.symbols.cublasDestroy_v2(this.#handle);
    this.#lib.close();
  }
}
