/**
 * The PTX printer (backends/ptx/print.ts) on hand-built kernels
 * (backends/ptx/testdata/kernels.ts): module structure, register
 * declarations, the rendering of each operation, the errors for IR that has
 * no PTX form, and a golden snapshot (`tests/golden/ptx/`; regenerate with
 * `UPDATE_GOLDEN=1 deno task test tests/ptx_print_test.ts` and read the diff).
 *
 * That ptxas accepts all of it is tests/ptx_ptxas_test.ts.
 */

import assert from "node:assert/strict";
import * as ir from "../ir/builder.ts";
import { imm, KernelBuilder } from "../ir/builder.ts";
import {
  type CvtKind,
  type Kernel,
  type MemWidth,
  type Op,
  opRegs,
  type Reg,
  walkOps,
} from "../ir/kernel.ts";
import { MMA_SHAPES } from "../ir/mma_table.ts";
import { printKernel, regName } from "../ir/print_kernel.ts";
import {
  BIN_PTX,
  CVT_PTX,
  immText,
  MEM_PTX,
  printPtx,
  PtxError,
  ptxTarget,
  UN_PTX,
} from "../backends/ptx/print.ts";
import { allTestKernels, mmaKernelName, saxpyKernel } from "../backends/ptx/testdata/kernels.ts";
import { TARGET_NAMES, targetHas, targetInfo } from "../ir/target.ts";

const ROOT = new URL("../", import.meta.url);
const UPDATE = Deno.env.get("UPDATE_GOLDEN") === "1";

/** A kernel around a body built by `f`. */
function tiny(f: (b: KernelBuilder) => void, threads = 32): Kernel {
  const b = new KernelBuilder();
  f(b);
  return {
    kind: "kernel",
    name: "tiny",
    target: "sm80",
    params: [
      { name: "out", kind: "tensor", ptx: "u64", dtype: "f32" },
      { name: "M", kind: "dim", ptx: "u32" },
    ],
    threads,
    dynamicSmemBytes: 0,
    grid: { tileM: 1, tileN: 1, swizzle: 1, splitK: 1, m: 1, n: 1, batch: null },
    regs: b.regs,
    body: b.body,
  };
}

/** The body lines of the entry `name` (between `{` and `}`), trimmed. */
function entryLines(ptx: string, name: string): string[] {
  const start = ptx.indexOf(`.entry ${name}(`);
  assert.ok(start >= 0, `no entry ${name}`);
  const open = ptx.indexOf("\n{\n", start);
  const close = ptx.indexOf("\n}\n", open);
  return ptx.slice(open + 3, close).split("\n").map((l) => l.trim()).filter((l) => l !== "");
}

// ---------------------------------------------------------------------------------------------
// Coverage of the test kernels: they must use everything
// ---------------------------------------------------------------------------------------------

const ALL_OPS = {
  param: true,
  sreg: true,
  mov: true,
  smembase: true,
  bin: true,
  mad: true,
  mulwide: true,
  un: true,
  setp: true,
  selp: true,
  cvt: true,
  pack: true,
  unpack: true,
  cpasync: true,
  createpolicy: true,
  prefetch: true,
  commit: true,
  wait: true,
  bar: true,
  ldmatrix: true,
  lds: true,
  sts: true,
  ldg: true,
  stg: true,
  atom: true,
  fence: true,
  mma: true,
  wgmma: true,
  wgfence: true,
  wgcommit: true,
  wgwait: true,
  proxyfence: true,
  mbarinit: true,
  mbararrive: true,
  mbarwait: true,
  mbarfence: true,
  tma: true,
  tmapprefetch: true,
  setmaxnreg: true,
  griddep: true,
  for: true,
  if: true,
  comment: true,
} as const satisfies Record<Op["op"], true>;

const ALL_CVT = {
  "f32.f16": true,
  "f32.bf16": true,
  "f16.f32": true,
  "bf16.f32": true,
  "tf32.f32": true,
  "f64.f32": true,
  "f32.f64": true,
  "f32.s32": true,
  "f64.s32": true,
  "s32.f32": true,
  "s32.f64": true,
  "s8.s32": true,
  "u8.s32": true,
  "u64.u32": true,
  "b32.f32": true,
  "f32.b32": true,
  "b32.u32": true,
  "u32.b32": true,
  "s32.b32": true,
  "b32.s32": true,
} as const satisfies Record<CvtKind, true>;

