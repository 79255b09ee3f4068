/**
 * PTX identity across a compiler change (not part of `deno task test`; run it
 * by hand). `record` compiles a fixed corpus of programs and writes, for every
 * (program, target, size hints, SM count), a hash of the PTX module and of the
 * launch manifest, with the programs' sources, into one JSON file; `compare`
 * compiles the recorded sources again with this checkout's compiler and lists
 * every case whose PTX or manifest differs.
 *
 *     deno run -A tests/ptx_identity.ts record FILE [--root DIR] [--fuzz N] [--seed S]
 *       [--targets LIST] [--pdl] [--cut-setup]
 *     deno run -A tests/ptx_identity.ts compare FILE [--show N]
 *
 * `--root DIR`: compile with the checkout at DIR (its `compiler.ts`), to record
 * an older commit's output. The corpus: every `.gemm` file in examples/,
 * bench/kernels/, bench/research/probes/ and tests/testdata/ (the ones that compile),
 * every backquoted program without interpolation in tests/*.ts, the sweep's
 * inline programs (tests/_programs.ts) and N fuzz programs (tests/fuzz.ts,
 * seed S), each on sm80 and sm86 (`--targets`), with no hints and with each of the sweep's
 * shapes as hints on 108 and 132 SMs (fuzz programs: their own hints).
 * `--show N` prints the sources of the first N differing cases (compile them
 * with `gemm compile --emit ptx` on both commits to see the difference).
 *
 * `--targets LIST` (record): other targets than sm80,sm86, e.g. `sm90`; `--pdl` (record):
 * every case compiled with programmatic dependent launch; `--cut-setup` (record): the sm90
 * pipelines' barrier set-up (from its comment, `S stages: full and empty barriers`, to the
 * barrier after it) left out and register and label numbers masked before hashing, so that a
 * change to the set-up alone compares as identical (bench/NOTES.md 100). A record keeps its
 * options, and `compare` applies them.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { createHash } from "node:crypto";
import { programs, SHAPES } from "./_programs.ts";
import { draw } from "./fuzz.ts";
import { rng } from "../backends/sim/_test_kernels.ts";

interface CompileLike {
  compile: (src: string, o: Record<string, unknown>) => {
    ok: boolean;
    kernels: { manifest: unknown }[];
  };
  ptxModule: (ks: unknown[]) => string;
}

interface Case {
  readonly src: string;
  readonly target: string;
  readonly hints?: Record<string, number>;
  readonly sms?: number;
}

interface Record_ {
  readonly commit: string;
  readonly sources: Record<string, string>;
  /** key -> "ptxHash manifestHash" or "rejected". */
  readonly cases: Record<string, string>;
  /** Every case compiled with `pdl` (`--pdl`). */
  readonly pdl?: boolean;
  /** The set-up cut out before hashing (`--cut-setup`). */
  readonly cutSetup?: boolean;
}

const { values, positionals } = parseArgs({
  args: Deno.args,
  allowPositionals: true,
  options: {
    root: { type: "string" },
    fuzz: { type: "string", default: "500" },
    seed: { type: "string", default: "18018" },
    show: { type: "string", default: "3" },
    targets: { type: "string", default: "sm80,sm86" },
    pdl: { type: "boolean", default: false },
    "cut-setup": { type: "boolean", default: false },
  },
});
const [verb, file] = positionals;
if ((verb !== "record" && verb !== "compare") || file === undefined) {
  console.error(
    "usage: ptx_identity.ts record|compare FILE [--root DIR] [--fuzz N] [--seed S] " +
      "[--targets LIST] [--pdl] [--cut-setup] [--show N]",
  );
  Deno.exit(2);
}

const here = new URL("..", import.meta.url).pathname;
const root = values.root ?? here;

const TARGETS = values.targets.split(",");

/** The PTX with an sm90 pipeline's barrier set-up cut out and register and label numbers
 * masked (`--cut-setup`). */
