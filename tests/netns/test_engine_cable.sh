#!/usr/bin/env bash
# netns: a cable (a delayed switch-to-switch link, carried by the engine) adds exactly its
# delay: the ping-pong RTT between hosts behind two switches grows by 2x the cable delay
# (within 10%) compared with the same link without delay.
source "$(dirname "$0")/lib.sh"
[ -z "${QN_IN_VM:-}" ] || skip "timing is not asserted under emulation (DESIGN.md §7)"

D=20
CABLE_US=20
rtt() {
	local f
	f=$(write_topo "defaults rate=10Gbps mtu=2048 delay=1us buffer=12MB
switch s1
switch s2
host h1
host h2
link h1 s1
link s1 s2 delay=$1
link s2 h2")
	"$QUENCH" topo up "$f" --dilation "$D" >/dev/null
	local out
	out=$("$QUENCH" gen "$TOPO_NAME" --pattern pingpong --count 300 --size 64 --dst h2 --senders h1) ||
		fail "ping-pong over delay=$1: $out"
	grep -q "$2 cables" <<<"$out" || fail "expected $2 cables: $out"
	"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null
	sed -n 's/^fct p50 \([0-9.]*\) us.*/\1/p' <<<"$out"
}
base=$(rtt 0ns 0)
with=$(rtt "${CABLE_US}us" 1)
echo "ping-pong p50: ${base} us without, ${with} us with a ${CABLE_US} us cable (fabric, D=$D)"
awk -v a="$base" -v b="$with" -v c="$CABLE_US" 'BEGIN {
	d = b - a; want = 2 * c; err = (d - want) / want;
	printf "added %.2f us, expected %.2f us (%+.1f%%)\n", d, want, 100 * err;
	exit (err < -0.1 || err > 0.1) }' || fail "the cable did not add 2 x ${CABLE_US} us within 10%"
pass "a ${CABLE_US} us cable adds $(awk -v a="$base" -v b="$with" 'BEGIN{printf "%.2f", b-a}') us to the RTT"
