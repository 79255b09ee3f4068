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
  assert.ok(!("guard" in plain) && !("cache" in plain));
  const cg = ir.ldg("b32", [x], a, 0, undefined, "cg");
  assert.deepEqual(Object.keys(cg), ["op", "width", "dst", "addr", "offset", "cache"]);
  const guarded = ir.cpAsync(
    { cache: "cg", bytes: 16, dst: x, dstOffset: 0, src: a, srcBytes: imm(16) },
    ir.when(b.reg("pred")),
  );
  assert.deepEqual(Object.keys(guarded).at(-1), "guard");
});
