/**
 * "Did you mean" (dsl/suggest.ts): the edit distance against a plain
 * dynamic-programming reference on random words, and the suggestion in each
 * diagnostic that names something misspelt (tensor, scalar, function,
 * schedule key, dtype) and nothing where no candidate is close.
 *
 * @module
 */

import assert from "node:assert/strict";
import { didYouMean, editDistance, suggestions } from "../dsl/suggest.ts";
import { compile } from "../compiler.ts";
import { Rng } from "../numerics/random.ts";

/** A seeded generator: numerics/random.ts's mulberry32 as a function. */
function rng(seed: number): () => number {
  const g = new Rng(seed);
  return () => g.next();
}

/** Optimal string alignment distance, by the textbook recurrence over a full table. */
function reference(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  const d = Array.from({ length: s.length + 1 }, () => new Array<number>(t.length + 1).fill(0));
  for (let i = 0; i <= s.length; i++) d[i]![0] = i;
  for (let j = 0; j <= t.length; j++) d[0]![j] = j;
  for (let i = 1; i <= s.length; i++) {
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) {
        d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
      }
    }
  }
  return d[s.length]![t.length]!;
}

Deno.test("editDistance agrees with the full-table reference on random words", () => {
  const next = rng(19);
  const word = () =>
    Array.from({ length: Math.floor(next() * 8) }, () => "abcAB_1"[Math.floor(next() * 7)]).join(
      "",
    );
  for (let i = 0; i < 2000; i++) {
    const a = word();
    const b = next() < 0.3 ? a.slice(1) + a[0] : word();
    const d = editDistance(a, b);
    assert.equal(d, reference(a, b), `${a} / ${b}`);
    assert.equal(d, editDistance(b, a), `symmetric: ${a} / ${b}`);
  }
  assert.equal(editDistance("", "warp"), 4);
  assert.equal(editDistance("threadblcok", "threadblock"), 1);
});

Deno.test("suggestions: the nearest within a third of the word, none when far or exact", () => {
  assert.deepEqual(suggestions("swizle", ["swizzle", "stages"]), ["swizzle"]);
  assert.deepEqual(suggestions("x", ["k", "X"]), ["X"]);
  assert.deepEqual(suggestions("stages", ["stages", "stage"]), []);
  assert.deepEqual(suggestions("softplus", ["relu", "gelu", "silu", "tanh"]), []);
  assert.equal(didYouMean("a", ["b", "c"]), "");
  assert.equal(
    didYouMean("ab", ["aa", "bb", "cb", "db"]),
    '; did you mean "aa", "bb" or "cb"?',
    "at most three",
  );
});

const HEAD = "kernel k {\n  A: f16[M, K] row\n  B: f16[K, N] col\n  C: f32[M, N] row\n" +
  "  D: f32[M, N] row\n  alpha: f32 = 1.0\n";

Deno.test("the checker's and the parser's diagnostics suggest the name meant", () => {
  const cases: [string, string, RegExp][] = [
    [
      "tensor",
      "  D[m, n] = A[m, k] * B[k, n] + Cc[m, n]\n}",
      /Unknown tensor "Cc"; did you mean "C"\?$/,
    ],
    [
      "scalar",
      "  D[m, n] = alpah * A[m, k] * B[k, n] + C[m, n]\n}",
      /Unknown name "alpah"; did you mean "alpha"\?$/,
    ],
    [
      "function",
      "  D[m, n] = rleu(A[m, k] * B[k, n] + C[m, n])\n}",
      /Unknown function "rleu": .*; did you mean "relu"\?$/,
    ],
    [
      "cast",
      "  D[m, n] = f62(A[m, k] * B[k, n] + C[m, n])\n}",
      /Unknown function "f62": .*; did you mean "f64" or "f32"\?$/,
    ],
    [
      "schedule key",
      "  D[m, n] = A[m, k] * B[k, n] + C[m, n]\n  schedule {\n    threadblcok 128x128x32\n  }\n}",
      /Unknown schedule key "threadblcok": .*; did you mean "threadblock"\?$/,
    ],
    [
      "cache policy",
      "  D[m, n] = A[m, k] * B[k, n] + C[m, n]\n  schedule {\n    cache_a evict_lats\n  }\n}",
      /^Malformed value "evict_lats" for "cache_a": .*; did you mean "evict_last"\?$/,
    ],
  ];
  for (const [what, tail, says] of cases) {
    const r = compile(HEAD + tail, { file: "k.gemm" });
    assert.equal(r.diagnostics.length, 1, what);
    assert.match(r.diagnostics[0]!.message, says, what);
  }
  const dtype = compile("kernel k {\n  A: fp16[M, K] row\n}", { file: "k.gemm" });
  assert.match(dtype.diagnostics[0]!.message, /found "fp16"; did you mean "f16"\?$/);
  // Far from every candidate: no suggestion.
  const far = compile(HEAD + "  D[m, n] = A[m, k] * B[k, n] + zzz\n}", { file: "k.gemm" });
  assert.match(far.diagnostics[0]!.message, /^Unknown name "zzz"$/);
  const lru = compile(
    HEAD + "  D[m, n] = A[m, k] * B[k, n] + C[m, n]\n  schedule {\n    cache_b lru\n  }\n}",
    { file: "k.gemm" },
  );
  assert.equal(
    lru.diagnostics[0]!.message,
    'Malformed value "lru" for "cache_b": expected evict_first, evict_last or evict_normal',
  );
});
