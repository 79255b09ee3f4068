/**
 * The kernel-IR verifier: operand types, barriers only in uniform control
 * flow, balanced cp.async groups, immediate shared-memory offsets inside the
 * buffer, MMA operands that match the MMA table, cache-policy operands that an
 * earlier `createpolicy` wrote. A failure is a compiler bug and throws an
 * `Error` naming the operation.
 *
 * Shortcut: register-held shared-memory addresses are not range-checked
 * statically; the simulator checks every access at run time.
 *
 * @module
 */

import {
  type ForOp,
  type IfOp,
  type Kernel,
  type KernelParam,
  type Op,
  type Operand,
  type Reg,
  type RegType,
  walkOps,
} from "./kernel.ts";
import { MMA_SHAPES, type MmaShape } from "./mma_table.ts";
import { sparseMmaByName } from "./mma_sparse.ts";
import { targetHas } from "./target.ts";
import { WGMMA_BY_NAME } from "./wgmma_table.ts";
import { CACHE_POLICIES } from "./cache_policy.ts";
import { printBody } from "./print_kernel.ts";

function show(o: Op): string {
  const out: string[] = [];
  if (o.op === "for" || o.op === "if") return o.op;
  printBody([o], "", out);
  return out[0] ?? o.op;
}

// The verifier checks every operand of every operation of kernels of thousands of
// operations, on every compile: the lists of allowed types below are built once
// rather than as literals per check.

const ONLY = new Map<string, readonly RegType[]>();
const SHIFT = new Map<string, readonly RegType[]>();

/** The list holding type `t` alone (one frozen array per type). */
function only(t: string): readonly RegType[] {
  let l = ONLY.get(t);
  if (l === undefined) {
    l = Object.freeze([t as RegType]);
    ONLY.set(t, l);
  }
  return l;
}

/** The types of a shift amount beside operands of type `t`: u32 or `t`. */
function shiftAmount(t: string): readonly RegType[] {
  let l = SHIFT.get(t);
  if (l === undefined) {
    l = Object.freeze(["u32", t as RegType]);
    SHIFT.set(t, l);
  }
  return l;
}

const BITS32: readonly RegType[] = Object.freeze(["b32", "u32", "s32", "f32"]);
const DATA_B64: readonly RegType[] = Object.freeze(["f64", "u64"]);
const DATA_B8: readonly RegType[] = Object.freeze(["u32", "s32", "b32"]);

const CVT_REGS = new Map<string, readonly [readonly RegType[], readonly RegType[]]>();

/** The destination and source register types of a conversion kind (`"f32.f16"`). */
function cvtRegs(kind: string): readonly [readonly RegType[], readonly RegType[]] {
  let r = CVT_REGS.get(kind);
  if (r === undefined) {
    const [d, s] = kind.split(".") as [string, string];
    const regOf = (t: string): RegType =>
      t === "f16" || t === "bf16"
        ? "b16"
        : t === "tf32"
        ? "b32"
        : t === "s8" || t === "u8"
        ? "u32"
        : t as RegType;
    r = [only(regOf(d)), only(regOf(s))];
    CVT_REGS.set(kind, r);
  }
  return r;
}

/** MMA shapes by name (the first of a name, as a search of the table finds it). */
const MMA_BY_NAME: ReadonlyMap<string, MmaShape> = (() => {
  const m = new Map<string, MmaShape>();
  for (const s of MMA_SHAPES) if (!m.has(s.name)) m.set(s.name, s);
  return m;
})();

/** A path of enclosing loops and conditionals, as {@link walkOps} passes it. */
type Path = readonly (ForOp | IfOp)[];

/** The checks of one kernel: its declarations, the shared operand checks, the cp.async state. */
class Checker {
  /** cp.async commits seen so far. */
  commits = 0;
  /** Whether no cp.async was issued since the last `wait 0`. */
  waited = true;
  /** The ids of the registers a `createpolicy` wrote so far (in program order). */
  readonly policies = new Set<number>();
  readonly #params: ReadonlyMap<string, KernelParam>;

  constructor(readonly k: Kernel) {
    const ids = new Set<number>();
    for (const r of k.regs) {
      if (ids.has(r.id)) throw new Error(`Kernel IR verifier: duplicate register id ${r.id}`);
      ids.add(r.id);
    }
    this.#params = new Map(k.params.map((p) => [p.name, p]));
  }

