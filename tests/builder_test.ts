/**
 * The kernel-IR factories of ir/builder.ts: each builds its operation with
 * the fields in declaration order, and an absent guard or cache is no field.
 */

import assert from "node:assert/strict";
import * as ir from "../ir/builder.ts";
import { imm, KernelBuilder } from "../ir/builder.ts";

Deno.test("factories build the operation literal", () => {
  const b = new KernelBuilder();
  const x = b.reg("u32");
  const y = b.reg("u32");
  const p = b.reg("pred");
  const a = b.reg("u64");
  assert.deepEqual(ir.bin("add", "u32", x, y, imm(1)), {
    op: "bin",
    fn: "add",
    type: "u32",
    dst: x,
    a: y,
    b: imm(1),
  });
  assert.deepEqual(ir.selp("u32", x, imm(1), imm(0), p), {
    op: "selp",
    type: "u32",
    dst: x,
    a: imm(1),
    b: imm(0),
    p,
  });
  assert.deepEqual(Object.keys(ir.mad("u32", x, y, imm(2), y)), [
    "op",
    "type",
    "dst",
    "a",
    "b",
    "c",
  ]);
  assert.deepEqual(ir.wait(2), { op: "wait", n: 2 });
  assert.deepEqual(ir.stg("b32", [x], a, 4, ir.when(p, true)), {
    op: "stg",
    width: "b32",
    src: [x],
    addr: a,
    offset: 4,
    guard: { pred: p, negate: true },
  });
});

Deno.test("an absent guard or cache is no field", () => {
  const b = new KernelBuilder();
  const x = b.reg("u32");
  const a = b.reg("u64");
  assert.deepEqual(ir.when(null), undefined);
  const plain = ir.ldg("b32", [x], a, 0, ir.when(null));
  assert.ok(!("guard" in plain) && !("cache" in plain) && !("policy" in plain));
  const cg = ir.ldg("b32", [x], a, 0, undefined, "cg");
  assert.deepEqual(Object.keys(cg), ["op", "width", "dst", "addr", "offset", "cache"]);
  const guarded = ir.cpAsync(
    { cache: "cg", bytes: 16, dst: x, dstOffset: 0, src: a, srcBytes: imm(16) },
    ir.when(b.reg("pred")),
  );
  assert.deepEqual(Object.keys(guarded).at(-1), "guard");
});

Deno.test("prefetch carries evict_last only when asked, before its guard", () => {
  const b = new KernelBuilder();
  const a = b.reg("u64");
  const p = b.reg("pred");
  assert.deepEqual(ir.prefetch(a), { op: "prefetch", addr: a });
  assert.deepEqual(ir.prefetch(a, ir.when(p), true), {
    op: "prefetch",
    addr: a,
    evictLast: true,
    guard: { pred: p, negate: false },
  });
});

Deno.test("a cache policy is a createpolicy's register, a field of a copy only when given", () => {
  const b = new KernelBuilder();
  const x = b.reg("u32");
  const a = b.reg("u64");
  const pol = b.reg("u64", "policy");
  assert.deepEqual(ir.createPolicy(pol, "evict_last"), {
    op: "createpolicy",
    dst: pol,
    priority: "evict_last",
  });
  const hinted = ir.ldg("b32", [x], a, 0, ir.when(b.reg("pred")), undefined, pol);
  assert.deepEqual(Object.keys(hinted), [
    "op",
    "width",
    "dst",
    "addr",
    "offset",
    "policy",
    "guard",
  ]);
  assert.equal(hinted.policy, pol);
  assert.ok(!("policy" in ir.tmaLoad(x, "A_map", [imm(0)], x)));
  assert.deepEqual(ir.tmaLoad(x, "A_map", [imm(0), x], x, 3, pol), {
    op: "tma",
    dst: x,
    map: "A_map",
    coords: [imm(0), x],
    bar: x,
    multicast: 3,
    policy: pol,
  });
  assert.ok(!("multicast" in ir.tmaLoad(x, "A_map", [imm(0)], x, undefined, pol)));
});

Deno.test("loadParam and readSreg allocate a register and emit its read", () => {
  const b = new KernelBuilder();
  const k = b.loadParam("u32", "K");
  const out = b.loadParam("u64", "out", "dst");
  const tid = b.readSreg("tid.x", "tid");
  const lane = b.readSreg("laneid");
  assert.deepEqual(b.regs, [k, out, tid, lane]);
  assert.deepEqual([k.id, k.type, k.name], [0, "u32", "K"]);
  assert.deepEqual([out.id, out.type, out.name], [1, "u64", "dst"]);
  assert.deepEqual([tid.type, tid.name, lane.type, lane.name], ["u32", "tid", "u32", undefined]);
  assert.deepEqual(b.body, [
    ir.param(k, "K"),
    ir.param(out, "out"),
    ir.sreg(tid, "tid.x"),
    ir.sreg(lane, "laneid"),
  ]);
});
