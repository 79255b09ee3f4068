/**
 * `gemm run` on a kernel whose sizes are all fixed in the source, without
 * `--size` (issue 19, item 5): on a GPU it launches and agrees with the
 * reference; without a driver the test is listed as skipped
 * (tests/cli_usage_test.ts checks there that it gets as far as the driver).
 *
 * @module
 */

import assert from "node:assert/strict";
import { cudaAvailable } from "../../backends/cuda/driver.ts";
import { gemmWithEnv } from "../_cli.ts";

const CUDA = cudaAvailable();

Deno.test({
  name: `gemm run tests/testdata/fixed_sizes.gemm without --size agrees with the reference${
    CUDA.ok ? "" : " (skipped: no CUDA driver)"
  }`,
  ignore: !CUDA.ok,
  fn: async () => {
    const r = await gemmWithEnv(
      ["run", "tests/testdata/fixed_sizes.gemm", "--check", "sim", "--iters", "2", "--seed", "3"],
      {},
    );
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /^fixed_sizes: AGREES with the reference and the simulator \(every size fixed in the source\)$/m,
    );
  },
});
