/**
 * sm90's mbarriers in the simulator (ir/kernel.ts: MbarInitOp, MbarArriveOp, MbarWaitOp,
 * MbarFenceOp), with the other synchronisation of warp-specialized kernels: named barriers
 * (`BarOp.named`) and `setmaxnreg`.
 *
 * A barrier lives at an 8-byte aligned shared address. Its state: the arrivals a phase
 * expects (`count`), the arrivals still pending in the current phase, the phase's
 * transaction bytes (signed: a TMA copy's complete_tx may come before the arrive.expect_tx
 * that announces it), and the number of completed phases (the current phase's index, whose
 * low bit is its parity). A phase completes when no arrival and no byte is pending; the next
 * one starts at once with `count` arrivals pending. A wait for parity P returns once the
 * current phase's parity differs from P, and records, per thread, the phases it has seen
 * complete: what makes a TMA copy's bytes visible to it (_tma.ts).
 *
 * Errors ({@link SimError}): a barrier used before `mbarinit` or initialised twice, a bad
 * address or count, an arrival past the count of a phase still waiting for bytes, more
 * bytes completed than the phase expects, an `ld`/`st.shared` of a live barrier's bytes,
 * a named barrier reached by another number of threads than it names, and `setmaxnreg` by
 * a partial warpgroup or asking more registers than the CTA was launched with (an
 * `inc` that would wait forever). A wait that can never return is a deadlock (_roles.ts).
 *
 * @module
 */

import type { BarOp, MbarArriveOp, MbarInitOp, MbarWaitOp, SetMaxNRegOp } from "../../ir/kernel.ts";
import { SETMAXNREG, setMaxNRegValid } from "../../ir/kernel_sm90.ts";
import { WARPGROUP_THREADS } from "../../ir/wgmma_table.ts";
import { remoteAddress } from "./_cluster.ts";
import type { Machine, Mask, OpInfo, Run } from "./_machine.ts";
import { SimError } from "./types.ts";
import { launchRegisters } from "../../ir/target.ts";

/** Threads of a warpgroup (`setmaxnreg`'s unit). */
const WG = WARPGROUP_THREADS;

/** What a blocked coroutine yields: whether it could go on now, and what it waits for. */
export interface Blocked {
  /** Whether the wait would now return. */
  readonly ready: () => boolean;
  /** The waits, in words (for a deadlock's message). */
  readonly describe: () => string;
  /** The operation and a waiting thread (where a deadlock is reported). */
  readonly idx: number;
  /** See {@link Blocked.idx}. */
  readonly thread: number;
}

function hex(n: number): string {
  return `0x${n.toString(16)}`;
}

function whereStatic(info: OpInfo) {
  return { op: info.text, path: info.path, line: info.line, block: null, warp: null, lane: null };
}

/** The mbarriers of the current block. */
export class MbarState {
  /** Per 8-byte word of shared memory: 1 + the index of the live barrier there, or 0. */
  readonly live: Int32Array;
  /** Per barrier (by index): its shared address. */
  readonly addr: number[] = [];
  /** Arrivals a phase expects. */
  readonly count: number[] = [];
  /** Arrivals pending in the current phase. */
  readonly pending: number[] = [];
  /** Transaction bytes pending in the current phase (signed). */
  readonly tx: number[] = [];
  /** Completed phases (the current phase's index). */
  readonly phase: number[] = [];
  /** Per barrier and thread: the completed phases the thread has waited for. */
  readonly observed: Int32Array[] = [];
  /** Per barrier: the most completed phases any thread has waited for. */
  readonly seen: number[] = [];
  /** The initialising operation, thread, and the hazard epoch of the init. */
  readonly initOp: number[] = [];
  readonly initThread: number[] = [];
  readonly initEpoch: number[] = [];
  /** Whether the initialising thread ran `mbarfence` since. */
  readonly fenced: boolean[] = [];
  /** A cluster kernel's: whether a cluster barrier (`bar` with `cluster`) came since the
   * init, so that the cluster's other CTAs may use the barrier (_cluster.ts). */
  readonly published: boolean[] = [];
  /** Polls of a wait that found its phase incomplete. */
  blocked = 0;
  /** Phases completed in the launch (a role gives way when an operation completed one). */
  completions = 0;

