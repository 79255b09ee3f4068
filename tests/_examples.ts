/**
 * The repository's examples, for the tests that run over all of them.
 *
 * @module
 */

/** The repository root. */
export const ROOT = new URL("../", import.meta.url);

/** The example names (`examples/NAME.gemm`), sorted. */
export function examples(): string[] {
  return [...Deno.readDirSync(new URL("examples/", ROOT))]
    .filter((e) => e.isFile && e.name.endsWith(".gemm"))
    .map((e) => e.name.slice(0, -".gemm".length))
    .sort();
}
