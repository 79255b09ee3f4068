/**
 * "Did you mean" suggestions: the candidates closest to a misspelt name by
 * edit distance (insertions, deletions, substitutions and transpositions of
 * neighbours, each costing 1; a change of case alone costs nothing), for the
 * checker's diagnostics (names, functions, schedule keys), the parser's
 * dtype error and the CLI's `--size` and `--scalar` names.
 *
 * @module
 */

/**
 * The optimal-string-alignment distance between two words (Damerau-Levenshtein
 * without repeated edits of one substring), compared without case.
 *
 * @param a One word.
 * @param b The other.
 * @returns The number of single-character edits from one to the other.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { editDistance } from "./suggest.ts";
 * equal(editDistance("relu", "rleu"), 1);
 * equal(editDistance("alpha", "aplha"), 1);
 * equal(editDistance("stages", "stage"), 1);
 * equal(editDistance("F16", "f16"), 0);
 * ```
 */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  // Three rows: the one two back serves the transpositions.
  let prev2: number[] = [];
  let prev = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const cur = [i];
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let d = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) {
        d = Math.min(d, prev2[j - 2]! + 1);
      }
      cur.push(d);
    }
    prev2 = prev;
    prev = cur;
  }
  return prev[t.length]!;
}

/**
 * The most edits a word of this length may be away from a suggestion: a
 * third of its length, at least one (so `f8` may be `s8` but `x` is not `k`
 * from nowhere: one-letter words need an exact match without case).
 */
function budget(word: string): number {
  return word.length <= 1 ? 0 : Math.max(1, Math.floor(word.length / 3));
}

/** The most suggestions one message offers. */
const MAX_SUGGESTIONS = 3;

/**
 * The candidates nearest a word: those at the smallest edit distance within
 * a third of the word's length, in the candidates' order, at most three; none
 * when the word itself is a candidate.
 *
 * @param word The misspelt word.
 * @param candidates The legal words.
 * @returns The suggestions (empty when none is close).
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { suggestions } from "./suggest.ts";
 * deepEqual(suggestions("stagse", ["threadblock", "warp", "stages"]), ["stages"]);
 * deepEqual(suggestions("f8", ["f16", "s8", "u8"]), ["s8", "u8"]);
 * deepEqual(suggestions("zzz", ["alpha", "beta"]), []);
 * ```
 */
export function suggestions(word: string, candidates: readonly string[]): string[] {
  if (candidates.includes(word)) return [];
  const scored = [...new Set(candidates)].map((c) => ({ c, d: editDistance(word, c) }))
    .filter((x) => x.d <= budget(word));
  if (scored.length === 0) return [];
  const best = Math.min(...scored.map((x) => x.d));
  return scored.filter((x) => x.d === best).map((x) => x.c).slice(0, MAX_SUGGESTIONS);
}

/**
 * The suggestion as a clause to append to a message: `; did you mean "x"?`
 * (or `"x" or "y"`), or "" when nothing is close.
 *
 * @param word The misspelt word.
 * @param candidates The legal words.
 * @returns The clause, or "".
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { didYouMean } from "./suggest.ts";
 * equal(didYouMean("aplha", ["alpha", "beta"]), '; did you mean "alpha"?');
 * equal(didYouMean("f8", ["f16", "s8", "u8"]), '; did you mean "s8" or "u8"?');
 * equal(didYouMean("zzz", ["alpha"]), "");
 * ```
 */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const s = suggestions(word, candidates).map((c) => `"${c}"`);
  if (s.length === 0) return "";
  const list = s.length === 1 ? s[0] : `${s.slice(0, -1).join(", ")} or ${s.at(-1)}`;
  return `; did you mean ${list}?`;
}
