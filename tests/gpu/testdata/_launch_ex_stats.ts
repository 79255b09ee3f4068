/**
 * The fake driver's record of its launches (fake_libcuda.c `fake_launch_ex_stats`), decoded
 * once for the fake-driver checks of the ordinary and the grouped launch.
 *
 * @module
 */

/** What the fake's cuLaunchKernel and cuLaunchKernelEx saw. */
export interface LaunchExStats {
  /** Launches through cuLaunchKernel. */
  readonly plain: number;
  /** Launches through cuLaunchKernelEx, and those of them with the PDL attribute on. */
  readonly ex: number;
  readonly pdl: number;
  /** The last cuLaunchKernelEx call's attribute count, attribute id and value, and stream. */
  readonly numAttrs: number;
  readonly attrId: number;
  readonly attrValue: number;
  readonly stream: bigint;
  /** cuLaunchKernelEx calls the fake refused. */
  readonly refused: number;
}

/**
 * Reads the fake's launch record.
 *
 * @param read The fake's `fake_launch_ex_stats` symbol (fills 8 int64s).
 * @returns The record.
 */
export function launchExStats(read: (out: BigInt64Array) => number): LaunchExStats {
  const s = new BigInt64Array(8);
  read(s);
  return {
    plain: Number(s[0]),
    ex: Number(s[1]),
    pdl: Number(s[2]),
    numAttrs: Number(s[3]),
    attrId: Number(s[4]),
    attrValue: Number(s[5]),
    stream: BigInt.asUintN(64, s[6]!),
    refused: Number(s[7]),
  };
}
