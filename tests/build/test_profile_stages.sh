#!/usr/bin/env bash
# scripts/profile-stages.awk attributes each perf sample to the leaf-most frame naming a stage
# (docs/PERFORMANCE.md "Where a packet's time goes"): a fixed `perf script` text in, the exact
# attribution out. No perf, no root.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
got=$(awk -v engine=500 -v switchd=700 -f "$src/scripts/profile-stages.awk" "$src/tests/build/fixtures/perf-script.txt" | sort)
want=$(printf '%s\n' \
	"AF_XDP receive (redirect, copy)	1	100000" \
	"HTB enqueue and dequeue	1	100000" \
	"engine TX and pacing	1	100000" \
	"engine, other	1	100000" \
	"idle	1	200000" \
	"kernel, other (engine's CPU time)	1	100000" \
	"ksoftirqd	1	100000" \
	"other processes	1	100000" \
	"switch dequeue hook (tp_btf)	2	200000" \
	"switchd (all threads)	1	100000" | sort)
if [ "$got" != "$want" ]; then
	echo "FAIL: profile-stages.awk attributed the fixture differently"
	diff <(echo "$want") <(echo "$got") || true
	exit 1
fi
# The check can fail: without the engine's pid, its samples are another process's.
other=$(awk -v engine=999 -v switchd=700 -f "$src/scripts/profile-stages.awk" "$src/tests/build/fixtures/perf-script.txt" |
	awk -F'\t' '$1 == "other processes" { print $2 }')
[ "$other" = 8 ] || { echo "FAIL: with a wrong engine pid, 8 samples should be other processes (got '$other')"; exit 1; }
echo "ok: profile-stages.awk"