  /** Throws the verifier's error for `o`. */
  fail(o: Op, msg: string): never {
    throw new Error(`Kernel IR verifier: kernel "${this.k.name}": ${msg}: ${show(o)}`);
  }

  /** The parameter named `name` of `o`, or a failure. */
  param(o: Op, name: string): KernelParam {
    return this.#params.get(name) ?? this.fail(o, `no parameter "${name}"`);
  }

  /** Checks that `x` is an immediate or a declared register of one of `types`. */
  is(o: Op, x: Operand, types: readonly RegType[], what: string): void {
    if (x.kind === "imm") return;
    const decl = this.k.regs[x.id];
    if (decl === undefined || decl.type !== x.type) {
      this.fail(o, `register %${x.id} is not declared as ${x.type}`);
    }
    if (!types.includes(x.type)) {
      this.fail(o, `${what} has type ${x.type}, expected ${types.join("|")}`);
    }
  }

  /** Checks a copy's cache-policy operand, if any: a u64 register an earlier `createpolicy`
   * wrote. */
  policy(o: Op, r: Reg | undefined): void {
    if (r === undefined) return;
    this.is(o, r, U64, "cache policy");
    if (!this.policies.has(r.id)) {
      this.fail(o, `cache policy %${r.id} is not written by an earlier createpolicy`);
    }
  }

  /** Checks that `bytes` bytes at immediate `offset` lie inside the dynamic shared memory. */
  inSmem(o: Op, offset: number, bytes: number): void {
    if (offset < 0 || offset + bytes > this.k.dynamicSmemBytes) {
      this.fail(o, "offset outside shared memory");
    }
  }

  /** Barriers and warp-collective operations need every thread (of the block, of the warp). */
  uniform(o: Op, path: Path, what: string, level: "block" | "warpgroup" = "block"): void {
    for (const p of path) {
      if (p.op !== "if" || p.uniform) continue;
      if (level === "warpgroup" && p.warpgroupUniform === true) continue;
      this.fail(o, `${what} inside non-uniform control flow`);
    }
  }
}

/** The checks of one operation kind, after its guard's. */
type Check<K extends Op["op"]> = (o: Extract<Op, { op: K }>, cx: Checker, path: Path) => void;

/** The fields of operation `O` that hold one operand. */
type OperandField<O> = { [F in keyof O]-?: O[F] extends Operand ? F : never }[keyof O];

/** In a {@link Slot}: the operation's own `type` alone. */
const OWN = "own";

/** One operand of `O`: its field, the types it may hold ({@link OWN} where `O` has a
 * `type`), its name in messages. */
type Slot<O> = readonly [
  field: OperandField<O>,
  types: readonly RegType[] | (O extends { readonly type: RegType } ? typeof OWN : never),
  what: string,
];

/** The check of an operation whose operand types are data: `slots`, in order. */
function operands<K extends Op["op"]>(...slots: readonly Slot<Extract<Op, { op: K }>>[]): Check<K> {
  return (o, cx) => {
    for (const [field, types, what] of slots) {
      const want = types !== OWN ? types : only((o as Extract<Op, { type: RegType }>).type);
      cx.is(o, o[field] as Operand, want, what);
    }
  };
}

const U32 = only("u32");
const U64 = only("u64");
const COORD: readonly RegType[] = ["u32", "s32"];
const B16 = only("b16");
const B32 = only("b32");
const PRED = only("pred");
const widthBytes = { b8: 1, b16: 2, b32: 4, b64: 8 } as const;

/** Loads and stores, shared and global: 1, 2 or 4 registers of the width, an address. */
function access(o: Extract<Op, { op: "lds" | "ldg" | "sts" | "stg" }>, cx: Checker): void {
  const regs = o.op === "lds" || o.op === "ldg" ? o.dst : o.src;
  const n = regs.length;
  if (n !== 1 && n !== 2 && n !== 4) cx.fail(o, "vector of 1, 2 or 4");
  const want: readonly RegType[] = o.width === "b64"
    ? DATA_B64
    : o.width === "b16"
    ? B16
    : o.width === "b8"
    ? DATA_B8
    : BITS32;
  for (const r of regs) cx.is(o, r, want, "data");
  const shared = o.op === "lds" || o.op === "sts";
  cx.is(o, o.addr, shared ? U32 : U64, "address");
  if (shared) cx.inSmem(o, o.offset, widthBytes[o.width] * regs.length);
}

