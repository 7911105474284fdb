#!/usr/bin/env bash
# netns: the host engine on the star. Hosts exchange messages through the switch (ping-pong and
# a 3:1 incast, payloads checked by content, with and without ICRC); malformed RoCE frames are
# counted and dropped while traffic continues; a 1% loss injected at the switch is recovered by
# go-back-N and by selective repeat with no corruption, and SR retransmits less; a host link's
# error rate is applied by the engine and recovered; segments fit the path MTU.
source "$(dirname "$0")/lib.sh"

D=$(vm_or 400 50)
topo=$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/star.topo")")
"$QUENCH" topo up "$topo" --param N=4 --dilation "$D" >/dev/null

gen() { "$QUENCH" gen "$TOPO_NAME" "$@"; }

# 1. ping-pong and incast, delivered exactly and verified by content (gen exits 3 otherwise).
out=$(gen --pattern pingpong --count 50 --size 64 --dst h1 --senders h2) || fail "ping-pong: $out"
grep -q "flows done 50/50, content errors 0, corrupt messages 0" <<<"$out" || fail "ping-pong: $out"
echo "$out" | grep -E "^fct"
out=$(gen --pattern incast --senders 3 --size 200KB --count 3 --dst h1 --mode sr --icrc --fct-out "$WORK/incast.fct") ||
	fail "incast: $out"
grep -q "flows done 9/9, content errors 0, corrupt messages 0" <<<"$out" || fail "incast: $out"
grep -E "^(fct|goodput|validity)" <<<"$out"
# each flow its own QP, as `quench run` (issue 44): nine flows, three per sender, nine source
# ports (a QP's UDP source port is derived from its QPN; fct.txt field 3)
qps=$(jq -Rs '[split("\n")[] | select(length > 0) | split(" ")[2]] | unique | length' "$WORK/incast.fct")
echo "incast: 9 flows on $qps QPs"
holds "$qps == 9" || fail "gen: 9 flows of 3 host pairs ran on $qps QPs, not one each: $(cat "$WORK/incast.fct")"

# 2. malformed frames (unknown BTH opcode) sent to h1 while the engine serves it: every one is
#    counted and dropped, the engine keeps running, and traffic works afterwards.
engine_bg junkeng
"$TRAFFIC" send --netns "$(ns h3)" --dev h3-eth0 --dst-mac "$(gw_mac h3)" --src-ip "$(host_ip h3)" \
	--dst-ip "$(host_ip h1)" --count 100 --size 200 --opcode 0x33 --rate 1e6 >/dev/null ||
	fail "junk sender failed"
sleep 0.5
kill -TERM "$PID_junkeng"
wait "$PID_junkeng" || fail "the engine did not survive malformed frames: $(cat "$WORK/junkeng.out")"
bad=$(awk '$1=="host" && $2=="h1:" {for (i=1;i<=NF;i++) if ($i=="malformed") print $(i+1)}' "$WORK/junkeng.out")
echo "malformed frames counted at h1: $bad of 100"
[ "${bad:-0}" -eq 100 ] || fail "expected 100 malformed frames at h1: $(cat "$WORK/junkeng.out")"
out=$(gen --pattern pingpong --count 50 --size 1000 --dst h1 --senders h2) || fail "ping-pong after junk: $out"

# 2b. a per-QP rate limit below the link: the flow never runs above the limit, and in a valid
#     run (no stall: the limiter does not catch up after one) it reaches it. Up to 3 attempts
#     for a valid one; the upper bound is checked on every attempt.
valid_rate=""
unchecked=""
# Only a VALID run bounds the rate from below: up to five attempts (an INVALID one is counted).
# Under emulation no run is VALID and the lower bound is not asserted (DESIGN.md §7): one
# attempt checks the upper bound (four more took 26 s of the 6.1 guest's time for nothing).
for i in $(seq 1 "$(vm_or 1 5)"); do
	out=$(gen --pattern long --size 4MB --dst h1 --senders h2 --qp-rate 2Gbps) || fail "rate-limited flow: $out"
	gp=$(sed -n 's/^goodput \([0-9.]*\) Gbit.*/\1/p' <<<"$out")
	v=$(sed -n 's/^validity: //p' <<<"$out")
	# payload share of a full frame on the wire: 2004 / (2004 + 54 + 24) x 2 Gbit/s = 1.925
	echo "QP limited to 2 Gbit/s: goodput $gp Gbit/s (payload; at most 1.925), $v"
	holds "$gp <= 1.925 * 1.002" || fail "rate-limited QP ran at $gp Gbit/s, above its limit"
	if [ "$v" = VALID ]; then
		valid_rate=$gp
		echo "rate-limited QP: $((i - 1)) INVALID attempt(s) before a VALID one"
		break
	fi