  /**
   * @param M The machine (its shared memory's size and its threads).
   */
  constructor(readonly M: Machine) {
    this.live = new Int32Array(Math.ceil(M.smemSize / 8));
  }

  /** Forgets every barrier (a new block). */
  startBlock(): void {
    this.live.fill(0);
    for (
      const a of [
        this.addr,
        this.count,
        this.pending,
        this.tx,
        this.phase,
        this.observed,
        this.seen,
        this.initOp,
        this.initThread,
        this.initEpoch,
        this.fenced,
        this.published,
      ]
    ) a.length = 0;
  }

  /**
   * The live barrier at `a`, for thread `t` of operation `idx`; raises for a misaligned or
   * out-of-bounds address or one where no barrier was initialised.
   */
  at(idx: number, t: number, a: number, what: string): number {
    const M = this.M;
    M.sCheck(idx, t, a, 8, 8, `${what} barrier`);
    const b = this.live[a >> 3]! - 1;
    if (b < 0) {
      M.fail(idx, t, `${what} of the mbarrier at shared ${hex(a)}, which is not initialised`);
    }
    return b;
  }

  /**
   * The live barrier at offset `a` of thread `t`'s CTA's window in the window of the
   * cluster's CTA of rank `q` (a remote arrival or a multicast copy's completion); raises
   * for `a` outside `t`'s window, a rank outside the cluster, no barrier there, or (another
   * CTA's) one that no cluster barrier has published since its init.
   */
  atRemote(idx: number, t: number, a: number, q: number, what: string): number {
    const M = this.M;
    M.sCheck(idx, t, a, 8, 8, `${what} barrier`);
    const ra = remoteAddress(M, idx, t, a, q, what);
    const b = this.live[ra >> 3]! - 1;
    const r = Math.floor(t / M.cl.P);
    if (b < 0) {
      M.fail(
        idx,
        t,
        `${what} of the mbarrier at shared ${hex(ra)} of CTA rank ${q}, which is not initialised`,
      );
    }
    if (q !== r && !this.published[b]) {
      M.fail(
        idx,
        t,
        `${what} from CTA rank ${r} reaches ${
          this.describe(b)
        }, whose mbarrier.init no cluster barrier (barrier.cluster) has ordered before it: the peer may not have initialised it yet`,
      );
    }
    return b;
  }

  /** Raises when `[a, a + len)` touches a live barrier's bytes (anything but the mbarrier
   * operations accessing them). */
  liveCheck(idx: number, t: number, a: number, len: number, what: string): void {
    for (let x = a >> 3; x <= (a + len - 1) >> 3; x++) {
      if (this.live[x] !== 0) {
        this.M.fail(idx, t, `${what} touches the bytes of ${this.describe(this.live[x]! - 1)}`);
      }
    }
  }

  /** The barrier's state in words. */
  describe(b: number): string {
    const cl = this.M.cl;
    const cta = cl.N === 1 ? "" : ` of CTA rank ${Math.floor(this.addr[b]! / cl.SS)}`;
    return `the mbarrier at shared ${hex(this.addr[b]!)}${cta} (in phase ${this.phase[b]}, parity ${
      this.phase[b]! & 1
    }: ${this.pending[b]} of ${this.count[b]} arrivals and ${
      this.tx[b]
    } transaction bytes pending)`;
  }