/** An MMA: a known shape, fragments of its register counts and types (ir/kernel.ts, MmaOp:
 * f64, f32 and s32 accumulators in registers of their type, every packed or tf32 operand
 * in a b32), in uniform control flow. */
const mma: Check<"mma"> = (o, cx, path) => {
  const sp = sparseMmaByName(o.shape);
  const s = sp ?? MMA_BY_NAME.get(o.shape) ?? cx.fail(o, `unknown MMA shape "${o.shape}"`);
  if (sp === undefined) {
    if (o.meta !== undefined || o.selector !== undefined || o.ordered !== undefined) {
      cx.fail(o, `${s.name} is dense: it takes no metadata, selector or ordered_metadata`);
    }
  } else {
    const meta = o.meta ?? cx.fail(o, `sparse ${sp.name} needs a metadata register`);
    cx.is(o, meta, B32, "metadata");
    const sel = o.selector;
    if (sel === undefined || !sp.meta.selectors.includes(sel)) {
      cx.fail(o, `${sp.name}: sparsity selector ${sel} not in ${sp.meta.selectors.join(", ")}`);
    }
  }
  const frags = [[o.a, s.a, "a"], [o.b, s.b, "b"], [o.c, s.c, "c"], [o.d, s.c, "d"]] as const;
  for (const [r, f, w] of frags) {
    if (r.length !== f.regs) {
      cx.fail(o, `${w} has ${r.length} registers, ${s.name} takes ${f.regs}`);
    }
  }
  for (const [r, f, w] of frags) for (const x of r) cx.is(o, x, only(f.regType), w);
  cx.uniform(o, path, "warp-collective mma", "warpgroup");
};

/** Warpgroup operations: a target with wgmma, whole warpgroups, uniform control flow. */
function warpgroupOp(o: Op, cx: Checker, path: Path, what: string): void {
  if (!targetHas(cx.k.target, "wgmma")) cx.fail(o, `${what} needs sm90 (target ${cx.k.target})`);
  if (cx.k.threads % 128 !== 0) {
    cx.fail(o, `${what} is warpgroup-collective: ${cx.k.threads} threads are not whole warpgroups`);
  }
  cx.uniform(o, path, what, "warpgroup");
}

/** sm90's barriers and copies (mbarrier, TMA, setmaxnreg): a target with TMA. */
function hopperOp(o: Op, cx: Checker, what: string): void {
  if (!targetHas(cx.k.target, "tma")) cx.fail(o, `${what} needs sm90 (target ${cx.k.target})`);
}

/** A warpgroup MMA: a known row, its accumulator count and type, u32 shared addresses. */
const wgmma: Check<"wgmma"> = (o, cx, path) => {
  const s = WGMMA_BY_NAME.get(o.shape) ?? cx.fail(o, `unknown wgmma shape "${o.shape}"`);
  if (o.d.length !== s.accRegs) {
    cx.fail(o, `d has ${o.d.length} registers, ${s.name} takes ${s.accRegs}`);
  }
  for (const x of o.d) cx.is(o, x, only(s.accRegType), "d");
  cx.is(o, o.a, U32, "A's address");
  cx.is(o, o.b, U32, "B's address");
  warpgroupOp(o, cx, path, "wgmma");
};

/** A cp.async's operands, checked after its size and offset. */
const cpasyncOperands = operands<"cpasync">(
  ["dst", U32, "destination address"],
  ["src", U64, "source address"],
  ["srcBytes", U32, "source size"],
);

/** The check of each operation kind. One call site serves them all: the verifier does a
 * few operand checks per operation, so a megamorphic call costs it little (the PTX
 * printer, where it would not, dispatches by a switch instead). */
