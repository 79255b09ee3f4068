/**
 * Hand-built strided manifests for the launcher tests (issue 20): a compiled
 * dense kernel's manifest with `strides` added to some tensors and a stride
 * parameter (`kind: "stride"`, `.u64`) per new name, placed after the dims
 * in order of first appearance (DESIGN.md §6.1). Shortcut until the compiler
 * emits strided kernels: the PTX stays the dense kernel's, so these serve the
 * contract, the fake driver and the Python fakes only, never a real launch.
 */

import { type CompiledKernel, ptxModule } from "../compiler.ts";
import type { KernelManifest, ManifestParam } from "../backends/ptx/manifest.ts";
import type { KernelParam } from "../ir/kernel.ts";

/** Declared strides by tensor name (outermost first). */
export type StrideDecls = Readonly<Record<string, readonly (string | number)[]>>;

/** The manifest with the strides declared and their stride parameters. */
export function stridedManifest(m: KernelManifest, decls: StrideDecls): KernelManifest {
  const names = new Set(m.params.filter((p) => p.kind === "dim").map((p) => p.name));
  const strideParams: ManifestParam[] = [];
  for (const p of m.params) {
    for (const s of decls[p.name] ?? []) {
      if (typeof s === "string" && !names.has(s)) {
        names.add(s);
        strideParams.push({ name: s, kind: "stride", ptx: "u64" });
      }
    }
  }
  const params: ManifestParam[] = [];
  const lastDim = m.params.findLastIndex((p) =>
    p.kind === "dim" || (p.kind === "tensor" && p.role !== "workspace")
  );
  m.params.forEach((p, i) => {
    const s = decls[p.name];
    params.push(s !== undefined ? { ...p, strides: s } : p);
    if (i === lastDim) params.push(...strideParams);
  });
  return { ...m, params };
}

/**
 * The compiled kernel with a {@link stridedManifest}, and its kernel IR's
 * entry given the stride parameters too (as `.u64` "tensors": ir/kernel.ts has
 * no stride kind yet), so that the printed PTX declares them where the fake
 * driver reads the launch's arguments (`ptx` and `ptxModule` alike).
 */
export function stridedKernel(ck: CompiledKernel, decls: StrideDecls): CompiledKernel {
  const manifest = stridedManifest(ck.manifest, decls);
  const params: KernelParam[] = manifest.params.filter((p) => p.role !== "workspace").map((p) =>
    p.kind === "stride"
      ? { name: p.name, kind: "tensor", ptx: "u64" }
      : ck.kernel.params.find((q) => q.name === p.name)!
  );
  const ws = ck.kernel.params.filter((q) => !params.includes(q));
  const kernel = { ...ck.kernel, params: [...params, ...ws] };
  return { ...ck, manifest, kernel, ptx: ptxModule([{ ...ck, kernel }]) };
}
