#!/usr/bin/env bash
# Why the pause gate is a tbf and not the HTB class (docs/switch.md "PFC", "Enforcement"): on the
# dumbbell's s1-p3 (1 Gbit/s, busy), pause the data class for 200 ms and resume it, either by
# changing the HTB class 1:20 to 8 bit/s and back (MODE=htb) or by changing a tbf under it
# (MODE=tbf), then run the qdisc once (one frame through the control class, as switchd's kick).
# Prints the bytes s2 received in 100 ms before, during the pause, and in the first 50 ms and the
# next 500 ms after the resume.
# Usage: sudo scripts/pause-gate-compare.sh [BUILD] htb|tbf
set -euo pipefail
BUILD=${1:-build}
MODE=${2:-tbf}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
Q="$BUILD/quench"
T="$BUILD/qn_traffic"
NAME=qngate
PIDS=()
cleanup() {
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	"$Q" topo down --name $NAME >/dev/null 2>&1 || true
}
trap cleanup EXIT
"$Q" topo up "$ROOT/netns/dumbbell.topo" --no-cables --name $NAME --param BOTTLENECK=1Gbps >/dev/null
"$Q" switch set $NAME/s1 admission=off >/dev/null
show=$("$Q" topo show $NAME)
ip_of() { echo "$show" | awk -v n="$1" '$1=="host" && $2==n {print $6}' | head -1; }
mac_of() { echo "$show" | awk -v p="$1" '$1==p {print $5}' | head -1; }
NS=qn-$NAME-s1
# this script drives the gate itself: switchd must not touch it
pkill -TERM -f "quench switchd $NAME" || true
tc -n $NS class show dev s1-p3 classid 1:20
rate=$(tc -n $NS class show dev s1-p3 classid 1:20 | sed -n 's/.* rate \([^ ]*\) .*ceil \([^ ]*\) .*/\1 ceil \2/p')
for h in 1 2; do
	"$T" send --netns qn-$NAME-h$h --dev h$h-eth0 --dst-mac "$(mac_of s1-p$h)" --src-ip "$(ip_of h$h)" \
		--dst-ip "$(ip_of h$((h + 2)))" --seconds 4 --size 2000 --flows 8 >/dev/null &
	PIDS+=($!)
done
rx() { ip netns exec qn-$NAME-s2 cat /sys/class/net/s2-p1/statistics/rx_bytes; }
pause() {
	if [ "$MODE" = tbf ]; then
		tc -n $NS qdisc change dev s1-p3 parent 1:20 handle 20: tbf rate 8bit burst 2200 limit 24mb
	else
		tc -n $NS class change dev s1-p3 parent 1:1 classid 1:20 htb rate 8bit ceil 8bit prio 1 burst 8400 cburst 8400
	fi
}
resume() {
	if [ "$MODE" = tbf ]; then
		tc -n $NS qdisc change dev s1-p3 parent 1:20 handle 20: tbf rate 32gbit burst 1mb limit 24mb
	else
		tc -n $NS class change dev s1-p3 parent 1:1 classid 1:20 htb rate $rate prio 1 burst 8400 cburst 8400
	fi
	"$T" kick --netns $NS --dev s1-p3
}
sleep 1
a=$(rx); sleep 0.1; b=$(rx); echo "$MODE: before, 100 ms: $((b - a)) B"
pause
a=$(rx); sleep 0.2; b=$(rx); echo "$MODE: paused, 200 ms: $((b - a)) B"
resume
a=$(rx); sleep 0.05; b=$(rx); echo "$MODE: resumed, first 50 ms: $((b - a)) B"
sleep 0.5; c=$(rx); echo "$MODE: resumed, next 500 ms: $((c - b)) B"
