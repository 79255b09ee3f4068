/**
 * The concurrent roles of warp-specialized kernels (sm90): a non-uniform `if` whose
 * branches wait on mbarriers (typically a warpgroupUniform one: producer warps in one
 * branch, consumer warpgroups in the other) cannot run its branches one after the other in
 * lockstep, since each waits for the other. Such an `if` runs its then- and else-branch as
 * coroutines (generators), each in lockstep over its own lanes, and so does every
 * non-uniform `if` with waits nested inside them; uniform `if`s and loops inside run as
 * they would outside, their uniformity checked over their role's active lanes only.
 *
 * Only the operations that wait or that can let another role go on are generators: a
 * blocked `mbarwait` yields what it waits for, an `mbararrive` or `tma` that completed a
 * barrier's phase yields a scheduling point, and so do the loops and `if`s holding any of
 * these; every other operation (and every kernel without such an `if`) is compiled as a
 * plain closure, so ordinary kernels run as fast as before. At a scheduling point the
 * schedule (types.ts `RoleSchedule`) picks the branch that runs next among those not
 * blocked; when every branch still running is blocked the block has deadlocked: a
 * `SimError` naming each wait and its barrier's phase.
 *
 * In a cluster kernel (_cluster.ts), a role `if` met in plain code runs each branch as one
 * coroutine per CTA (the branch's lanes of that CTA), so that one CTA's roles can run ahead of
 * another's: the producers of every CTA come first (by rank), then the consumers (by rank),
 * and the schedule picks among them in that order (`rank-first`: CTA by CTA instead).
 *
 * Shortcuts: the warps of one role run in lockstep (two consumer warpgroups in the same
 * branch cannot drift apart), and a scheduling point comes only where a phase completes. In a
 * cluster kernel only the outermost role `if` (the one met in plain code) is split by CTA; its
 * branches are compiled once per CTA.
 *
 * @module
 */

import type { IfOp, Op } from "../../ir/kernel.ts";
import { divergentSplit, loopControl, uniformCond } from "./_control.ts";
import { perCtaMasks } from "./_cluster.ts";
import type { Machine, Mask, OpInfo, Run } from "./_machine.ts";
import { type Blocked, compileMbarWait, deadlock } from "./_mbarrier.ts";
import type { RoleSchedule } from "./types.ts";

/** A running role: yields null at a scheduling point, or what blocks it. */
type Co = Generator<Blocked | null, void, void>;

/** A compiled body that runs as a coroutine. */
type GenRun = () => Co;

/** What the roles' compilation needs of _compile.ts's compiler. */
export interface RoleCompiler {
  /** The machine. */
  readonly M: Machine;
  /** The scheduling policy. */
  readonly schedule: RoleSchedule;
  /** The next operation's index entry (checked to be `o`). */
  take(o: Op): OpInfo;
  /** The index of the next operation {@link take} returns (set back to compile a body
   * again, for another CTA's lanes). */
  cursor: number;
  /** Compiles one operation as a plain closure (null: nothing to run). */
  plain(info: OpInfo, mask: Mask, uniform: boolean): Run | null;
}

const GEN = new WeakMap<Op, boolean>();

/**
 * Whether an operation must run as a coroutine inside a role: a wait, an arrival, a TMA
 * copy, or a loop or `if` holding one.
 *
 * @param o The operation.
 * @returns Whether it does.
 */
export function needsGen(o: Op): boolean {
  if (o.op === "mbarwait" || o.op === "mbararrive" || o.op === "tma") return true;
  if (o.op !== "for" && o.op !== "if") return false;
  let g = GEN.get(o);
  if (g === undefined) {
    g = o.op === "for"
      ? o.body.some(needsGen)
      : o.then.some(needsGen) || o.otherwise.some(needsGen);
    GEN.set(o, g);
  }
  return g;
}

function hasTma(ops: readonly Op[]): boolean {
  return ops.some((o) =>
    o.op === "tma" ||
    (o.op === "for" && hasTma(o.body)) ||
    (o.op === "if" && (hasTma(o.then) || hasTma(o.otherwise)))
  );
}

