/**
 * A front-end fuzzer (issue 19, item 4): random and mutated programs through
 * the compile API, in process, looking for crashes, not for wrong answers.
 * Run it through `tests/fuzz.ts --front` (or directly):
 *
 *     deno run -A tests/fuzz.ts --front [--cases N] [--seed S] [--budget-ms B]
 *
 * Each case draws a source (one of {@link KINDS}: an example or a program of
 * `tests/fuzz.ts` mutated by deleting, duplicating, inserting or replacing
 * text; nesting and operator chains around the source limits; huge and odd
 * numbers in literals, defaults, dimensions and schedule values; identifiers
 * and text outside ASCII; CRLF, CR, a byte order mark, tabs, NUL; truncation;
 * a soup of the grammar's tokens) and sometimes API options (a target, an SM
 * count, size hints, some of them out of range), then compiles it, prints the
 * PTX, the kernel IR and the manifest of every kernel accepted, and renders
 * the diagnostics of one refused.
 *
 * A crash is any exception that is not a usage error of an option the case
 * drew out of range (a `TypeError` naming the option), a diagnostic whose
 * position is outside the source, or a case over the time budget (default
 * 2000 ms: the slowest legal programs, nesting and operators both at their
 * limits in dsl/limits.ts, compile and print in ~0.5 s on an idle machine and
 * in 1-1.5 s on the shared 2-core one; their cost is linear in the epilogue's
 * operations times the accumulators a thread holds. At the former limit of
 * 256 operators, and with calls not counted, cases took 2-4 s: that is how
 * the limit came to count calls and to be 128). Every crash
 * prints its source (as JSON, so that invisible characters show), ready to
 * become a regression test.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { compile, type CompileOptions, formatDiagnostics } from "../compiler.ts";
import { rng } from "../backends/sim/_test_kernels.ts";
import { LIMITS } from "../dsl/limits.ts";
import { draw } from "./fuzz.ts";
import { SCHEDULE_KEYS } from "../dsl/check/schedule.ts";

/** One drawn case. */
export interface FrontCase {
  /** Which generator drew it (a key of {@link KINDS}). */
  readonly kind: string;
  readonly source: string;
  readonly options: CompileOptions;
  /** The options hold a value out of range: a TypeError naming it is the right answer. */
  readonly badOption: boolean;
}

/** What one case gave. */
export interface FrontOutcome {
  readonly verdict: "compiled" | "diagnostic" | "usage" | "crash";
  /** For a crash: what happened. */
  readonly detail: string;
  readonly ms: number;
  /** The codes of the diagnostics. */
  readonly codes: readonly string[];
}

type R = () => number;