function withoutSetup(ptx: string): string {
  const i = ptx.indexOf("stages: full and empty barriers");
  let s = ptx;
  if (i >= 0) {
    const rest = ptx.slice(i);
    const m = /\n\s*(bar\.sync 0;|barrier\.cluster\.arrive)/.exec(rest);
    s = ptx.slice(0, i) + (m === null ? "" : rest.slice(m.index));
  }
  return s.replace(/%[a-z]+<\d+>/g, "%R<>").replace(/%[a-z]+\d+/g, "%R").replace(/\$L_\d+/g, "$L");
}

function hash(s: string): string {
  return createHash("sha256").update(s).digest("hex").slice(0, 20);
}

function gemmFiles(dir: string, prefix: string): [string, string][] {
  const out: [string, string][] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch {
    return out;
  }
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) out.push(...gemmFiles(p, `${prefix}${e.name}/`));
    else if (e.name.endsWith(".gemm")) out.push([`${prefix}${e.name}`, Deno.readTextFileSync(p)]);
  }
  return out;
}

/** Backquoted programs without `${` in the test files. */
function inlinePrograms(): [string, string][] {
  const out: [string, string][] = [];
  const dir = `${here}tests`;
  for (const e of [...Deno.readDirSync(dir)].sort((a, b) => a.name.localeCompare(b.name))) {
    if (!e.isFile || !e.name.endsWith(".ts")) continue;
    const text = Deno.readTextFileSync(`${dir}/${e.name}`);
    let i = 0;
    for (const m of text.matchAll(/`([^`]*)`/g)) {
      const body = m[1]!;
      if (!/kernel \w+ \{/.test(body) || body.includes("${")) continue;
      // Template escapes as the test sees them.
      const src = body.replace(/\\n/g, "\n").replace(/\\`/g, "`").replace(/\\\\/g, "\\");
      out.push([`tests/${e.name}#${i++}`, src]);
    }
  }
  return out;
}

function corpus(): { sources: Record<string, string>; cases: Map<string, Case> } {
  const sources: Record<string, string> = {};
  for (
    const [id, src] of [
      ...gemmFiles(`${here}examples`, "examples/"),
      ...gemmFiles(`${here}bench/kernels`, "bench/kernels/"),
      ...gemmFiles(`${here}bench/research/probes`, "bench/research/probes/"),
      ...gemmFiles(`${here}tests/testdata`, "tests/testdata/"),
      ...inlinePrograms(),
      ...programs(),
    ]
  ) sources[id] = src;
  const cases = new Map<string, Case>();
  const hintSets: (Record<string, number> | undefined)[] = [undefined];
  const smsOf: (number | undefined)[] = [undefined];
  for (const [M, N, K] of SHAPES) {
    for (const sms of [108, 132]) {
      hintSets.push({ M, N, K, Tokens: M, Out: N, In: K, L: 2 });
      smsOf.push(sms);
    }
  }
  for (const id of Object.keys(sources)) {
    for (const target of TARGETS) {
      hintSets.forEach((hints, j) => {
        const sms = smsOf[j];
        const key = `${id}|${target}|${hints ? `${hints.M}x${hints.N}x${hints.K}` : "-"}|${
          sms ?? "-"
        }`;
        cases.set(key, {
          src: sources[id]!,
          target,
          ...(hints ? { hints } : {}),
          ...(sms ? { sms } : {}),
        });
      });
    }
  }
  const r = rng(Number(values.seed));
  for (let i = 0; i < Number(values.fuzz); i++) {
    const c = draw(r, 4 * 2 ** 20);
    const id = `fuzz#${i}`;
    sources[id] = c.source;
    for (const target of TARGETS) {
      cases.set(`${id}|${target}|${JSON.stringify(c.hints ?? null)}|${c.sms ?? "-"}`, {
        src: c.source,
        target,
        ...(c.hints ? { hints: c.hints } : {}),
        ...(c.sms ? { sms: c.sms } : {}),
      });
    }
  }
  return { sources, cases };
}

