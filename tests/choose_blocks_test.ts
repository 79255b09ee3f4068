/**
 * harness/checks.ts `chooseBlocks`: the blocks `gemm run --check sim` simulates, inside the
 * grid for a rasterised grid and for a persistent one (sm90), the corners first.
 */

import assert from "node:assert/strict";
import { chooseBlocks } from "../harness/checks.ts";
import { gridFor, type GridPlan } from "../ir/kernel.ts";

const PLAN: GridPlan = {
  tileM: 128,
  tileN: 256,
  swizzle: 8,
  splitK: 1,
  m: "M",
  n: "N",
  batch: null,
};

Deno.test("chooseBlocks: a rasterised grid's sample is inside it", () => {
  const dims = { M: 1000, N: 3000 };
  const grid = gridFor(PLAN, dims);
  const blocks = chooseBlocks(PLAN, grid, 512, 3 * 128 * 256 * 512, 7, dims)!;
  assert.equal(blocks.length, 3);
  for (const b of blocks) assert.ok(b.every((v, i) => v >= 0 && v < grid[i]!), `${b} in ${grid}`);
});

Deno.test("chooseBlocks: a persistent grid's sample is blocks of it, the last and the first first", () => {
  const plan: GridPlan = { ...PLAN, persistent: { blocks: 132 } };
  const dims = { M: 4000, N: 4000 };
  const grid = gridFor(plan, dims);
  assert.deepEqual(grid, [132, 1, 1]);
  // 32 x 16 = 512 tiles: at most 4 a block; room for 3 blocks.
  const blocks = chooseBlocks(plan, grid, 256, 3 * 4 * 128 * 256 * 256, 11, dims)!;
  assert.equal(blocks.length, 3);
  assert.deepEqual(blocks.slice(0, 2), [[131, 0, 0], [0, 0, 0]]);
  assert.ok(blocks[2]![0] > 0 && blocks[2]![0] < 131);
  // A budget for every block: the whole grid (null).
  assert.equal(chooseBlocks(plan, grid, 256, 2 ** 40, 11, dims), null);
});
