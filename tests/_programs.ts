/**
 * Programs and problem shapes shared by the by-hand sweeps (tests/ptxas_sweep.ts,
 * tests/ptx_identity.ts): inline programs covering the epilogue paths, and the
 * problem shapes whose size hints reach the tuned schedules; and the grouped and
 * sparse kernels of the C and Python artefact tests (tests/aot_c_test.ts,
 * tests/aot_python_test.ts).
 *
 * @module
 */

/**
 * An epilogue's extra declarations and its expression around the product:
 * plain, a bias along M or N (of type `vec`), or a matrix C (of type `mat`)
 * row- or column-major.
 */
function epilogue(epi: string, vec: string, mat: string): { decls: string[]; e: string } {
  const e = "A[m, k] * B[k, n]";
  if (epi.startsWith("bias")) {
    const by = epi === "bias_n" ? "n" : "m";
    return { decls: [`bias: ${vec}[${by.toUpperCase()}]`], e: `${e} + bias[${by}]` };
  }
  if (epi.startsWith("c_")) {
    return { decls: [`C: ${mat}[M, N] ${epi.slice(2)}`], e: `${e} + C[m, n]` };
  }
  return { decls: [], e };
}

/** A kernel named `name` from its declarations and statement. */
function program(name: string, decls: string[], stmt: string): [string, string] {
  return [name, `kernel ${name} {\n  ${decls.join("\n  ")}\n  ${stmt}\n}\n`];
}

/** The inline programs: name and source. */
export function programs(): [string, string][] {
  const out: [string, string][] = [];
  const isInt = (t: string) => t === "s8" || t === "u8" || t === "s4";
  for (
    const [op, d] of [
      ["f16", "f16"],
      ["bf16", "bf16"],
      ["f32", "f16"],
      ["f16", "bf16"],
      ["s8", "s8"],
      ["u8", "u8"],
      ["s4", "s8"],
    ]
  ) {
    const int = isInt(op!);
    for (const la of int ? ["row"] : ["row", "col"]) {
      for (const epi of ["plain", "bias_m", "bias_n", "c_row", "c_col"]) {
        const { decls, e } = epilogue(epi, int ? "s32" : "f32", int ? "s32" : d!);
        const body = int ? `clamp(${e}, 0, 100)` : `relu(${e})`;
        out.push(program(
          `p_${op}_${d}_${la}_${epi}`,
          [
            `A: ${op}[M, K] ${la}`,
            `B: ${op}[K, N] col`,
            ...decls,
            `D: ${d}[M, N] row${int ? " align 4" : ""}`,
          ],
          `D[m, n] = ${d}(${body})`,
        ));
      }
    }
  }
  // 32-bit outputs (the epilogue's direct path), D row- or column-major, with
  // C of D's type read ahead of D's stores (passes/lower/epilogue_direct.ts).
  for (const [op, d] of [["f32", "f32"], ["f16", "f32"], ["s8", "s32"]]) {
    for (const la of op === "s8" ? ["row"] : ["row", "col"]) {
      for (const dl of ["row", "col"]) {
        for (const epi of ["plain", "bias_n", "c_row", "c_col"]) {
          const { decls, e } = epilogue(epi, d!, d!);
          out.push(program(
            `q_${op}_${d}_${la}_${dl}_${epi}`,
            [`A: ${op}[M, K] ${la}`, `B: ${op}[K, N] col`, ...decls, `D: ${d}[M, N] ${dl}`],
            `D[m, n] = ${e}`,
          ));
        }
      }
    }
  }
  return out;
}

/** Problem shapes (M, N, K) used as size hints, as `gemm run --tune` would see them. */
export const SHAPES: readonly (readonly [number, number, number])[] = [
  [128, 8192, 8192],
  [8192, 128, 8192],
  [4096, 4096, 4096],
  [8192, 8192, 8192],
  [5000, 5000, 5000],
  [1000, 1000, 4096],
  [256, 1024, 512],
  [64, 64, 64],
  [3000, 200, 9000],
  [96, 4096, 2048],
];

/**
 * Two grouped kernels (DESIGN §6.2) for the C and Python artefact tests: the
 * mixture-of-experts form, and one with strides, C and scalars (a scalar named
 * `count`, which the artefacts must keep apart from the problem count).
 */
export const GROUPED_ARTEFACT_SOURCE = `
kernel experts grouped {
  X: bf16[M, K] row
  W: bf16[K, N] col
  Y: bf16[M, N] row
  Y[m, n] = X[m, k] * W[k, n]
  schedule {
    threadblock 64x128x32
    warp 32x64x32
  }
}
kernel gs grouped {
  A: f16[M, K] row strides(lda)
  B: f16[K, N] col
  C: f32[M, N] row strides(ldc)
  D: f32[M, N] row strides(ldc)
  count: f32 = 1.0
  beta: f32 = 0.0
  D[m, n] = count * A[m, k] * B[k, n] + beta * C[m, n]
  schedule {
    threadblock 64x64x32
    warp 32x32x32
  }
}
`;

/**
 * Two kernels with a structured-sparse A (issue 21, DESIGN §6.3) for the C and
 * Python artefact tests: f16 with a scalar (alpha), and a batched s4.
 */
export const SPARSE_ARTEFACT_SOURCE = `
kernel spmm {
  A: f16[M, K] row sparse
  B: f16[K, N] col
  D: f32[M, N]
  alpha: f32 = 1.0
  D[m, n] = alpha * A[m, k] * B[k, n]
}
kernel sps4 {
  A: s4[L, M, K] row sparse
  B: s4[L, K, N] col
  D: s32[L, M, N]
  D[l, m, n] = A[l, m, k] * B[l, k, n]
}
`;

/** hgemm with C, alpha and beta: the artefact tests' first kernel (C, Python, PDL). */
export const HGEMM_CAB_SOURCE = `
kernel hgemm {
  A: f16[M, K] row
  B: f16[K, N] col
  C: f32[M, N] row
  D: f32[M, N] row
  alpha: f32 = 1.0
  beta: f32 = 0.0
  D[m, n] = alpha * A[m, k] * B[k, n] + beta * C[m, n]
}
`;

/** A bf16 split-K kernel with a bias, named `name`: the artefact tests' split-K kernel. */
export function splitKArtefactSource(name: string): string {
  return `
kernel ${name} {
  A: bf16[M, K] row
  B: bf16[K, N] col
  bias: f32[N]
  D: bf16[M, N] row
  D[m, n] = bf16(A[m, k] * B[k, n] + bias[n])
  schedule { split_k 4 }
}
`;
}
