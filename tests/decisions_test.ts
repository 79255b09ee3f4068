/**
 * The decision passes after gemm-mma (gemm-occupancy, gemm-workspace,
 * gemm-epilogue-staging) against what the lowering builds, which reads them
 * from the plan: for every example,
 * the benchmark kernels (as bench/gen_hinted.ts compiles them: the sizes as
 * hints, 132 SMs) and the sweep's programs (tests/_programs.ts), on both
 * targets, with and without size hints, the plan's blocks per SM is the
 * kernel's `minBlocksPerSm`, its workspace record is the grid's
 * `workspacePerTile` (and the last parameter), and its staging plan is the
 * staged epilogue the kernel IR holds (or none). Then the same kernels
 * lowered again from a plan changed by hand: the kernel IR follows the plan,
 * not a decision of its own.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../compiler.ts";
import { type Kernel, type Op, walkOps } from "../ir/kernel.ts";
import { printKernel } from "../ir/print_kernel.ts";
import type { GemmKernel, Plan, StagingPlan } from "../ir/gemm.ts";
import { lowerToKernel } from "../passes/lower/mod.ts";
import { examples, ROOT } from "./_examples.ts";
import { programs, SHAPES } from "./_programs.ts";

/** One compilation: its name, source and options. */
interface Case {
  readonly id: string;
  readonly src: string;
  readonly target: "sm80" | "sm86";
  readonly hints?: Record<string, number>;
  readonly sms?: number;
}

/** Hints for every dimension name the corpus uses for M, N, K and a batch. */
function hints(M: number, N: number, K: number): Record<string, number> {
  return { M, N, K, Tokens: M, Out: N, In: K, L: 2 };
}

function read(path: string): string {
  return Deno.readTextFileSync(new URL(path, ROOT));
}

function cases(): Case[] {
  const out: Case[] = [];
  const add = (id: string, src: string, shapes: readonly (readonly number[])[]) => {
    for (const target of ["sm80", "sm86"] as const) {
      out.push({ id, src, target });
      for (const [M, N, K] of shapes) {
        out.push({ id, src, target, hints: hints(M!, N!, K!), sms: 132 });
      }
    }
  };
  for (const e of examples()) add(`examples/${e}`, read(`examples/${e}.gemm`), SHAPES);
  const bench = [...Deno.readDirSync(new URL("bench/kernels/", ROOT))]
    .filter((e) => e.name.endsWith(".gemm")).map((e) => e.name).sort();
  // bench/gen_hinted.ts's shapes.
  const benchShapes = [[4096, 4096, 4096], [8192, 8192, 8192], [128, 8192, 8192]];
  for (const f of bench) add(`bench/kernels/${f}`, read(`bench/kernels/${f}`), benchShapes);
  for (const [name, src] of programs()) add(name, src, SHAPES);
  return out;
}

