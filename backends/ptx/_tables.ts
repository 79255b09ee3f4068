/**
 * The PTX printer's tables: the whole mapping from kernel-IR operations and
 * register types to PTX mnemonics, templates and operand classes (no code but
 * the tables' own helpers).
 *
 * @module
 */

import type { BinOp, CvtKind, MemWidth, RegType, SpecialReg, UnOp } from "../../ir/kernel.ts";
import type { MmaRegType } from "../../ir/mma_table.ts";

/** The symbol of the dynamic shared-memory buffer (`smembase` takes its address). */
export const SMEM_SYMBOL = "gemmc_smem";

/** The scratch predicate the printer uses for loop tests (not an IR register). */
export const LOOP_PRED = "%tp0";

/** The scratch b16 register through which the printer passes an immediate to a
 * conversion from f16/bf16: ptxas accepts no immediate there (not an IR register). */
export const HALF_TMP = "%th0";

/** A kernel IR that the printer cannot render (an IR bug, never a user error). */
export class PtxError extends Error {
  /**
   * @param message What is wrong, naming the kernel and the operation.
   */
  constructor(message: string) {
    super(message);
    this.name = "PtxError";
  }
}

/** How an immediate operand is written in a given position: its PTX type. */
export type ImmType = "pred" | "u8" | "b16" | "u32" | "s32" | "b32" | "u64" | "f32" | "f64";

/** PTX type of the `.reg` declaration of each register type: its own name. The
 * same table says how an immediate operand of a register's type is written
 * ({@link IMM_OF_REG}). */
export const REG_PTX: Readonly<Record<RegType, ImmType>> = Object.freeze({
  pred: "pred",
  b16: "b16",
  b32: "b32",
  u32: "u32",
  s32: "s32",
  f32: "f32",
  u64: "u64",
  f64: "f64",
});

/** Size of each register type in bits (pred counts as 1). */
export const REG_BITS: Readonly<Record<RegType, number>> = Object.freeze({
  pred: 1,
  b16: 16,
  b32: 32,
  u32: 32,
  s32: 32,
  f32: 32,
  u64: 64,
  f64: 64,
});

/** Classes of PTX operands by the register types ptxas accepts for them. */
export type RegClass = "pred" | "b16" | "b32" | "i32" | "x32" | "f32" | "u64" | "b64" | "f64";

/**
 * The register types PTX accepts for an operand of each class (its relaxed
 * type checking, as ptxas 13 applies it): a `.bN` operand takes any register
 * of N bits, `.u32`/`.s32` any 32-bit integer or bit register, `.f32` an f32 or
 * b32 register. `x32` is a `.b32` that must be a b32 register: the `mma`
 * A/B fragments, f16x2 accumulators and the result of `cvt.rna.tf32.f32`
 * (ptxas rejects u32/s32/f32 registers there with "Arguments mismatch").
 */
export const REG_CLASS: Readonly<Record<RegClass, readonly RegType[]>> = Object.freeze({
  pred: ["pred"],
  b16: ["b16"],
  b32: ["b32", "u32", "s32", "f32"],
  i32: ["u32", "s32", "b32"],
  x32: ["b32"],
  f32: ["f32", "b32"],
  u64: ["u64"],
  b64: ["u64", "f64"],
  f64: ["f64"],
});

/** The class of an operand of PTX type `t` (the last part of a mnemonic). */
export function classOf(t: string): RegClass {
  switch (t) {
    case "u32":
    case "s32":
      return "i32";
    case "pred":
    case "b16":
    case "b32":
    case "f32":
    case "u64":
    case "b64":
    case "f64":
      return t;
    default:
      throw new Error(`No register class for PTX type "${t}"`);
  }
}

/** Special registers: `mov.u32 %r, %SREG`. */
export const SREG_PTX: Readonly<Record<SpecialReg, string>> = Object.freeze({
  "tid.x": "%tid.x",
  "ctaid.x": "%ctaid.x",
  "ctaid.y": "%ctaid.y",
  "ctaid.z": "%ctaid.z",
  "nctaid.x": "%nctaid.x",
  "nctaid.y": "%nctaid.y",
  "nctaid.z": "%nctaid.z",
  "laneid": "%laneid",
  "cluster_ctarank": "%cluster_ctarank",
});