  /** A use of barrier `b` by thread `t`: an `unpublished-mbarrier` hazard when another warp
   * than the initialising one uses it with no `bar` since its init, or (`tma`) when its init
   * was not fenced. */
  use(idx: number, t: number, b: number, tma: boolean): void {
    const hz = this.M.hz;
    if (!hz.on) return;
    const it = this.initThread[b]!;
    if (tma && !this.fenced[b]) {
      hz.report(
        "unpublished-mbarrier",
        idx,
        [t >> 5, it >> 5],
        this.addr[b]!,
        `A TMA copy completes on the mbarrier at shared ${
          hex(this.addr[b]!)
        } whose mbarrier.init was not followed by fence.mbarrier_init (mbarfence) in thread ${it}`,
      );
    } else if ((t >> 5) !== (it >> 5) && hz.epoch === this.initEpoch[b]) {
      hz.report(
        "unpublished-mbarrier",
        idx,
        [t >> 5, it >> 5],
        this.addr[b]!,
        `Warp ${t >> 5} uses the mbarrier at shared ${
          hex(this.addr[b]!)
        } that thread ${it} initialised with no bar in between`,
      );
    }
  }

  /** One arrival of thread `t` on barrier `b`, after raising its transaction bytes by `tx`. */
  arrive(idx: number, t: number, b: number, tx: number): void {
    this.tx[b]! += tx;
    const p = --this.pending[b]!;
    if (p < 0) {
      this.pending[b] = 0;
      this.M.fail(
        idx,
        t,
        `An arrival past the ${this.count[b]} that a phase expects: ${this.describe(b)}`,
      );
    }
    this.#settle(idx, t, b);
  }

  /** A TMA copy's complete_tx of `bytes` on barrier `b`. */
  completeTx(idx: number, t: number, b: number, bytes: number): void {
    this.tx[b]! -= bytes;
    this.#settle(idx, t, b);
  }

  #settle(idx: number, t: number, b: number): void {
    if (this.pending[b] !== 0) return;
    const tx = this.tx[b]!;
    if (tx === 0) {
      this.phase[b]!++;
      this.completions++;
      this.pending[b] = this.count[b]!;
    } else if (tx < 0) {
      this.M.fail(
        idx,
        t,
        `More transaction bytes completed than expected: ${
          this.describe(b)
        } (every arrival is in, so no expect_tx can make up for them)${hazardsSoFar(this.M)}`,
      );
    }
  }
}

/** `mbarinit`: see {@link MbarInitOp}. Per active lane. */
export function compileMbarInit(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as MbarInitOp;
  const idx = info.index;
  if (!Number.isInteger(o.count) || o.count < 1 || o.count >= 2 ** 20) {
    throw new SimError(`Bad mbarrier count ${o.count} (1 .. 2^20 - 1)`, whereStatic(info));
  }
  const addr = M.view(o.addr, "u32", idx) as Uint32Array;
  const st = M.mb!;
  return () => {
    const m = mask.m;
    for (let t = 0; t < M.T; t++) {
      if (m[t] === 0) continue;
      const a = addr[t]!;
      M.sCheck(idx, t, a, 8, 8, "mbarrier.init");
      if (st.live[a >> 3] !== 0) {
        M.fail(idx, t, `mbarrier.init of ${st.describe(st.live[a >> 3]! - 1)}, already live`);
      }
      const b = st.addr.length;
      st.live[a >> 3] = b + 1;
      st.addr.push(a);
      st.count.push(o.count);
      st.pending.push(o.count);
      st.tx.push(0);
      st.phase.push(0);
      st.observed.push(new Int32Array(M.T));
      st.seen.push(0);
      st.initOp.push(idx);
      st.initThread.push(t);
      st.initEpoch.push(M.hz.epoch);
      st.fenced.push(false);
      st.published.push(false);
    }
    M.counts[idx]! += mask.warps;
  };
}

/** `mbarfence`: marks the barriers the executing threads initialised as fenced. */
export function compileMbarFence(M: Machine, info: OpInfo, mask: Mask): Run {
  const idx = info.index;
  return () => {
    const st = M.mb;
    if (st !== null) {
      for (let b = 0; b < st.addr.length; b++) {
        if (mask.m[st.initThread[b]!] !== 0) st.fenced[b] = true;
      }
    }
    M.counts[idx]! += mask.warps;
  };
}

