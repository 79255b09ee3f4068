/**
 * Rendering the memory, synchronisation and tensor-core operations: the
 * `cp.async` family, prefetches, barriers and fences, `ldmatrix`, shared and
 * global loads and stores, atomics, and `mma` (its fragments checked against
 * the shape's row of ir/mma_table.ts).
 *
 * @module
 */

import type { Reg } from "../../ir/kernel.ts";
import type { TensorMapSpec } from "../../ir/tensor_map.ts";
import { CACHE_POLICIES } from "../../ir/cache_policy.ts";
import { SETMAXNREG, setMaxNRegValid } from "../../ir/kernel_sm90.ts";
import { regName } from "../../ir/print_kernel.ts";
import { MMA_SHAPES, type MmaShape } from "../../ir/mma_table.ts";
import { sparseMmaByName } from "../../ir/mma_sparse.ts";
import { MMA_OPERAND_REGS, OP_TEMPLATES, PtxError, type RegClass } from "./_tables.ts";
import {
  addr,
  expect,
  fitsAll,
  guardText,
  memOperands,
  NO_HOLES,
  opd,
  regList,
  uniformVector,
} from "./_operands.ts";
import { type Ctx, put, putLine, type Renderers, type Simple } from "./_context.ts";
import { WGMMA_BY_NAME, wgmmaDescriptorWords, wgmmaOperands } from "../../ir/wgmma_table.ts";
import { paramSymbol, type RegOpName } from "./_render_regs.ts";

const MMA_BY_NAME: ReadonlyMap<string, MmaShape> = new Map(MMA_SHAPES.map((s) => [s.name, s]));

/**
 * Opens a scope whose `%tm1` holds the generic address of tensor map parameter `name` (the form
 * TMA copies and `prefetch.tensormap` take; the caller closes the scope).
 *
 * @param what The operation, for the error where `name` is no tensor map.
 * @returns The map.
 */
function openMapScope(cx: Ctx, name: string, what: string): TensorMapSpec {
  const p = cx.params.get(name);
  if (p === undefined || p.kind !== "tensormap" || p.tmap === undefined) {
    throw new PtxError(`${what} of "${name}": not a tensor-map parameter`);
  }
  putLine(cx, "{", NO_HOLES);
  put(cx, OP_TEMPLATES.tmaScope, NO_HOLES);
  put(cx, OP_TEMPLATES.tmaMap, { map: paramSymbol(p) });
  put(cx, OP_TEMPLATES.tmaCvta, NO_HOLES);
  return p.tmap;
}

