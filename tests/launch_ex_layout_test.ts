/**
 * The layouts of a programmatic dependent launch (backends/cuda/symbols.ts `CU_LAUNCH_CONFIG`,
 * `CU_LAUNCH_ATTRIBUTE_LAYOUT`, `CU_LAUNCH_ATTRIBUTE`; backends/cuda/launch.ts
 * `writePdlConfig`) against the toolkit's cuda.h: a C program built with the header prints
 * every offset, size and the attribute's enum value, and the bytes of a `CUlaunchConfig` and
 * its `CUlaunchAttribute` filled field by field, which must equal the bytes `writePdlConfig`
 * writes for the same launch. Skipped visibly without cc or cuda.h (failed under CI=true);
 * the fake driver (tests/gpu/testdata/fake_libcuda.c) pins the same offsets with static
 * assertions.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  CU_LAUNCH_ATTRIBUTE,
  CU_LAUNCH_ATTRIBUTE_LAYOUT,
  CU_LAUNCH_CONFIG,
} from "../backends/cuda/symbols.ts";
import { PDL_CONFIG_BYTES, writePdlConfig } from "../backends/cuda/launch.ts";
import { cTest, INCLUDE, sh } from "./_c_toolchain.ts";

/** Prints `name value` lines, then the bytes of a filled config and attribute (hex). */
const PROGRAM = `#include <cuda.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#define F(s, m) printf("%s %zu\\n", #m, offsetof(s, m))
static void hex(const void *p, size_t n) {
  for (size_t i = 0; i < n; i++) printf("%02x", ((const unsigned char *)p)[i]);
}
int main(void) {
  F(CUlaunchConfig, gridDimX); F(CUlaunchConfig, gridDimY); F(CUlaunchConfig, gridDimZ);
  F(CUlaunchConfig, blockDimX); F(CUlaunchConfig, blockDimY); F(CUlaunchConfig, blockDimZ);
  F(CUlaunchConfig, sharedMemBytes); F(CUlaunchConfig, hStream); F(CUlaunchConfig, attrs);
  F(CUlaunchConfig, numAttrs);
  printf("configSize %zu\\n", sizeof(CUlaunchConfig));
  F(CUlaunchAttribute, id); F(CUlaunchAttribute, value);
  printf("valueBytes %zu\\n", sizeof(CUlaunchAttributeValue));
  printf("pdlField %zu\\n", offsetof(CUlaunchAttributeValue, programmaticStreamSerializationAllowed));
  printf("attributeSize %zu\\n", sizeof(CUlaunchAttribute));
  printf("PROGRAMMATIC_STREAM_SERIALIZATION %d\\n",
         (int)CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
  CUlaunchConfig c;
  CUlaunchAttribute a;
  memset(&c, 0, sizeof c);
  memset(&a, 0, sizeof a);
  c.gridDimX = 70000; c.gridDimY = 3; c.gridDimZ = 2;
  c.blockDimX = 384; c.blockDimY = 1; c.blockDimZ = 1;
  c.sharedMemBytes = 200704;
  c.hStream = (CUstream)(size_t)0x7f1234567890ULL;
  c.attrs = (CUlaunchAttribute *)(size_t)0x7f00deadbee8ULL;
  c.numAttrs = 1;
  a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  a.value.programmaticStreamSerializationAllowed = 1;
  printf("bytes ");
  hex(&c, sizeof c);
  hex(&a, sizeof a);
  printf("\\n");
  return 0;
}
`;

cTest(
  "CUlaunchConfig and CUlaunchAttribute: symbols.ts's offsets and writePdlConfig's bytes are cuda.h's",
  async () => {
    const dir = await Deno.makeTempDir({ prefix: "gemmc_launch_ex_" });
    try {
      const src = join(dir, "layout.c");
      await Deno.writeTextFile(src, PROGRAM);
      const exe = join(dir, "layout");
      await sh("cc", ["-Wall", "-Werror", "-I", INCLUDE!, src, "-o", exe]);
      const out = await sh(exe, []);
      const got = new Map(out.trim().split("\n").map((l) => l.split(" ") as [string, string]));
      const n = (k: string) => Number(got.get(k));
      const C = CU_LAUNCH_CONFIG, A = CU_LAUNCH_ATTRIBUTE_LAYOUT;
      assert.deepEqual(
        [
          n("gridDimX"),
          n("gridDimY"),
          n("gridDimZ"),
          n("blockDimX"),
          n("blockDimY"),
          n("blockDimZ"),
          n("sharedMemBytes"),
          n("hStream"),
          n("attrs"),
          n("numAttrs"),
          n("configSize"),
        ],
        [
          C.GRID_DIM_X,
          C.GRID_DIM_Y,
          C.GRID_DIM_Z,
          C.BLOCK_DIM_X,
          C.BLOCK_DIM_Y,
          C.BLOCK_DIM_Z,
          C.SHARED_MEM_BYTES,
          C.H_STREAM,
          C.ATTRS,
          C.NUM_ATTRS,
          C.SIZE,
        ],
      );
      assert.deepEqual(
        [n("id"), n("value"), n("valueBytes"), n("pdlField"), n("attributeSize")],
        [A.ID, A.VALUE, A.VALUE_BYTES, 0, A.SIZE],
      );
      assert.equal(
        n("PROGRAMMATIC_STREAM_SERIALIZATION"),
        CU_LAUNCH_ATTRIBUTE.PROGRAMMATIC_STREAM_SERIALIZATION,
      );
      // The same launch written by gemmc: byte for byte, `attrs` set to the C program's value.
      const buf = new Uint8Array(new ArrayBuffer(PDL_CONFIG_BYTES));
      writePdlConfig(
        buf,
        [70000, 3, 2],
        [384, 1, 1],
        200704,
        Deno.UnsafePointer.create(0x7f1234567890n),
      );
      new DataView(buf.buffer).setBigUint64(C.ATTRS, 0x7f00deadbee8n, true);
      const hex = [...buf].map((b) => b.toString(16).padStart(2, "0")).join("");
      assert.equal(hex, got.get("bytes"));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

Deno.test("writePdlConfig: attrs points at the attribute right after the config in the same buffer", () => {
  const buf = new Uint8Array(new ArrayBuffer(PDL_CONFIG_BYTES));
  writePdlConfig(buf, [1, 1, 1], [32, 1, 1], 0, null);
  const v = new DataView(buf.buffer);
  const base = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(buf)));
  assert.equal(v.getBigUint64(CU_LAUNCH_CONFIG.ATTRS, true), base + BigInt(CU_LAUNCH_CONFIG.SIZE));
  assert.equal(PDL_CONFIG_BYTES, 128);
  // Rewritten for another launch: every field replaced, nothing left over.
  writePdlConfig(buf, [9, 8, 7], [6, 5, 4], 3, Deno.UnsafePointer.create(0x10n));
  const again = buf.slice();
  buf.fill(0xee);
  writePdlConfig(buf, [9, 8, 7], [6, 5, 4], 3, Deno.UnsafePointer.create(0x10n));
  assert.deepEqual(buf, again);
  assert.throws(
    () => writePdlConfig(new Uint8Array(64), [1, 1, 1], [1, 1, 1], 0, null),
    /needs 128 bytes/,
  );
});
