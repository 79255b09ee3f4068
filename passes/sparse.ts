/**
 * The gate of sparse kernels (DESIGN §6.3, issue 21): the front end accepts a
 * structured-sparse A (`A: f16[M, K] row sparse`), but no pass plans it and
 * the lowering does not emit `mma.sp` yet, so a sparse kernel stops here,
 * before the first pass, with `E0213` at the word `sparse`. When the lowering
 * exists, this check goes.
 *
 * @module
 */

import { diagnostic, DiagnosticError } from "../dsl/diagnostics.ts";
import { type GemmKernel, sparseMetaParam } from "../ir/gemm.ts";

/**
 * Refuses a kernel with a sparse A: its lowering is not built yet.
 *
 * @param k A checked kernel.
 * @throws {DiagnosticError} E0213 at A's `sparse` for a sparse kernel; nothing for a dense one.
 * @example
 * ```ts
 * import { equal, throws } from "node:assert/strict";
 * import { check } from "../compiler.ts";
 * import { refuseSparse } from "./sparse.ts";
 * const src = (s: string) =>
 *   `kernel k { A: f16[M, K] ${s}\n B: f16[K, N] col\n D: f32[M, N]\n D[m, n] = A[m, k] * B[k, n] }`;
 * equal(refuseSparse(check(src("")).kernels[0]!), undefined);
 * throws(() => refuseSparse(check(src("sparse")).kernels[0]!), /E0213|not built yet/);
 * ```
 */
export function refuseSparse(k: GemmKernel): void {
  const meta = sparseMetaParam(k);
  if (meta === null) return;
  const a = k.problem.a.tensor;
  throw new DiagnosticError([
    diagnostic(
      "E0213",
      `Sparse lowering not built yet (issue 21): "${a}" checks as a structured-sparse A ` +
        `(kept values and "${meta.name}"), but no kernel is generated for it; ` +
        `"gemm check" accepts it`,
      k.source,
      meta.span,
    ),
  ]);
}