/** The renderer of each memory, synchronisation and `mma` operation. */
export const MEM_RENDER: Renderers<Exclude<Simple["op"], RegOpName>> = {
  cpasync(o, cx) {
    if (o.cache === "cg" && o.bytes !== 16) {
      throw new PtxError(`cp.async.cg copies 16 bytes, not ${o.bytes}`);
    }
    expect("cp.async shared address", "i32", o.dst);
    expect("cp.async global address", "u64", o.src);
    expect("cp.async source size", "i32", o.srcBytes);
    const c = cacheHint("cp.async", o.policy);
    put(cx, OP_TEMPLATES.cpasync, {
      cache: o.cache,
      hint: c.hint + (o.prefetch === undefined ? "" : `.L2::${o.prefetch}B`),
      dst: addr(o.dst, o.dstOffset),
      src: regName(o.src),
      bytes: String(o.bytes),
      n: opd(o.srcBytes, "u32"),
      policy: c.policy,
    });
  },
  createpolicy(o, cx) {
    expect("createpolicy destination", "u64", o.dst);
    if (!Object.hasOwn(CACHE_POLICIES, o.priority)) {
      throw new PtxError(`createpolicy: unknown eviction priority "${o.priority}"`);
    }
    put(cx, OP_TEMPLATES.createpolicy, { priority: o.priority, d: regName(o.dst) });
  },
  prefetch(o, cx) {
    expect("prefetch address", "u64", o.addr);
    put(cx, OP_TEMPLATES.prefetch, {
      evict: o.evictLast === true ? "::evict_last" : "",
      addr: regName(o.addr),
    });
  },
  commit: (_o, cx) => put(cx, OP_TEMPLATES.commit, NO_HOLES),
  wait(o, cx) {
    if (!Number.isSafeInteger(o.n) || o.n < 0) {
      throw new PtxError(`cp.async.wait_group ${o.n}: the count must be a non-negative integer`);
    }
    put(cx, OP_TEMPLATES.wait, { n: String(o.n) });
  },
  bar(o, cx) {
    if (o.cluster === true) {
      if (o.named !== undefined) throw new PtxError("A barrier both named and of the cluster");
      if (cx.divergent) throw new PtxError("barrier.cluster inside a non-uniform if");
      put(cx, OP_TEMPLATES.clusterArrive, NO_HOLES);
      put(cx, OP_TEMPLATES.clusterWait, NO_HOLES);
      return;
    }
    if (o.named !== undefined) {
      const { id, threads } = o.named;
      if (!Number.isInteger(id) || id < 1 || id > 15) {
        throw new PtxError(`bar.sync ${id}: a named barrier is 1 .. 15`);
      }
      if (!Number.isInteger(threads) || threads < 32 || threads % 32 !== 0) {
        throw new PtxError(`bar.sync ${id}, ${threads}: the count is a positive multiple of 32`);
      }
      put(cx, OP_TEMPLATES.namedBar, { id: String(id), threads: String(threads) });
      return;
    }
    if (cx.divergent) {
      throw new PtxError("bar.sync inside a non-uniform if");
    }
    put(cx, OP_TEMPLATES.bar, NO_HOLES);
  },
  ldmatrix(o, cx) {
    if (o.dst.length !== o.num) {
      throw new PtxError(`ldmatrix.x${o.num} with ${o.dst.length} destination registers`);
    }
    if (!fitsAll("b32", o.dst)) expect("ldmatrix", "b32", ...o.dst);
    uniformVector("ldmatrix", o.dst);
    expect("ldmatrix address", "i32", o.addr);
    put(cx, OP_TEMPLATES.ldmatrix, {
      num: String(o.num),
      trans: o.trans ? ".trans" : "",
      d: regList(o.dst),
      addr: addr(o.addr, o.offset),
    });
  },
  lds(o, cx) {
    expect("ld.shared address", "i32", o.addr);
    const m = memOperands("ld.shared", o.width, o.dst);
    put(cx, OP_TEMPLATES.lds, { v: m.v, w: m.w, d: m.list, addr: addr(o.addr, o.offset) });
  },
  sts(o, cx) {
    expect("st.shared address", "i32", o.addr);
    const m = memOperands("st.shared", o.width, o.src);
    put(cx, OP_TEMPLATES.sts, { v: m.v, w: m.w, a: m.list, addr: addr(o.addr, o.offset) });
  },
  ldg(o, cx) {
    expect("ld.global address", "u64", o.addr);
    const m = memOperands("ld.global", o.width, o.dst);
    const c = cacheHint("ld.global", o.policy);
    put(cx, OP_TEMPLATES.ldg, {
      cache: o.cache === "cg" ? ".cg" : "",
      hint: c.hint,
      v: m.v,
      w: m.w,
      d: m.list,
      addr: addr(o.addr, o.offset),
      policy: c.policy,
    });
  },
  atom(o, cx) {
    expect("atom.global address", "u64", o.addr);
    expect("atom.global.add.u32", "i32", o.dst, o.b);
    put(cx, OP_TEMPLATES.atom, {
      d: regName(o.dst),
      addr: addr(o.addr, o.offset),
      b: opd(o.b, "u32"),
    });
  },
  fence(_o, cx) {
    put(cx, OP_TEMPLATES.fence, NO_HOLES);
  },
  stg(o, cx) {
    expect("st.global address", "u64", o.addr);
    const m = memOperands("st.global", o.width, o.src);
    put(cx, OP_TEMPLATES.stg, { v: m.v, w: m.w, a: m.list, addr: addr(o.addr, o.offset) });
  },
  mma(o, cx) {
    const sp = sparseMmaByName(o.shape);
    const row = sp ?? MMA_BY_NAME.get(o.shape);
    if (row === undefined) throw new PtxError(`Unknown mma shape "${o.shape}"`);
    const acc = MMA_OPERAND_REGS[row.c.regType];
    if (sp !== undefined) {
      if (o.meta === undefined) throw new PtxError(`mma ${sp.name}: no metadata register`);
      expect(`mma ${sp.name} metadata`, "x32", o.meta);
      const sel = o.selector;
      if (sel === undefined || !sp.meta.selectors.includes(sel)) {
        throw new PtxError(`mma ${sp.name}: sparsity selector ${sel} not in ${sp.meta.selectors}`);
      }
      put(cx, OP_TEMPLATES.mmaSp, {
        mn: o.ordered === true ? sp.ptxOrdered : sp.ptx,
        d: mmaFrag(sp, "d", o.d, sp.c.regs, acc),
        a: mmaFrag(sp, "a", o.a, sp.a.regs, MMA_OPERAND_REGS[sp.a.regType]),
        b: mmaFrag(sp, "b", o.b, sp.b.regs, MMA_OPERAND_REGS[sp.b.regType]),
        c: mmaFrag(sp, "c", o.c, sp.c.regs, acc),
        e: regName(o.meta),
        f: `0x${sel.toString(16)}`,
      });
      return;
    }
    if (o.meta !== undefined || o.selector !== undefined || o.ordered !== undefined) {
      throw new PtxError(`mma ${row.name} is dense: no metadata, selector or ordered_metadata`);
    }
    put(cx, OP_TEMPLATES.mma, {
      mn: row.ptx,
      d: mmaFrag(row, "d", o.d, row.c.regs, acc),
      a: mmaFrag(row, "a", o.a, row.a.regs, MMA_OPERAND_REGS[row.a.regType]),
      b: mmaFrag(row, "b", o.b, row.b.regs, MMA_OPERAND_REGS[row.b.regType]),
      c: mmaFrag(row, "c", o.c, row.c.regs, acc),
    });
  },
  wgmma(o, cx) {
    const row = WGMMA_BY_NAME.get(o.shape);
    if (row === undefined) throw new PtxError(`Unknown wgmma shape "${o.shape}"`);
    if (o.d.length !== row.accRegs) {
      throw new PtxError(`wgmma ${row.name}: d has ${o.d.length} registers, takes ${row.accRegs}`);
    }
    expect(`wgmma ${row.name} accumulators`, MMA_OPERAND_REGS[row.accRegType], ...o.d);
    expect(`wgmma ${row.name} tile addresses`, "i32", o.a, o.b);
    const w = wgmmaDescriptorWords();
    putLine(cx, "{", NO_HOLES);
    put(cx, OP_TEMPLATES.wgmmaScope, NO_HOLES);
    put(cx, OP_TEMPLATES.wgmmaHi, { hi: `0x${w.hi.toString(16)}` });
    [o.a, o.b].forEach((r, i) => {
      const at = { i: String(i), addr: regName(r), fixed: `0x${w.loFixed.toString(16)}` };
      put(cx, OP_TEMPLATES.wgmmaLo, at);
      put(cx, OP_TEMPLATES.wgmmaLoOr, at);
      put(cx, OP_TEMPLATES.wgmmaDesc, at);
    });
    put(cx, OP_TEMPLATES.wgmma, {
      mn: row.ptx,
      d: regList(o.d),
      rest: wgmmaOperands(row, "%wgdesc0", "%wgdesc1", String(o.scaleD), false),
    });
    putLine(cx, "}", NO_HOLES);
  },
  wgfence: (_o, cx) => put(cx, OP_TEMPLATES.wgfence, NO_HOLES),
  wgcommit: (_o, cx) => put(cx, OP_TEMPLATES.wgcommit, NO_HOLES),
  wgwait(o, cx) {
    if (!Number.isSafeInteger(o.n) || o.n < 0) {
      throw new PtxError(`wgmma.wait_group ${o.n}: the count must be a non-negative integer`);
    }
    put(cx, OP_TEMPLATES.wgwait, { n: String(o.n) });
  },
  proxyfence: (_o, cx) => put(cx, OP_TEMPLATES.proxyfence, NO_HOLES),
  mbarinit(o, cx) {
    expect("mbarrier address", "i32", o.addr);
    if (!Number.isInteger(o.count) || o.count < 1 || o.count >= 2 ** 20) {
      throw new PtxError(`mbarrier.init count ${o.count}: 1 .. 2^20 - 1`);
    }
    put(cx, OP_TEMPLATES.mbarinit, { addr: regName(o.addr), count: String(o.count) });
  },
  mbararrive(o, cx) {
    expect("mbarrier address", "i32", o.addr);
    if (o.cta !== undefined) {
      if (o.tx !== undefined) throw new PtxError("A remote mbarrier arrival with expect_tx");
      expect("mbarrier CTA rank", "i32", o.cta);
      // The scope's lines unguarded, the arrival under the operation's guard.
      const guarded = cx.pre;
      const indent = guarded.slice(0, guarded.length - guardText(o.guard).length);
      cx.pre = indent;
      putLine(cx, "{", NO_HOLES);
      put(cx, OP_TEMPLATES.mbarRemoteScope, NO_HOLES);
      put(cx, OP_TEMPLATES.mbarMapa, { addr: regName(o.addr), cta: opd(o.cta, "u32") });
      cx.pre = guarded;
      put(cx, OP_TEMPLATES.mbarRemote, NO_HOLES);
      cx.pre = indent;
      putLine(cx, "}", NO_HOLES);
      return;
    }
    if (o.tx === undefined) {
      put(cx, OP_TEMPLATES.mbararrive, { addr: regName(o.addr) });
      return;
    }
    if (!Number.isInteger(o.tx) || o.tx < 0 || o.tx >= 2 ** 20) {
      throw new PtxError(`mbarrier expect_tx ${o.tx}: 0 .. 2^20 - 1 bytes`);
    }
    put(cx, OP_TEMPLATES.mbarexpect, { addr: regName(o.addr), tx: String(o.tx) });
  },
  mbarwait(o, cx) {
    expect("mbarrier address", "i32", o.addr);
    expect("mbarrier parity", "i32", o.parity);
    const top = cx.labels++;
    putLine(cx, "{", NO_HOLES);
    put(cx, OP_TEMPLATES.mbarScope, NO_HOLES);
    cx.text += `$L_${top}:\n`;
    put(cx, OP_TEMPLATES.mbartry, { addr: regName(o.addr), parity: opd(o.parity, "u32") });
    put(cx, OP_TEMPLATES.mbarretry, { label: `$L_${top}` });
    putLine(cx, "}", NO_HOLES);
  },
  mbarfence: (_o, cx) => put(cx, OP_TEMPLATES.mbarfence, NO_HOLES),
  tmapprefetch(o, cx) {
    openMapScope(cx, o.map, "Prefetch");
    put(cx, OP_TEMPLATES.tmapPrefetch, NO_HOLES);
    putLine(cx, "}", NO_HOLES);
  },
  tma(o, cx) {
    const rank = openMapScope(cx, o.map, "TMA copy").dims.length;
    if (o.coords.length !== rank || rank < 1 || rank > 5) {
      throw new PtxError(
        `TMA copy of "${o.map}": ${o.coords.length} coordinates, the map has ${rank}`,
      );
    }
    expect("TMA shared address", "i32", o.dst);
    expect("TMA barrier", "i32", o.bar);
    expect("TMA coordinates", "i32", ...o.coords);
    const holes = {
      rank: `${rank}d`,
      dst: regName(o.dst),
      coords: o.coords.map((c) => opd(c, "s32")).join(", "),
      bar: regName(o.bar),
      ...cacheHint("TMA copy", o.policy),
    };
    if (o.multicast === undefined) put(cx, OP_TEMPLATES.tma, holes);
    else {
      if (!Number.isInteger(o.multicast) || o.multicast < 1 || o.multicast >= 2 ** 16) {
        throw new PtxError(`TMA multicast mask ${o.multicast}: 1 .. 2^16 - 1`);
      }
      put(cx, OP_TEMPLATES.tmaMaskScope, NO_HOLES);
      put(cx, OP_TEMPLATES.tmaMask, { mask: String(o.multicast) });
      put(cx, OP_TEMPLATES.tmaMulticast, holes);
    }
    putLine(cx, "}", NO_HOLES);
  },
  griddep(o, cx) {
    put(cx, o.action === "wait" ? OP_TEMPLATES.griddepwait : OP_TEMPLATES.griddeplaunch, NO_HOLES);
  },
  setmaxnreg(o, cx) {
    if (!setMaxNRegValid(o.regs)) {
      const { min, max, step } = SETMAXNREG;
      throw new PtxError(`setmaxnreg ${o.regs}: ${min} .. ${max}, a multiple of ${step}`);
    }
    put(cx, OP_TEMPLATES.setmaxnreg, { action: o.action, regs: String(o.regs) });
  },
};

/** A copy's `.L2::cache_hint` qualifier and its policy operand (`, %rdN`, last), both empty
 * without a policy; the register checked to be a u64. */
function cacheHint(what: string, policy: Reg | undefined): { hint: string; policy: string } {
  if (policy === undefined) return NO_CACHE_HINT;
  expect(`${what} cache policy`, "u64", policy);
  return { hint: ".L2::cache_hint", policy: `, ${regName(policy)}` };
}

/** {@link cacheHint} of a copy without a policy. */
const NO_CACHE_HINT = Object.freeze({ hint: "", policy: "" });

/** One `mma` fragment operand, `{%b1, %b2, ...}`, checked against the shape. */
function mmaFrag(
  row: MmaShape,
  what: string,
  rs: readonly Reg[],
  regs: number,
  cls: RegClass,
): string {
  if (rs.length !== regs) {
    throw new PtxError(`mma ${row.name}: ${what} has ${rs.length} registers, not ${regs}`);
  }
  if (!fitsAll(cls, rs)) expect(`mma ${row.name} ${what}`, cls, ...rs);
  return regList(rs);
}
