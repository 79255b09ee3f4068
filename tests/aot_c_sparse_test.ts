/**
 * The C artefact of kernels with a structured-sparse A (backends/aot/c.ts, issue 21): the file
 * compiles warning-free as C and as C++ against the toolkit's cuda.h, links against the fake
 * driver (tests/gpu/testdata/fake_libcuda.c) and, launch by launch, refuses exactly what
 * `launchViolations` refuses, with its messages, checking and sizing the kept values (A) and
 * the metadata (A_meta) as contract.ts does, and passes a valid launch with the contract's grid
 * and the arguments in ABI order. The harness: tests/_aot_c.ts.
 *
 * Skipped visibly without a C compiler or cuda.h (failed under CI=true).
 */

import assert from "node:assert/strict";
import { SPARSE_ARTEFACT_SOURCE } from "./_programs.ts";
import { compile } from "../compiler.ts";
import {
  contractGrid,
  type LaunchContract,
  launchContract,
  tensorBytes,
} from "../backends/ptx/contract.ts";
import { cTest, sh } from "./_c_toolchain.ts";
import {
  brokenCase,
  build,
  type Case,
  expected,
  expectedParams,
  line,
  replies,
  rng,
  validCase,
} from "./_aot_c.ts";

cTest(
  "C artefact, sparse A: the kept values and the metadata checked and sized as contract.ts",
  async () => {
    const r = compile(SPARSE_ARTEFACT_SOURCE);
    assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
    const ks = r.kernels;
    const cs = ks.map((k) => launchContract(k.manifest));
    for (const c of cs) {
      assert.deepEqual(c.tensors.map((t) => [t.name, t.sparse?.storage]), [
        ["A", "values"],
        ["A_meta", "metadata"],
        ["B", undefined],
        ["D", undefined],
      ]);
    }
    await build(ks, true); // warning-free as C++ too
    const exe = await build(ks, false);
    const rnd = rng(29);
    const cases: Case[] = [];
    for (let i = 0; i < 160; i++) {
      const kernel = i % cs.length;
      cases.push(
        i % 3 === 0 ? validCase(cs[kernel]!, kernel, rnd) : brokenCase(cs[kernel]!, kernel, rnd),
      );
    }
    // The special cases: K whose kept values break A's alignment (even and odd), and A_meta or A
    // placed to end just at D (or one alignment into it), as their stored extents give them.
    const special = (kernel: number, f: (k: Case, c: LaunchContract) => void) => {
      const c = cs[kernel]!;
      const k = validCase(c, kernel, rnd);
      f(k, c);
      cases.push(k);
      return cases.length - 1;
    };
    const ends: number[] = [];
    const odd: number[] = [];
    for (const kernel of [0, 1]) {
      odd.push(special(kernel, (k) => k.sizes.K = kernel === 0 ? 200 : 400));
      odd.push(special(kernel, (k) => k.sizes.K = kernel === 0 ? 201 : 401));
      for (const name of ["A", "A_meta"]) {
        for (const into of [false, true]) {
          ends.push(special(kernel, (k, c) => {
            const t = c.tensors.find((x) => x.name === name)!;
            const back = BigInt(tensorBytes(t, k.sizes) - (into ? t.alignBytes : 0));
            k.tensors.set(name, k.tensors.get("D")! - back);
          }));
        }
      }
    }
    const input = ["load", ...cases.map((k) => line(cs[k.kernel]!, k))].join("\n") + "\n";
    const out = replies(await sh(exe, [], input));
    assert.equal(out.length, cases.length + 1);
    let valid = 0, refused = 0, keptValues = 0;
    cases.forEach((k, i) => {
      const c = cs[k.kernel]!;
      const o = out[i + 1]!;
      const want = expected(c, k);
      const what = `case ${i} (${c.name}): ${line(c, k)}`;
      assert.deepEqual(o.errors, want, what);
      if (want.some((m) => m.includes("(the kept values, K="))) keptValues++;
      if (want.length > 0) {
        assert.equal(o.status, 1, what);
        refused++;
        return;
      }
      valid++;
      assert.equal(o.status, 0, what);
      const [gx, gy, gz, , , , , ...params] = o.launch!;
      assert.deepEqual([gx, gy, gz].map(Number), contractGrid(c, k.sizes), what);
      // ABI order: A, A_meta, B, D, the dims, the scalars.
      assert.deepEqual(params, expectedParams(c, k, null), what);
      assert.equal(params[1], `u64:${k.tensors.get("A_meta")}`, what);
    });
    // Ending at D launches; one alignment into it overlaps.
    for (const [j, i] of ends.entries()) {
      const name = j % 4 < 2 ? "A" : "A_meta";
      assert.deepEqual(
        out[i + 1]!.errors,
        j % 2 === 0 ? [] : [`Output "D" overlaps input "${name}"`],
        `case ${i}`,
      );
    }
    const msg = (k: number, a: number) =>
      `Tensor "A" declares align ${a} but its leading dimension (the kept values, K=${k} / 2 = ${
        k / 2
      }) is not a multiple of ${a}`;
    const errs = (n: number) => out[odd[n]! + 1]!.errors;
    assert.deepEqual([errs(0)[0], errs(1)[0]], [msg(200, 8), msg(201, 8)]);
    assert.deepEqual([errs(2)[0], errs(3)[0]], [msg(400, 32), msg(401, 32)]);
    assert.ok(valid >= 40 && refused >= 60 && keptValues >= 6, `${valid} ${refused} ${keptValues}`);
  },
);
