/**
 * The kernel-IR verifier and printer. The verifier must reject a lowered
 * kernel that was broken by hand (a barrier or an mma under a non-uniform
 * `if`, a fragment of the wrong size or type, `cp.async.cg` of 8 bytes, no
 * final `wait 0`, an unknown parameter or MMA shape, a shared-memory offset
 * outside the buffer, ill-typed operands) with a message that names the
 * kernel, the broken rule and the operation as the kernel-IR text prints it.
 *
 * Kernels are broken by locating operations by their kind, never by their
 * position, so that the tests survive changes to the lowering.
 */

import assert from "node:assert/strict";
import { compile, formatDiagnostics } from "../compiler.ts";
import type { Kernel, Op, Reg, RegType } from "../ir/kernel.ts";
import { walkOps } from "../ir/kernel.ts";
import { verifyKernel } from "../ir/verify_kernel.ts";
import { printBody, printKernel } from "../ir/print_kernel.ts";
import * as ir from "../ir/builder.ts";
import { imm, KernelBuilder } from "../ir/builder.ts";

const ROOT = new URL("../", import.meta.url);

/** The kernel IR of an example's first kernel. */
function lowered(example: string): Kernel {
  const file = `examples/${example}.gemm`;
  const text = Deno.readTextFileSync(new URL(file, ROOT));
  const r = compile(text, { file });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, text));
  return r.kernels[0]!.kernel;
}

const HGEMM = lowered("hgemm");
const DGEMM = lowered("dgemm");

/** Where an operation sits: its list (mutable, in a clone) and index. */
interface Site {
  readonly list: Op[];
  readonly index: number;
  readonly op: Op;
}

function sites(body: readonly Op[], pred: (o: Op) => boolean, out: Site[] = []): Site[] {
  const list = body as Op[];
  list.forEach((op, index) => {
    if (pred(op)) out.push({ list, index, op });
    if (op.op === "for") sites(op.body, pred, out);
    if (op.op === "if") {
      sites(op.then, pred, out);
      sites(op.otherwise, pred, out);
    }
  });
  return out;
}

/**
 * A deep copy of `k` with the first operation matching `pred` replaced by
 * what `f` returns (removed for `null`).
 */
function edit(k: Kernel, pred: (o: Op) => boolean, f: (o: Op, c: Kernel) => Op | null): Kernel {
  const c = structuredClone(k);
  const s = sites(c.body, pred)[0];
  assert.ok(s !== undefined, "no operation to break");
  const r = f(s.op, c);
  if (r === null) s.list.splice(s.index, 1);
  else s.list[s.index] = r;
  return c;
}

/** A declared register of a type (the first one). */
function regOf(k: Kernel, t: RegType): Reg {
  const r = k.regs.find((x) => x.type === t);
  assert.ok(r !== undefined, `no ${t} register`);
  return r;
}

/** Asserts that the verifier rejects `k` with `Kernel IR verifier: kernel "NAME": WHAT`. */
function rejects(k: Kernel, what: RegExp): void {
  assert.throws(
    () => verifyKernel(k),
    (e: unknown) => {
      assert.ok(e instanceof Error);
      const prefix = `Kernel IR verifier: kernel "${k.name}": `;
      assert.ok(e.message.startsWith(prefix), e.message);
      assert.match(e.message.slice(prefix.length), what);
      return true;
    },
  );
}

const is = <T extends Op["op"]>(name: T) => (o: Op): o is Extract<Op, { op: T }> => o.op === name;

Deno.test("kernel IR verifier: the lowered examples and their deep copies verify", () => {
  verifyKernel(HGEMM);
  verifyKernel(DGEMM);
  verifyKernel(structuredClone(HGEMM));
  // What the negatives below break is there to break.
  for (const op of ["bar", "mma", "cpasync", "wait", "param", "ldmatrix", "if", "for"] as const) {
    assert.ok(sites(HGEMM.body, is(op)).length > 0, `hgemm has no ${op}`);
  }
  assert.ok(sites(DGEMM.body, is("lds")).length > 0, "dgemm loads fragments with lds");
});