done
if [ -n "$valid_rate" ]; then
	holds "$valid_rate >= 1.925 * 0.9" ||
		fail "rate-limited QP reached only $valid_rate Gbit/s in a valid run (expected >= 1.73)"
elif [ -n "${QN_IN_VM:-}" ]; then
	echo "no VALID attempt under emulation: the lower bound is not asserted there (DESIGN.md §7)"
else
	# inconclusive, not failed: reported (as a skip) after every other check has run
	unchecked="the 2 Gbit/s QP limit's lower bound not checked (inconclusive): no VALID run in 5 attempts"
	echo "$unchecked"
fi

# 3. injected loss at the switch: recovered, nothing corrupted; SR retransmits less than GBN.
#    RTO 2 ms / 4 ms (fabric): the 3:1 incast without congestion control queues up to ~1.4 ms at
#    the switch, and with the scheme's default RTO (100 / 320 us) GBN timed out on packets still
#    queued in every attempt on a quiet machine (2026-11-28: 10-26 timeouts, 259-558 duplicate
#    arrivals, the old duplicates-free precondition never met; SR none), so its count mixed
#    answers to losses with answers to queueing. With the RTO above the queueing delay a timeout
#    answers a lost tail (GBN 85-281 retransmissions against SR's 4-13, 0 duplicates at GBN).
#    An attempt is compared when no affected period (gen's `affected`: an engine stop, a late
#    host) lasted an RTO (a stop that long fires timeouts no loss caused); up to three attempts,
#    then the machine is measured (machine_stalls): inconclusive if it stops loops, a failure if
#    not. Under emulation one attempt, compared as it is (a TCG guest stops the engine for long).
"$QUENCH" switch set "$TOPO_NAME/tor" loss=0.01 >/dev/null
declare -A retx dups
clean=0
for attempt in $(seq 1 "$(vm_or 1 3)"); do
	long=0
	for mode in gbn sr; do
		out=$(gen --pattern incast --senders 3 --size 200KB --count 3 --dst h1 --mode "$mode" --seed 7 \
			--rto-low 2ms --rto-high 4ms --format json 2>/dev/null) || fail "$mode under 1% loss: $out"
		jq -e '.flows_done == 9 and .content_errors == 0 and .counters["qp.corrupt_messages"] == 0' <<<"$out" >/dev/null ||
			fail "$mode under loss: $out"
		retx[$mode]=$(jq '.counters["qp.retransmitted"]' <<<"$out")
		dups[$mode]=$(jq '.counters["qp.duplicates"]' <<<"$out")
		long=$((long + $(jq '[.affected[] | select(.[1] - .[0] >= 2000000)] | length' <<<"$out")))
		echo "$mode: $(jq -c '{goodput_gbps, retransmitted: .counters["qp.retransmitted"], timeouts: .counters["qp.timeouts"], duplicates: .counters["qp.duplicates"], affected: (.affected | length)}' <<<"$out")"
	done
	if [ -n "${QN_IN_VM:-}" ] || [ "$long" -eq 0 ]; then
		clean=1
		break
	fi
	echo "attempt $attempt: $long affected period(s) of an RTO or longer: not compared"