function outcome(
  cc: CompileLike,
  c: Case,
  o: { readonly pdl?: boolean; readonly cutSetup?: boolean },
): { tag: string; ptx: string } {
  const r = cc.compile(c.src, {
    file: "identity.gemm",
    target: c.target,
    ...(o.pdl === true ? { pdl: true } : {}),
    ...(c.hints ? { sizeHints: c.hints } : {}),
    ...(c.sms ? { sms: c.sms } : {}),
  });
  if (!r.ok) return { tag: "rejected", ptx: "" };
  const cut = (ptx: string) => (o.cutSetup === true ? withoutSetup(ptx) : ptx);
  const ptx = r.kernels.map((k) => cut(cc.ptxModule([k]))).join("\n");
  const manifests = JSON.stringify(r.kernels.map((k) => k.manifest));
  return { tag: `${hash(ptx)} ${hash(manifests)}`, ptx };
}

/** Cases keyed by the recorded key, rebuilt from a record's sources. */
function casesOf(rec: Record_): Map<string, Case> {
  const out = new Map<string, Case>();
  for (const key of Object.keys(rec.cases)) {
    const [id, target, h, sms] = key.split("|") as [string, string, string, string];
    let hints: Record<string, number> | undefined;
    if (h.startsWith("{")) hints = JSON.parse(h);
    else if (h !== "-" && h !== "null") {
      const [M, N, K] = h.split("x").map(Number) as [number, number, number];
      hints = { M, N, K, Tokens: M, Out: N, In: K, L: 2 };
    }
    out.set(key, {
      src: rec.sources[id]!,
      target,
      ...(hints ? { hints } : {}),
      ...(sms !== "-" ? { sms: Number(sms) } : {}),
    });
  }
  return out;
}

const cc = await import(`${root}/compiler.ts`) as CompileLike;
if (verb === "record") {
  const { sources, cases } = corpus();
  const git = new Deno.Command("git", { args: ["-C", root, "rev-parse", "--short", "HEAD"] })
    .outputSync();
  const rec: Record_ = {
    commit: new TextDecoder().decode(git.stdout).trim(),
    sources,
    cases: {},
    ...(values.pdl ? { pdl: true } : {}),
    ...(values["cut-setup"] ? { cutSetup: true } : {}),
  };
  const t0 = performance.now();
  for (const [key, c] of cases) {
    (rec.cases as Record<string, string>)[key] = outcome(cc, c, rec).tag;
  }
  Deno.writeTextFileSync(file, JSON.stringify(rec, null, 0) + "\n");
  const tags = Object.values(rec.cases);
  const distinct = new Set(tags.filter((t) => t !== "rejected").map((t) => t.split(" ")[0]));
  console.log(
    `recorded ${tags.length} cases (${tags.filter((t) => t === "rejected").length} rejected, ` +
      `${distinct.size} distinct PTX modules) from ${Object.keys(sources).length} programs ` +
      `in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
} else {
  const rec = JSON.parse(Deno.readTextFileSync(file)) as Record_;
  const cases = casesOf(rec);
  const diffs: string[] = [];
  let shown = 0;
  for (const [key, c] of cases) {
    const now = outcome(cc, c, rec);
    const was = rec.cases[key]!;
    if (now.tag === was) continue;
    diffs.push(`${key}: was ${was}, now ${now.tag}`);
    if (shown++ < Number(values.show)) console.log(`--- ${key}\n${c.src}`);
  }
  for (const d of diffs) console.log(`DIFF ${d}`);
  console.log(
    `ptx identity against ${rec.commit}: ${cases.size - diffs.length} of ${cases.size} ` +
      `cases identical, ${diffs.length} differ`,
  );
  if (diffs.length > 0) Deno.exit(1);
}
