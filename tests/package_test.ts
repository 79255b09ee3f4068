/**
 * The package from outside the repository: a script in another folder, run
 * with no configuration file, imports `mod.ts` by its file URL and compiles an
 * example (issue 19: the bare `ohm-js` specifier resolved only through this
 * repository's deno.json; the source now names `npm:ohm-js@17.5.0` itself).
 *
 * @module
 */

import assert from "node:assert/strict";

Deno.test("mod.ts imports and compiles from a script in another folder, with no config", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gemmc_outside_" });
  try {
    const mod = new URL("../mod.ts", import.meta.url).href;
    const example = new URL("../examples/hgemm.gemm", import.meta.url);
    const script = `${dir}/use.ts`;
    await Deno.writeTextFile(
      script,
      `import { compile } from ${JSON.stringify(mod)};\n` +
        `const r = compile(Deno.readTextFileSync(${JSON.stringify(example.pathname)}));\n` +
        `console.log(JSON.stringify({ ok: r.ok, entry: r.kernels[0]?.manifest.entry, ` +
        `ptx: r.kernels[0]?.ptx.includes(".visible .entry") }));\n`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-config", "--allow-read", script],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, stderr);
    const res = JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
    assert.deepEqual(res, { ok: true, entry: "hgemm", ptx: true });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