/** `mbararrive`: see {@link MbarArriveOp}. One arrival per active lane whose guard holds. */
export function compileMbarArrive(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as MbarArriveOp;
  const idx = info.index;
  const tx = o.tx ?? 0;
  if (!Number.isInteger(tx) || tx < 0 || tx >= 2 ** 20) {
    throw new SimError(`Bad expect_tx byte count ${tx} (0 .. 2^20 - 1)`, whereStatic(info));
  }
  const addr = M.view(o.addr, "u32", idx) as Uint32Array;
  const gv = o.guard === undefined ? null : M.view(o.guard.pred, "pred", idx) as Uint8Array;
  const skip = o.guard?.negate === true ? 1 : 0;
  const st = M.mb!;
  if (o.cta !== undefined) return compileRemoteArrive(M, info, mask, addr, gv, skip);
  return () => {
    const m = mask.m;
    for (let t = 0; t < M.T; t++) {
      if (m[t] === 0 || (gv !== null && gv[t] === skip)) continue;
      const b = st.at(idx, t, addr[t]!, "mbarrier.arrive");
      st.use(idx, t, b, false);
      st.arrive(idx, t, b, tx);
    }
    M.counts[idx]! += mask.warps;
  };
}

/** `mbararrive` with `cta` (a cluster kernel's remote arrival, never with `tx`): one arrival
 * per active lane on the barrier at its address's offset in the CTA of rank `cta`. */
function compileRemoteArrive(
  M: Machine,
  info: OpInfo,
  mask: Mask,
  addr: Uint32Array,
  gv: Uint8Array | null,
  skip: number,
): Run {
  const o = info.op as MbarArriveOp;
  const idx = info.index;
  if (o.tx !== undefined) {
    throw new SimError("A remote mbarrier arrival (cta) cannot expect_tx", whereStatic(info));
  }
  const cv = o.cta!.kind === "reg" ? M.view(o.cta!, "u32", idx) as Uint32Array : null;
  const ci = o.cta!.kind === "imm" ? o.cta!.value : 0;
  const st = M.mb!;
  return () => {
    const m = mask.m;
    for (let t = 0; t < M.T; t++) {
      if (m[t] === 0 || (gv !== null && gv[t] === skip)) continue;
      const b = st.atRemote(idx, t, addr[t]!, cv === null ? ci : cv[t]!, "mbarrier.arrive");
      st.use(idx, t, b, false);
      st.arrive(idx, t, b, 0);
    }
    M.counts[idx]! += mask.warps;
  };
}

/** A compiled `mbarwait`: {@link MbarWait.ready} polls, {@link MbarWait.done} records what
 * the active lanes saw, {@link MbarWait.blocked} describes the wait. */
export interface MbarWait {
  readonly ready: () => boolean;
  readonly done: () => void;
  readonly blocked: Blocked;
}

/**
 * Compiles `mbarwait` (see {@link MbarWaitOp}): ready when, for every active lane, its
 * barrier's current phase has the other parity than the lane's `parity`.
 *
 * @param M The machine.
 * @param info The operation.
 * @param mask Its lanes.
 * @returns The poll, the completion and the description.
 */