Deno.test("kernel IR verifier: a barrier inside a non-uniform if", () => {
  const p = regOf(HGEMM, "pred");
  const bad = structuredClone(HGEMM);
  (bad.body as Op[]).unshift({
    op: "if",
    cond: p,
    negate: false,
    uniform: false,
    then: [{ op: "bar" }],
    otherwise: [],
  });
  rejects(bad, /^barrier inside non-uniform control flow: bar$/);
  // The same if, promised uniform, is fine.
  const ok = structuredClone(bad);
  (ok.body[0] as { uniform: boolean }).uniform = true;
  verifyKernel(ok);
  // In the else branch, and nested under a loop inside the if, too.
  const deep = structuredClone(HGEMM);
  (deep.body as Op[]).unshift({
    op: "if",
    cond: p,
    negate: true,
    uniform: false,
    then: [],
    otherwise: [{
      op: "for",
      iv: regOf(HGEMM, "u32"),
      from: imm(0),
      to: imm(2),
      step: 1,
      body: [{ op: "bar" }],
    }],
  });
  rejects(deep, /^barrier inside non-uniform control flow: bar$/);
});

Deno.test("kernel IR verifier: the block-uniform guard of the lowering must stay uniform", () => {
  // The lowering wraps the body in `if.uniform` (blocks past the last tile column skip it);
  // a non-uniform one would put every barrier of the main loop under divergent control.
  const bad = edit(HGEMM, (o) => o.op === "if" && o.uniform, (o) => ({ ...o, uniform: false }));
  rejects(bad, /^(barrier|warp-collective mma) inside non-uniform control flow: /);
});

Deno.test("kernel IR verifier: an mma inside a non-uniform if", () => {
  const p = regOf(HGEMM, "pred");
  const bad = edit(HGEMM, is("mma"), (o) => ({
    op: "if",
    cond: p,
    negate: false,
    uniform: false,
    then: [o],
    otherwise: [],
  }));
  rejects(
    bad,
    /^warp-collective mma inside non-uniform control flow: \{%f\d+(, %f\d+){3}\} = mma m16n8k16\.f16\.f32 /,
  );
});

Deno.test("kernel IR verifier: an mma with the wrong number of registers", () => {
  const mma = sites(HGEMM.body, is("mma"))[0]!.op as Extract<Op, { op: "mma" }>;
  assert.equal(mma.shape, "m16n8k16.f16.f32");
  const cases = [
    ["a", { ...mma, a: mma.a.slice(1) }, 3, 4],
    ["b", { ...mma, b: [...mma.b, mma.b[0]!] }, 3, 2],
    ["c", { ...mma, c: mma.c.slice(0, 2) }, 2, 4],
    ["d", { ...mma, d: mma.d.slice(0, 1) }, 1, 4],
  ] as const;
  for (const [what, broken, got, want] of cases) {
    const bad = edit(HGEMM, is("mma"), () => broken);
    rejects(
      bad,
      new RegExp(`^${what} has ${got} registers, m16n8k16\\.f16\\.f32 takes ${want}: .* = mma `),
    );
  }
});

Deno.test("kernel IR verifier: an mma fragment of the wrong register type", () => {
  // f16 fragments are packed f16x2 in b32 registers, f32 accumulators in f32 ones.
  const f = regOf(HGEMM, "f32");
  const b = regOf(HGEMM, "b32");
  const mma = sites(HGEMM.body, is("mma"))[0]!.op as Extract<Op, { op: "mma" }>;
  rejects(
    edit(HGEMM, is("mma"), () => ({ ...mma, a: [f, ...mma.a.slice(1)] })),
    /^a has type f32, expected b32: .* = mma m16n8k16\.f16\.f32 /,
  );
  rejects(
    edit(HGEMM, is("mma"), () => ({ ...mma, b: [mma.b[0]!, f] })),
    /^b has type f32, expected b32: /,
  );
  rejects(
    edit(HGEMM, is("mma"), () => ({ ...mma, c: [b, ...mma.c.slice(1)] })),
    /^c has type b32, expected f32: /,
  );
  rejects(
    edit(HGEMM, is("mma"), () => ({ ...mma, d: [...mma.d.slice(0, 3), b] })),
    /^d has type b32, expected f32: /,
  );
  // f64: every fragment register is an f64.
  const dm = sites(DGEMM.body, is("mma"))[0]!.op as Extract<Op, { op: "mma" }>;
  assert.equal(dm.shape, "m8n8k4.f64.f64");
  rejects(
    edit(DGEMM, is("mma"), () => ({ ...dm, a: [regOf(DGEMM, "u64")] })),
    /^a has type u64, expected f64: /,
  );
});

