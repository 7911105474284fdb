#!/usr/bin/env bash
# netns: a cable (a delayed switch-to-switch link, carried by the engine) adds exactly its
# delay: the ping-pong RTT between hosts behind two switches grows by 2x the cable delay
# (within 10%) compared with the same link without delay.
# D = 100: each hop's wall-time latency (a veth, an engine pass) counts 1/D in fabric time; at
# D = 20 the cable's two extra engine hops added 2.6 us to the 40 (+6.4%, quiet) and a loaded
# machine +24.6% (a fresh-clone run, 2026-11-28). An attempt counts only when both ping-pongs
# are VALID (the engine was not stopped: DESIGN.md §5); up to three, then the machine is
# measured (machine_stalls): inconclusive if it stops loops, a failure if it is quiet.
source "$(dirname "$0")/lib.sh"
[ -z "${QN_IN_VM:-}" ] || skip "timing is not asserted under emulation (DESIGN.md §7)"

D=100
CABLE_US=20
# rtt DELAY CABLES: the ping-pong's p50 (us, fabric) over a link s1-s2 of that delay; sets
# VALID (1 when the run was VALID) and OUT.
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
	OUT=$("$QUENCH" gen "$TOPO_NAME" --pattern pingpong --count 300 --size 64 --dst h2 --senders h1 --format json 2>/dev/null) ||
		fail "ping-pong over delay=$1: $OUT"
	holds "$(jq .cables <<<"$OUT") == $2" || fail "expected $2 cables: $OUT"
	"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null
	VALID=$(jq 'if .valid then 1 else 0 end' <<<"$OUT")
	RTT=$(jq '.fct_ns.p50 / 1000' <<<"$OUT")
}
ok=0
for attempt in 1 2 3; do
	rtt 0ns 0
	base=$RTT base_valid=$VALID
	rtt "${CABLE_US}us" 1
	with=$RTT
	echo "attempt $attempt: ping-pong p50 ${base} us without, ${with} us with a ${CABLE_US} us cable (fabric, D=$D)"
	if [ "$base_valid" = 1 ] && [ "$VALID" = 1 ]; then
		ok=1
		break
	fi
	echo "attempt $attempt: not VALID (without: $base_valid, with: $VALID): not compared"
done
if [ "$ok" = 0 ]; then
	machine_stalls "$OUT" || fail "no VALID pair of ping-pongs in three attempts on a quiet machine ($STALLS): $OUT"
	skip "no VALID pair of ping-pongs in three attempts (inconclusive): $STALLS"
fi
added=$(jq -n "$with - $base")
echo "added $added us, expected $((2 * CABLE_US)) us ($(jq -n "($added / (2 * $CABLE_US) - 1) * 1000 | round / 10")%)"
holds "$added >= 0.9 * 2 * $CABLE_US and $added <= 1.1 * 2 * $CABLE_US" ||
	fail "the cable did not add 2 x ${CABLE_US} us within 10%"
pass "a ${CABLE_US} us cable adds $added us to the RTT"
