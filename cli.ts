/**
 * The `gemm` command line's entry point: `gemm check`, `gemm compile`,
 * `gemm simulate`, `gemm run`. Run as `deno task gemm <command> ...`. The
 * commands live in `cli/`, one a file; `cli/main.ts` dispatches and sets
 * the exit codes (0 success, 1 diagnostics in the input, 2 bad usage,
 * 3 an internal error).
 *
 * @module
 */

import { main } from "./cli/main.ts";

export { main } from "./cli/main.ts";
export type { CliIO } from "./cli/options.ts";

if (import.meta.main) {
  const enc = new TextEncoder();
  // A closed pipe (`gemm ... | head`) ends the output quietly.
  const write = (f: typeof Deno.stdout, s: string) => {
    try {
      const bytes = enc.encode(s);
      let off = 0;
      while (off < bytes.length) off += f.writeSync(bytes.subarray(off));
    } catch (e) {
      if (e instanceof Deno.errors.BrokenPipe) Deno.exit(0);
      throw e;
    }
  };
  const code = await main(Deno.args, {
    out: (s) => write(Deno.stdout, s),
    err: (s) => write(Deno.stderr, s),
    readFile: (p) => Deno.readTextFileSync(p),
    writeFile: (p, t) =>
      typeof t === "string" ? Deno.writeTextFileSync(p, t) : Deno.writeFileSync(p, t),
  });
  Deno.exit(code);
}
