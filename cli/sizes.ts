/**
 * The checks of `--size` and `--scalar` against the compiled kernels: every
 * name given must mean something to one of them (a runtime dimension, the
 * role letter M, N, K or L of a runtime dimension, a scalar parameter), a
 * role fixed by a literal in the source takes no size, and a kernel with
 * runtime dimensions needs `--size`. Each is a usage error (exit code 2):
 * a name that would be silently ignored is a typo the user should hear of.
 *
 * @module
 */

import type { GemmKernel } from "../ir/gemm.ts";
import { didYouMean } from "../dsl/suggest.ts";
import { oneOf, UsageError } from "./options.ts";

/** The role letters `--size` accepts beside the dimension names, with the problem's field. */
const ROLE_LETTERS = [["M", "m"], ["N", "n"], ["K", "k"], ["L", "batch"]] as const;

/** What a size name means to one kernel. */
type SizeMeaning =
  | { readonly kind: "runtime" }
  | { readonly kind: "fixed"; readonly value: number }
  | { readonly kind: "none" };

function meaning(k: GemmKernel, name: string): SizeMeaning {
  if (k.dims.includes(name) || (k.strides ?? []).includes(name)) return { kind: "runtime" };
  const role = ROLE_LETTERS.find(([letter]) => letter === name);
  const dim = role === undefined ? null : k.problem[role[1]];
  if (dim === null || dim === undefined) return { kind: "none" };
  return dim.kind === "sym" ? { kind: "runtime" } : { kind: "fixed", value: dim.value };
}

/** Every name `--size` accepts for these kernels: their dimensions, then the role letters. */
function sizeNames(kernels: readonly GemmKernel[]): string[] {
  const names = new Set<string>(kernels.flatMap((k) => [...k.dims, ...(k.strides ?? [])]));
  for (const [letter] of ROLE_LETTERS) {
    if (kernels.some((k) => meaning(k, letter).kind === "runtime")) names.add(letter);
  }
  return [...names];
}

/**
 * Checks the names of `--size` against the kernels: each must be a runtime
 * dimension (or its role letter) of at least one of them.
 *
 * @param kernels The kernels the command compiled.
 * @param sizes The `--size` values by name.
 * @param option The option the sizes came from (`--groups` for a grouped kernel's problems).
 * @throws {UsageError} For a name no kernel knows (with the names it accepts
 *   and a suggestion), or one that names a dimension fixed in the source.
 */
export function checkSizeNames(
  kernels: readonly GemmKernel[],
  sizes: Readonly<Record<string, number>>,
  option = "--size",
): void {
  for (const name of Object.keys(sizes)) {
    const means = kernels.map((k) => ({ k, m: meaning(k, name) }));
    if (means.some(({ m }) => m.kind === "runtime")) continue;
    const fixed = means.find(({ m }) => m.kind === "fixed");
    if (fixed !== undefined && fixed.m.kind === "fixed") {
      throw new UsageError(
        `${option} ${name}: kernel "${fixed.k.name}" fixes ${name} at ${fixed.m.value} in the ` +
          `source; leave it out of ${option}`,
      );
    }
    const accepted = sizeNames(kernels);
    throw new UsageError(
      `${option} ${name}: no kernel has a dimension "${name}"` +
        (accepted.length === 0
          ? `: every size is fixed in the source, ${option} is not needed`
          : `: expected ${oneOf(accepted)}${didYouMean(name, accepted)}`),
    );
  }
}

/**
 * Checks the names of `--scalar` against the kernels' scalar parameters.
 *
 * @param kernels The kernels the command compiled.
 * @param scalars The `--scalar` values by name.
 * @throws {UsageError} For a name that is no kernel's scalar (with the names
 *   there are and a suggestion).
 */
export function checkScalarNames(
  kernels: readonly GemmKernel[],
  scalars: Readonly<Record<string, number>>,
): void {
  const names = [
    ...new Set(
      kernels.flatMap((k) => k.params.filter((p) => p.kind === "scalar").map((p) => p.name)),
    ),
  ];
  for (const name of Object.keys(scalars)) {
    if (names.includes(name)) continue;
    throw new UsageError(
      `--scalar ${name}: no kernel has a scalar "${name}"` +
        (names.length === 0 ? ": the kernels take none" : `: expected ${oneOf(names)}`) +
        didYouMean(name, names),
    );
  }
}

/**
 * The kernels' runtime dimensions when `--size` was not given: none for
 * kernels whose sizes are all fixed in the source (they need no `--size`).
 *
 * @param cmd The command, for the message.
 * @param kernels The kernels the command compiled.
 * @throws {UsageError} When a kernel has runtime dimensions.
 */
export function requireSizes(cmd: string, kernels: readonly GemmKernel[]): void {
  const k = kernels.find((k) => k.dims.length > 0);
  if (k !== undefined) {
    throw new UsageError(
      `${cmd}: --size is required: kernel "${k.name}" has runtime dimensions ${k.dims.join(", ")}`,
    );
  }
}