Deno.test("ptx test kernels use every op, conversion, width, vector and mma row", () => {
  const seen = new Set<string>();
  // sm80's kernels, and sm90's warpgroup MMA kernels (the only ones sm80 lacks).
  const wg = allTestKernels("sm90").filter((k) =>
    k.name.startsWith("wgmma_") || k.name.startsWith("tma_")
  );
  for (const k of [...allTestKernels("sm80"), ...wg]) {
    walkOps(k.body, (o, path) => {
      seen.add(`op ${o.op}`);
      if ("guard" in o && o.guard !== undefined) seen.add(`guard ${o.guard.negate}`);
      switch (o.op) {
        case "cvt":
          seen.add(`cvt ${o.kind} ${o.src.kind}`);
          break;
        case "bin":
          seen.add(`bin ${o.fn}.${o.type}`);
          break;
        case "un":
          seen.add(`un ${o.fn}.${o.type}`);
          break;
        case "lds":
        case "ldg":
          seen.add(`${o.op} ${o.width}x${o.dst.length}`);
          break;
        case "sts":
        case "stg":
          seen.add(`${o.op} ${o.width}x${o.src.length}`);
          break;
        case "ldmatrix":
          seen.add(`ldmatrix x${o.num} ${o.trans}`);
          break;
        case "cpasync":
          seen.add(`cpasync ${o.cache} ${o.bytes} ${o.srcBytes.kind}`);
          break;
        case "mma":
          seen.add(`mma ${o.shape}`);
          break;
        case "for":
          seen.add(`for ${o.from.kind} ${o.to.kind} in ${path.at(-1)?.op ?? "top"}`);
          break;
        case "if":
          seen.add(
            `if ${o.uniform} ${o.negate} ${o.otherwise.length > 0} in ${path.at(-1)?.op ?? "top"}`,
          );
          break;
      }
    });
  }
  const want = [
    ...Object.keys(ALL_OPS).map((o) => `op ${o}`),
    ...Object.keys(ALL_CVT).flatMap((c) => [`cvt ${c} reg`, `cvt ${c} imm`]),
    ...Object.entries(BIN_PTX).flatMap(([fn, row]) =>
      Object.keys(row).map((t) => `bin ${fn}.${t}`)
    ),
    ...Object.entries(UN_PTX).flatMap(([fn, row]) => Object.keys(row).map((t) => `un ${fn}.${t}`)),
    ...(Object.keys(MEM_PTX) as MemWidth[]).flatMap((w) =>
      MEM_PTX[w].vec.flatMap((n) => ["lds", "sts", "ldg", "stg"].map((o) => `${o} ${w}x${n}`))
    ),
    ...[1, 2, 4].flatMap((n) => [`ldmatrix x${n} false`, `ldmatrix x${n} true`]),
    "cpasync cg 16 reg",
    "cpasync ca 4 imm",
    "cpasync ca 8 imm",
    "cpasync ca 16 reg",
    ...MMA_SHAPES.map((r) => `mma ${r.name}`),
    "guard true",
    "guard false",
    "for imm reg in top",
    "for imm imm in top",
    "for imm imm in for",
    "for reg reg in if",
    "if true false true in for",
    "if false false false in for",
    "if true true false in top",
  ];
  const missing = want.filter((w) => !seen.has(w));
  assert.deepEqual(missing, []);
});

// ---------------------------------------------------------------------------------------------
// Module and entry structure
// ---------------------------------------------------------------------------------------------

