/**
 * The CLI's option tables (cli/options.ts): each command's help and its
 * parser come from the same rows, in process.
 *
 * @module
 */

import assert from "node:assert/strict";
import { COMMANDS, mainHelp } from "../cli/main.ts";
import { commandHelp, optionsHelp, parseConfig, parseOptions } from "../cli/options.ts";
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
