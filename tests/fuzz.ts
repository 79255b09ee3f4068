/**
 * A random differential fuzzer for the compiler and the simulator (not part of
 * `deno task test`; run it by hand):
 *
 *     deno run -A tests/fuzz.ts [--cases N] [--seed S] [--max-macs M]
 *
 * With `--front`, the front-end fuzzer of tests/fuzz_front.ts runs instead
 * (`--cases N --seed S --budget-ms B`): random and mutated programs through
 * the compile API, looking for crashes rather than wrong answers.
 *
 * Each case draws a program (operand types, layouts, alignment, an epilogue, a
 * schedule or none, a target among sm80, sm86 and sm90 with sm90's scheduler and
 * cluster keys, sometimes size hints and an SM count for the default
 * choices) and sizes (often not multiples of the tile), compiles it, and then:
 * a program the compiler rejects must be rejected with a diagnostic (a thrown
 * exception is a bug); an accepted one is simulated over its whole grid with
 * random inputs and the hazard checker, and must agree with the reference
 * GEMM (integers identical) with no hazard. Every failure prints the program
 * and the sizes, ready to become a regression test.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { compile } from "../compiler.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import { rng } from "../backends/sim/_test_kernels.ts";
import { type Dtype, DTYPE_INFO } from "../ir/dtype.ts";
// A cycle (fuzz_front.ts draws programs with `draw`), harmless: neither module
// uses the other's exports while it is evaluated.
import { frontMain } from "./fuzz_front.ts";

export interface Case {
  readonly source: string;
  readonly sizes: Record<string, number>;
  readonly hints?: Record<string, number>;
  readonly sms?: number;
}

/** The MMA shape other than the default that each family may name. */
const OTHER_MMA: Readonly<Record<string, string>> = {
  "16": "16x8x8",
  tf32: "16x8x4",
  f64: "8x8x4",
  "8": "16x8x16",
  "4": "16x8x32",
  b1: "16x8x128",
};

/** A draw's choice from a list. */
type Pick = <T>(xs: readonly T[]) => T;

/** The operand types of a case: its family, A's, B's and D's types. */
interface Types {
  readonly family: "16" | "tf32" | "f64" | "8" | "4" | "b1";
  readonly a: string;
  readonly b: string;
  readonly d: string;
  /** 8-, 4- and 1-bit operands: A row and B col (K contiguous). */
  readonly kContig: boolean;
}