for (const target of TARGET_NAMES) {
  Deno.test(`ptx module structure (${target})`, () => {
    const kernels = allTestKernels(target);
    const ptx = printPtx(kernels);
    const lines = ptx.split("\n");
    const head = lines.filter((l) => l.startsWith("."));
    assert.deepEqual(head.slice(0, 4), [
      `.version ${targetInfo(target).ptxVersion}`,
      `.target ${ptxTarget(target)}`,
      ".address_size 64",
      // wgmma's 128-byte swizzle needs 1024-byte aligned stages (ir/wgmma_table.ts).
      `.extern .shared .align ${targetHas(target, "wgmma") ? 1024 : 128} .b8 gemmc_smem[];`,
    ]);
    assert.equal(ptx.match(/\.extern \.shared/g)?.length, 1);
    assert.ok(ptx.indexOf(".extern .shared") < ptx.indexOf(".entry"));
    assert.ok(ptx.endsWith("}\n"));
    // One entry per kernel, in order.
    const entries = [...ptx.matchAll(/^\.visible \.entry (\w+)\($/gm)].map((m) => m[1]);
    assert.deepEqual(entries, kernels.map((k) => k.name));
    assert.ok(entries.includes(mmaKernelName(MMA_SHAPES[0]!)));
    assert.equal(ptx.includes(".minnctapersm"), targetHas(target, "tma"));
    for (const k of kernels) {
      const at = ptx.indexOf(`.visible .entry ${k.name}(\n`);
      const sig = ptx.slice(at, ptx.indexOf("\n{\n", at)).split("\n");
      assert.deepEqual(
        sig.slice(1, 1 + k.params.length),
        k.params.map((p, i) =>
          `  .param ${
            p.kind === "tensormap"
              ? `.align 64 .b8 param_${p.name}[128]`
              : `.${p.kind === "tensor" ? "u64" : p.kind === "dim" ? "u32" : p.ptx} param_${p.name}`
          }${i + 1 < k.params.length ? "," : ""}`
        ),
      );
      // setmaxnreg needs the register count at entry: `.minnctapersm 1` gives it to ptxas.
      const sets = k.body.some(function sets(o): boolean {
        return o.op === "setmaxnreg" ||
          (o.op === "if" && [...o.then, ...o.otherwise].some(sets)) ||
          (o.op === "for" && o.body.some(sets));
      });
      assert.deepEqual(sig.slice(1 + k.params.length), [
        ")",
        `.maxntid ${k.threads}, 1, 1`,
        ...(sets ? [".minnctapersm 1"] : []),
      ]);
      assert.ok(!ptx.includes(".reqntid"));
      const body = entryLines(ptx, k.name);
      assert.equal(body.at(-1), "ret;");
    }
  });
}

Deno.test("ptx register declarations: one per used type, N = 1 + the largest id", () => {
  for (const k of allTestKernels("sm80")) {
    const max = new Map<string, number>();
    const note = (r: Reg) => {
      const prefix = regName(r).replace(/\d+$/, "");
      max.set(`${r.type} ${prefix}`, Math.max(max.get(`${r.type} ${prefix}`) ?? -1, r.id));
    };
    k.regs.forEach(note);
    walkOps(k.body, (o) => {
      const { reads, writes } = opRegs(o);
      [...reads, ...writes].forEach(note);
    });
    const want = [...max].map(([tp, m]) => {
      const [t, p] = tp.split(" ");
      return `.reg .${t} ${p}<${m + 1}>;`;
    }).sort();
    const got = entryLines(printPtx([k]), k.name).filter((l) => l.startsWith(".reg"))
      .filter((l) => !l.includes("scratch")).sort();
    assert.deepEqual(got, want, k.name);
  }
});

Deno.test("ptx names registers as the kernel-IR text does", () => {
  const k = saxpyKernel("sm80");
  const names = (s: string) => new Set(s.match(/%[a-z]+\d+/g) ?? []);
  const ir = names(printKernel(k));
  const ptx = names(entryLines(printPtx([k]), "saxpy").filter((l) => !l.startsWith(".reg")).join());
  ptx.delete("%tp0");
  assert.deepEqual([...ptx].sort(), [...ir].sort());
});

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

Deno.test("ptx immediates: decimal integers, exact hex floats", () => {
  assert.equal(immText(0, "u32"), "0");
  assert.equal(immText(-1, "u32"), "4294967295");
  assert.equal(immText(-1, "s32"), "-1");
  assert.equal(immText(4294967295, "s32"), "-1");
  assert.equal(immText(-2, "u64"), "18446744073709551614");
  assert.equal(immText(0xffff, "b16"), "65535");
  assert.equal(immText(1, "pred"), "1");
  assert.equal(immText(1, "f32"), "0f3F800000");
  assert.equal(immText(-0, "f32"), "0f80000000");
  assert.equal(immText(0.1, "f32"), "0f3DCCCCCD"); // nearest f32
  assert.equal(immText(Infinity, "f32"), "0f7F800000");
  assert.equal(immText(0.1, "f64"), "0d3FB999999999999A");
  assert.equal(immText(-2.5, "f64"), "0dC004000000000000");
  assert.throws(() => immText(1.5, "u32"), PtxError);
  assert.throws(() => immText(2 ** 32, "u32"), PtxError);
  assert.throws(() => immText(70000, "b16"), PtxError);
  assert.throws(() => immText(2, "pred"), PtxError);
});

Deno.test("ptx rendering of single operations", () => {
  const cases: [string, (b: KernelBuilder) => void, string[]][] = [
    ["tensor param", (b) => b.emit({ op: "param", dst: b.reg("u64"), name: "out" }), [
      "ld.param.u64 %rd0, [param_out];",
      "cvta.to.global.u64 %rd0, %rd0;",
    ]],
    ["dim param, guarded", (b) => {
      const p = b.reg("pred");
      b.emit({ op: "param", dst: b.reg("u32"), name: "M", guard: { pred: p, negate: true } });
    }, ["@!%p0 ld.param.u32 %r1, [param_M];"]],
    ["cp.async zero fill", (b) => {
      const s = b.reg("u32");
      const g = b.reg("u64");
      b.emit({
        op: "cpasync",
        cache: "cg",
        bytes: 16,
        dst: s,
        dstOffset: -32,
        src: g,
        srcBytes: imm(0),
      });
    }, ["cp.async.cg.shared.global [%r0+-32], [%rd1], 16, 0;"]],
    ["createpolicy of each priority", (b) => {
      for (const priority of ["evict_first", "evict_last", "evict_normal"] as const) {
        b.emit(ir.createPolicy(b.reg("u64"), priority));
      }
    }, [
      "createpolicy.fractional.L2::evict_first.b64 %rd0, 1.0;",
      "createpolicy.fractional.L2::evict_last.b64 %rd1, 1.0;",
      "createpolicy.fractional.L2::evict_normal.b64 %rd2, 1.0;",
    ]],
    ["cp.async and ld.global under a cache policy: .L2::cache_hint first, the policy last", (b) => {
      const p = b.reg("u64");
      const s = b.reg("u32");
      const g = b.reg("u64");
      const n = b.reg("u32");
      b.emit(ir.createPolicy(p, "evict_first"));
      const c = { dst: s, dstOffset: 16, src: g, srcBytes: n, policy: p } as const;
      b.emit(ir.cpAsync({ ...c, cache: "cg", prefetch: 128, bytes: 16 }));
      b.emit(ir.cpAsync({ ...c, cache: "ca", bytes: 4 }, ir.when(b.reg("pred"))));
      const v = [b.reg("b32"), b.reg("b32"), b.reg("b32"), b.reg("b32")];
      b.emit(ir.ldg("b32", v, g, 8, undefined, undefined, p));
    }, [
      "createpolicy.fractional.L2::evict_first.b64 %rd0, 1.0;",
      "cp.async.cg.shared.global.L2::cache_hint.L2::128B [%r1+16], [%rd2], 16, %r3, %rd0;",
      "@%p4 cp.async.ca.shared.global.L2::cache_hint [%r1+16], [%rd2], 4, %r3, %rd0;",
      "ld.global.L2::cache_hint.v4.b32 {%b5, %b6, %b7, %b8}, [%rd2+8], %rd0;",
    ]],
    ["shift of a u64 by an immediate", (b) => {
      const x = b.reg("u64");
      b.emit({ op: "bin", fn: "shr", type: "u64", dst: x, a: x, b: imm(4) });
    }, ["shr.u64 %rd0, %rd0, 4;"]],
    ["float ops carry .rn", (b) => {
      const x = b.reg("f32");
      b.emit({ op: "bin", fn: "mul", type: "f32", dst: x, a: x, b: imm(0.5) });
      b.emit({ op: "mad", type: "f32", dst: x, a: x, b: x, c: imm(2) });
    }, ["mul.rn.f32 %f0, %f0, 0f3F000000;", "fma.rn.f32 %f0, %f0, %f0, 0f40000000;"]],
    ["approximate math", (b) => {
      const x = b.reg("f32");
      for (const fn of ["ex2", "rcp", "tanh"] as const) {
        b.emit({ op: "un", fn, type: "f32", dst: x, src: x });
      }
    }, ["ex2.approx.f32 %f0, %f0;", "rcp.approx.f32 %f0, %f0;", "tanh.approx.f32 %f0, %f0;"]],
    ["f16 immediate through the scratch register", (b) => {
      b.emit({ op: "cvt", kind: "f32.f16", dst: b.reg("f32"), src: imm(0x3c00) });
    }, ["mov.b16 %th0, 15360;", "cvt.f32.f16 %f0, %th0;"]],
    ["pack and unpack", (b) => {
      const w = b.reg("b32");
      const lo = b.reg("b16");
      const hi = b.reg("b16");
      b.emit({ op: "pack", dst: w, lo, hi });
      b.emit({ op: "unpack", lo, hi, src: w });
    }, ["mov.b32 %b0, {%h1, %h2};", "mov.b32 {%h1, %h2}, %b0;"]],
    ["immediates beside float registers keep their bits", (b) => {
      const f = b.reg("f32");
      const a = b.reg("u32");
      b.emit({ op: "sts", width: "b32", src: [f, imm(-1)], addr: a, offset: 8 });
      b.emit({ op: "sts", width: "b32", src: [b.reg("u32"), imm(-1)], addr: a, offset: 8 });
    }, [
      "st.shared.v2.b32 [%r1+8], {%f0, 0fFFFFFFFF};",
      "st.shared.v2.b32 [%r1+8], {%r2, 4294967295};",
    ]],
    ["bit move across register types", (b) => {
      b.emit({ op: "mov", dst: b.reg("f32"), src: b.reg("u32") });
    }, ["mov.b32 %f0, %r1;"]],
    ["mma", (b) => {
      const a = [b.reg("b32"), b.reg("b32")];
      const bb = [b.reg("b32")];
      const c = [b.reg("f32"), b.reg("f32"), b.reg("f32"), b.reg("f32")];
      b.emit({ op: "mma", shape: "m16n8k8.f16.f32", d: c, a, b: bb, c });
    }, [
      "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f3, %f4, %f5, %f6}, {%b0, %b1}, {%b2}, {%f3, %f4, %f5, %f6};",
    ]],
  ];
  for (const [what, f, want] of cases) {
    const got = entryLines(printPtx([tiny(f)]), "tiny").filter((l) => !l.startsWith(".reg"));
    assert.deepEqual(got, [...want, "ret;"], what);
  }
});

Deno.test("ptx loops skip a zero trip count; ifs branch around, uniform ones with bra.uni", () => {
  const k = tiny((b) => {
    const n = b.reg("u32");
    b.emit({ op: "param", dst: n, name: "M" });
    const i = b.reg("u32");
    const p = b.reg("pred");
    b.for(i, imm(0), n, 2, () => {
      b.emit({ op: "setp", cmp: "lt", type: "u32", dst: p, a: i, b: imm(3) });
      b.if(p, false, () => b.emit({ op: "comment", text: "yes" }), () => {
        b.emit({ op: "comment", text: "no" });
      });
      b.if(p, true, () => b.emit({ op: "bar" }), undefined, true);
    });
  });
  assert.deepEqual(entryLines(printPtx([k]), "tiny").filter((l) => !l.startsWith(".reg")), [
    "ld.param.u32 %r0, [param_M];",
    "// for %r1 = 0 to %r0 step 2",
    "mov.u32 %r1, 0;",
    "setp.ge.u32 %tp0, %r1, %r0;",
    "@%tp0 bra.uni $L_1;",
    "$L_0:",
    "setp.lt.u32 %p2, %r1, 3;",
    "// if %p2",
    "@!%p2 bra $L_2;",
    "// yes",
    "bra $L_3;",
    "$L_2:",
    "// else",
    "// no",
    "$L_3:",
    "// if.uniform !%p2",
    "@%p2 bra.uni $L_4;",
    "bar.sync 0;",
    "$L_4:",
    "add.u32 %r1, %r1, 2;",
    "setp.lt.u32 %tp0, %r1, %r0;",
    "@%tp0 bra.uni $L_0;",
    "$L_1:",
    "ret;",
  ]);
});

Deno.test("ptx printer rejects IR with no PTX form", () => {
  const bad: [string, (b: KernelBuilder) => void, RegExp][] = [
    ["rem.f32", (b) => {
      const x = b.reg("f32");
      b.emit({ op: "bin", fn: "rem", type: "f32", dst: x, a: x, b: x });
    }, /No PTX instruction for bin rem\.f32/],
    ["add.pred", (b) => {
      const x = b.reg("pred");
      b.emit({ op: "bin", fn: "add", type: "pred", dst: x, a: x, b: x });
    }, /bin add\.pred/],
    ["rcp.f64", (b) => {
      const x = b.reg("f64");
      b.emit({ op: "un", fn: "rcp", type: "f64", dst: x, src: x });
    }, /un rcp\.f64/],
    ["v4.b64", (b) => {
      const a = b.reg("u64");
      const rs = [b.reg("f64"), b.reg("f64"), b.reg("f64"), b.reg("f64")];
      b.emit({ op: "ldg", width: "b64", dst: rs, addr: a, offset: 0 });
    }, /ld\.global\.b64: 4 registers/],
    ["a cache policy in a 32-bit register", (b) => {
      const r = b.reg("u32");
      b.emit(ir.cpAsync({
        cache: "cg",
        bytes: 16,
        dst: r,
        dstOffset: 0,
        src: b.reg("u64"),
        srcBytes: imm(16),
        policy: r,
      }));
    }, /cp\.async cache policy: register %r0 is u32, PTX takes u64 here/],
    ["b16 from a 32-bit register", (b) => {
      b.emit({ op: "sts", width: "b16", src: [b.reg("u32")], addr: b.reg("u32"), offset: 0 });
    }, /st\.shared\.b16: register %r0 is u32, PTX takes b16 here/],
    ["tf32 into an f32 register", (b) => {
      b.emit({ op: "cvt", kind: "tf32.f32", dst: b.reg("f32"), src: b.reg("f32") });
    }, /cvt\.tf32\.f32 destination: register %f0 is f32, PTX takes b32 here/],
    ["f32 operand of an integer add", (b) => {
      const x = b.reg("u32");
      b.emit({ op: "bin", fn: "add", type: "u32", dst: x, a: x, b: b.reg("f32") });
    }, /add\.u32 operand b: register %f1 is f32/],
    ["u64 shift amount", (b) => {
      const x = b.reg("u64");
      b.emit({ op: "bin", fn: "shl", type: "u64", dst: x, a: x, b: x });
    }, /shl\.b64 shift amount: register %rd0 is u64/],
    ["predicate from an integer", (b) => {
      b.emit({ op: "mov", dst: b.reg("pred"), src: b.reg("u32") });
    }, /mov: u32 register %r1 into pred/],
    ["a vector of f32 and u32 registers", (b) => {
      const rs = [b.reg("f32"), b.reg("u32")];
      b.emit({ op: "lds", width: "b32", dst: rs, addr: b.reg("u32"), offset: 0 });
    }, /ld\.shared\.b32: a vector mixes f32 register %f0 and u32 register %r1/],
    ["mma fragment in u32 registers", (b) => {
      const r = () => b.reg("u32");
      const f = () => b.reg("f32");
      b.emit({
        op: "mma",
        shape: "m16n8k8.f16.f32",
        d: [f(), f(), f(), f()],
        a: [r(), r()],
        b: [r()],
        c: [f(), f(), f(), f()],
      });
    }, /mma m16n8k8\.f16\.f32 a: register %r4 is u32, PTX takes b32 here/],
    ["shared address in a u64", (b) => {
      b.emit({ op: "lds", width: "b32", dst: [b.reg("u32")], addr: b.reg("u64"), offset: 0 });
    }, /ld\.shared address/],
    ["cp.async.cg of 8 bytes", (b) => {
      b.emit({
        op: "cpasync",
        cache: "cg",
        bytes: 8,
        dst: b.reg("u32"),
        dstOffset: 0,
        src: b.reg("u64"),
        srcBytes: imm(8),
      });
    }, /cp\.async\.cg copies 16 bytes/],
    ["mma with a short fragment", (b) => {
      const r = () => b.reg("b32");
      const f = () => b.reg("f32");
      b.emit({
        op: "mma",
        shape: "m16n8k16.f16.f32",
        d: [f(), f(), f(), f()],
        a: [r(), r()],
        b: [r(), r()],
        c: [f(), f(), f(), f()],
      });
    }, /a has 2 registers, not 4/],
    ["unknown mma", (b) => {
      b.emit({ op: "mma", shape: "m16n8k16.f8.f32", d: [], a: [], b: [], c: [] });
    }, /Unknown mma shape/],
    ["unknown parameter", (b) => {
      b.emit({ op: "param", dst: b.reg("u32"), name: "Q" });
    }, /Unknown parameter "Q"/],
    ["barrier in divergent code", (b) => {
      const p = b.reg("pred");
      b.if(p, false, () => b.emit({ op: "bar" }));
    }, /bar\.sync inside a non-uniform if/],
    ["a register with two types", (b) => {
      const x = b.reg("u32");
      b.emit({ op: "mov", dst: { ...x, type: "s32" }, src: x });
    }, /Register id 0 is both u32 and s32/],
    ["loop step 0", (b) => {
      b.for(b.reg("u32"), imm(0), imm(4), 0, () => {});
    }, /step 0 is not a positive integer/],
  ];
  for (const [what, f, re] of bad) {
    assert.throws(() => printPtx([tiny(f)]), (e: unknown) => {
      assert.ok(e instanceof PtxError, `${what}: ${e}`);
      assert.match(e.message, re, what);
      return true;
    });
  }
});

Deno.test("ptx modules: one target, distinct names, at least one kernel", () => {
  const a = saxpyKernel("sm80");
  const b = { ...saxpyKernel("sm86"), name: "other" };
  assert.throws(() => printPtx([a, b]), /must share a target: "saxpy" is sm80, "other" is sm86/);
  assert.throws(() => printPtx([a, a]), /Duplicate kernel name "saxpy"/);
  assert.throws(() => printPtx([]), PtxError);
  assert.throws(() => printPtx([{ ...a, name: "2bad" }]), /not a PTX identifier/);
  assert.match(printPtx([{ ...b, target: "sm80" }, a]), /entry other\([^]*entry saxpy\(/);
});

Deno.test("ptx .minnctapersm only on request", () => {
  const k = saxpyKernel("sm80");
  assert.ok(!printPtx([k]).includes(".minnctapersm"));
  assert.match(printPtx([k], { minBlocksPerSm: 1 }), /\.maxntid 128, 1, 1\n\.minnctapersm 1\n\{/);
  assert.throws(() => printPtx([k], { minBlocksPerSm: 0 }), PtxError);
});

Deno.test("ptx conversion table: every kind is one instruction", () => {
  for (const [kind, rule] of Object.entries(CVT_PTX)) {
    assert.match(rule.tpl, /^(cvt|mov)\.[a-z0-9.]+ \$d, \$a$/, kind);
  }
  assert.equal(CVT_PTX["tf32.f32"].tpl, "cvt.rna.tf32.f32 $d, $a");
  assert.equal(CVT_PTX["s32.f32"].tpl, "cvt.rni.sat.s32.f32 $d, $a");
  assert.equal(CVT_PTX["f16.f32"].tpl, "cvt.rn.f16.f32 $d, $a");
});

// ---------------------------------------------------------------------------------------------
// Golden snapshot
// ---------------------------------------------------------------------------------------------

for (const target of TARGET_NAMES) {
  Deno.test(`ptx golden: saxpy (${target})`, () => {
    const out = printPtx([saxpyKernel(target)]);
    const url = new URL(`tests/golden/ptx/saxpy_${target}.ptx`, ROOT);
    if (UPDATE) {
      Deno.mkdirSync(new URL("tests/golden/ptx/", ROOT), { recursive: true });
      Deno.writeTextFileSync(url, out);
    }
    let golden: string;
    try {
      golden = Deno.readTextFileSync(url);
    } catch {
      assert.fail(`No golden tests/golden/ptx/saxpy_${target}.ptx: run with UPDATE_GOLDEN=1`);
    }
    assert.equal(out, golden);
  });
}