const int = (r: R, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
const pick = <T>(r: R, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

/** Numbers a literal, default, dimension or schedule value might hold. */
const ODD_NUMBERS = [
  "0",
  "1",
  "2",
  "3",
  "7",
  "64",
  "65",
  "255",
  "256",
  "65536",
  "2147483647",
  "2147483648",
  "4294967296",
  "4294967297",
  "9007199254740993",
  "99999999999999999999",
  "1e999",
  "1e-999",
  "1e308",
  "3.4e38",
  "3.5e38",
  "1e39",
  "65504",
  "65520",
  "0.0",
  "00",
  "1.5",
  "1e5",
  "1E+5",
  "1e",
  "1.",
  ".5",
  "0x10",
  "NaN",
  "Infinity",
  "-0",
  "9".repeat(300),
  "1" + "0".repeat(400),
];

/** Text outside ASCII, and control characters. */
const ODD_TEXT = [
  "é",
  "ß",
  "Ω",
  "д",
  "名",
  "𝑥",
  "😀",
  "\u0301",
  "\u200b",
  "\u202e",
  "\ufeff",
  "\u00a0",
  "\u2028",
  "\ud800",
  "\udc00",
  "\0",
  "\t",
  "\r",
  "\r\n",
  "\f",
  "\v",
  "\x1b[31m",
  "\\",
  '"',
  "'",
  "`",
  "$",
  "@",
  "#",
  "/*",
  "*/",
  "//",
  "/",
];

/** The grammar's tokens, for insertion and soups. */
const TOKENS = [
  "kernel",
  "schedule",
  "popc",
  "row",
  "col",
  "align",
  "strides",
  "grouped",
  "sparse",
  "k",
  "A",
  "B",
  "C",
  "D",
  "L",
  "M",
  "N",
  "K",
  "m",
  "n",
  "l",
  "alpha",
  "beta",
  "bias",
  "f64",
  "f32",
  "tf32",
  "f16",
  "bf16",
  "s32",
  "s8",
  "u8",
  "s4",
  "u4",
  "b1",
  "relu",
  "gelu",
  "silu",
  "tanh",
  "exp",
  "sigmoid",
  "min",
  "max",
  "clamp",
  "abs",
  "f16",
  "s8",
  "{",
  "}",
  "[",
  "]",
  "(",
  ")",
  ",",
  ":",
  "=",
  "+",
  "-",
  "*",
  "&",
  "^",
  "\n",
  " ",
  ...SCHEDULE_KEYS,
  "128x128x32",
  "64x64x32",
  "16x8x16",
  "0x0x0",
  "1x1x1",
  "99999999x99999999x99999999",
  "sm80",
  "sm86",
  "sm90",
  "3xtf32",
  "evict_first",
  "evict_last",
  ...ODD_NUMBERS.slice(0, 12),
];

/** A random token or odd piece of text. */
function token(r: R): string {
  const x = r();
  return x < 0.6 ? pick(r, TOKENS) : x < 0.8 ? pick(r, ODD_NUMBERS) : pick(r, ODD_TEXT);
}

/** A random span of `s`: [start, end). */
function span(r: R, s: string, max = 40): [number, number] {
  const a = int(r, 0, s.length);
  return [a, Math.min(s.length, a + int(r, 0, max))];
}

/** One mutation of a source. */
function mutate(r: R, s: string): string {
  const [a, b] = span(r, s);
  switch (int(r, 0, 7)) {
    case 0: // delete a span
      return s.slice(0, a) + s.slice(b);
    case 1: // duplicate a span
      return s.slice(0, b) + s.slice(a, b).repeat(int(r, 1, 4)) + s.slice(b);
    case 2: // insert a token
      return s.slice(0, a) + token(r) + s.slice(a);
    case 3: // replace a span by a token
      return s.slice(0, a) + token(r) + s.slice(b);
    case 4: { // replace one number by an odd one
      const nums = [...s.matchAll(/[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/g)];
      if (nums.length === 0) return s;
      const m = pick(r, nums);
      return s.slice(0, m.index) + pick(r, ODD_NUMBERS) + s.slice(m.index + m[0].length);
    }
    case 5: { // replace one identifier by another or an odd one
      const ids = [...s.matchAll(/[A-Za-z_][A-Za-z0-9_]*/g)];
      if (ids.length === 0) return s;
      const m = pick(r, ids);
      const by = r() < 0.5 ? pick(r, TOKENS) : m[0] + pick(r, ODD_TEXT);
      return s.slice(0, m.index) + by + s.slice(m.index + m[0].length);
    }
    case 6: { // swap two lines
      const lines = s.split("\n");
      const i = int(r, 0, lines.length - 1), j = int(r, 0, lines.length - 1);
      [lines[i], lines[j]] = [lines[j]!, lines[i]!];
      return lines.join("\n");
    }
    default: // flip one character
      return s.slice(0, a) + String.fromCharCode(int(r, 0, 127)) + s.slice(a + 1);
  }
}

/** The statement's right-hand side of the plain program, and the program around it. */
const ACC = "A[m, k] * B[k, n]";
function plain(expr: string, schedule = ""): string {
  // C and alpha declared only where used (an unused tensor is an E0117).
  const c = expr.includes("C[") ? "  C: f32[M, N]\n" : "";
  const alpha = expr.includes("alpha") ? "  alpha: f32 = 1.5\n" : "";
  return `kernel k {\n  A: f16[M, K]\n  B: f16[K, N] col\n${c}  D: f32[M, N]\n${alpha}` +
    `  D[m, n] = ${expr}${schedule}\n}\n`;
}

/** Nesting and operator chains around the source limits, in the shapes that recurse deepest. */
function deep(r: R): string {
  const n = int(r, 0, 1) === 0
    ? LIMITS.nesting.value + int(r, -3, 3)
    : int(r, 0, LIMITS.nesting.value * 4);
  const ops = LIMITS.operators.value + int(r, -4, 4);
  const fn = pick(r, ["(", "relu(", "-(", "(-", "tanh(", "f16(", "abs("]);
  switch (int(r, 0, 5)) {
    case 5: { // a binary tree of calls: many calls, shallow (the + - * count once missed them)
      const tree = (d: number): string =>
        d === 0 ? pick(r, ["C[m, n]", "1.5", ACC]) : `max(${tree(d - 1)}, ${tree(d - 1)})`;
      return plain(tree(int(r, 0, 9)) + (r() < 0.5 ? ` + ${ACC}` : ""));
    }
    case 0:
      return plain(fn.repeat(n) + ACC + ")".repeat(n));
    case 1:
      return plain(ACC + pick(r, [" + 1", " * 2", " - C[m, n]", " + alpha"]).repeat(ops));
    case 2:
      return plain("-".repeat(int(r, 0, 2 * LIMITS.operators.value)) + ACC);
    case 3: // unbalanced
      return plain(fn.repeat(n) + ACC + ")".repeat(int(r, 0, n + 3)));
    default:
      return plain(
        "max(".repeat(n) + ACC + ", C[m, n])".repeat(n) + " + 1".repeat(int(r, 0, ops)),
      );
  }
}

/** Huge and odd numbers where numbers go. */
function numbers(r: R): string {
  const x = () => pick(r, ODD_NUMBERS);
  switch (int(r, 0, 4)) {
    case 0:
      return plain(`${x()} * ${ACC} + ${x()}`);
    case 1:
      return plain("alpha * " + ACC).replace(
        "alpha: f32 = 1.5",
        `alpha: ${pick(r, ["f32", "s32", "f64", "f16"])} = -${x()}`,
      );
    case 2:
      return plain(ACC).replace("[M, K]", `[${x()}, K]`).replace("[K, N] col", `[K, ${x()}] col`);
    case 3: {
      const key = pick(r, ["threadblock", "warp", "mma", "stages", "swizzle", "split_k", "target"]);
      const v = key === "threadblock" || key === "warp" || key === "mma"
        ? `${x()}x${x()}x${x()}`
        : x();
      return plain(ACC, `\n  schedule {\n    ${key} ${v}\n  }`);
    }
    default:
      return plain(ACC).replace("f16[M, K]", `f16[M, K] align ${x()}`);
  }
}

/** Line endings, a byte order mark, tabs and control characters over a whole source. */
function encoding(r: R, s: string): string {
  switch (int(r, 0, 6)) {
    case 0:
      return s.replace(/\n/g, "\r\n");
    case 1:
      return s.replace(/\n/g, "\r");
    case 2:
      return "\ufeff" + s;
    case 3:
      return s.replace(/ /g, "\t");
    case 4:
      return s.replace(/\n/g, pick(r, ["\u2028", "\u0085", "\f", "\v", "\n\0"]));
    case 5:
      return "\ufeff" + s.replace(/\n/g, "\r\n") + pick(r, ["", "\0", "\ud800", "\r"]);
    default:
      return s.replace(/[A-Za-z]/, (c) => c + pick(r, ODD_TEXT));
  }
}

/** Every source generator, by name, with its weight. */
export const KINDS: Readonly<
  Record<string, readonly [number, (r: R, seeds: readonly string[]) => string]>
> = {
  mutated: [30, (r, seeds) => {
    let s = pick(r, seeds);
    for (let i = int(r, 1, 6); i > 0; i--) s = mutate(r, s);
    return s;
  }],
  generated: [10, (r) => {
    let s = draw(r, 2 ** 20).source;
    for (let i = int(r, 0, 3); i > 0; i--) s = mutate(r, s);
    return s;
  }],
  deep: [10, (r) => deep(r)],
  numbers: [15, (r) => numbers(r)],
  unicode: [8, (r, seeds) => {
    let s = pick(r, seeds);
    for (let i = int(r, 1, 4); i > 0; i--) {
      const a = int(r, 0, s.length);
      s = s.slice(0, a) + pick(r, ODD_TEXT) + s.slice(a);
    }
    return s;
  }],
  encoding: [10, (r, seeds) => encoding(r, pick(r, seeds))],
  truncated: [10, (r, seeds) => {
    const s = pick(r, seeds);
    return s.slice(0, int(r, 0, s.length));
  }],
  soup: [7, (r) => Array.from({ length: int(r, 0, 80) }, () => token(r)).join(pick(r, [" ", ""]))],
};

/** Sometimes API options, some of them out of range. */
function drawOptions(r: R): [CompileOptions, boolean] {
  const o: Record<string, unknown> = { file: "fuzz.gemm" };
  let bad = false;
  const x = r();
  if (x < 0.1) o.target = pick(r, ["sm80", "sm86", "sm90"]);
  else if (x < 0.12) {
    o.target = pick(r, ["sm70", "", "SM80"]);
    bad = true;
  }
  if (r() < 0.1) {
    const v = pick(r, [1, 108, 132, 0, -1, 1.5, NaN, 1e12]);
    o.sms = v;
    bad ||= !(Number.isInteger(v) && v > 0 && v <= LIMITS.runtimeSize.value);
  }
  if (r() < 0.15) {
    const hints: Record<string, number> = {};
    for (const d of ["M", "N", "K", "L"]) {
      if (r() < 0.7) {
        const v = r() < 0.9
          ? pick(r, [1, 8, 100, 4096, 65536, 2 ** 31 - 1, 0])
          : pick(r, [-1, 2 ** 31, NaN, 0.5]);
        hints[d] = v;
        bad ||= !(Number.isInteger(v) && v >= 0 && v <= LIMITS.runtimeSize.value);
      }
    }
    o.sizeHints = hints;
  }
  return [o as CompileOptions, bad];
}

/**
 * Draws one case.
 *
 * @param r The random source.
 * @param seeds The programs to mutate (the examples).
 * @returns The case.
 */
export function drawFront(r: R, seeds: readonly string[]): FrontCase {
  const kinds = Object.entries(KINDS);
  let x = r() * kinds.reduce((a, [, [w]]) => a + w, 0);
  let chosen = kinds[0]!;
  for (const k of kinds) {
    x -= k[1][0];
    if (x < 0) {
      chosen = k;
      break;
    }
  }
  const source = chosen[1][1](r, seeds);
  const [options, badOption] = drawOptions(r);
  return { kind: chosen[0], source, options, badOption };
}

/** The usage errors of an option out of range (compiler.ts). */
const USAGE = /^(Unknown target|Option sms|Size hint)/;

/**
 * Runs one case: compiles it and prints what it produced.
 *
 * @param c The case.
 * @param budgetMs The time budget.
 * @returns What it gave.
 */
export function runFront(c: FrontCase, budgetMs: number): FrontOutcome {
  const t0 = performance.now();
  let verdict: FrontOutcome["verdict"];
  let detail = "";
  let codes: string[] = [];
  try {
    const res = compile(c.source, c.options);
    for (const k of res.kernels) {
      if (k.ptx.length + k.kernelText.length + JSON.stringify(k.manifest).length === 0) {
        detail = `kernel ${k.name}: empty output`;
      }
    }
    formatDiagnostics(res.diagnostics, c.source);
    codes = res.diagnostics.map((d) => d.code);
    for (const d of res.diagnostics) {
      const s = d.span;
      if (!(0 <= s.start && s.start <= s.end && s.end <= c.source.length + 1 && d.line >= 1)) {
        detail = `${d.code} at ${JSON.stringify(s)} (${d.line}:${d.column}) is outside the source`;
      }
    }
    verdict = detail !== "" ? "crash" : res.ok ? "compiled" : "diagnostic";
  } catch (e) {
    const err = e as Error;
    if (c.badOption && err instanceof TypeError && USAGE.test(err.message)) verdict = "usage";
    else {
      verdict = "crash";
      detail = `THREW ${err?.stack ?? String(e)}`;
    }
  }
  const ms = performance.now() - t0;
  if (verdict !== "crash" && ms > budgetMs) {
    verdict = "crash";
    detail = `took ${ms.toFixed(0)} ms, over the budget of ${budgetMs} ms`;
  }
  return { verdict, detail, ms, codes };
}

/** Counts of a run of {@link fuzzFront}. */
export interface FrontSummary {
  readonly cases: number;
  readonly byVerdict: Record<FrontOutcome["verdict"], number>;
  readonly byKind: Record<string, number>;
  readonly codes: Record<string, number>;
  readonly crashes: readonly string[];
  readonly slowestMs: number;
}

/** The examples' sources. */
export function exampleSources(): string[] {
  const dir = new URL("../examples/", import.meta.url);
  return [...Deno.readDirSync(dir)].filter((e) => e.name.endsWith(".gemm"))
    .map((e) => e.name).sort().map((n) => Deno.readTextFileSync(new URL(n, dir)));
}

/**
 * Runs `cases` cases from `seed`.
 *
 * @param cases How many.
 * @param seed The seed.
 * @param budgetMs The time budget of one case.
 * @param log Where each crash is reported.
 * @returns The counts and the crashes.
 */
export function fuzzFront(
  cases: number,
  seed: number,
  budgetMs: number,
  log: (line: string) => void = () => {},
): FrontSummary {
  const r = rng(seed);
  const seeds = exampleSources();
  const byVerdict = { compiled: 0, diagnostic: 0, usage: 0, crash: 0 };
  const byKind: Record<string, number> = {};
  const codes: Record<string, number> = {};
  const crashes: string[] = [];
  let slowestMs = 0;
  for (let i = 0; i < cases; i++) {
    const c = drawFront(r, seeds);
    const o = runFront(c, budgetMs);
    byVerdict[o.verdict]++;
    byKind[c.kind] = (byKind[c.kind] ?? 0) + 1;
    slowestMs = Math.max(slowestMs, o.ms);
    for (const code of o.codes) codes[code] = (codes[code] ?? 0) + 1;
    if (o.verdict === "crash") {
      const text =
        `--- case ${i} (${c.kind}, options ${JSON.stringify(c.options)}): ${o.detail}\n` +
        `source: ${JSON.stringify(c.source).slice(0, 4000)}`;
      crashes.push(text);
      log(text);
    }
  }
  return { cases, byVerdict, byKind, codes, crashes, slowestMs };
}

/**
 * The `--front` mode of tests/fuzz.ts.
 *
 * @param args The command line (after `--front` is taken out).
 * @returns The exit code: 0 with no crash.
 */
export function frontMain(args: readonly string[]): number {
  const { values } = parseArgs({
    args: [...args],
    options: {
      cases: { type: "string", default: "1000" },
      seed: { type: "string", default: String(Date.now() % 1000000) },
      "budget-ms": { type: "string", default: "2000" },
    },
  });
  const cases = Number(values.cases), seed = Number(values.seed);
  const budget = Number(values["budget-ms"]);
  console.log(`fuzz --front: ${cases} cases, seed ${seed}, budget ${budget} ms a case`);
  const t0 = performance.now();
  const s = fuzzFront(cases, seed, budget, (line) => console.log(line));
  const secs = (performance.now() - t0) / 1000;
  const fmt = (o: Record<string, number>) =>
    Object.entries(o).sort().map(([k, v]) => `${k} ${v}`).join(", ");
  console.log(
    `fuzz --front: ${fmt(s.byVerdict)} in ${secs.toFixed(1)} s (slowest case ${
      s.slowestMs.toFixed(0)
    } ms)`,
  );
  console.log(`  kinds: ${fmt(s.byKind)}`);
  console.log(`  diagnostics: ${fmt(s.codes)}`);
  return s.byVerdict.crash === 0 ? 0 : 1;
}

if (import.meta.main) Deno.exit(frontMain(Deno.args));
