#!/usr/bin/env bash
# `make run`: the default job until the experiment harness (issue 7) exists. An 8:1 incast of
# long flows on the star (10 Gbit/s links, D=200) through the host engine, run once per
# congestion-control scheme that exists (`quench schemes`), side by side on the same flow list:
# FCTs, goodput, the bottleneck queue (sampled every 5 us of fabric time), CNPs, PAUSE frames,
# switch drops, retransmissions and each run's validity verdict. Everything goes into
# results/<time>-incast/ (summary.md, and per scheme the gen output, flows, fct.txt in the ns-3
# RDMA simulator's format, queue samples and rate traces).
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
QUENCH="$BUILD/quench"
[ "$(id -u)" -eq 0 ] || { echo "make run: needs root (namespaces, tc, BPF)" >&2; exit 1; }
[ -x "$QUENCH" ] || { echo "make run: build first (make)" >&2; exit 1; }

NAME=qnrun
D=200
SENDERS=8
SIZE=1MB
OUT="$ROOT/results/$(date +%Y%m%d-%H%M%S)-incast"
mkdir -p "$OUT"
cleanup() { "$QUENCH" topo down --name $NAME >/dev/null 2>&1 || true; }
trap cleanup EXIT

echo "== quench: ${SENDERS}:1 incast of ${SIZE} long flows, star of 10 Gbit/s links, dilation ${D}"
"$QUENCH" topo up "$ROOT/netns/star.topo" --name $NAME --param N=$((SENDERS + 1)) --dilation $D
"$QUENCH" topo show >"$OUT/topology.txt"

# exact drop counts from the per-port reason lines ("  tor-p1: buffer=1621436")
drops() { "$QUENCH" switch stats "$NAME/tor" | awk '/^  tor-p[0-9]+:/ {for (i = 2; i <= NF; i++) {split($i, kv, "="); s += kv[2]}} END {print s+0}'; }
field() { awk -v k="$2" '$1=="host" {for (i=1;i<=NF;i++) if ($i==k) s+=$(i+1)} END {print s+0}' "$1"; }

table="$OUT/summary.md"
{
	echo "# ${SENDERS}:1 incast, ${SIZE} per sender, star (10 Gbit/s), D=${D}"
	echo
	echo "| scheme | FCT p50 | FCT max | slowdown p50 | slowdown max | goodput | queue mean | queue p99 | queue max | CNPs | PAUSE | drops | retx | validity |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
} >"$table"
for scheme in $("$QUENCH" schemes); do
	dir="$OUT/$scheme"
	mkdir -p "$dir"
	before=$(drops)
	echo "-- $scheme"
	"$QUENCH" gen $NAME --pattern long --senders $SENDERS --size $SIZE --dst h1 --cc "$scheme" \
		--queues tor:tor-p1 --queue-interval 5us --queue-out "$dir/queue.csv" \
		--trace $SENDERS --trace-out "$dir/rates.csv" --out "$dir/flows.csv" --fct-out "$dir/fct.txt" \
		>"$dir/gen.txt" || true
	after=$(drops)
	g="$dir/gen.txt"
	grep -E '^(flows done|cc |validity|  reason)' "$g" | sed 's/^/   /'
	fct=$(sed -n 's/^fct p50 \(.*\)  p99 .*  max \(.*\) (fabric)/\1|\2/p' "$g")
	gp=$(sed -n 's/^goodput \([0-9.]*\) Gbit.*/\1 Gbit\/s/p' "$g")
	sd=$(sed -n 's/^slowdown p50 \([0-9.]*\)  p99 [0-9.]*  max \([0-9.]*\) .*/\1|\2/p' "$g")
	retx=$(sed -n 's/.*retransmitted \([0-9]*\),.*/\1/p' "$g")
	q=$(sed -n 's/^queue tor\/tor-p1: .* mean \([0-9]*\) B, p50 [0-9]* B, p99 \([0-9]*\) B, max \([0-9]*\) B/\1|\2|\3/p' "$g")
	v=$(sed -n 's/^validity: //p' "$g")
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$scheme" "${fct%%|*}" "${fct##*|}" \
		"${sd%%|*}" "${sd##*|}" "$gp" \
		"$(awk -F'|' '{printf "%.0f KB|%.0f KB|%.0f KB", $1/1000, $2/1000, $3/1000}' <<<"$q")" \
		"$(field "$g" cnp_rx)" "$(field "$g" pfc_rx)" "$((after - before))" "$retx" "$v" >>"$table"
done
{
	echo
	echo "FCT: message post to last ACK; times in fabric time (wall / D); slowdown = FCT / standalone"
	echo "FCT (base RTT + wire bytes / bottleneck), floored at 1. Queue: the bottleneck port"
	echo "tor-p1, sampled every 5 us. CNPs received by senders, PAUSE frames received by hosts,"
	echo "switch drops by any reason. A run marked INVALID is not a result (DESIGN.md §5): see the"
	echo "reasons in <scheme>/gen.txt. Schemes: docs/cc.md; the engine: docs/transport.md."
} >>"$table"
echo
cat "$table"
echo
echo "results: $OUT"