type BinType = BinOp["type"];

/**
 * {@link BinOp} mnemonics by function and type; a missing entry has no PTX
 * instruction (and is an IR error). Floats carry `.rn` explicitly: it is the
 * IR's rounding, and an explicit rounding mode also forbids ptxas from
 * contracting a `mul` and an `add` into an `fma` (which would round once
 * where the simulator rounds twice). Shifts take their amount as `u32`.
 */
export const BIN_PTX: Readonly<Record<BinOp["fn"], Readonly<Partial<Record<BinType, string>>>>> =
  Object.freeze({
    add: { u32: "add.u32", s32: "add.s32", u64: "add.u64", f32: "add.rn.f32", f64: "add.rn.f64" },
    sub: { u32: "sub.u32", s32: "sub.s32", u64: "sub.u64", f32: "sub.rn.f32", f64: "sub.rn.f64" },
    mul: {
      u32: "mul.lo.u32",
      s32: "mul.lo.s32",
      u64: "mul.lo.u64",
      f32: "mul.rn.f32",
      f64: "mul.rn.f64",
    },
    // Integer division truncates; float division is IEEE (`.rn`), both as the IR says.
    div: { u32: "div.u32", s32: "div.s32", u64: "div.u64", f32: "div.rn.f32", f64: "div.rn.f64" },
    rem: { u32: "rem.u32", s32: "rem.s32", u64: "rem.u64" },
    // PTX min/max on floats return the number when the other operand is NaN.
    min: { u32: "min.u32", s32: "min.s32", u64: "min.u64", f32: "min.f32", f64: "min.f64" },
    max: { u32: "max.u32", s32: "max.s32", u64: "max.u64", f32: "max.f32", f64: "max.f64" },
    shl: { u32: "shl.b32", s32: "shl.b32", b32: "shl.b32", u64: "shl.b64" },
    // Logical for u32/u64/b32, arithmetic for s32.
    shr: { u32: "shr.u32", s32: "shr.s32", b32: "shr.b32", u64: "shr.u64" },
    and: { u32: "and.b32", s32: "and.b32", b32: "and.b32", u64: "and.b64", pred: "and.pred" },
    or: { u32: "or.b32", s32: "or.b32", b32: "or.b32", u64: "or.b64", pred: "or.pred" },
    xor: { u32: "xor.b32", s32: "xor.b32", b32: "xor.b32", u64: "xor.b64", pred: "xor.pred" },
    addsat: { s32: "add.sat.s32" },
  });

/** `mad` mnemonics: `mad.lo` (wrapping) for integers, `fma.rn` (one rounding) for floats. */
export const MAD_PTX: Readonly<Record<"u32" | "s32" | "u64" | "f32" | "f64", string>> = Object
  .freeze({
    u32: "mad.lo.u32",
    s32: "mad.lo.s32",
    u64: "mad.lo.u64",
    f32: "fma.rn.f32",
    f64: "fma.rn.f64",
  });

/**
 * {@link UnOp} mnemonics by function and type. `ex2`, `rcp` and `tanh` are
 * the approximate PTX instructions the IR names (`.approx.f32`, without
 * `.ftz`: subnormals are kept); `neg` of a u32 is the two's complement
 * (`neg.s32`, the same bits).
 */
export const UN_PTX: Readonly<Record<UnOp["fn"], Readonly<Partial<Record<UnOp["type"], string>>>>> =
  Object.freeze({
    neg: { s32: "neg.s32", u32: "neg.s32", f32: "neg.f32", f64: "neg.f64" },
    abs: { s32: "abs.s32", f32: "abs.f32", f64: "abs.f64" },
    not: { b32: "not.b32", u32: "not.b32", s32: "not.b32", pred: "not.pred" },
    ex2: { f32: "ex2.approx.f32" },
    rcp: { f32: "rcp.approx.f32" },
    tanh: { f32: "tanh.approx.f32" },
    popc: { b32: "popc.b32", u32: "popc.b32" },
  });