function hasWait(ops: readonly Op[]): boolean {
  return ops.some((o) =>
    o.op === "mbarwait" ||
    (o.op === "for" && hasWait(o.body)) ||
    (o.op === "if" && (hasWait(o.then) || hasWait(o.otherwise)))
  );
}

/**
 * Whether a non-uniform `if` runs its branches as concurrent roles: one of them waits on
 * an mbarrier.
 *
 * @param o The `if`.
 * @returns Whether it does.
 */
export function isRoleIf(o: IfOp): boolean {
  return !o.uniform && (hasWait(o.then) || hasWait(o.otherwise));
}

/**
 * Compiles a role `if` ({@link isRoleIf}) met in plain code: both branches as coroutines,
 * run to completion by the scheduler when the `if` runs.
 *
 * @param C The compiler.
 * @param info The `if`.
 * @param mask Its lanes.
 * @returns The run.
 */
export function compileRoles(C: RoleCompiler, info: OpInfo, mask: Mask): Run {
  const M = C.M;
  const co = M.cl.N > 1 ? genClusterIf(C, info, mask) : genIf(C, info, mask);
  return () => {
    const g = co();
    for (;;) {
      const r = g.next();
      if (r.done === true) return;
      const w = r.value;
      if (w !== null && !w.ready()) throw deadlock(M, [w]);
    }
  };
}

/** A body as a coroutine: consecutive plain operations merged into one closure. */
function genBody(C: RoleCompiler, ops: readonly Op[], mask: Mask, uniform: boolean): GenRun {
  const items: (Run | { gen: GenRun })[] = [];
  let plain: Run[] = [];
  const flush = () => {
    if (plain.length === 0) return;
    const rs = plain;
    items.push(
      rs.length === 1 ? rs[0]! : () => {
        for (let i = 0; i < rs.length; i++) rs[i]!();
      },
    );
    plain = [];
  };
  for (const o of ops) {
    const info = C.take(o);
    if (needsGen(o)) {
      flush();
      items.push({ gen: genOp(C, info, mask, uniform) });
    } else {
      const r = C.plain(info, mask, uniform);
      if (r !== null) plain.push(r);
    }
  }
  flush();
  return function* () {
    for (let i = 0; i < items.length; i++) {
      const it = items[i]!;
      if (typeof it === "function") it();
      else yield* it.gen();
    }
  };
}

function genOp(C: RoleCompiler, info: OpInfo, mask: Mask, uniform: boolean): GenRun {
  const M = C.M;
  const o = info.op;
  switch (o.op) {
    case "mbarwait": {
      const w = compileMbarWait(M, info, mask);
      return function* () {
        while (!w.ready()) {
          M.mb!.blocked++;
          yield w.blocked;
        }
        w.done();
      };
    }
    case "mbararrive":
    case "tma": {
      const r = C.plain(info, mask, uniform)!;
      const mb = M.mb!;
      return function* () {
        const c = mb.completions;
        r();
        if (mb.completions !== c) yield null;
      };
    }
    case "for": {
      const lc = loopControl(M, info, mask);
      const body = genBody(C, o.body, mask, uniform);
      return function* () {
        lc.start();
        while (lc.test()) {
          yield* body();
          lc.step();
        }
      };
    }
    case "if": {
      if (!o.uniform) return genIf(C, info, mask);
      const cond = uniformCond(M, info, mask);
      const then = genBody(C, o.then, mask, uniform);
      const otherwise = genBody(C, o.otherwise, mask, uniform);
      return function* () {
        const v = cond();
        if (v === 1) yield* then();
        else if (v === 0) yield* otherwise();
      };
    }
    default:
      throw new Error(`internal: ${o.op} is no coroutine`);
  }
}

/** Whether a role `if`'s producer (the branch with TMA copies, else the then-branch) is its
 * else-branch: the producer's coroutines come first. */
function producerIsElse(o: IfOp): boolean {
  return hasTma(o.otherwise) && !hasTma(o.then);
}

/** The policy `par` picks by: `rank-first` has ordered the coroutines CTA by CTA, and within
 * that order picks as `producer-first`. */
function parPolicy(p: RoleSchedule): Exclude<RoleSchedule, "rank-first"> {
  return p === "rank-first" ? "producer-first" : p;
}