Deno.test("kernel IR verifier: operands of the wrong type", () => {
  const f = regOf(HGEMM, "f32");
  const r = regOf(HGEMM, "u32");
  rejects(
    edit(HGEMM, (o) => o.op === "bin" && o.type === "u32", (o) => ({ ...o, a: f }) as Op),
    /^a has type f32, expected u32: %r\d+ = \w+\.u32 %f\d+, /,
  );
  rejects(
    edit(HGEMM, is("cpasync"), (o) => ({ ...o, src: r }) as Op),
    /^source address has type u32, expected u64: cpasync\.cg\.16(?:\.L2::128B)? /,
  );
  rejects(
    edit(HGEMM, is("ldmatrix"), (o) => {
      const l = o as Extract<Op, { op: "ldmatrix" }>;
      return { ...l, dst: [f, ...l.dst.slice(1)] };
    }),
    /^destination has type f32, expected b32: \{%f\d+, .*\} = ldmatrix\.x\d/,
  );
  rejects(
    edit(HGEMM, (o) => o.op === "cvt" && o.kind === "u64.u32", (o) => ({ ...o, dst: r }) as Op),
    /^destination has type u32, expected u64: %r\d+ = cvt\.u64\.u32 /,
  );
  // A guard must be a predicate.
  rejects(
    edit(HGEMM, is("stg"), (o) => ({ ...o, guard: { pred: r, negate: false } }) as Op),
    /^guard has type u32, expected pred: @%r\d+ stg\./,
  );
  // A register used with a type other than its declaration's.
  rejects(
    edit(HGEMM, is("sreg"), (o) => {
      const s = o as Extract<Op, { op: "sreg" }>;
      return { ...s, dst: { ...s.dst, type: "s32" } };
    }),
    /^register %\d+ is not declared as s32: %s\d+ = sreg /,
  );
});

Deno.test("kernel IR verifier: cp.async.cg copies 16 bytes", () => {
  rejects(
    edit(HGEMM, is("cpasync"), (o) => ({ ...o, bytes: 8 }) as Op),
    /^cp\.async\.cg copies 16 bytes: cpasync\.cg\.8(?:\.L2::128B)? \[%r\d+\], \[%rd\d+\], %r\d+$/,
  );
  // .ca of 8 bytes is legal.
  verifyKernel(edit(HGEMM, is("cpasync"), (o) => ({ ...o, bytes: 8, cache: "ca" }) as Op));
});

Deno.test("kernel IR verifier: cp.async groups drained by a final wait 0", () => {
  const c = structuredClone(HGEMM);
  const zeros = sites(c.body, (o) => o.op === "wait" && o.n === 0);
  assert.ok(zeros.length >= 1);
  for (const s of zeros.reverse()) s.list.splice(s.index, 1);
  assert.throws(
    () => verifyKernel(c),
    new Error(
      `Kernel IR verifier: kernel "hgemm": cp.async groups are not drained by a final wait 0`,
    ),
  );
  // A copy after the final wait 0 leaves a group pending too.
  const late = structuredClone(HGEMM);
  const cp = sites(late.body, is("cpasync"))[0]!.op;
  (late.body as Op[]).push(cp, { op: "commit" });
  assert.throws(() => verifyKernel(late), /not drained by a final wait 0/);
  // A negative depth is rejected where it is.
  rejects(
    edit(HGEMM, is("wait"), () => ({ op: "wait", n: -1 })),
    /^negative wait depth: wait -1$/,
  );
});

Deno.test("kernel IR verifier: an unknown parameter", () => {
  rejects(
    edit(HGEMM, is("param"), (o) => ({ ...o, name: "Q" }) as Op),
    /^no parameter "Q": %rd0 = param Q$/,
  );
  // A parameter read into a register of another type than its PTX type.
  rejects(
    edit(HGEMM, (o) => o.op === "param" && o.name === "M", (o) => ({ ...o, name: "alpha" }) as Op),
    /^destination has type u32, expected f32: %r\d+ = param alpha$/,
  );
});

