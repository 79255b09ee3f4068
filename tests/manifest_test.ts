/**
 * The launch manifest against the PTX it describes: for every example and
 * both targets, the `.visible .entry NAME(...)` parameter list of the PTX
 * (names, types, order) is the manifest's, the ABI order of docs/ARCHITECTURE.md §3
 * holds (tensors in declaration order, then runtime dimensions in order of
 * first appearance, then scalars), and the block and dynamic shared memory
 * are the kernel's. `gemm compile --emit json --size ...` prints the same
 * manifests with the concrete grid of {@link gridFor}.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel, formatDiagnostics } from "../compiler.ts";
import { type KernelManifest, kernelManifest } from "../backends/ptx/manifest.ts";
import { gridFor } from "../ir/kernel.ts";
import type { Target } from "../ir/gemm.ts";
import { TARGET_NAMES, targetInfo } from "../ir/target.ts";
import { resolveSizes } from "../harness/sizes.ts";
import { gemm } from "./_cli.ts";
import { examples, ROOT } from "./_examples.ts";

function compileExample(name: string, target: Target): CompiledKernel[] {
  const file = `examples/${name}.gemm`;
  const text = Deno.readTextFileSync(new URL(file, ROOT));
  const r = compile(text, { file, target });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, text));
  return [...r.kernels];
}

/** One entry of a PTX module, read back from the text. */
interface PtxEntry {
  readonly name: string;
  readonly params: readonly { readonly name: string; readonly type: string }[];
  readonly maxntid: readonly number[];
  readonly target: string;
}

/** Reads `.target` and every `.visible .entry NAME( .param .TYPE param_NAME, ... )`. */
function ptxEntries(ptx: string): PtxEntry[] {
  const target = /^\.target (\S+)$/m.exec(ptx)?.[1];
  assert.ok(target !== undefined, "no .target");
  const out: PtxEntry[] = [];
  for (const m of ptx.matchAll(/^\.visible \.entry (\w+)\(\n([^)]*)\)\n\.maxntid ([\d, ]+)$/gm)) {
    const params = m[2]!.split("\n").filter((l) => l.trim() !== "").map((l) => {
      // A tensor map (sm90): 128 bytes by value, read as the manifest's ptx "tmap".
      const map = /^\s*\.param \.align 64 \.b8 (\w+)\[128\],?$/.exec(l);
      if (map !== null) return { type: "tmap", name: map[1]! };
      const p = /^\s*\.param \.(\w+) (\w+),?$/.exec(l);
      assert.ok(p !== null, `unexpected parameter line ${JSON.stringify(l)}`);
      return { type: p[1]!, name: p[2]! };
    });
    out.push({ name: m[1]!, params, maxntid: m[3]!.split(",").map((x) => Number(x)), target });
  }
  return out;
}

Deno.test("ptxEntries reads an entry signature", () => {
  const ptx = ".target sm_80\n\n.visible .entry k(\n  .param .u64 param_A,\n" +
    "  .param .f32 param_alpha\n)\n.maxntid 128, 1, 1\n{\n}\n";
  assert.deepEqual(ptxEntries(ptx), [{
    name: "k",
    params: [{ type: "u64", name: "param_A" }, { type: "f32", name: "param_alpha" }],
    maxntid: [128, 1, 1],
    target: "sm_80",
  }]);
});

/** The PTX symbol of a parameter (backends/ptx/print.ts names them `param_NAME`). */
const symbol = (name: string) => `param_${name}`;