/** The staged epilogues as the kernel IR's comments describe them, in program order. */
function stagedInKernel(body: readonly Op[]): Omit<StagingPlan, "perRow" | "elemBytes">[] {
  const re =
    /^staged through shared memory \((raw accumulators|D's elements)\): (\d+) of \d+ (?:.*?), (\d+) bytes a warp, rows of (\d+) bytes, (\d+)-byte reads, (\d+) lanes a row$/;
  const found: Omit<StagingPlan, "perRow" | "elemBytes">[] = [];
  walkOps(body, (o) => {
    if (o.op !== "comment" || !o.text.startsWith("staged through")) return;
    const m = re.exec(o.text);
    assert.ok(m !== null, `unparsed comment "${o.text}"`);
    found.push({
      mode: m[1] === "raw accumulators" ? "raw" : "out",
      tiles: Number(m[2]),
      regionBytes: Number(m[3]),
      stride: Number(m[4]),
      vecBytes: Number(m[5]),
      readLanes: Number(m[6]),
    });
  });
  return found;
}

/** A staging plan as {@link stagedInKernel} reads it back; none for a direct epilogue. */
function stagingOf(
  staging: StagingPlan | null | undefined,
): Omit<StagingPlan, "perRow" | "elemBytes">[] {
  if (staging === null || staging === undefined) return [];
  const { mode, tiles, regionBytes, stride, vecBytes, readLanes } = staging;
  return [{ mode, tiles, regionBytes, stride, vecBytes, readLanes }];
}

/** Compares one kernel's plan with its kernel IR; returns which decisions were non-trivial. */
function compare(
  ck: CompiledKernel,
  where: string,
): { blocks2: boolean; split: boolean; staged: boolean } {
  const { occupancy, workspace, staging } = ck.planned.plan;
  const kernel = ck.kernel;
  assert.ok(occupancy !== undefined && workspace !== undefined && staging !== undefined, where);
  assert.equal(occupancy.blocksPerSm, kernel.minBlocksPerSm ?? 1, `${where}: blocks per SM`);
  assert.equal(workspace?.perTile, kernel.grid.workspacePerTile, `${where}: workspace`);
  if (workspace !== null) assert.equal(kernel.params.at(-1)!.name, workspace.param, where);
  const staged = stagedInKernel(kernel.body);
  // A grouped kernel's short tiles (plan.short) come first: the branch's then-side.
  const planned = [...stagingOf(ck.planned.plan.short?.staging), ...stagingOf(staging)];
  assert.deepEqual(staged, planned, `${where}: staging`);
  return {
    blocks2: occupancy.blocksPerSm === 2,
    split: workspace !== null,
    staged: staging !== null,
  };
}

/** Every kernel of the corpus, compiled. */
function* compiled(): Generator<{ ck: CompiledKernel; where: string }> {
  for (const c of cases()) {
    const r = compile(c.src, {
      file: `${c.id}.gemm`,
      target: c.target,
      ...(c.hints ? { sizeHints: c.hints } : {}),
      ...(c.sms ? { sms: c.sms } : {}),
    });
    for (const ck of r.kernels) {
      yield { ck, where: `${c.id} ${ck.name} ${c.target} ${JSON.stringify(c.hints ?? null)}` };
    }
  }
}

Deno.test("decision passes equal what the lowering builds", () => {
  const seen = { kernels: 0, blocks2: 0, split: 0, staged: 0, raw: 0 };
  for (const { ck, where } of compiled()) {
    const got = compare(ck, where);
    seen.kernels++;
    if (got.blocks2) seen.blocks2++;
    if (got.split) seen.split++;
    if (got.staged) seen.staged++;
    if (ck.planned.plan.staging?.mode === "raw") seen.raw++;
  }
  // Every decision is taken both ways in the corpus, so that a kernel IR
  // that drifted from the plan would show.
  for (const [key, n] of Object.entries(seen)) {
    assert.ok(n > 0, `no kernel with ${key}`);
    assert.ok(key === "kernels" || n < seen.kernels, `every kernel with ${key}`);
  }
});

/** The kernel lowered again from its plan with `change` applied. */
/** The kernel IR's text without its comments (which restate the plan). */
function instructions(k: Kernel): string {
  return printKernel({ ...k, dynamicSmemBytes: 0 }).split("\n").filter((l) =>
    !l.trimStart().startsWith("//")
  ).join("\n");
}

function relower(k: GemmKernel, change: Partial<Plan>): ReturnType<typeof lowerToKernel> {
  return lowerToKernel({ ...k, plan: { ...k.plan, ...change } });
}

Deno.test("the lowering builds what the plan says, not a decision of its own", () => {
  const done = { blocks: 0, workspace: 0, staging: 0 };
  for (const { ck, where } of compiled()) {
    const k = ck.planned;
    const { occupancy, workspace, staging } = k.plan;
    if (done.blocks < 3) {
      const flipped = occupancy!.blocksPerSm === 1 ? 2 : 1;
      const kernel = relower(k, { occupancy: { blocksPerSm: flipped } });
      assert.equal(kernel.minBlocksPerSm ?? 1, flipped, `${where}: blocks per SM`);
      done.blocks++;
    }
    if (workspace && done.workspace < 3) {
      const moved = { ...workspace, param: "ws_other", perTile: workspace.perTile + 256 };
      const kernel = relower(k, { workspace: moved });
      assert.equal(kernel.grid.workspacePerTile, moved.perTile, `${where}: workspace size`);
      assert.equal(kernel.params.at(-1)!.name, moved.param, `${where}: workspace parameter`);
      done.workspace++;
    }
    if (staging && done.staging < 3) {
      const rows = staging.regionBytes / staging.stride;
      const wider = {
        ...staging,
        stride: staging.stride + 16,
        regionBytes: rows * (staging.stride + 16),
      };
      const widened = relower(k, { staging: wider });
      const got = stagedInKernel(widened.body).at(-1);
      assert.equal(got?.stride, wider.stride, `${where}: staged row stride`);
      // The comment names the plan's stride whatever the stores do: the
      // instructions must change with the stride alone (the region held fixed).
      const regionOnly = relower(k, { staging: { ...staging, regionBytes: wider.regionBytes } });
      assert.notEqual(instructions(widened), instructions(regionOnly), `${where}: stride unused`);
      assert.equal(got?.regionBytes, wider.regionBytes, `${where}: staged region`);
      assert.equal(
        stagedInKernel(relower(k, { staging: null }).body).at(-1),
        undefined,
        `${where}: direct`,
      );
      done.staging++;
    }
    if (done.blocks + done.workspace + done.staging === 9) break;
  }
  assert.deepEqual(done, { blocks: 3, workspace: 3, staging: 3 });
});
