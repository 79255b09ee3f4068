/**
 * The textual form of the kernel IR, for `--emit kernel-ir`, dumps and
 * golden tests. One operation a line, PTX-like, registers shown as
 * `%<type-prefix><id>` with the name hint as a trailing comment where given.
 *
 * @module
 */

import type { Guard, Kernel, Op, Operand, Reg, RegType } from "./kernel.ts";
import { unreachable } from "./gemm.ts";

const PREFIX: Readonly<Record<RegType, string>> = Object.freeze({
  pred: "p",
  b16: "h",
  b32: "b",
  u32: "r",
  s32: "s",
  f32: "f",
  u64: "rd",
  f64: "fd",
});

/** Register ids below this have their names cached (per type, in {@link NAMES}). */
const NAME_CACHE_SIZE = 1 << 16;

/** Cached register names by type and id (see {@link regName}); no prototype, so that a
 * malformed type finds no entry. */
const NAMES: Readonly<Record<string, string[] | undefined>> = Object.assign(
  Object.create(null),
  { pred: [], b16: [], b32: [], u32: [], s32: [], f32: [], u64: [], f64: [] },
);

/**
 * The name of a register as both the kernel-IR text and the PTX use it.
 *
 * @param r The register.
 * @returns `%` + type prefix + id, e.g. `%r12`.
 */
export function regName(r: Reg): string {
  const id = r.id;
  // The printers name every register several times: names of small ids are built once.
  if (id >= 0 && id < NAME_CACHE_SIZE && Number.isInteger(id)) {
    const names = NAMES[r.type];
    if (names !== undefined) return names[id] ??= `%${PREFIX[r.type]}${id}`;
  }
  return `%${PREFIX[r.type]}${id}`;
}

function opd(o: Operand): string {
  return o.kind === "reg" ? regName(o) : String(o.value);
}

function guard(g: Guard | undefined): string {
  return g === undefined ? "" : `@${g.negate ? "!" : ""}${regName(g.pred)} `;
}

function list(rs: readonly Operand[]): string {
  return `{${rs.map(opd).join(", ")}}`;
}

function addr(a: Reg, off: number): string {
  return off === 0 ? `[${regName(a)}]` : `[${regName(a)} + ${off}]`;
}

/** A copy's `.L2::cache_hint` qualifier where it has a cache policy. */
function hint(p: Reg | undefined): string {
  return p === undefined ? "" : ".L2::cache_hint";
}

/** A copy's cache-policy operand, last, where it has one. */
function policy(p: Reg | undefined): string {
  return p === undefined ? "" : `, ${regName(p)}`;
}

function line(o: Op): string {
  const g = "guard" in o ? guard(o.guard) : "";
  switch (o.op) {
    case "param":
      return `${g}${regName(o.dst)} = param ${o.name}`;
    case "sreg":
      return `${g}${regName(o.dst)} = sreg ${o.sreg}`;
    case "mov":
      return `${g}${regName(o.dst)} = mov.${o.dst.type} ${opd(o.src)}`;
    case "smembase":
      return `${g}${regName(o.dst)} = smembase`;
    case "bin":
      return `${g}${regName(o.dst)} = ${o.fn}.${o.type} ${opd(o.a)}, ${opd(o.b)}`;
    case "mad":
      return `${g}${regName(o.dst)} = mad.${o.type} ${opd(o.a)}, ${opd(o.b)}, ${opd(o.c)}`;
    case "mulwide":
      return `${g}${regName(o.dst)} = mulwide.u32 ${opd(o.a)}, ${opd(o.b)}`;
    case "un":
      return `${g}${regName(o.dst)} = ${o.fn}.${o.type} ${opd(o.src)}`;
    case "setp":
      return `${g}${regName(o.dst)} = setp.${o.cmp}.${o.type} ${opd(o.a)}, ${opd(o.b)}`;
    case "selp":
      return `${g}${regName(o.dst)} = selp.${o.type} ${opd(o.a)}, ${opd(o.b)}, ${regName(o.p)}`;
    case "cvt":
      return `${g}${regName(o.dst)} = cvt.${o.kind} ${opd(o.src)}`;
    case "pack":
      return `${g}${regName(o.dst)} = pack ${regName(o.lo)}, ${regName(o.hi)}`;
    case "unpack":
      return `${g}${regName(o.lo)}, ${regName(o.hi)} = unpack ${regName(o.src)}`;
    case "cpasync":
      return `${g}cpasync.${o.cache}.${o.bytes}${hint(o.policy)}${
        o.prefetch !== undefined ? `.L2::${o.prefetch}B` : ""
      } ${addr(o.dst, o.dstOffset)}, [${regName(o.src)}], ${opd(o.srcBytes)}${policy(o.policy)}`;
    case "createpolicy":
      return `${regName(o.dst)} = createpolicy.L2::${o.priority}`;
    case "prefetch":
      return `${g}prefetch.L2${o.evictLast === true ? "::evict_last" : ""} [${regName(o.addr)}]`;
    case "commit":
      return "commit";
    case "wait":
      return `wait ${o.n}`;
    case "bar":
      return o.named === undefined ? "bar" : `bar ${o.named.id}, ${o.named.threads}`;
    case "ldmatrix":
      return `${list(o.dst)} = ldmatrix.x${o.num}${o.trans ? ".trans" : ""} ${
        addr(o.addr, o.offset)
      }`;
    case "lds":
      return `${g}${list(o.dst)} = lds.${o.width} ${addr(o.addr, o.offset)}`;
    case "ldg":
      return `${g}${list(o.dst)} = ldg${o.cache === "cg" ? ".cg" : ""}${
        hint(o.policy)
      }.${o.width} ${addr(o.addr, o.offset)}${policy(o.policy)}`;
    case "atom":
      return `${g}${regName(o.dst)} = atom.add.u32 ${addr(o.addr, o.offset)}, ${opd(o.b)}`;
    case "fence":
      return "fence.acq_rel.gpu";
    case "sts":
      return `${g}sts.${o.width} ${addr(o.addr, o.offset)}, ${list(o.src)}`;
    case "stg":
      return `${g}stg.${o.width} ${addr(o.addr, o.offset)}, ${list(o.src)}`;
    case "mma":
      return `${list(o.d)} = mma ${o.shape} ${list(o.a)}, ${list(o.b)}, ${list(o.c)}`;
    case "wgmma":
      return `${list(o.d)} ${o.scaleD === 1 ? "+=" : "="} wgmma ${o.shape} [${regName(o.a)}], [${
        regName(o.b)
      }]`;
    case "wgfence":
      return "wgmma.fence";
    case "wgcommit":
      return "wgmma.commit";
    case "wgwait":
      return `wgmma.wait ${o.n}`;
    case "proxyfence":
      return "fence.proxy.async";
    case "mbarinit":
      return `mbarrier.init [${regName(o.addr)}], ${o.count}`;
    case "mbararrive":
      return `${g}mbarrier.arrive [${regName(o.addr)}]${o.tx === undefined ? "" : `, tx ${o.tx}`}`;
    case "mbarwait":
      return `mbarrier.wait [${regName(o.addr)}], parity ${opd(o.parity)}`;
    case "mbarfence":
      return "fence.mbarrier_init";
    case "tma":
      return `tma${hint(o.policy)} [${regName(o.dst)}], ${o.map}[${
        o.coords.map(opd).join(", ")
      }], bar [${regName(o.bar)}]${policy(o.policy)}`;
    case "tmapprefetch":
      return `prefetch.tensormap ${o.map}`;
    case "setmaxnreg":
      return `setmaxnreg.${o.action} ${o.regs}`;
    case "griddep":
      return `griddep.${o.action}${o.early === undefined ? "" : ` early ${o.early.join(", ")}`}`;
    case "comment":
      return `// ${o.text}`;
    case "for":
    case "if":
      throw new Error("structured ops are printed by printBody");
    default:
      return unreachable(o);
  }
}