/** Draws one case. */
export function draw(r: () => number, maxMacs: number): Case {
  const pick: Pick = (xs) => xs[Math.floor(r() * xs.length)]!;
  const lines: string[] = [];
  const types = drawTypes(r, pick, lines);
  const { family, a, b, kContig } = types;
  const float = family === "16" || family === "tf32" || family === "f64";
  const la = kContig ? "row" : pick(["row", "col"]);
  const lb = kContig ? "col" : pick(["row", "col"]);
  const ld = pick(["row", "col"]);
  const align1 = (family === "16" || family === "tf32") && r() < 0.2;
  const al = align1 ? " align 1" : "";
  // Sizes are multiples of the alignment (16 bytes) unless align 1.
  const q = align1 ? 1 : Math.max(...[a, b, types.d].map((t) => 128 / DTYPE_INFO[t as Dtype].bits));
  // Sometimes a batch (a leading L); sometimes M or N fixed in the declarations.
  const batched = r() < 0.15;
  const L = batched ? "L, " : "";
  const l = batched ? "l, " : "";
  const fixed = (name: string) =>
    r() < 0.15 ? String(q * (1 + Math.floor(r() * Math.max(1, Math.floor(160 / q))))) : name;
  const Mx = fixed("M");
  const Nx = fixed("N");
  const decls = [`A: ${a}[${L}${Mx}, K] ${la}${al}`, `B: ${b}[${L}K, ${Nx}] ${lb}${al}`];
  // The product, then an epilogue.
  const product = family === "b1"
    ? `popc(A[${l}m, k] ${pick(["^", "&"])} B[${l}k, n])`
    : `A[${l}m, k] * B[${l}k, n]`;
  const dims: Dims = { L, l, Mx, Nx, al };
  const { expr, d, dAlign } = float
    ? { ...floatEpilogue(r, pick, types, dims, decls, product), d: types.d, dAlign: al }
    : intEpilogue(r, pick, dims, decls, product);
  decls.push(`D: ${d}[${L}${Mx}, ${Nx}] ${ld}${dAlign}`);
  const { hints, sms } = drawSchedule(r, pick, family, lines);
  const schedule = lines.length === 0
    ? ""
    : `\n  schedule {\n${lines.map((x) => `    ${x}\n`).join("")}  }`;
  const source = `kernel fuzz {\n${
    decls.map((x) => `  ${x}\n`).join("")
  }\n  D[${l}m, n] = ${expr}${schedule}\n}\n`;
  // Sizes: often not multiples of the tile; K halved until the work is small enough.
  const size = (hi: number) => q * (1 + Math.floor(r() * Math.max(1, Math.floor(hi / q))));
  const sizes: Record<string, number> = {
    M: Mx === "M" ? size(200) : Number(Mx),
    N: Nx === "N" ? size(200) : Number(Nx),
    K: size(family === "b1" ? 2048 : 400),
    ...(batched ? { L: 1 + Math.floor(r() * 3) } : {}),
  };
  const work = () => sizes.M! * sizes.N! * sizes.K! * (sizes.L ?? 1);
  while (work() > maxMacs && sizes.K! > q) sizes.K = Math.max(q, Math.floor(sizes.K! / 2 / q) * q);
  return {
    source,
    sizes,
    ...(hints === undefined ? {} : { hints }),
    ...(sms === undefined ? {} : { sms }),
  };
}

/** A case's family and operand types (16-bit cases may add `accumulate f16` to `lines`). */
function drawTypes(r: () => number, pick: Pick, lines: string[]): Types {
  const family = pick(["16", "16", "16", "tf32", "tf32", "f64", "8", "4", "b1"] as const);
  switch (family) {
    case "16": {
      const a = pick(["f16", "bf16"]);
      const d = pick(["f32", a]);
      if (a === "f16" && d === "f16" && r() < 0.3) lines.push("accumulate f16");
      return { family, a, b: a, d, kContig: false };
    }
    case "tf32":
      if (r() < 0.4) lines.push(`math ${pick(["3xtf32", "f32"])}`);
      return { family, a: "f32", b: "f32", d: "f32", kContig: false };
    case "f64":
      return { family, a: "f64", b: "f64", d: "f64", kContig: false };
    case "8": {
      const a = pick(["s8", "u8"]);
      return { family, a, b: pick(["s8", "u8"]), d: "s32", kContig: true };
    }
    case "4": {
      const a = pick(["s4", "u4"]);
      return { family, a, b: a === "s4" ? pick(["s4", "u4"]) : "u4", d: "s32", kContig: true };
    }
    default:
      return { family, a: "b1", b: "b1", d: "s32", kContig: true };
  }
}

/** The declarations' batch and fixed dimensions, and the operands' alignment clause. */
interface Dims {
  readonly L: string;
  readonly l: string;
  readonly Mx: string;
  readonly Nx: string;
  readonly al: string;
}