Deno.test("kernel IR verifier: a tensor map's prefetch names a tensor-map parameter on sm90", () => {
  const src = Deno.readTextFileSync(new URL("examples/bf16_gemm.gemm", ROOT));
  const r = compile(src, { target: "sm90" });
  assert.ok(r.ok);
  const k = r.kernels[0]!.kernel;
  const prefetches: string[] = [];
  walkOps(k.body, (o) => {
    if (o.op === "tmapprefetch") prefetches.push(o.map);
  });
  // The TMA pipeline asks for both operands' descriptors.
  assert.equal(prefetches.length, 2);
  verifyKernel(k);
  rejects(
    edit(k, is("tmapprefetch"), () => ({ op: "tmapprefetch", map: "X" })),
    /^"X" is not a tensor-map parameter: prefetch\.tensormap X$/,
  );
  rejects(
    edit(HGEMM, is("bar"), () => ({ op: "tmapprefetch", map: "A" })),
    /^prefetch\.tensormap needs sm90 \(target sm80\): prefetch\.tensormap A$/,
  );
});

Deno.test("kernel IR verifier: an unknown MMA shape", () => {
  rejects(
    edit(HGEMM, is("mma"), (o) => ({ ...o, shape: "m16n8k99.f16.f32" }) as Op),
    /^unknown MMA shape "m16n8k99\.f16\.f32": .* = mma m16n8k99\.f16\.f32 /,
  );
});

Deno.test("kernel IR verifier: shared-memory offsets outside the buffer", () => {
  const size = HGEMM.dynamicSmemBytes;
  rejects(
    edit(HGEMM, is("cpasync"), (o) => ({ ...o, dstOffset: size }) as Op),
    new RegExp(
      `^offset outside shared memory: cpasync\\.cg\\.16(?:\\.L2::128B)? \\[%r\\d+ \\+ ${size}\\]`,
    ),
  );
  // Straddling the end: the last 16 bytes start 8 bytes before it.
  rejects(
    edit(HGEMM, is("cpasync"), (o) => ({ ...o, dstOffset: size - 8 }) as Op),
    /^offset outside shared memory: cpasync/,
  );
  verifyKernel(edit(HGEMM, is("cpasync"), (o) => ({ ...o, dstOffset: size - 16 }) as Op));
  rejects(
    edit(HGEMM, is("ldmatrix"), (o) => ({ ...o, offset: size }) as Op),
    /^offset outside shared memory: \{.*\} = ldmatrix\.x\d/,
  );
  rejects(
    edit(HGEMM, is("ldmatrix"), (o) => ({ ...o, offset: -16 }) as Op),
    /^offset outside shared memory: /,
  );
  const dsize = DGEMM.dynamicSmemBytes;
  rejects(
    edit(DGEMM, is("lds"), (o) => ({ ...o, offset: dsize }) as Op),
    new RegExp(
      `^offset outside shared memory: \\{%fd\\d+\\} = lds\\.b64 \\[%r\\d+ \\+ ${dsize}\\]$`,
    ),
  );
  // An 8-byte load at 4 bytes before the end reads past it.
  rejects(
    edit(DGEMM, is("lds"), (o) => ({ ...o, offset: dsize - 4 }) as Op),
    /^offset outside shared memory: /,
  );
  verifyKernel(edit(DGEMM, is("lds"), (o) => ({ ...o, offset: dsize - 8 }) as Op));
});

Deno.test("kernel IR verifier: vector lengths, ldmatrix counts, division by zero, register ids", () => {
  rejects(
    edit(HGEMM, is("ldmatrix"), (o) => {
      const l = o as Extract<Op, { op: "ldmatrix" }>;
      return { ...l, dst: l.dst.slice(0, l.num - 1) };
    }),
    /^ldmatrix\.x\d writes \d registers: /,
  );
  rejects(
    edit(DGEMM, is("lds"), (o) => {
      const l = o as Extract<Op, { op: "lds" }>;
      return { ...l, dst: [l.dst[0]!, l.dst[0]!, l.dst[0]!] };
    }),
    /^vector of 1, 2 or 4: /,
  );
  rejects(
    edit(HGEMM, (o) => o.op === "bin" && o.type === "u32", (o) =>
      ({
        ...o,
        fn: "div",
        b: imm(0),
      }) as Op),
    /^division by zero: %r\d+ = div\.u32 .*, 0$/,
  );
  const dup = structuredClone(HGEMM);
  (dup.regs as Reg[]).push(dup.regs[3]!);
  assert.throws(() => verifyKernel(dup), /^Error: Kernel IR verifier: duplicate register id 3$/);
});

Deno.test("kernel IR verifier: every failure names the operation in its text form", () => {
  // The op text after the last ": " is exactly what printKernel prints for that op.
  const bad = edit(HGEMM, is("cpasync"), (o) => ({ ...o, bytes: 4 }) as Op);
  let msg = "";
  try {
    verifyKernel(bad);
  } catch (e) {
    msg = (e as Error).message;
  }
  const op = msg.slice(msg.lastIndexOf(": ") + 2);
  assert.ok(
    printKernel(bad).split("\n").some((l) => l.trim() === op),
    `"${op}" is not a line of the kernel IR text`,
  );
});