/**
 * Prints a body of operations, indented.
 *
 * @param body The operations.
 * @param indent The indentation of this level.
 * @param out The lines so far.
 */
export function printBody(body: readonly Op[], indent: string, out: string[]): void {
  for (const o of body) {
    if (o.op === "for") {
      out.push(
        `${indent}for ${regName(o.iv)} = ${opd(o.from)} to ${opd(o.to)} step ${o.step} {`,
      );
      printBody(o.body, indent + "  ", out);
      out.push(`${indent}}`);
    } else if (o.op === "if") {
      out.push(
        `${indent}if${o.uniform ? ".uniform" : o.warpgroupUniform === true ? ".warpgroup" : ""} ${
          o.negate ? "!" : ""
        }${regName(o.cond)} {`,
      );
      printBody(o.then, indent + "  ", out);
      if (o.otherwise.length > 0) {
        out.push(`${indent}} else {`);
        printBody(o.otherwise, indent + "  ", out);
      }
      out.push(`${indent}}`);
    } else {
      out.push(indent + line(o));
    }
  }
}

/**
 * Prints a kernel-IR program.
 *
 * @param k The kernel.
 * @returns Its text, ending in a newline.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { compile } from "../compiler.ts";
 * import { printKernel } from "./print_kernel.ts";
 * const r = compile("kernel k { A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]\n D[m, n] = A[m, k] * B[k, n] }");
 * const text = printKernel(r.kernels[0]!.kernel);
 * ok(text.includes("mma") && text.endsWith("\n"));
 * // A grouped kernel (DESIGN §6.2): its problem table's entry, field by field.
 * const g = compile("kernel e grouped { X: bf16[M, K]\n W: bf16[K, N] col\n Y: bf16[M, N]\n Y[m, n] = X[m, k] * W[k, n] }");
 * const lines = printKernel(g.kernels[0]!.kernel).split("\n");
 * ok(lines[0]!.startsWith("kernel @e target sm80 (group_table: u64 table, group_count: u32 count"));
 * ok(lines[2]!.startsWith("  group table: 40-byte entries (X: u64 tensor @0, W: u64 tensor @8,"));
 * ```
 */
export function printKernel(k: Kernel): string {
  const out: string[] = [];
  const params = k.params.map((p) =>
    `${p.name}: ${p.ptx} ${p.kind}${p.dtype !== undefined ? ` ${p.dtype}` : ""}`
  );
  out.push(`kernel @${k.name} target ${k.target} (${params.join(", ")})`);
  const g = k.grid;
  out.push(
    `  threads ${k.threads}, dynamic smem ${k.dynamicSmemBytes} bytes, grid tiles ${g.tileM}x${g.tileN} over (m ${g.m}, n ${g.n}, batch ${
      g.batch ?? "none"
    }), swizzle ${g.swizzle}, split_k ${g.splitK}${
      k.minBlocksPerSm === undefined ? "" : `, ${k.minBlocksPerSm} blocks per SM`
    }`,
  );
  if (k.group !== undefined) {
    const fields = k.group.fields.map((f) => `${f.name}: ${f.ptx} ${f.kind} @${f.offset}`);
    out.push(`  group table: ${k.group.entryBytes}-byte entries (${fields.join(", ")})`);
  }
  out.push("{");
  printBody(k.body, "  ", out);
  out.push("}");
  return out.join("\n") + "\n";
}
