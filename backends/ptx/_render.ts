/**
 * Rendering the simple (non-structured) kernel-IR operations: the renderer
 * tables of _render_regs.ts and _render_mem.ts, one renderer per operation,
 * each filling a template of `OP_TEMPLATES` (_tables.ts).
 *
 * @module
 */

import { unreachable } from "../../ir/gemm.ts";
import type { Ctx, Renderers, Simple } from "./_context.ts";
import { REG_RENDER } from "./_render_regs.ts";
import { MEM_RENDER } from "./_render_mem.ts";

/** The renderer of each simple operation (one template fill each, after its checks). */
export const RENDER: Renderers<Simple["op"]> = { ...REG_RENDER, ...MEM_RENDER };

/** {@link RENDER} by operation, through one call site per operation (a table lookup
 * and one shared call site would be megamorphic, and this is the printer's inner loop). */
export function render(o: Simple, cx: Ctx): void {
  switch (o.op) {
    case "param":
      return RENDER.param(o, cx);
    case "sreg":
      return RENDER.sreg(o, cx);
    case "mov":
      return RENDER.mov(o, cx);
    case "smembase":
      return RENDER.smembase(o, cx);
    case "bin":
      return RENDER.bin(o, cx);
    case "mad":
      return RENDER.mad(o, cx);
    case "mulwide":
      return RENDER.mulwide(o, cx);
    case "un":
      return RENDER.un(o, cx);
    case "setp":
      return RENDER.setp(o, cx);
    case "selp":
      return RENDER.selp(o, cx);
    case "cvt":
      return RENDER.cvt(o, cx);
    case "pack":
      return RENDER.pack(o, cx);
    case "unpack":
      return RENDER.unpack(o, cx);
    case "cpasync":
      return RENDER.cpasync(o, cx);
    case "createpolicy":
      return RENDER.createpolicy(o, cx);
    case "prefetch":
      return RENDER.prefetch(o, cx);
    case "commit":
      return RENDER.commit(o, cx);
    case "wait":
      return RENDER.wait(o, cx);
    case "bar":
      return RENDER.bar(o, cx);
    case "ldmatrix":
      return RENDER.ldmatrix(o, cx);
    case "lds":
      return RENDER.lds(o, cx);
    case "sts":
      return RENDER.sts(o, cx);
    case "ldg":
      return RENDER.ldg(o, cx);
    case "stg":
      return RENDER.stg(o, cx);
    case "atom":
      return RENDER.atom(o, cx);
    case "fence":
      return RENDER.fence(o, cx);
    case "mma":
      return RENDER.mma(o, cx);
    case "wgmma":
      return RENDER.wgmma(o, cx);
    case "wgfence":
      return RENDER.wgfence(o, cx);
    case "wgcommit":
      return RENDER.wgcommit(o, cx);
    case "wgwait":
      return RENDER.wgwait(o, cx);
    case "proxyfence":
      return RENDER.proxyfence(o, cx);
    case "mbarinit":
      return RENDER.mbarinit(o, cx);
    case "mbararrive":
      return RENDER.mbararrive(o, cx);
    case "mbarwait":
      return RENDER.mbarwait(o, cx);
    case "mbarfence":
      return RENDER.mbarfence(o, cx);
    case "tma":
      return RENDER.tma(o, cx);
    case "tmapprefetch":
      return RENDER.tmapprefetch(o, cx);
    case "setmaxnreg":
      return RENDER.setmaxnreg(o, cx);
    case "griddep":
      return RENDER.griddep(o, cx);
    case "comment":
      return RENDER.comment(o, cx);
    default:
      return unreachable(o);
  }
}