// ---- the printer --------------------------------------------------------------------------

Deno.test("kernel IR printer: a small hand-built kernel, exactly", () => {
  const b = new KernelBuilder();
  const out = b.reg("u64", "out");
  const n = b.reg("u32", "n");
  const tid = b.reg("u32");
  const p = b.reg("pred");
  const i = b.reg("u32");
  const x = b.reg("f32");
  const s = b.reg("u32");
  const a = b.reg("u64");
  b.emit({ op: "param", dst: out, name: "out" });
  b.emit({ op: "param", dst: n, name: "n" });
  b.emit({ op: "sreg", dst: tid, sreg: "tid.x" });
  b.emit({ op: "setp", cmp: "lt", type: "u32", dst: p, a: tid, b: n });
  b.emit({ op: "comment", text: "sum" });
  b.emit({ op: "mov", dst: x, src: imm(0.5) });
  b.for(i, imm(0), n, 2, () => {
    b.emit({ op: "cvt", kind: "f32.s32", dst: x, src: imm(3) });
  });
  b.if(p, false, () => {
    b.emit({ op: "mulwide", dst: a, a: tid, b: imm(4) });
    b.emit({ op: "bin", fn: "add", type: "u64", dst: a, a: out, b: a });
    b.emit({
      op: "stg",
      width: "b32",
      src: [x],
      addr: a,
      offset: 8,
      guard: { pred: p, negate: true },
    });
  }, () => {
    b.emit({ op: "smembase", dst: s });
  });
  b.if(p, true, () => b.emit({ op: "bar" }), undefined, true);
  const k: Kernel = {
    kind: "kernel",
    name: "tiny",
    target: "sm86",
    params: [
      { name: "out", kind: "tensor", ptx: "u64", dtype: "f32" },
      { name: "n", kind: "dim", ptx: "u32" },
    ],
    threads: 64,
    dynamicSmemBytes: 0,
    grid: { tileM: 16, tileN: 8, swizzle: 1, splitK: 1, m: "n", n: 8, batch: null },
    regs: b.regs,
    body: b.body,
  };
  verifyKernel(k);
  assert.equal(
    printKernel(k),
    `kernel @tiny target sm86 (out: u64 tensor f32, n: u32 dim)
  threads 64, dynamic smem 0 bytes, grid tiles 16x8 over (m n, n 8, batch none), swizzle 1, split_k 1
{
  %rd0 = param out
  %r1 = param n
  %r2 = sreg tid.x
  %p3 = setp.lt.u32 %r2, %r1
  // sum
  %f5 = mov.f32 0.5
  for %r4 = 0 to %r1 step 2 {
    %f5 = cvt.f32.s32 3
  }
  if %p3 {
    %rd7 = mulwide.u32 %r2, 4
    %rd7 = add.u64 %rd0, %rd7
    @!%p3 stg.b32 [%rd7 + 8], {%f5}
  } else {
    %r6 = smembase
  }
  if.uniform !%p3 {
    bar
  }
}
`,
  );
});

Deno.test("kernel IR printer: every op of the lowered examples prints on one line", () => {
  for (const k of [HGEMM, DGEMM]) {
    let ops = 0;
    walkOps(k.body, (o) => {
      if (o.op !== "for" && o.op !== "if") ops++;
    });
    const text = printKernel(k);
    const lines = text.split("\n").filter((l) =>
      l.trim() !== "" && !/^\s*(\}|\} else \{)$/.test(l)
    );
    // Header (2 lines) + "{" + one line per op + one per for/if opener.
    let structured = 0;
    walkOps(k.body, (o) => {
      if (o.op === "for" || o.op === "if") structured++;
    });
    assert.equal(lines.length, 3 + ops + structured, k.name);
    assert.ok(text.startsWith(`kernel @${k.name} target ${k.target} (`));
    assert.ok(text.endsWith("\n}\n"));
  }
});