function assertAbiOrder(ck: CompiledKernel, m: KernelManifest): void {
  const g = ck.gemm;
  const tensors = g.params.filter((p) => p.kind === "tensor").map((p) => p.name);
  const scalars = g.params.filter((p) => p.kind === "scalar").map((p) => p.name);
  // split_k > 1: one more parameter, last, the workspace (README: The schedule).
  const split = ck.kernel.grid.splitK > 1;
  const ws = split ? ["workspace"] : [];
  // sm90's TMA kernels: A's and B's tensor maps after everything else (ARCHITECTURE §3.4).
  const maps = m.params.filter((p) => p.kind === "tensormap");
  assert.deepEqual(
    maps.map((p) => p.tmap!.tensor),
    maps.length === 0 ? [] : [g.problem.a.tensor, g.problem.b.tensor],
  );
  for (const p of maps) assert.equal(p.ptx, "tmap");
  assert.deepEqual(m.params.map((p) => p.name), [
    ...tensors,
    ...g.dims,
    ...(g.strides ?? []),
    ...scalars,
    ...ws,
    ...maps.map((p) => p.name),
  ]);
  assert.equal(m.workspace !== undefined, split);
  const own = m.params.slice(0, m.params.length - maps.length);
  for (const p of split ? own.slice(0, -1) : own) {
    const decl = g.params.find((q) => q.name === p.name);
    if (p.kind === "tensor") {
      assert.ok(decl?.kind === "tensor");
      assert.equal(p.ptx, "u64");
      assert.equal(p.dtype, decl.dtype);
      assert.equal(p.role, decl.role);
      assert.equal(p.layout, decl.layout);
      assert.equal(p.align, decl.align);
      assert.deepEqual(p.shape, decl.dims.map((d) => d.kind === "sym" ? d.name : d.value));
      assert.deepEqual(p.strides, decl.strides?.map((d) => d.kind === "sym" ? d.name : d.value));
    } else if (p.kind === "dim") {
      assert.equal(decl, undefined);
      assert.equal(p.ptx, "u32");
    } else if (p.kind === "stride") {
      // A stride parameter (DESIGN §6.1): a .u64 count of elements.
      assert.equal(decl, undefined);
      assert.equal(p.ptx, "u64");
    } else {
      assert.ok(decl?.kind === "scalar");
      // A scalar is passed as its own type.
      assert.equal(p.ptx, decl.dtype);
      assert.equal(p.dtype, decl.dtype);
      assert.equal(p.default, decl.default);
    }
  }
}

for (const name of examples()) {
  Deno.test(`manifest matches the PTX entry: examples/${name}.gemm`, () => {
    for (const target of TARGET_NAMES) {
      for (const ck of compileExample(name, target)) {
        const m = ck.manifest;
        const entries = ptxEntries(ck.ptx);
        assert.equal(entries.length, 1, "one entry per kernel module");
        const e = entries[0]!;
        assert.equal(e.target, m.target);
        assert.equal(m.target, targetInfo(target).ptx);
        assert.equal(e.name, m.entry);
        assert.equal(m.entry, ck.name);
        assert.equal(m.name, ck.name);
        assert.deepEqual(
          e.params,
          m.params.map((p) => ({ name: symbol(p.name), type: p.ptx })),
          `${ck.name} ${target}: PTX parameters`,
        );
        assert.deepEqual(
          m.params.map((p) => [p.name, p.kind, p.ptx]),
          ck.kernel.params.map((p) => [
            p.name,
            p.kind,
            p.ptx,
          ]),
        );
        if (ck.kernel.group === undefined) assertAbiOrder(ck, m);
        else {
          // Grouped (DESIGN §6.2): the table and the count, then the scalars; each problem's
          // tensors and dims are table fields (tests/grouped_test.ts checks the table).
          const scalars = ck.gemm.params.filter((p) => p.kind === "scalar").map((p) => p.name);
          assert.deepEqual(m.params.map((p) => p.name), ["group_table", "group_count", ...scalars]);
        }
        assert.deepEqual(m.block, [ck.kernel.threads, 1, 1]);
        assert.deepEqual(e.maxntid, m.block);
        assert.equal(m.dynamicSmemBytes, ck.kernel.dynamicSmemBytes);
        assert.equal(m.dynamicSmemBytes, ck.planned.plan.pipeline!.smemBytes);
        assert.ok(
          ck.ptx.includes(`// ${ck.name}: ${m.block[0]} threads, ${m.dynamicSmemBytes} bytes`),
        );
        assert.deepEqual(m.gridPlan, ck.kernel.grid);
        assert.equal(m.grid, undefined, "no sizes, no concrete grid");
      }
    }
  });
}

