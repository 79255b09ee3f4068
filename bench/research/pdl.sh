#!/usr/bin/env bash
# Issue 22, programmatic dependent launch (bench/NOTES.md 71): the GPU test of PDL chains and the
# llm table on sm90 with ours timed again as dependent launches (--pdl), for this tree only: the
# one-tree case of pdl_ab.sh (its table lands in OUT/<this folder's name>/). One device call; Deno
# on PATH (run with --cached-only there). Not part of the benchmark or of CI. Written 2026-12-05.
#
# Usage: bash bench/research/pdl.sh OUT [TYPES] [MS]
set -u
OUT="${1:?usage: pdl.sh OUT [TYPES] [MS]}"
exec bash "$(dirname "$0")/pdl_ab.sh" "$OUT" "${2:-f16}" "${3:-1,16,64,128,256}" .
