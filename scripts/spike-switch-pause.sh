#!/usr/bin/env bash
# The switch-to-switch PAUSE measurement (docs/switch.md): with the dumbbell's bottleneck
# s1-p3 (toward switch s2) busy, throttle its data class over netlink as a switch would when a
# PAUSE from s2 arrives, and measure the time until s1-p3 goes quiet and the bytes that slip
# through. Usage: sudo scripts/spike-switch-pause.sh [BUILD] [RATE]
set -euo pipefail
BUILD=${1:-build}
RATE=${2:-1Gbps}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
Q="$BUILD/quench"
T="$BUILD/qn_traffic"
NAME=qnspike
PIDS=()
cleanup() {
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	"$Q" topo down --name $NAME >/dev/null 2>&1 || true
}
trap cleanup EXIT
"$Q" topo up "$ROOT/netns/dumbbell.topo" --no-cables --name $NAME --param BOTTLENECK="$RATE" >/dev/null
"$Q" switch set $NAME/s1 admission=off >/dev/null
show=$("$Q" topo show)
ip_of() { echo "$show" | awk -v n="$1" '$1=="host" && $2==n {print $6}' | head -1; }
mac_of() { echo "$show" | awk -v p="$1" '$1==p {print $5}' | head -1; }
for h in 1 2; do
	"$T" send --netns qn-$NAME-h$h --dev h$h-eth0 --dst-mac "$(mac_of s1-p$h)" --src-ip "$(ip_of h$h)" \
		--dst-ip "$(ip_of h$((h + 2)))" --seconds 60 --size 2000 --flows 8 >/dev/null &
	PIDS+=($!)
done
sleep 1
"$T" spike --netns qn-$NAME-s1 --dev s1-p3 --count 10