/** A floating-point epilogue: alpha, C with beta, a bias, an activation, a cast to D's type. */
function floatEpilogue(
  r: () => number,
  pick: Pick,
  t: Types,
  { L, l, Mx, Nx, al }: Dims,
  decls: string[],
  product: string,
): { expr: string } {
  let expr = product;
  const sc = t.family === "f64" ? "f64" : "f32";
  if (r() < 0.3) {
    decls.push(`alpha: ${sc} = 1.5`);
    expr = `alpha * ${expr}`;
  }
  if (r() < 0.2) {
    decls.push(`C: ${t.d}[${L}${Mx}, ${Nx}] ${pick(["row", "col"])}${al}`, `beta: ${sc} = 0.5`);
    expr = `${expr} + beta * C[${l}m, n]`;
  }
  if (r() < 0.3) {
    const byN = r() < 0.5;
    decls.push(`bias: ${sc}[${byN ? Nx : Mx}]`);
    expr = `${expr} + bias[${byN ? "n" : "m"}]`;
  }
  if (r() < 0.3) {
    // exp of a scaled value: 0.125 keeps f16 outputs (max 65504) finite.
    const f = pick(["relu", "gelu", "sigmoid", "silu", "tanh", "exp"]);
    expr = f === "exp" ? `exp(0.125 * (${expr}))` : `${f}(${expr})`;
  }
  if (t.d === "f16" || t.d === "bf16") expr = `${t.d}(${expr})`;
  return { expr };
}

/** An integer epilogue: an s32 matrix, an s32 bias, a shift, requantised to 8 bits with a clamp
 * (which changes D's type and alignment). */
function intEpilogue(
  r: () => number,
  pick: Pick,
  { L, l, Mx, Nx, al }: Dims,
  decls: string[],
  product: string,
): { expr: string; d: string; dAlign: string } {
  let [expr, d, dAlign] = [product, "s32", al];
  if (r() < 0.2) {
    decls.push(`C: s32[${L}${Mx}, ${Nx}] ${pick(["row", "col"])}${al}`);
    expr = `${expr} + C[${l}m, n]`;
  }
  if (r() < 0.3) {
    const byN = r() < 0.5;
    decls.push(`bias: s32[${byN ? Nx : Mx}]`);
    expr = `${expr} + bias[${byN ? "n" : "m"}]`;
  }
  if (r() < 0.2) {
    decls.push("shift: s32 = 3");
    expr = `${expr} - shift`;
  }
  if (r() < 0.25) {
    d = pick(["u8", "s8"]);
    expr = `${d}(clamp(${expr}, ${d === "u8" ? "0, 255" : "-128, 127"}))`;
    dAlign = " align 4";
  }
  return { expr, d, dAlign };
}

/** A schedule: the defaults (sometimes with size hints and an SM count), or drawn lines. */
function drawSchedule(
  r: () => number,
  pick: Pick,
  family: Types["family"],
  lines: string[],
): { hints?: Record<string, number>; sms?: number } {
  let hints: Record<string, number> | undefined;
  let sms: number | undefined;
  const mode = r();
  if (mode < 0.5) {
    const kk = family === "b1"
      ? pick([256, 512])
      : family === "4"
      ? pick([64, 128])
      : family === "8"
      ? pick([32, 64, 128])
      : family === "f64"
      ? pick([8, 16, 32])
      : pick([16, 32, 64]);
    // Small tiles mostly; sometimes the large ones of the defaults (128x256 and
    // the wave-aware 160- and 192-wide tiles, whose 80- and 96-wide warps load
    // fragments interleaved with the MMAs).
    const small = [[32, 32], [64, 32], [32, 64], [64, 64], [128, 64], [64, 128], [128, 128], [
      96,
      64,
    ], [80, 64]] as const;
    const large = [[128, 256], [160, 256], [256, 160], [192, 256], [256, 192]] as const;
    const [tm, tn] = r() < 0.25 ? pick(large) : pick(small);
    lines.push(`threadblock ${tm}x${tn}x${kk}`);
    if (r() < 0.5) {
      const wm = pick([16, 32, 64, 80, 96].filter((w) => tm % w === 0 && w < tm));
      const wn = pick([16, 32, 64, 80, 96].filter((w) => tn % w === 0 && w < tn));
      if (wm !== undefined && wn !== undefined) lines.push(`warp ${wm}x${wn}x${kk}`);
    }
    if (r() < 0.5) lines.push(`stages ${pick([2, 3, 4, 5])}`);
  } else if (mode < 0.75) {
    hints = {
      M: pick([64, 128, 1000, 4096, 8192]),
      N: pick([64, 128, 1000, 4096, 8192]),
      K: pick([256, 2048, 8192]),
    };
    sms = pick([108, 132]);
  }
  if (r() < 0.3) lines.push(`swizzle ${pick([1, 2, 4, 8, 16])}`);
  if (r() < 0.2) lines.push(`split_k ${pick([2, 3, 4])}`);
  // Targets: sm80 (the default), sm86, and sm90 with its own keys (wgmma and TMA kernels, the
  // persistent schedulers, clusters); a key a kernel cannot honour is a diagnostic.
  const target = pick(["sm80", "sm80", "sm80", "sm80", "sm80", "sm80", "sm86", "sm90", "sm90"]);
  if (target !== "sm80") lines.push(`target ${target}`);
  if (target === "sm90" && r() < 0.3) {
    lines.push(`scheduler ${pick(["persistent", "stream_k", "pingpong"])}`);
  }
  if (target === "sm90" && r() < 0.2) lines.push(`cluster ${pick(["2", "1x2"])}`);
  if (r() < 0.1) lines.push(`mma ${OTHER_MMA[family]}`);
  return { ...(hints === undefined ? {} : { hints }), ...(sms === undefined ? {} : { sms }) };
}