done
injected=$("$QUENCH" switch stats "$TOPO_NAME/tor" --format json | jq '[.switches[].ports[].counters["drops.injected"]] | add')
echo "switch dropped $injected data packets on purpose; retransmitted gbn ${retx[gbn]} sr ${retx[sr]}"
[ "${injected:-0}" -ge 1 ] || fail "the switch injected no loss"
holds "${retx[sr]} >= 1" || fail "SR recovered losses without retransmitting?"
if [ "$clean" = 1 ]; then
	holds "${retx[sr]} < ${retx[gbn]}" || fail "SR retransmitted ${retx[sr]} >= GBN ${retx[gbn]}"
else
	machine_stalls "$out" || fail "engine stops of an RTO in three attempts on a quiet machine: $out ($STALLS)"
	unchecked="${unchecked:+$unchecked; }SR against GBN not compared (inconclusive): engine stops of an RTO in three attempts; $STALLS"
fi
# 4. a lossy host link (error=0.02 on h2's link): the engine drops frames in both directions of
#    that link; SR recovers them. The engine's own error model, no kernel path of its own: not
#    repeated under emulation (the host kernel's run covers it; DESIGN.md §7).
"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null
if [ -z "${QN_IN_VM:-}" ]; then
	lossy=$(write_topo "defaults rate=10Gbps mtu=2048 delay=1us buffer=12MB
switch tor
host h1
host h2
link h1 tor
link h2 tor error=0.02")
	"$QUENCH" topo up "$lossy" --dilation "$D" >/dev/null
	out=$(gen --pattern incast --senders h2 --size 500KB --count 2 --dst h1 --mode sr --format json 2>/dev/null) ||
		fail "lossy link: $out"
	errs=$(jq .hosts.h2.link_errors <<<"$out")
	echo "frames lost on h2's link: $errs; goodput $(jq .goodput_gbps <<<"$out") Gbit/s"
	holds "${errs:-0} >= 1" || fail "a 2% link error rate lost nothing: $out"
	jq -e '.flows_done == 2 and .content_errors == 0 and .counters["qp.corrupt_messages"] == 0' <<<"$out" >/dev/null ||
		fail "lossy link: $out"
	"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null
fi
# 5. segments fit the path MTU: h2's link has MTU 1500 (the others 2048), so h2->h1 and h3->h2
#    carry 1500-byte packets (a 2048-byte frame would be dropped by h2's veth). 500 KB at
#    1456 B of payload per packet = 344 packets per message (250 at MTU 2048).
mixed=$(write_topo "defaults rate=10Gbps mtu=2048 delay=1us buffer=12MB
switch tor
host h[1..3]
link h1 tor
link h2 tor mtu=1500
link h3 tor")
"$QUENCH" topo up "$mixed" --dilation "$D" >/dev/null
out=$(gen --pattern incast --senders h2 --size 500KB --count 2 --dst h1 --format json 2>/dev/null) || fail "MTU 1500 path: $out"
jq -e '.flows_done == 2 and .content_errors == 0 and .counters["qp.corrupt_messages"] == 0' <<<"$out" >/dev/null ||
	fail "MTU 1500 path: $out"
# packets sent minus retransmissions (a slow VM may time out once)
pk=$(jq '.counters["qp.packets_sent"] - .counters["qp.retransmitted"]' <<<"$out")
echo "h2->h1 over an MTU 1500 link: $pk distinct data packets for 2 x 500 KB (expected 688)"
[ "$pk" -eq 688 ] || fail "expected 688 packets of 1456 B payload, got $pk: $out"
if jq -e '.reasons | any(test("veth drops"))' <<<"$out" >/dev/null; then fail "veth drops on the MTU 1500 path: $out"; fi
out=$(gen --pattern incast --senders h3 --size 500KB --count 2 --dst h2) || fail "MTU 1500 into h2: $out"
grep -q "flows done 2/2, content errors 0, corrupt messages 0" <<<"$out" || fail "MTU 1500 into h2: $out"
[ -z "$unchecked" ] || skip "every other check passed; $unchecked"
pass "messages delivered exactly (content-checked), malformed frames dropped, 1% loss recovered (GBN ${retx[gbn]} vs SR ${retx[sr]} retransmissions)"
