#!/usr/bin/env bash
# `make run`: the default experiment, netns/experiments/incast-bg.exp: repeated 8:1 incasts of
# 64 KB on top of 30% WebSearch background load on the star (10 Gbit/s links), every
# congestion-control scheme that exists (`quench schemes`) side by side on the identical flow
# list, D chosen by calibration. Prints the summary table; everything is written to
# results/<time>-incast-bg/ (docs/experiments.md). Set EXP=FILE to run another experiment.
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
QUENCH="$BUILD/quench"
EXP=${EXP:-$ROOT/netns/experiments/incast-bg.exp}
[ "$(id -u)" -eq 0 ] || { echo "make run: needs root (namespaces, tc, BPF)" >&2; exit 1; }
[ -x "$QUENCH" ] || { echo "make run: build first (make)" >&2; exit 1; }
OUT="$ROOT/results/$(date +%Y%m%d-%H%M%S)-$(basename "$EXP" .exp)"
echo "== quench run $EXP"
start=$(date +%s)
"$QUENCH" run "$EXP" --out "$OUT"
echo "== experiment time $(($(date +%s) - start)) s (dependencies and build timed above)"
