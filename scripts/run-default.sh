#!/usr/bin/env bash
# `make run`: the main job until the experiment harness (issue 7) exists. Brings up the
# dumbbell with a 1 Gbit/s bottleneck, pushes two raw floods through it plus stamped CNP and
# data probes, and prints what a user of the switch wants to see: the bottleneck's achieved
# rate, the standing queue, control vs data one-way delay through it, and the per-port switch
# table. Everything goes into results/<time>-dumbbell/ as well.
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
QUENCH="$BUILD/quench"
TRAFFIC="$BUILD/qn_traffic"
[ "$(id -u)" -eq 0 ] || { echo "make run: needs root (namespaces, tc, BPF)" >&2; exit 1; }
[ -x "$QUENCH" ] && [ -x "$TRAFFIC" ] || { echo "make run: build first (make)" >&2; exit 1; }

NAME=qnrun
RATE_GBPS=1
SECONDS_RUN=5
OUT="$ROOT/results/$(date +%Y%m%d-%H%M%S)-dumbbell"
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/quench-run.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	"$QUENCH" topo down "$ROOT/netns/dumbbell.topo" --name $NAME >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT

echo "== quench: dumbbell, ${RATE_GBPS} Gbit/s bottleneck, ${SECONDS_RUN} s of raw traffic"
"$QUENCH" topo up "$ROOT/netns/dumbbell.topo" --no-cables --name $NAME --param BOTTLENECK=${RATE_GBPS}Gbps
"$QUENCH" topo show >"$OUT/topology.txt"

ip_of() { awk -v n="$1" '$1=="host" && $2==n {print $6}' "$OUT/topology.txt" | head -1; }
port_mac() { awk -v p="$1" '$1==p {print $5}' "$OUT/topology.txt" | head -1; }
ns() { echo "qn-$NAME-$1"; }
H1=$(ip_of h1); H2=$(ip_of h2); H3=$(ip_of h3); H4=$(ip_of h4)
M1=$(port_mac s1-p1); M2=$(port_mac s1-p2)

"$TRAFFIC" send --netns "$(ns h1)" --dev h1-eth0 --dst-mac "$M1" --src-ip "$H1" --dst-ip "$H3" \
	--seconds $((SECONDS_RUN + 1)) --size 2000 --flows 8 >"$WORK/flood1" 2>&1 &
PIDS+=($!)
"$TRAFFIC" send --netns "$(ns h2)" --dev h2-eth0 --dst-mac "$M2" --src-ip "$H2" --dst-ip "$H4" \
	--seconds $((SECONDS_RUN + 1)) --size 2000 --flows 8 >"$WORK/flood2" 2>&1 &
PIDS+=($!)
sleep 1
"$TRAFFIC" recv --netns "$(ns h4)" --dev h4-eth0 --seconds $((SECONDS_RUN - 1)) >"$OUT/delays.txt" 2>&1 &
rx=$!
"$TRAFFIC" send --netns "$(ns h2)" --dev h2-eth0 --dst-mac "$M2" --src-ip "$H2" --dst-ip "$H4" \
	--seconds $((SECONDS_RUN - 2)) --size 100 --rate 1e6 --opcode 0x81 --tos $((48 << 2)) --stamp >/dev/null &
PIDS+=($!)
"$TRAFFIC" send --netns "$(ns h2)" --dev h2-eth0 --dst-mac "$M2" --src-ip "$H2" --dst-ip "$H4" \
	--seconds $((SECONDS_RUN - 2)) --size 100 --rate 1e6 --stamp --seq-base 1000000000 >/dev/null &
PIDS+=($!)
"$TRAFFIC" rate --netns "$(ns s1)" --dev s1-p3 --seconds $((SECONDS_RUN - 2)) >"$OUT/rate.txt"
backlog=$(tc -n "$(ns s1)" -s qdisc show dev s1-p3 | awk '/^qdisc bfifo 20:/ {f=1} f && /backlog/ {print $2; exit}')
wait "$rx" || true
wait
PIDS=()

"$QUENCH" switch stats "$NAME/s1" >"$OUT/switch-s1.txt"
"$QUENCH" switch stats "$NAME/s2" >"$OUT/switch-s2.txt"
tc -n "$(ns s1)" -s class show dev s1-p3 >"$OUT/htb-s1-p3.txt"

val() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p" | head -1; }
cls() { grep "class=$2" "$1" | tr ' ' '\n' | sed -n "s/^$3=//p" | head -1; }
wire=$(val "$OUT/rate.txt" wire_bps)
{
	echo "quench make run: dumbbell (netns/dumbbell.topo), bottleneck s1-p3 at ${RATE_GBPS} Gbit/s"
	echo "kernel $(uname -r), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%FT%TZ)"
	echo
	printf '%-44s %s\n' "metric" "value"
	printf '%-44s %s\n' "bottleneck configured" "${RATE_GBPS}.000 Gbit/s"
	printf '%-44s %s\n' "bottleneck achieved (wire bits)" "$(awk -v w="$wire" 'BEGIN{printf "%.3f Gbit/s (%.2f%%)", w/1e9, 100*w/('$RATE_GBPS'e9)}')"
	printf '%-44s %s\n' "validity (achieved within 3%, DESIGN.md §5)" "$(awk -v w="$wire" 'BEGIN{d = w/('$RATE_GBPS'e9) - 1; if (d < 0) d = -d; print (d <= 0.03 ? "valid" : "INVALID: the CPU, not the shaper, set the rate")}')"
	printf '%-44s %s\n' "data-class backlog at s1-p3 (sample)" "$backlog"
	printf '%-44s %s\n' "data probes: one-way delay p50 / p99" "$(cls "$OUT/delays.txt" data delay_us_p50) / $(cls "$OUT/delays.txt" data delay_us_p99) us"
	printf '%-44s %s\n' "CNPs (control class): delay p50 / p99" "$(cls "$OUT/delays.txt" control delay_us_p50) / $(cls "$OUT/delays.txt" control delay_us_p99) us"
	printf '%-44s %s\n' "probes verified intact" "$(val "$OUT/delays.txt" valid) (corrupt $(val "$OUT/delays.txt" corrupt), dup $(val "$OUT/delays.txt" dup))"
	echo
	cat "$OUT/switch-s1.txt" "$OUT/switch-s2.txt"
} | tee "$OUT/summary.txt"
echo
echo "results: $OUT"
