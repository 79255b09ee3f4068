/**
 * A grouped kernel's problem table (DESIGN §6.2), built from a list of problems:
 * the one place its bytes are written for the simulator and the Deno launcher
 * (the C and Python artefacts restate it in their languages).
 *
 * @module
 */

import { type GridPlan, type GroupLayout, problemTiles } from "../../ir/kernel.ts";

/** One problem of a grouped launch: its sizes and its tensors' addresses. */
export interface GroupProblem {
  /** The problem's dims and runtime strides, by name (every field of the entry). */
  readonly sizes: Readonly<Record<string, number>>;
  /** Each tensor's device address, by name. */
  readonly addresses: Readonly<Record<string, bigint | number>>;
}

/** A built table: its bytes and the output tiles of all its problems. */
export interface GroupTable {
  /** `count * entryBytes` bytes, the entries back to back, little-endian. */
  readonly bytes: Uint8Array;
  /** The output tiles of every problem (the grid's upper bound). */
  readonly totalTiles: number;
}

/**
 * Writes the problem table of a grouped kernel: per problem, its tensors'
 * addresses, strides and dims where the layout puts them, and its
 * `tiles_before` (the tiles of the problems before it, at the grid plan's tile).
 *
 * @param layout The table's layout (the kernel's `group`, or the manifest's).
 * @param plan The kernel's grid plan (its tile and its M and N dims).
 * @param problems The problems, in order.
 * @returns The table.
 * @throws {RangeError} A missing field, or a value its type cannot hold.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { groupTable } from "./group_table.ts";
 * const layout = { entryBytes: 16, fields: [
 *   { name: "A", kind: "tensor", offset: 0, ptx: "u64" },
 *   { name: "M", kind: "dim", offset: 8, ptx: "u32" },
 *   { name: "tiles_before", kind: "tiles_before", offset: 12, ptx: "u32" }] } as const;
 * const plan = { tileM: 64, tileN: 64, swizzle: 1, splitK: 1, m: "M", n: 128, batch: null };
 * const t = groupTable(layout, plan, [
 *   { sizes: { M: 100 }, addresses: { A: 4096n } },
 *   { sizes: { M: 0 }, addresses: { A: 0n } },
 *   { sizes: { M: 65 }, addresses: { A: 8192n } },
 * ]);
 * equal(t.totalTiles, 8);
 * const dv = new DataView(t.bytes.buffer);
 * equal(dv.getUint32(2 * 16 + 12, true), 4); // 2 * 2 tiles before the third problem
 * ```
 */
export function groupTable(
  layout: GroupLayout,
  plan: GridPlan,
  problems: readonly GroupProblem[],
): GroupTable {
  const bytes = new Uint8Array(problems.length * layout.entryBytes);
  const dv = new DataView(bytes.buffer);
  let tiles = 0;
  for (const [i, p] of problems.entries()) {
    const base = i * layout.entryBytes;
    for (const f of layout.fields) {
      const at = base + f.offset;
      const what = `problem ${i}: ${f.kind === "tensor" ? "tensor" : f.kind} "${f.name}"`;
      if (f.kind === "tiles_before") {
        dv.setUint32(at, tiles, true);
        continue;
      }
      const v = f.kind === "tensor" ? p.addresses[f.name] : p.sizes[f.name];
      if (v === undefined) throw new RangeError(`${what} has no value`);
      if (f.ptx === "u64") {
        const b = BigInt(v);
        if (b < 0n || b >= 2n ** 64n) throw new RangeError(`${what} = ${v} does not fit a u64`);
        dv.setBigUint64(at, b, true);
      } else {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) {
          throw new RangeError(`${what} = ${v} does not fit a u32`);
        }
        dv.setUint32(at, n, true);
      }
    }
    tiles += problemTiles(plan, p.sizes);
    if (tiles > 0xffffffff) throw new RangeError(`The problems have ${tiles} tiles: over 2^32 - 1`);
  }
  return { bytes, totalTiles: tiles };
}
