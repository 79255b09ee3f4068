/**
 * The package from outside the repository (issue 19, item 3), each check a
 * subprocess:
 * - a script in another folder, run with no configuration file, imports
 *   `mod.ts` by its file URL and compiles an example (the bare `ohm-js`
 *   specifier resolved only through this repository's deno.json; the source
 *   now names `npm:ohm-js@17.5.0` itself);
 * - from an empty folder, `deno run --allow-read x.ts`, where `x.ts` imports
 *   `<repo>/mod.ts` by path, compiles a kernel and simulates it (nothing may
 *   read the repository's deno.json, a grammar file or the environment);
 * - `deno doc --lint mod.ts` reports no problem;
 * - `deno publish --dry-run --allow-dirty` succeeds with no error and no
 *   warning (license, publish.include, no slow types).
 *
 * @module
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const decoder = new TextDecoder();

/** The output of `deno <args>` run in `cwd`. */
async function deno(
  args: readonly string[],
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [...args],
    cwd,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/** The last line of `text` parsed as JSON. */
function lastJson(text: string): unknown {
  return JSON.parse(text.trim().split("\n").at(-1)!);
}

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
    const out = await deno(["run", "--no-config", "--allow-read", script], dir);
    assert.equal(out.code, 0, out.stderr);
    assert.deepEqual(lastJson(out.stdout), { ok: true, entry: "hgemm", ptx: true });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("from an empty folder, deno run --allow-read x.ts compiles and simulates a kernel", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gemmc_empty_" });
  try {
    // x.ts imports mod.ts by its absolute path, the way a user's script would.
    const modPath = `${ROOT}mod.ts`;
    assert.ok(modPath.startsWith("/"), modPath);
    await Deno.writeTextFile(
      `${dir}/x.ts`,
      `import { compile, simulateGemm } from ${JSON.stringify(modPath)};
const src = \`kernel bias_relu {
  A: bf16[M, K] row
  B: bf16[K, N] col
  bias: f32[N]
  D: f32[M, N] row
  D[m, n] = relu(A[m, k] * B[k, n] + bias[n])
  schedule {
    threadblock 64x64x32
    warp 32x32x32
    stages 2
  }
}\`;
const r = compile(src, { file: "x.gemm" });
if (!r.ok) throw new Error(r.diagnostics.map((d) => d.message).join("; "));
const rep = simulateGemm(r.kernels[0]!, { M: 96, N: 80, K: 64 }, { seed: 7 });
console.log(JSON.stringify({
  ok: rep.ok,
  kernel: rep.kernel,
  elements: rep.comparison.elements,
  overBound: rep.comparison.overBound,
  hazards: rep.sim.hazardCount,
}));
`,
    );
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["x.ts"]);
    const out = await deno(["run", "--allow-read", "x.ts"], dir);
    assert.equal(out.code, 0, out.stderr);
    assert.deepEqual(lastJson(out.stdout), {
      ok: true,
      kernel: "bias_relu",
      elements: 96 * 80,
      overBound: 0,
      hazards: 0,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno doc --lint mod.ts reports no problem", async () => {
  const out = await deno(["doc", "--lint", "mod.ts"], ROOT);
  assert.equal(out.code, 0, out.stdout + out.stderr);
  assert.doesNotMatch(out.stdout + out.stderr, /error/i);
});

Deno.test("deno publish --dry-run succeeds with no error or warning", async () => {
  const out = await deno(["publish", "--dry-run", "--allow-dirty"], ROOT);
  const text = out.stdout + out.stderr;
  assert.equal(out.code, 0, text);
  assert.match(text, /Success Dry run complete/);
  assert.doesNotMatch(text, /^(error|warning)/im);
  // What the package holds: the license and the sources mod.ts reaches, no tests.
  assert.match(text, /LICENSE/);
  assert.match(text, /dsl\/gemm\.ohm/);
  assert.doesNotMatch(text, /\/tests\//);
});