export function compileMbarWait(M: Machine, info: OpInfo, mask: Mask): MbarWait {
  const o = info.op as MbarWaitOp;
  const idx = info.index;
  const addr = M.view(o.addr, "u32", idx) as Uint32Array;
  const pv = o.parity.kind === "reg" ? M.view(o.parity, "u32", idx) as Uint32Array : null;
  const pi = o.parity.kind === "imm" ? o.parity.value : 0;
  if (pv === null && pi !== 0 && pi !== 1) {
    throw new SimError(`mbarrier parity must be 0 or 1, not ${pi}`, whereStatic(info));
  }
  const st = M.mb!;
  const T = M.T;
  const parity = (t: number) => {
    const p = pv === null ? pi : pv[t]!;
    if (p !== 0 && p !== 1) M.fail(idx, t, `mbarrier parity must be 0 or 1, not ${p}`);
    return p;
  };
  const ready = () => {
    const m = mask.m;
    for (let t = 0; t < T; t++) {
      if (m[t] === 0) continue;
      const b = st.at(idx, t, addr[t]!, "mbarrier.try_wait");
      if ((st.phase[b]! & 1) === parity(t)) return false;
    }
    return true;
  };
  const done = () => {
    const m = mask.m;
    for (let t = 0; t < T; t++) {
      if (m[t] === 0) continue;
      const b = st.at(idx, t, addr[t]!, "mbarrier.try_wait");
      st.use(idx, t, b, false);
      st.observed[b]![t] = st.phase[b]!;
      if (st.seen[b]! < st.phase[b]!) st.seen[b] = st.phase[b]!;
    }
    M.counts[idx]! += mask.warps;
  };
  const first = () => {
    for (let t = 0; t < T; t++) if (mask.m[t] !== 0) return t;
    return -1;
  };
  const describe = () => {
    const m = mask.m;
    let lo = -1;
    let hi = -1;
    let t0 = -1;
    for (let t = 0; t < T; t++) {
      if (m[t] === 0) continue;
      if (lo < 0) lo = t;
      hi = t;
      const b = st.live[addr[t]! >> 3]! - 1;
      if (t0 < 0 && b >= 0 && (st.phase[b]! & 1) === parity(t)) t0 = t;
    }
    const t = t0 < 0 ? lo : t0;
    const b = st.live[addr[t]! >> 3]! - 1;
    const P = M.cl.P;
    const r = Math.floor(lo / P);
    const who = M.cl.N === 1
      ? `threads ${lo}..${hi}`
      : `threads ${lo - r * P}..${hi - r * P} of CTA rank ${r}`;
    return `"${info.text}" (op ${info.path}, line ${info.line}) in ${who} waits for the phase of parity ${
      parity(t)
    } of ${st.describe(b)}`;
  };
  return {
    ready,
    done,
    blocked: {
      ready,
      describe,
      idx,
      get thread() {
        return first();
      },
    },
  };
}

/**
 * A plain `mbarwait` (outside any concurrent roles): the block has no other thread that
 * could complete the phase, so a wait that does not return at once is a deadlock.
 *
 * @param M The machine.
 * @param info The operation.
 * @param mask Its lanes.
 * @returns The run.
 */
export function compilePlainMbarWait(M: Machine, info: OpInfo, mask: Mask): Run {
  const w = compileMbarWait(M, info, mask);
  return () => {
    if (!w.ready()) throw deadlock(M, [w.blocked]);
    w.done();
  };
}

/**
 * The error of a block whose every live thread waits: each wait with its barrier's state,
 * and the hazards recorded so far (often the cause).
 *
 * @param M The machine.
 * @param waits The blocked waits.
 * @returns The error to throw.
 */
export function deadlock(M: Machine, waits: readonly Blocked[]): SimError {
  const w = waits[0]!;
  return new SimError(
    `Deadlock: every thread still running waits on an mbarrier: ${
      waits.map((x) => x.describe()).join("; ")
    }${hazardsSoFar(M)}`,
    M.where(w.idx, w.thread),
  );
}

/** The kinds of the hazards recorded so far and their operations' lines (often the cause of
 * a deadlock or a stray transaction count), for an error's message; "" when none. */
function hazardsSoFar(M: Machine): string {
  const seen = new Set<string>();
  for (const h of M.hz.list) seen.add(`${h.kind} (line ${h.line})`);
  return seen.size === 0 ? "" : ` (hazards so far: ${[...seen].join(", ")})`;
}