Deno.test("KernelBuilder.retract takes back one emitted operation of the current body", () => {
  const b = new KernelBuilder();
  const x = b.reg("u32");
  const y = b.reg("u32");
  const keep: Op = { op: "mov", dst: x, src: imm(1) };
  const drop: Op = { op: "mov", dst: y, src: imm(2) };
  b.emit(keep);
  b.emit(drop);
  assert.equal(b.retract(drop), true);
  assert.equal(b.retract(drop), false, "already gone");
  assert.deepEqual(b.body, [keep]);
});

/** The kernel IR of an f16 GEMM with `cache_b evict_first`: sm80's cp.async copies, or sm90's
 * TMA boxes. */
function hintedHgemm(target: "sm80" | "sm90"): Kernel {
  const text = `kernel h {
  A: f16[M, K] row
  B: f16[K, N] col
  D: f32[M, N] row
  D[m, n] = A[m, k] * B[k, n]
  schedule {
    cache_b evict_first
  }
}`;
  const r = compile(text, { target });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, text));
  return r.kernels[0]!.kernel;
}

Deno.test("kernel IR verifier: a cache policy is a u64 an earlier createpolicy wrote", () => {
  for (const target of ["sm80", "sm90"] as const) {
    const k = hintedHgemm(target);
    verifyKernel(k);
    const copy = target === "sm80" ? is("cpasync") : is("tma");
    const hinted = (o: Op) => copy(o) && o.policy !== undefined;
    const u32 = regOf(k, "u32");
    const u64 = regOf(k, "u64"); // a parameter's address, no policy
    const text = target === "sm80"
      ? /cpasync\.cg\.16\.L2::cache_hint\.L2::128B /
      : /tma\.L2::cache_hint /;
    rejects(
      edit(k, hinted, (o) => ({ ...o, policy: u32 }) as Op),
      new RegExp(`^cache policy has type u32, expected u64: ${text.source}`),
    );
    rejects(
      edit(k, hinted, (o) => ({ ...o, policy: u64 }) as Op),
      new RegExp(
        `^cache policy %${u64.id} is not written by an earlier createpolicy: ${text.source}`,
      ),
    );
    // The createpolicy removed: its register is declared, but nothing wrote it.
    rejects(edit(k, is("createpolicy"), () => null), /is not written by an earlier createpolicy/);
    rejects(
      edit(k, is("createpolicy"), (o) => ({ ...o, dst: u32 }) as Op),
      /^destination has type u32, expected u64: %r\d+ = createpolicy\.L2::evict_first$/,
    );
    rejects(
      edit(k, is("createpolicy"), (o) => ({ ...o, priority: "evict_soon" }) as unknown as Op),
      /^unknown eviction priority "evict_soon": %rd\d+ = createpolicy\.L2::evict_soon$/,
    );
  }
  // An ld.global's policy is checked alike: SIMT f32 copies a row-major A through registers.
  const simt = compile(
    `kernel s {
  A: f32[M, K] row
  B: f32[K, N] col
  D: f32[M, N]
  D[m, n] = A[m, k] * B[k, n]
  schedule {
    math f32
    cache_a evict_first
  }
}`,
  );
  assert.ok(simt.ok, formatDiagnostics(simt.diagnostics, ""));
  const k = simt.kernels[0]!.kernel;
  verifyKernel(k);
  rejects(
    edit(k, is("ldg"), (o) => ({ ...o, policy: regOf(k, "u64") }) as Op),
    /is not written by an earlier createpolicy: (@%p\d+ )?\{.*\} = ldg\.L2::cache_hint\.\w+ \[.*\], %rd\d+$/,
  );
});

Deno.test("kernel IR printer: createpolicy, and a copy's hint and policy operand", () => {
  const b = new KernelBuilder();
  const p = b.reg("u64");
  const s = b.reg("u32");
  const g = b.reg("u64");
  b.emit(ir.createPolicy(p, "evict_last"));
  b.emit(ir.cpAsync({
    cache: "cg",
    prefetch: 128,
    bytes: 16,
    dst: s,
    dstOffset: 32,
    src: g,
    srcBytes: imm(16),
    policy: p,
  }));
  b.emit(ir.ldg("b32", [b.reg("b32")], g, 4, undefined, "cg", p));
  const out: string[] = [];
  printBody(b.body, "", out);
  assert.deepEqual(out, [
    "%rd0 = createpolicy.L2::evict_last",
    "cpasync.cg.16.L2::cache_hint.L2::128B [%r1 + 32], [%rd2], 16, %rd0",
    "{%b3} = ldg.cg.L2::cache_hint.b32 [%rd2 + 4], %rd0",
  ]);
});