Deno.test("manifest: the grid as a function of the sizes", () => {
  const [hg] = compileExample("hgemm", "sm80");
  const g = hg!.kernel.grid;
  // hgemm: 128x256 tiles, swizzle 8: x = tilesM * 8, y = ceil(tilesN / 8).
  assert.deepEqual([g.tileM, g.tileN, g.swizzle, g.splitK, g.m, g.n, g.batch], [
    128,
    256,
    8,
    1,
    "M",
    "N",
    null,
  ]);
  assert.deepEqual(gridFor(g, { M: 1000, N: 2000, K: 64 }), [64, 1, 1]);
  assert.deepEqual(gridFor(g, { M: 128, N: 256 * 9, K: 64 }), [8, 2, 1]);
  assert.deepEqual(gridFor(g, { M: 1, N: 1 }), [8, 1, 1]);
  const m = kernelManifest(hg!.gemm, hg!.kernel, { M: 1000, N: 2000, K: 64 });
  assert.deepEqual(m.grid, [64, 1, 1]);
  assert.throws(() => gridFor(g, { M: 1 }), /^Error: Missing size for dimension "N"$/);
  // A batch multiplies z.
  const [b] = compileExample("batched", "sm80");
  const bg = b!.kernel.grid;
  assert.equal(bg.batch, "L");
  const want = [
    Math.ceil(300 / bg.tileM) * bg.swizzle,
    Math.ceil(Math.ceil(500 / bg.tileN) / bg.swizzle),
    7,
  ];
  assert.deepEqual(gridFor(bg, { L: 7, M: 300, N: 500, K: 64 }), want);
});

Deno.test("cli: --emit json --size gives every kernel's manifest with the concrete grid", async () => {
  const cases: readonly [string, string, Target, Record<string, number>][] = [
    ["hgemm", "M=1000,N=2000,K=64", "sm80", { M: 1000, N: 2000, K: 64 }],
    // Leading dimensions honour the declared alignments (8 elements): compile --emit json
    // refuses sizes that break one, as simulate and run do (tests/cli_usage_test.ts).
    ["two_kernels", "M=300,N=704,K=96", "sm86", { M: 300, N: 704, K: 96 }],
    ["batched", "L=5,M=129,N=264,K=32", "sm80", { L: 5, M: 129, N: 264, K: 32 }],
    // The kernel's own dimension names work as well as the role letters.
    ["bf16_gemm", "Rows=77,Cols=1000,Inner=64", "sm80", { Rows: 77, Cols: 1000, Inner: 64 }],
  ];
  const runs = await Promise.all(
    cases.map(([name, size, target]) =>
      gemm("compile", `examples/${name}.gemm`, "--emit", "json", "--size", size, "--target", target)
    ),
  );
  cases.forEach(([name, , target, sizes], i) => {
    const r = runs[i]!;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, "");
    const got = JSON.parse(r.stdout) as { kernels: KernelManifest[] };
    const cks = compileExample(name, target);
    assert.equal(got.kernels.length, cks.length);
    cks.forEach((ck, j) => {
      const resolved = resolveSizes(ck.gemm, sizes);
      const want = kernelManifest(ck.gemm, ck.kernel, resolved);
      assert.deepEqual(got.kernels[j], JSON.parse(JSON.stringify(want)));
      assert.deepEqual(got.kernels[j]!.grid, gridFor(ck.kernel.grid, resolved));
      // docs/ARCHITECTURE.md §3: the fields a launcher needs.
      for (
        const key of ["name", "entry", "target", "params", "block", "dynamicSmemBytes", "grid"]
      ) {
        assert.ok(key in got.kernels[j]!, `${name}: no "${key}"`);
      }
    });
  });
  // Without --size there is no concrete grid, only the plan.
  const plain = await gemm("compile", "examples/s8_gemm.gemm", "--emit", "json");
  assert.equal(plain.code, 0, plain.stderr);
  const k = (JSON.parse(plain.stdout) as { kernels: KernelManifest[] }).kernels[0]!;
  assert.equal("grid" in k, false);
  assert.deepEqual(k.gridPlan, compileExample("s8_gemm", "sm80")[0]!.kernel.grid);
});

Deno.test("cli: --emit json --size without a needed size is a usage error", async () => {
  const r = await gemm("compile", "examples/hgemm.gemm", "--emit", "json", "--size", "M=64");
  assert.equal(r.code, 2);
  assert.equal(r.stdout, "");
  assert.match(
    r.stderr,
    /^gemm: No size for dimension "K" of kernel "hgemm": give K=\.\.\. in --size\n$/,
  );
});
