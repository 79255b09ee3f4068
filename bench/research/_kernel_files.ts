/**
 * The files the Python probes read for one kernel (bench/research/gpu_quick.py
 * `load`): `NAME.ptx` and `NAME.json`, the launch manifest as
 * `{ kernels: [manifest] }`. Written by gen_hinted.ts and llm/gen.ts.
 *
 * @module
 */

/**
 * Writes a kernel's PTX and manifest into `out`.
 *
 * @param out The folder.
 * @param name The kernel's name (the files' stem).
 * @param ptx The PTX module.
 * @param manifest The kernel's launch manifest (`--emit json`'s kernel entry).
 */
export function writeKernelFiles(out: string, name: string, ptx: string, manifest: unknown): void {
  Deno.writeTextFileSync(`${out}/${name}.ptx`, ptx);
  Deno.writeTextFileSync(
    `${out}/${name}.json`,
    JSON.stringify({ kernels: [manifest] }, null, 2) + "\n",
  );
}