/** One conversion: a template over `$d` (destination) and `$a` (source), the
 * PTX type an immediate source is written in, and the register classes of both sides. */
export interface CvtRule {
  readonly tpl: string;
  readonly src: ImmType;
  readonly srcRegs: RegClass;
  readonly dstRegs: RegClass;
  /** An immediate source goes through {@link HALF_TMP} (ptxas rejects `cvt.f32.f16 %f, 15360`
   * with "Arguments mismatch", whatever the literal's form). */
  readonly immViaHalf: boolean;
}

function cvtRule(tpl: string, src: ImmType, srcRegs: RegClass, dstRegs: RegClass): CvtRule {
  return Object.freeze({ tpl, src, srcRegs, dstRegs, immViaHalf: srcRegs === "b16" });
}

/**
 * Every {@link CvtKind} as exactly one PTX instruction (the IR's list, in order):
 * - `f32.f16`, `f32.bf16`, `f64.f32`: exact widenings; PTX forbids a rounding
 *   modifier on them. `cvt.f32.bf16` needs PTX 7.1 and sm_80 (the `.ftz`
 *   form would need sm_90; it is not used).
 * - `f16.f32`, `bf16.f32`, `f32.f64`: round to nearest even (`.rn`).
 * - `tf32.f32`: round to nearest, ties away (`cvt.rna.tf32.f32`, sm_80, into a `.b32`).
 * - `f32.s32`, `f64.s32`: `.rn` (PTX requires a rounding mode on int → float;
 *   s32 → f64 is exact anyway).
 * - `s32.f32`, `s32.f64`: `.rni` (nearest even) with `.sat` (PTX clamps and
 *   sends NaN to 0).
 * - `s8.s32`, `u8.s32`: `cvt.sat.{s8,u8}.s32` into a 32-bit register (PTX
 *   sign-/zero-extends the 8-bit result; the IR reads only the low 8 bits).
 * - `u64.u32`: zero extension.
 * - The six bit moves: `mov.b32`.
 */
export const CVT_PTX: Readonly<Record<CvtKind, CvtRule>> = Object.freeze({
  "f32.f16": cvtRule("cvt.f32.f16 $d, $a", "b16", "b16", "f32"),
  "f32.bf16": cvtRule("cvt.f32.bf16 $d, $a", "b16", "b16", "f32"),
  "f16.f32": cvtRule("cvt.rn.f16.f32 $d, $a", "f32", "f32", "b16"),
  "bf16.f32": cvtRule("cvt.rn.bf16.f32 $d, $a", "f32", "f32", "b16"),
  "tf32.f32": cvtRule("cvt.rna.tf32.f32 $d, $a", "f32", "f32", "x32"),
  "f64.f32": cvtRule("cvt.f64.f32 $d, $a", "f32", "f32", "f64"),
  "f32.f64": cvtRule("cvt.rn.f32.f64 $d, $a", "f64", "f64", "f32"),
  "f32.s32": cvtRule("cvt.rn.f32.s32 $d, $a", "s32", "i32", "f32"),
  "f64.s32": cvtRule("cvt.rn.f64.s32 $d, $a", "s32", "i32", "f64"),
  "s32.f32": cvtRule("cvt.rni.sat.s32.f32 $d, $a", "f32", "f32", "i32"),
  "s32.f64": cvtRule("cvt.rni.sat.s32.f64 $d, $a", "f64", "f64", "i32"),
  "s8.s32": cvtRule("cvt.sat.s8.s32 $d, $a", "s32", "i32", "i32"),
  "u8.s32": cvtRule("cvt.sat.u8.s32 $d, $a", "s32", "i32", "i32"),
  "u64.u32": cvtRule("cvt.u64.u32 $d, $a", "u32", "i32", "u64"),
  "b32.f32": cvtRule("mov.b32 $d, $a", "f32", "b32", "b32"),
  "f32.b32": cvtRule("mov.b32 $d, $a", "b32", "b32", "b32"),
  "b32.u32": cvtRule("mov.b32 $d, $a", "u32", "b32", "b32"),
  "u32.b32": cvtRule("mov.b32 $d, $a", "b32", "b32", "b32"),
  "s32.b32": cvtRule("mov.b32 $d, $a", "b32", "b32", "b32"),
  "b32.s32": cvtRule("mov.b32 $d, $a", "s32", "b32", "b32"),
});

