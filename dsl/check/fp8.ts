/**
 * sm90's 8-bit floats (`e4m3`, `e5m2`, DESIGN §6.4): where a program may declare them. They
 * are MMA operands only (A and B; outputs, C and vectors stay 16- or 32-bit), on a target with
 * the warpgroup MMA that multiplies them, K-contiguous (A row-major, B column-major: wgmma
 * reads 8-bit operands K-major only) and dense (a sparse A stays on mma.sp). Grouped kernels
 * of them run on wgmma too (passes/wgmma.ts).
 *
 * @module
 */

import type { TensorDeclAst } from "../ast.ts";
import type { MatrixView, Role, Target } from "../../ir/gemm.ts";
import { isFp8 } from "../../ir/dtype.ts";
import { targetHas } from "../../ir/target.ts";
import { fail, type Scope } from "./scope.ts";

/**
 * Checks every 8-bit float declaration of a kernel.
 *
 * @param s The scope (its tensors).
 * @param roles Each tensor's role.
 * @param views A's and B's views.
 * @param target The compile target.
 * @throws {DiagnosticError} E0128 naming the rule broken.
 */
export function checkFp8(
  s: Scope,
  roles: ReadonlyMap<string, Role>,
  views: { readonly a: MatrixView; readonly b: MatrixView },
  target: Target,
): void {
  for (const d of s.tensors.values()) {
    if (!isFp8(d.dtype)) continue;
    const role = roles.get(d.name.text);
    const say = (why: string, decl: TensorDeclAst = d) =>
      fail(s.src, "E0128", `"${d.name.text}: ${d.dtype}": ${why}`, decl.dtypeSpan);
    if (role !== "A" && role !== "B") {
      say("8-bit floats are MMA operands only (A or B); store f16, bf16 or f32");
    }
    if (!targetHas(target, "wgmma")) {
      say(`8-bit float operands need target sm90 (the warpgroup MMA); the target is ${target}`);
    }
    const layout = role === "A" ? views.a.layout : views.b.layout;
    if (layout !== (role === "A" ? "row" : "col")) {
      say(
        "8-bit float operands must be K-contiguous (A row-major, B column-major): wgmma reads " +
          "them K-major only",
      );
    }
    if (d.sparse !== null) say("a sparse 8-bit float operand is not supported");
  }
}
