/**
 * Running `python3` from a test: its exit code and output, or null where there is
 * no python3 (the tests then skip visibly).
 *
 * @module
 */

const dec = new TextDecoder();

/**
 * Runs `python3 args...` and waits.
 *
 * @param args The arguments.
 * @returns The exit code and output, or null without python3.
 */
export function python3(args: string[]): { code: number; stdout: string; stderr: string } | null {
  try {
    const r = new Deno.Command("python3", { args, stdout: "piped", stderr: "piped" }).outputSync();
    return { code: r.code, stdout: dec.decode(r.stdout), stderr: dec.decode(r.stderr) };
  } catch {
    return null;
  }
}