/** One memory width: the PTX type suffix, the registers it moves, how an
 * immediate store operand is written, and the vector lengths PTX allows on sm_80
 * (at most 128 bits: no `.v4.b64`). */
export interface MemRule {
  readonly ptx: string;
  readonly regs: RegClass;
  readonly imm: ImmType;
  readonly vec: readonly number[];
}

/** {@link MemWidth} to PTX: `b8` is `.u8` (loads zero-extend into a 32-bit register). */
export const MEM_PTX: Readonly<Record<MemWidth, MemRule>> = Object.freeze({
  b8: Object.freeze({ ptx: "u8", regs: "i32", imm: "u8", vec: Object.freeze([1, 2, 4]) }),
  b16: Object.freeze({ ptx: "b16", regs: "b16", imm: "b16", vec: Object.freeze([1, 2, 4]) }),
  b32: Object.freeze({ ptx: "b32", regs: "b32", imm: "b32", vec: Object.freeze([1, 2, 4]) }),
  b64: Object.freeze({ ptx: "b64", regs: "b64", imm: "u64", vec: Object.freeze([1, 2]) }),
});

/** The PTX vector suffix of each vector length. */
export const VEC: Readonly<Record<number, string>> = Object.freeze({ 1: "", 2: ".v2", 4: ".v4" });

/** Immediate type of a `mov`/`setp`/... operand of a register type (each type's own name). */
export const IMM_OF_REG: Readonly<Record<RegType, ImmType>> = REG_PTX;