const CHECKS: { readonly [K in Op["op"]]: Check<K> } = {
  param: (o, cx) => {
    const p = cx.param(o, o.name);
    if (p.ptx === "tmap") cx.fail(o, `tensor map "${p.name}" is read by TMA copies only`);
    cx.is(o, o.dst, only(p.ptx), "destination");
  },
  sreg: operands<"sreg">(["dst", U32, "destination"]),
  smembase: operands<"smembase">(["dst", U32, "destination"]),
  mov: (o, cx) => cx.is(o, o.src, only(o.dst.type), "source"),
  bin: (o, cx) => {
    const t = only(o.type);
    cx.is(o, o.dst, t, "destination");
    cx.is(o, o.a, t, "a");
    cx.is(o, o.b, o.fn === "shl" || o.fn === "shr" ? shiftAmount(o.type) : t, "b");
    if (o.fn === "div" || o.fn === "rem") {
      if (o.b.kind === "imm" && o.b.value === 0) cx.fail(o, "division by zero");
    }
  },
  mad: operands<"mad">(
    ["dst", OWN, "destination"],
    ["a", OWN, "a"],
    ["b", OWN, "b"],
    ["c", OWN, "c"],
  ),
  mulwide: operands<"mulwide">(["dst", U64, "destination"], ["a", U32, "a"], ["b", U32, "b"]),
  un: (o, cx) => {
    cx.is(o, o.dst, o.fn === "popc" ? U32 : only(o.type), "destination");
    cx.is(o, o.src, only(o.type), "source");
  },
  setp: operands<"setp">(["dst", PRED, "destination"], ["a", OWN, "a"], ["b", OWN, "b"]),
  selp: operands<"selp">(
    ["dst", OWN, "destination"],
    ["a", OWN, "a"],
    ["b", OWN, "b"],
    ["p", PRED, "predicate"],
  ),
  cvt: (o, cx) => {
    const [d, s] = cvtRegs(o.kind);
    cx.is(o, o.dst, d, "destination");
    cx.is(o, o.src, s, "source");
  },
  pack: operands<"pack">(["dst", B32, "destination"], ["lo", B16, "lo"], ["hi", B16, "hi"]),
  unpack: operands<"unpack">(["src", B32, "source"], ["lo", B16, "lo"], ["hi", B16, "hi"]),
  cpasync: (o, cx) => {
    if (o.cache === "cg" && o.bytes !== 16) cx.fail(o, "cp.async.cg copies 16 bytes");
    cx.inSmem(o, o.dstOffset, o.bytes);
    cpasyncOperands(o, cx, []);
    cx.policy(o, o.policy);
    cx.waited = false;
  },
  createpolicy: (o, cx) => {
    if (!targetHas(cx.k.target, "createpolicy")) {
      cx.fail(o, `createpolicy needs sm80 (target ${cx.k.target})`);
    }
    if (!Object.hasOwn(CACHE_POLICIES, o.priority)) {
      cx.fail(o, `unknown eviction priority "${o.priority}"`);
    }
    cx.is(o, o.dst, U64, "destination");
    cx.policies.add(o.dst.id);
  },
  prefetch: operands<"prefetch">(["addr", U64, "address"]),
  commit: (_o, cx) => {
    cx.commits++;
  },
  wait: (o, cx) => {
    if (o.n < 0) cx.fail(o, "negative wait depth");
    if (o.n === 0) cx.waited = true;
  },
  bar: (o, cx, path) => {
    if (o.named === undefined) return cx.uniform(o, path, "barrier");
    const { id, threads } = o.named;
    if (!Number.isInteger(id) || id < 1 || id > 15) {
      cx.fail(o, `named barrier ${id} is not 1 .. 15`);
    }
    if (threads % 32 !== 0 || threads < 32 || threads > cx.k.threads) {
      cx.fail(o, `named barrier for ${threads} threads: a multiple of 32 up to ${cx.k.threads}`);
    }
  },
  ldmatrix: (o, cx) => {
    if (o.dst.length !== o.num) cx.fail(o, `ldmatrix.x${o.num} writes ${o.num} registers`);
    cx.inSmem(o, o.offset, 16);
    for (const r of o.dst) cx.is(o, r, B32, "destination");
    cx.is(o, o.addr, U32, "address");
  },
  lds: access,
  ldg: (o, cx) => {
    access(o, cx);
    cx.policy(o, o.policy);
  },
  sts: access,
  stg: access,
  mma,
  wgmma,
  wgfence: (o, cx, path) => warpgroupOp(o, cx, path, "wgmma.fence"),
  wgcommit: (o, cx, path) => warpgroupOp(o, cx, path, "wgmma.commit_group"),
  wgwait: (o, cx, path) => {
    if (o.n < 0 || !Number.isInteger(o.n)) cx.fail(o, "bad wgmma wait depth");
    warpgroupOp(o, cx, path, "wgmma.wait_group");
  },
  proxyfence: () => {},
  mbarinit: (o, cx) => {
    hopperOp(o, cx, "mbarrier.init");
    if (!Number.isInteger(o.count) || o.count < 1) cx.fail(o, `bad arrival count ${o.count}`);
    cx.is(o, o.addr, U32, "barrier address");
  },
  mbararrive: (o, cx) => {
    hopperOp(o, cx, "mbarrier.arrive");
    if (o.tx !== undefined && (!Number.isInteger(o.tx) || o.tx < 0)) {
      cx.fail(o, `bad transaction bytes ${o.tx}`);
    }
    cx.is(o, o.addr, U32, "barrier address");
  },
  mbarwait: (o, cx) => {
    hopperOp(o, cx, "mbarrier.try_wait");
    cx.is(o, o.addr, U32, "barrier address");
    cx.is(o, o.parity, U32, "parity");
    if (o.parity.kind === "imm" && o.parity.value !== 0 && o.parity.value !== 1) {
      cx.fail(o, `parity ${o.parity.value} is not 0 or 1`);
    }
  },
  mbarfence: (o, cx) => hopperOp(o, cx, "fence.mbarrier_init"),
  tma: (o, cx) => {
    hopperOp(o, cx, "cp.async.bulk.tensor");
    const p = cx.param(o, o.map);
    if (p.kind !== "tensormap" || p.tmap === undefined) {
      cx.fail(o, `"${o.map}" is not a tensor-map parameter`);
    }
    if (o.coords.length !== p.tmap!.dims.length) {
      cx.fail(o, `${o.coords.length} coordinates for a map of rank ${p.tmap!.dims.length}`);
    }
    cx.is(o, o.dst, U32, "shared address");
    cx.is(o, o.bar, U32, "barrier address");
    for (const c of o.coords) cx.is(o, c, COORD, "coordinate");
    cx.policy(o, o.policy);
  },
  tmapprefetch: (o, cx) => {
    hopperOp(o, cx, "prefetch.tensormap");
    const p = cx.param(o, o.map);
    if (p.kind !== "tensormap" || p.tmap === undefined) {
      cx.fail(o, `"${o.map}" is not a tensor-map parameter`);
    }
  },
  griddep: (o, cx) => {
    if (!targetHas(cx.k.target, "griddepcontrol")) {
      cx.fail(o, `griddepcontrol needs sm90 (target ${cx.k.target})`);
    }
    for (const name of o.early ?? []) {
      if (o.action !== "wait") cx.fail(o, `griddep.${o.action} names tensors read early`);
      if (!cx.k.params.some((p) => p.name === name && p.kind === "tensor")) {
        cx.fail(o, `griddep.wait: "${name}", read before it, is no tensor parameter`);
      }
    }
  },
  setmaxnreg: (o, cx, path) => {
    hopperOp(o, cx, "setmaxnreg");
    if (!Number.isInteger(o.regs) || o.regs < 24 || o.regs > 256 || o.regs % 8 !== 0) {
      cx.fail(o, `setmaxnreg ${o.regs}: 24 .. 256, a multiple of 8`);
    }
    if (cx.k.threads % 128 !== 0) {
      cx.fail(
        o,
        `setmaxnreg is warpgroup-collective: ${cx.k.threads} threads are not whole warpgroups`,
      );
    }
    cx.uniform(o, path, "setmaxnreg", "warpgroup");
  },
  for: operands<"for">(
    ["iv", U32, "induction variable"],
    ["from", U32, "start"],
    ["to", U32, "end"],
  ),
  if: operands<"if">(["cond", PRED, "condition"]),
  atom: operands<"atom">(
    ["dst", U32, "destination"],
    ["addr", U64, "address"],
    ["b", U32, "operand"],
  ),
  fence: () => {},
  comment: () => {},
};

/**
 * Verifies a kernel-IR program.
 *
 * @param k The kernel.
 * @throws Error naming the first broken invariant and the operation.
 */
export function verifyKernel(k: Kernel): void {
  const cx = new Checker(k);
  walkOps(k.body, (o, path) => {
    const g = "guard" in o ? o.guard : undefined;
    if (g !== undefined) cx.is(o, g.pred, PRED, "guard");
    (CHECKS[o.op] as Check<Op["op"]>)(o, cx, path);
  });
  if (cx.commits > 0 && !cx.waited) {
    throw new Error(
      `Kernel IR verifier: kernel "${k.name}": cp.async groups are not drained by a final wait 0`,
    );
  }
}