function main(): number {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      cases: { type: "string", default: "100" },
      seed: { type: "string", default: String(Date.now() % 1000000) },
      "max-macs": { type: "string", default: String(4 * 2 ** 20) },
    },
  });
  const cases = Number(values.cases);
  const seed = Number(values.seed);
  const r = rng(seed);
  let rejected = 0, agreed = 0, failed = 0;
  const codes = new Map<string, number>();
  console.log(`fuzz: ${cases} cases, seed ${seed}`);
  for (let i = 0; i < cases; i++) {
    const c = draw(r, Number(values["max-macs"]));
    const where = () =>
      `--- case ${i}: sizes ${JSON.stringify(c.sizes)}${
        c.hints ? ` hints ${JSON.stringify(c.hints)} sms ${c.sms}` : ""
      }\n${c.source}`;
    let res;
    try {
      res = compile(c.source, {
        file: "fuzz.gemm",
        ...(c.hints ? { sizeHints: c.hints } : {}),
        ...(c.sms ? { sms: c.sms } : {}),
      });
    } catch (e) {
      failed++;
      console.log(`${where()}COMPILER THREW: ${(e as Error).stack}`);
      continue;
    }
    if (!res.ok) {
      rejected++;
      for (const dg of res.diagnostics) codes.set(dg.code, (codes.get(dg.code) ?? 0) + 1);
      continue;
    }
    for (const ck of res.kernels) {
      try {
        const rep = simulateGemm(ck, c.sizes, { seed: seed + i });
        if (rep.ok) agreed++;
        else {
          failed++;
          console.log(
            `${where()}DISAGREES: hazards ${rep.sim.hazardCount} ${
              rep.sim.hazards.slice(0, 2).map((h) => `${h.kind}: ${h.message}`).join("; ")
            }; ${rep.comparison.overBound} of ${rep.comparison.elements} over the bound, first ${
              JSON.stringify(rep.comparison.first)
            }`,
          );
        }
      } catch (e) {
        failed++;
        console.log(`${where()}SIMULATION THREW: ${(e as Error).message}`);
      }
    }
  }
  console.log(
    `fuzz: ${agreed} agreed, ${rejected} rejected with a diagnostic (${
      [...codes].map(([k, v]) => `${k} ${v}`).join(", ")
    }), ${failed} failed`,
  );
  return failed === 0 ? 0 : 1;
}

if (import.meta.main) {
  if (Deno.args.includes("--front")) {
    // The front-end mode (tests/fuzz_front.ts): random and mutated programs through compile().
    Deno.exit(frontMain(Deno.args.filter((a) => a !== "--front")));
  }
  Deno.exit(main());
}
