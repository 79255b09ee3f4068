/**
 * The CLI's option tables (cli/options.ts): each command's help and its
 * parser come from the same rows, in process; and the helpers the commands
 * share (cli/common.ts).
 *
 * @module
 */

import assert from "node:assert/strict";
import { COMMANDS, mainHelp } from "../cli/main.ts";
import { commandHelp, optionsHelp, parseConfig, parseOptions, UsageError } from "../cli/options.ts";
import { compiledKernels, compileOptions } from "../cli/common.ts";
import { compile } from "../compiler.ts";
import { TARGET_NAMES } from "../ir/target.ts";

Deno.test("cli options: every row of a command's table is in its help and its parser", () => {
  for (const c of COMMANDS) {
    const help = commandHelp(c);
    const config = parseConfig(c.options);
    assert.deepEqual(Object.keys(config), c.options.map((o) => o.name), c.name);
    for (const o of c.options) {
      const flag = `${o.short !== undefined ? `-${o.short}, ` : ""}--${o.name}${
        o.value !== undefined ? ` ${o.value}` : ""
      }`;
      assert.match(help, new RegExp(`^  ${RegExp.escape(flag)}  `, "m"), `${c.name} ${flag}`);
      assert.ok(!help.includes("{default}"), c.name);
      assert.equal(config[o.name]!.type, o.type);
      assert.equal(config[o.name]!.short, o.short);
      // Parsed with no arguments: the default, or nothing.
      const none = parseOptions([], c.options).values as Record<string, unknown>;
      assert.equal(none[o.name], o.default, `${c.name} ${o.name}`);
      const given = parseOptions(
        o.type === "boolean" ? [`--${o.name}`] : [`--${o.name}`, "v"],
        c.options,
      ).values as Record<string, unknown>;
      assert.equal(given[o.name], o.type === "boolean" ? true : "v", `${c.name} ${o.name}`);
      if (o.short !== undefined) {
        const short = parseOptions(
          o.type === "boolean" ? [`-${o.short}`] : [`-${o.short}`, "v"],
          c.options,
        ).values as Record<string, unknown>;
        assert.equal(short[o.name], given[o.name]);
      }
    }
    assert.throws(
      () => parseOptions(["--no-such-option"], c.options),
      (e: unknown) => e instanceof TypeError && "code" in e,
    );
    assert.match(
      mainHelp(),
      new RegExp(`^  ${c.name} ${RegExp.escape(c.args)} +${RegExp.escape(c.summary)}$`, "m"),
    );
  }
});

Deno.test("cli options: help text columns, continuation lines and defaults", () => {
  const text = optionsHelp([
    { name: "alpha", type: "string", value: "N", default: "7", help: "First\nsecond ({default})" },
    { name: "b", short: "b", type: "boolean", help: "Flag" },
  ]);
  const lines = text.trimEnd().split("\n");
  assert.equal(lines.length, 3);
  const col = lines[0]!.indexOf("First");
  assert.ok(col > "  --alpha N".length, text);
  assert.equal(lines[1]!.indexOf("second (7)"), col, text);
  assert.equal(lines[1]!.slice(0, col).trim(), "", text);
  assert.equal(lines[2]!.indexOf("Flag"), col, text);
  assert.ok(lines[2]!.startsWith("  -b, --b "), text);
  // --target lists the target table's names.
  for (const c of COMMANDS) {
    const help = commandHelp(c);
    for (const t of TARGET_NAMES) assert.ok(help.includes(t), `${c.name} ${t}`);
  }
});

Deno.test("cli options: command() answers --help from the table before the command runs", async () => {
  for (const c of COMMANDS) {
    const out: string[] = [];
    const io = {
      out: (s: string) => out.push(s),
      err: (s: string) => out.push(`err: ${s}`),
      readFile: (): string => {
        throw new Error(`${c.name} read a file for --help`);
      },
      writeFile: () => {},
    };
    // No file and no --size: the command itself would fail; --help does not reach it.
    assert.equal(await c.run(["--help"], io), 0, c.name);
    assert.deepEqual(out, [commandHelp(c)], c.name);
    // The table still parses first: an unknown option is an error even with --help.
    await assert.rejects(
      async () => await c.run(["--help", "--no-such-option"], io),
      (e: unknown) => e instanceof TypeError && "code" in e,
    );
  }
});

Deno.test("cli options: compileOptions passes only the choices given", () => {
  const none = compileOptions("k.gemm", {
    target: undefined,
    kernel: undefined,
    sizeHints: undefined,
    sms: undefined,
  });
  assert.deepEqual(none, { file: "k.gemm" });
  const all = compileOptions("k.gemm", {
    target: TARGET_NAMES[0]!,
    kernel: "k",
    sizeHints: { M: 64 },
    sms: 132,
  });
  assert.deepEqual(all, {
    file: "k.gemm",
    target: TARGET_NAMES[0],
    kernel: "k",
    sizeHints: { M: 64 },
    sms: 132,
  });
});

Deno.test("cli options: compiledKernels prints diagnostics, and no kernel is a usage error", () => {
  const err: string[] = [];
  const io = {
    out: () => {},
    err: (s: string) => err.push(s),
    readFile: () => "",
    writeFile: () => {},
  };
  const bad = "kernel k {\n  D: f32[M, N]\n  D[m, n] = X[m, n]\n}\n";
  assert.equal(
    compiledKernels(compile(bad, { file: "b.gemm" }), "b.gemm", bad, undefined, io),
    null,
  );
  assert.equal(err.length, 1);
  assert.match(err[0]!, /^b\.gemm:3:\d+: error\[E0101\]/);
  const good = "kernel k { A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]\n" +
    " D[m, n] = A[m, k] * B[k, n] }";
  const picked = compile(good, { file: "g.gemm", kernel: "nope" });
  assert.throws(
    () => compiledKernels(picked, "g.gemm", good, "nope", io),
    (e: unknown) => e instanceof UsageError && e.message === 'No kernel named "nope" in "g.gemm"',
  );
  const all = compile(good, { file: "g.gemm" });
  assert.equal(compiledKernels(all, "g.gemm", good, undefined, io)?.length, 1);
});
