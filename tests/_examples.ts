/**
 * The repository's examples, for the tests that run over all of them or read one.
 *
 * @module
 */

/** The repository root. */
export const ROOT = new URL("../", import.meta.url);

/**
 * Whether an example declares a grouped kernel (`kernel NAME grouped`, DESIGN §6.2): it runs
 * over a list of problems (`--groups`), not one size, and its ABI is a problem table.
 *
 * @param name The example's name (`examples/NAME.gemm`).
 * @returns Whether it has a grouped kernel.
 */
export function isGroupedExample(name: string): boolean {
  const text = Deno.readTextFileSync(new URL(`examples/${name}.gemm`, ROOT));
  return /^\s*kernel\s+\w+\s+grouped\b/m.test(text);
}

/** The example names (`examples/NAME.gemm`), sorted. */
export function examples(): string[] {
  return [...Deno.readDirSync(new URL("examples/", ROOT))]
    .filter((e) => e.isFile && e.name.endsWith(".gemm"))
    .map((e) => e.name.slice(0, -".gemm".length))
    .sort();
}

/** An example's path (`examples/NAME.gemm`, as `file` for diagnostics) and text. */
export function readExample(name: string): { file: string; text: string } {
  const file = `examples/${name}.gemm`;
  return { file, text: Deno.readTextFileSync(new URL(file, ROOT)) };
}
