/**
 * The passes that plan a kernel, in pipeline order: the head of the pipeline
 * (passes/pipeline_list.ts), and what `gemm-short-tile` (passes/short_tile.ts)
 * runs again to plan a grouped kernel's short tiles.
 *
 * @module
 */

import type { GemmPass } from "./pass.ts";
import { tilePass } from "./tile.ts";
import { warpPass } from "./warp.ts";
import { pipelinePass } from "./pipeline.ts";
import { mmaPass } from "./mma.ts";
import { fragmentLoadPass } from "./fragment_load.ts";
import { occupancyPass } from "./occupancy.ts";
import { workspacePass } from "./workspace.ts";
import { epilogueStagingPass } from "./epilogue_staging.ts";

/** Tiling through epilogue staging: every decision of one plan. */
export const PLANNING_PASSES: readonly GemmPass[] = Object.freeze([
  tilePass,
  warpPass,
  pipelinePass,
  mmaPass,
  fragmentLoadPass,
  occupancyPass,
  workspacePass,
  epilogueStagingPass,
]);
