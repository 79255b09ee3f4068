/**
 * The front-end fuzzer (tests/fuzz_front.ts) in the suite: 300 seeded cases
 * must give no crash (any exception other than a usage error of an option
 * drawn out of range, or a diagnostic outside its source). No time budget
 * here (the suite asserts no timings); `deno run -A tests/fuzz.ts --front`
 * applies one.
 */

import assert from "node:assert/strict";
import { fuzzFront, runFront } from "./fuzz_front.ts";

Deno.test("fuzz --front: 300 seeded cases, no crash", () => {
  const s = fuzzFront(300, 20261202, Infinity);
  assert.deepEqual(s.crashes, []);
  // Both outcomes occur: the generators reach past the parser, and refuse.
  assert.ok(s.byVerdict.compiled > 10 && s.byVerdict.diagnostic > 100, JSON.stringify(s.byVerdict));
  assert.ok(Object.keys(s.codes).length > 5, JSON.stringify(s.codes));
});

Deno.test("fuzz --front: a thrown error is a crash unless it is a usage error the case drew", () => {
  const source = Deno.readTextFileSync(new URL("../examples/hgemm.gemm", import.meta.url));
  const c = { kind: "test", source, options: { sms: NaN }, badOption: false };
  const o = runFront(c, Infinity);
  assert.equal(o.verdict, "crash");
  assert.match(o.detail, /THREW TypeError: Option sms/);
  assert.equal(runFront({ ...c, badOption: true }, Infinity).verdict, "usage");
  assert.equal(runFront({ ...c, options: {} }, Infinity).verdict, "compiled");
  const bad = runFront({ ...c, options: {}, source: source.replace("row", "rowx") }, Infinity);
  assert.equal(bad.verdict, "diagnostic");
  assert.deepEqual(bad.codes, ["E0001"]);
});