/** Templates of the simple (non-structured) operations, over `$name` holes. */
export const OP_TEMPLATES = Object.freeze({
  param: "ld.param.$t $d, [$name]",
  cvta: "cvta.to.global.u64 $d, $d",
  sreg: "mov.u32 $d, $sreg",
  mov: "mov.$t $d, $a",
  smembase: `mov.u32 $d, ${SMEM_SYMBOL}`,
  bin: "$mn $d, $a, $b",
  mad: "$mn $d, $a, $b, $c",
  mulwide: "mul.wide.u32 $d, $a, $b",
  un: "$mn $d, $a",
  setp: "setp.$cmp.$t $d, $a, $b",
  selp: "selp.$t $d, $a, $b, $p",
  pack: "mov.b32 $d, {$lo, $hi}",
  unpack: "mov.b32 {$lo, $hi}, $a",
  // `$hint`: `.L2::cache_hint` (before the prefetch size) where the copy has a cache policy,
  // whose register `$policy` (`, %rdN`) ends the operands.
  cpasync: "cp.async.$cache.shared.global$hint [$dst], [$src], $bytes, $n$policy",
  createpolicy: "createpolicy.fractional.L2::$priority.b64 $d, 1.0",
  prefetch: "prefetch.global.L2$evict [$addr]",
  commit: "cp.async.commit_group",
  wait: "cp.async.wait_group $n",
  bar: "bar.sync 0",
  namedBar: "bar.sync $id, $threads",
  clusterArrive: "barrier.cluster.arrive.release.aligned",
  clusterWait: "barrier.cluster.wait.acquire.aligned",
  ldmatrix: "ldmatrix.sync.aligned.m8n8.x$num$trans.shared.b16 $d, [$addr]",
  lds: "ld.shared$v.$w $d, [$addr]",
  sts: "st.shared$v.$w [$addr], $a",
  ldg: "ld.global$cache$hint$v.$w $d, [$addr]$policy",
  atom: "atom.global.add.u32 $d, [$addr], $b",
  fence: "fence.acq_rel.gpu",
  stg: "st.global$v.$w [$addr], $a",
  mma: "$mn $d, $a, $b, $c",
  mmaSp: "$mn $d, $a, $b, $c, $e, $f",
  // A warpgroup MMA: each descriptor's low word from the tile's shared address (its
  // bits 4-17, then the fixed fields), its high word fixed; in a scope of its own.
  wgmmaScope: ".reg .b32 %wglo<2>, %wghi; .reg .b64 %wgdesc<2>",
  wgmmaHi: "mov.b32 %wghi, $hi",
  wgmmaLo: "bfe.u32 %wglo$i, $addr, 4, 14",
  wgmmaLoOr: "or.b32 %wglo$i, %wglo$i, $fixed",
  wgmmaDesc: "mov.b64 %wgdesc$i, {%wglo$i, %wghi}",
  wgmma: "$mn $d, $rest",
  wgfence: "wgmma.fence.sync.aligned",
  wgcommit: "wgmma.commit_group.sync.aligned",
  wgwait: "wgmma.wait_group.sync.aligned $n",
  proxyfence: "fence.proxy.async.shared::cta",
  // sm90's barriers and TMA copies.
  mbarinit: "mbarrier.init.shared::cta.b64 [$addr], $count",
  mbararrive: "mbarrier.arrive.shared::cta.b64 _, [$addr]",
  mbarexpect: "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$addr], $tx",
  // An arrival on a cluster peer's barrier: its address by mapa, in a scope of its own.
  mbarRemoteScope: ".reg .b32 %mbr",
  mbarMapa: "mapa.shared::cluster.u32 %mbr, $addr, $cta",
  mbarRemote: "mbarrier.arrive.shared::cluster.b64 _, [%mbr]",
  // A wait: a loop around try_wait in a scope of its own.
  mbarScope: ".reg .pred %mbp",
  mbartry: "mbarrier.try_wait.parity.shared::cta.b64 %mbp, [$addr], $parity",
  mbarretry: "@!%mbp bra $label",
  mbarfence: "fence.mbarrier_init.release.cluster",
  // A TMA copy: the tensor map's generic address from its parameter, in a scope of its own.
  tmaScope: ".reg .b64 %tm<2>",
  tmaMap: "mov.u64 %tm0, $map",
  tmaCvta: "cvta.param.u64 %tm1, %tm0",
  tma:
    "cp.async.bulk.tensor.$rank.shared::cluster.global.tile.mbarrier::complete_tx::bytes$hint [$dst], [%tm1, {$coords}], [$bar]$policy",
  // A multicast copy: the CTA mask in a 16-bit register of the copy's scope.
  tmaMaskScope: ".reg .b16 %tmk",
  tmaMask: "mov.b16 %tmk, $mask",
  tmaMulticast:
    "cp.async.bulk.tensor.$rank.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster$hint [$dst], [%tm1, {$coords}], [$bar], %tmk$policy",
  // A tensor map's prefetch: its generic address as a TMA copy takes it, in a scope of its own.
  tmapPrefetch: "prefetch.tensormap [%tm1]",
  setmaxnreg: "setmaxnreg.$action.sync.aligned.u32 $regs",
  // Programmatic dependent launch (PTX ISA 7.8, sm_90).
  griddepwait: "griddepcontrol.wait",
  griddeplaunch: "griddepcontrol.launch_dependents",
  comment: "// $text",
  // Structured control flow.
  forInit: "mov.u32 $iv, $from",
  forEnter: `setp.ge.u32 ${LOOP_PRED}, $iv, $to`,
  forSkip: `@${LOOP_PRED} bra.uni $label`,
  forStep: "add.u32 $iv, $iv, $step",
  forTest: `setp.lt.u32 ${LOOP_PRED}, $iv, $to`,
  forBack: `@${LOOP_PRED} bra.uni $label`,
  branch: "bra$uni $label",
  branchIf: "@$not$p bra$uni $label",
  ret: "ret",
});

/** Registers of `mma` fragments by the table's register type (ir/mma_table.ts,
 * `FragmentMap.regType`): b32 operands (packed and tf32 elements, f16x2
 * accumulators) in b32 registers, f32 accumulators in f32 (or b32), s32 in any
 * 32-bit integer register, f64 in f64 (ir/kernel.ts, MmaOp). */
export const MMA_OPERAND_REGS: Readonly<Record<MmaRegType, RegClass>> = Object.freeze({
  b32: "x32",
  f32: "f32",
  s32: "i32",
  f64: "f64",
});