/** `bar.sync id, threads` (BarOp.named): exactly `threads` threads reach it. */
export function compileNamedBar(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as BarOp;
  const { id, threads } = o.named!;
  const idx = info.index;
  if (!Number.isInteger(id) || id < 1 || id > 15) {
    throw new SimError(`Named barrier id ${id} is not 1 .. 15`, whereStatic(info));
  }
  const T = M.cl.T;
  if (!Number.isInteger(threads) || threads < 32 || threads % 32 !== 0 || threads > T) {
    throw new SimError(
      `Named barrier for ${threads} threads: not a multiple of 32 from 32 to the block's ${T}`,
      whereStatic(info),
    );
  }
  const { N, P } = M.cl;
  return () => {
    const m = mask.m;
    // Per CTA of a cluster (one CTA, P = T, for an ordinary kernel): every CTA that reaches
    // the barrier reaches it with `threads` threads.
    for (let r = 0; r < N; r++) {
      let n = 0;
      let first = -1;
      for (let t = r * P; t < (r + 1) * P; t++) {
        if (m[t] === 0) continue;
        n++;
        if (first < 0) first = t;
      }
      if (n !== threads && (n > 0 || N === 1)) {
        const cta = N === 1 ? "" : ` in CTA rank ${r}`;
        M.fail(
          idx,
          first,
          `Named barrier ${id} expects ${threads} threads but ${n} reach it${cta} (threads from ${
            first - r * P
          } on)`,
        );
      }
    }
    // The hazard epochs are block-wide: a named barrier orders every warp (a shortcut).
    M.hz.epoch++;
    M.counts[idx]! += mask.warps;
  };
}

/**
 * Whether the `setmaxnreg` asks of one CTA can all be met: each warpgroup's last ask (the
 * least, `SETMAXNREG.min`, for one that has not asked yet: it may still give registers back) over the registers
 * its block was launched with (ir/target.ts `launchRegisters`). A `setmaxnreg.inc` beyond that waits forever on the GPU.
 *
 * @returns The message of the failure, or null.
 */
function regAsksFit(M: Machine, cta: number): string | null {
  const { T, P } = M.cl;
  const groups = Math.ceil(T / WG);
  const asks = M.regAsks;
  const launched = launchRegisters(M.kernel.target, T) * T;
  let total = 0;
  for (let w = 0; w < groups; w++) {
    const threads = Math.min(WG, T - w * WG);
    total += (asks[cta * groups + w]! || SETMAXNREG.min) * threads;
  }
  if (total <= launched) return null;
  const where = M.cl.N > 1 ? ` of CTA ${cta}` : "";
  return `setmaxnreg asks ${total} registers for the warpgroups${where}, more than the ` +
    `${launched} their block of ${T} threads holds (${launched / T} a thread): ` +
    `setmaxnreg.inc would wait forever (the threads at ${P * cta} on)`;
}

/** `setmaxnreg`: no effect on values; every active warpgroup entirely active, and the asks of a
 * CTA's warpgroups within the registers its block was launched with ({@link regAsksFit}). */
export function compileSetMaxNReg(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as SetMaxNRegOp;
  const idx = info.index;
  if (!setMaxNRegValid(o.regs)) {
    const { min, max, step } = SETMAXNREG;
    throw new SimError(
      `setmaxnreg to ${o.regs} registers: not a multiple of ${step} from ${min} to ${max}`,
      whereStatic(info),
    );
  }
  return () => {
    const m = mask.m;
    for (let base = 0; base < M.T; base += WG) {
      let on = 0;
      let off = -1;
      for (let l = 0; l < WG; l++) {
        if (base + l < M.T && m[base + l] !== 0) on++;
        else if (off < 0) off = l;
      }
      if (on > 0 && on < WG) {
        M.fail(
          idx,
          base + off,
          `setmaxnreg is warpgroup-collective: thread ${off} of warpgroup ${
            base / WG
          } does not take part (all ${WG} threads must)`,
        );
      }
    }
    const { N, T, P } = M.cl;
    const groups = Math.ceil(T / WG);
    const asks = M.regAsks;
    for (let c = 0; c < N; c++) {
      let asked = false;
      for (let w = 0; w < groups; w++) {
        if (m[c * P + w * WG] === 0) continue;
        asks[c * groups + w] = o.regs;
        asked = true;
      }
      const why = asked ? regAsksFit(M, c) : null;
      if (why !== null) M.fail(idx, c * P, why);
    }
    M.counts[idx]! += mask.warps;
  };
}
