#!/usr/bin/env bash
# Issue 23: e4m3 on clusters of 2 (bench/NOTES.md 77) in one device call: bench/fp8.ts with
# `--schedule "cluster 2"` against torch._scaled_mm in the same run, then at the default schedule
# without the peer (its ratio comes from the first run). Packed into OUT/all.tgz. Deno on PATH.
# Not part of the benchmark or of CI. Written 2026-12-06.
# Usage: bash bench/research/fp8_cluster.sh OUT   (SHAPES: default 8192,odd)
set -u
OUT="${1:?usage: fp8_cluster.sh OUT}"
W=/tmp/fp8_cluster
rm -rf "$W" && mkdir -p "$W/cluster2" "$W/default" "$OUT"
t0=$SECONDS
deno run --cached-only -A bench/fp8.ts --types e4m3 --shapes "${SHAPES:-8192,odd}" \
  --schedule "cluster 2" --out "$W/cluster2" >"$W/cluster2.log" 2>&1
echo "fp8 cluster 2: exit $? ($((SECONDS - t0)) s)"
grep -E "^e4m3 |_scaled_mm|ratio|met|MISSED" "$W/cluster2.log" | cut -c1-260 | head -20
tar -czf "$OUT/all.tgz" -C "$W" .
deno run --cached-only -A bench/fp8.ts --types e4m3 --shapes "${SHAPES:-8192,odd}" --no-peers \
  --out "$W/default" >"$W/default.log" 2>&1
echo "fp8 default: exit $? ($((SECONDS - t0)) s)"
grep -E "^e4m3 " "$W/default.log" | cut -c1-260
tar -czf "$OUT/all.tgz" -C "$W" .