/** A non-uniform `if` inside a role (or a role `if`): its branches as concurrent coroutines. */
function genIf(C: RoleCompiler, info: OpInfo, mask: Mask): GenRun {
  const o = info.op as IfOp;
  const sp = divergentSplit(C.M, info, mask);
  const then = genBody(C, o.then, sp.tm, false);
  const otherwise = genBody(C, o.otherwise, sp.em, false);
  const swap = producerIsElse(o);
  const pol = parPolicy(C.schedule);
  return function* () {
    sp.split();
    const cos: Co[] = [];
    if (sp.tm.warps > 0) cos.push(then());
    if (sp.em.warps > 0) cos.push(otherwise());
    if (cos.length === 1) yield* cos[0]!;
    else if (cos.length === 2) yield* par(swap ? [cos[1]!, cos[0]!] : cos, pol);
  };
}

/** A role `if` of a cluster kernel: each branch as one coroutine per CTA (see the module
 * doc), the producer's first. */
function genClusterIf(C: RoleCompiler, info: OpInfo, mask: Mask): GenRun {
  const o = info.op as IfOp;
  const M = C.M;
  const N = M.cl.N;
  const sp = divergentSplit(M, info, mask);
  const tc = perCtaMasks(M);
  const ec = perCtaMasks(M);
  const compile = (ops: readonly Op[], masks: Mask[]) => {
    const at = C.cursor;
    return masks.map((k) => {
      C.cursor = at;
      return genBody(C, ops, k, false);
    });
  };
  const thens = compile(o.then, tc.masks);
  const elses = compile(o.otherwise, ec.masks);
  const policy = C.schedule;
  const swap = producerIsElse(o);
  const [pro, con] = swap ? [elses, thens] : [thens, elses];
  const [pm, cm] = swap ? [ec.masks, tc.masks] : [tc.masks, ec.masks];
  // The order `par` picks in: producers then consumers, or (rank-first) CTA by CTA.
  const order: [GenRun, Mask][] = [];
  if (policy === "rank-first") {
    for (let r = 0; r < N; r++) order.push([pro[r]!, pm[r]!], [con[r]!, cm[r]!]);
  } else {
    for (let r = 0; r < N; r++) order.push([pro[r]!, pm[r]!]);
    for (let r = 0; r < N; r++) order.push([con[r]!, cm[r]!]);
  }
  return function* () {
    sp.split();
    tc.fill(sp.tm);
    ec.fill(sp.em);
    const cos: Co[] = [];
    for (const [g, k] of order) if (k.warps > 0) cos.push(g());
    if (cos.length === 1) yield* cos[0]!;
    else if (cos.length > 1) yield* par(cos, parPolicy(policy));
  };
}

/**
 * Runs coroutines concurrently (the producer first in `cos`): at each scheduling point the
 * policy picks one that is not blocked; a scheduling point of a child is passed up (so that the roles around this one
 * get their turn); when every child still running is blocked, yields what they wait for.
 */
function* par(cos: Co[], policy: RoleSchedule): Co {
  const n = cos.length;
  const live = cos.map(() => true);
  const wait: (Blocked | null)[] = cos.map(() => null);
  let left = n;
  let last = -1;
  const blocked: Blocked = {
    ready: () => wait.some((w, j) => live[j] && w !== null && w.ready()),
    describe: () =>
      wait.filter((w, j) => live[j] && w !== null).map((w) => w!.describe()).join("; "),
    get idx() {
      return wait.find((w, j) => live[j] && w !== null)!.idx;
    },
    get thread() {
      return wait.find((w, j) => live[j] && w !== null)!.thread;
    },
  };
  while (left > 0) {
    let pick = -1;
    for (let k = 0; k < n && pick < 0; k++) {
      const j = policy === "producer-first"
        ? k
        : policy === "consumer-first"
        ? n - 1 - k
        : (last + 1 + k) % n;
      if (!live[j]) continue;
      const w = wait[j] ?? null;
      if (w === null || w.ready()) pick = j;
    }
    if (pick < 0) {
      yield blocked;
      continue;
    }
    last = pick;
    const r = cos[pick]!.next();
    if (r.done === true) {
      live[pick] = false;
      wait[pick] = null;
      left--;
    } else {
      wait[pick] = r.value;
      if (r.value === null) yield null;
    }
  }
}
