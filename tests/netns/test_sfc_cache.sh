#!/usr/bin/env bash
# netns: SFC part 2 on real packets (docs/sfc.md; issue 19's "what must be shown").
#
# (1) Cache loop, on the leaf-spine (netns/leafspine.topo) with cables of 80 Gbit/s and 5 us
#     (FABRIC, FABRIC_DELAY: the fabric never queues for eight 10 Gbit/s senders), D = 200:
#     eight senders on leaf2 and leaf3 (h5..h12), 64 KB each, starting at random within 200 us
#     (staggered, one seed), none/sfc:lossy into h1 on leaf1. The first packets of each sender
#     reach leaf1's congested port and are answered from there (origin 0); those BTS pass the
#     senders' ToR, which caches them (sfc_cache=tor, the default) and answers later senders
#     itself (origin 1). The engine splits the BTS loop (send of the PSN a BTS names -> the pause
#     applied) by origin. Difference of the medians = 2 (T_A - T_ToR): two cable delays and a
#     data frame and a BTS serialized at the fabric rate, each way:
#     4 x 5 us + 2 x 2086 B and 2 x 114 B at 80 Gbit/s = 20.44 us, within +-(one data frame at
#     the host rate, 1.67 us, + 1 us). The peak queue toward h1 with the cache on is below the
#     peak with the cache off (median of three VALID runs each, same seed).
# (2) Negative control: sfc_cache=off on every switch: 0 cache hits (sfc_bts_cache) while the
#     congested switch still sends BTS, and no origin-1 loop sample.
# (3) SFC-P on the star (1 us links), the depth toward h1 forced to 1.1 MB (qdepth test knob)
#     so every BTS asks (1.1 MB - Q_Tg) / R: with sfc_p=on the ToR sends h2 one PAUSE per BTS of
#     the computed quanta (switchd's log), never refreshed: h2 receives at most one PFC frame per
#     PAUSE request (the last may land after gen stopped counting) and no BTS, and is paused at
#     least one pause's length and at most one per PAUSE it received; with sfc_p=off, no PAUSE.
# (4) Fairness (paper App. B.3): four long flows under dcqcn+w/sfc:lossy into h1 on the
#     long-10g star, starting 2 ms apart: mean Jain's index over 1 ms windows from the last
#     start to the first completion >= 0.9, with BTS sent.
source "$(dirname "$0")/lib.sh"
[ -z "${QN_IN_VM:-}" ] || skip "fabric dynamics need line-rate engines; not run under emulation (DESIGN.md §7)"
command -v bpftool >/dev/null || skip "missing bpftool"

# ctr SWITCH NAME [PORT]: a switch counter summed over its ports (or of one port)
ctr() {
	if [ -n "${3:-}" ]; then
		"$QUENCH" switch stats "$TOPO_NAME/$1" --format json | jq "[.switches[].ports[] | select(.port == \"$3\") | .counters.$2] | add"
	else
		"$QUENCH" switch stats "$TOPO_NAME/$1" --format json | jq "[.switches[].ports[].counters.$2] | add"
	fi
}
# why: every non-zero drop counter of every switch, by port and reason
why() {
	local sw
	for sw in $SWITCHES; do
		"$QUENCH" switch stats "$TOPO_NAME/$sw" --format json |
			jq -r '.switches[].ports[] | .port as $p | .counters | to_entries[] | select((.key | startswith("drops.")) and .value > 0) | "\($p) \(.key)=\(.value)"'
	done | tr '\n' ' '
}
# lost SWITCH: drops other than not_ipv4 (the cables' IPv6 and ARP chatter, which a switch
# that routes IPv4 only drops by design), from one reading (two readings race with the chatter)
lost() {
	"$QUENCH" switch stats "$TOPO_NAME/$1" --format json |
		jq '[.switches[].ports[].counters | .drops - .["drops.not_ipv4"]] | add'
}
median3() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
# p50 ORIGIN: the median BTS loop of that origin in $TXT, us ("" when none)
p50() { sed -n "s/^loop delay bts origin $1: n [0-9]* p50 \([0-9.]*\) us.*/\1/p" <<<"$TXT"; }
nsamples() { sed -n "s/^loop delay bts origin $1: n \([0-9]*\) .*/\1/p" <<<"$TXT"; }

# ---- (1) and (2): the leaf-spine ----
up_auto "$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/leafspine.topo")")" \
	--param FABRIC=80Gbps --param FABRIC_DELAY=5us # D measured, not a constant
SWITCHES="leaf1 leaf2 leaf3 leaf4 spine1 spine2"
# The congested port: leaf1's port toward h1
CPORT=leaf1/leaf1-p1
SENDERS=h5,h6,h7,h8,h9,h10,h11,h12
FABRIC_BPS=80000000000 HOST_BPS=10000000000
# 2 (T_A - T_ToR) in ns: 4 cable delays, 2 data frames (2062 + 24 B) and 2 BTS frames (90 + 24 B)
# serialized at the fabric rate
WANT_NS=$(jq -n "4 * 5000 + 2 * (2086 + 114) * 8e9 / $FABRIC_BPS")
TOL_NS=$(jq -n "2086 * 8e9 / $HOST_BPS + 1000")

# incast [gen options]: one staggered incast until VALID (three attempts). Sets OUT, TXT and
# RUN ("PEAK HITS_C QUEUE_BTS DROPS OCC"): the peak queue toward h1, cache hits at the senders' ToRs,
# BTS from leaf1's queue during the run, and the most cache entries live at one scan of a switch's
# cache (the sfc_cache_peak gauge, zeroed by gen when the run starts).
incast() {
	local attempt c0 q0 d0 sw
	for attempt in 1 2 3; do
		c0=$(($(ctr leaf2 sfc_bts_cache) + $(ctr leaf3 sfc_bts_cache))) q0=$(ctr leaf1 sfc_bts_queue) d0=0
		for sw in $SWITCHES; do d0=$((d0 + $(lost "$sw"))); done
		OUT=$("$QUENCH" gen "$TOPO_NAME" --pattern incast --senders "$SENDERS" --dst h1 --size 64KB --count 1 \
			--sync-window 200us --seed 7 --cc none/sfc:lossy --mode sr --queues "leaf1:leaf1-p1" --queue-interval 2us \
			--format json "$@" 2>"$WORK/gen.txt") || fail "gen $*: $(tail -3 "$WORK/gen.txt")"
		TXT=$(cat "$WORK/gen.txt")
		local d1=0
		for sw in $SWITCHES; do d1=$((d1 + $(lost "$sw"))); done
		RUN="$(jq ".queues[] | select(.port == \"$CPORT\") | .max" <<<"$OUT") $(($(ctr leaf2 sfc_bts_cache) + $(ctr leaf3 sfc_bts_cache) - c0)) $(($(ctr leaf1 sfc_bts_queue) - q0)) $((d1 - d0)) $(jq '.counters["switch.sfc_cache_peak"]' <<<"$OUT")"
		jq -e '.valid and .flows_done == .flows and .content_errors == 0' <<<"$OUT" >/dev/null && return 0
		echo "  attempt $attempt INVALID: $(jq -c .reasons <<<"$OUT")"
	done
	machine_stalls "$OUT" || fail "no VALID incast in three attempts on a quiet machine ($STALLS)"
	skip "inconclusive: no VALID incast in three attempts; $STALLS"
}

peaks_on=() diffs=() occ_max=0
for rep in 1 2 3; do
	incast
	read -r peak hits qbts drops occ <<<"$RUN"
	# One destination at one DSCP: one key. More live entries would mean the key split.
	[ "$occ" -le 1 ] || fail "cache on: $occ pause-cache entries live at once for one (destination, DSCP)"
	[ "$occ" -le "$occ_max" ] || occ_max=$occ
	[ "$drops" -eq 0 ] || fail "cache on: $drops drops (the 12 MB buffer holds the incast): $(why)"
	[ "$qbts" -gt 0 ] || fail "cache on: no BTS from leaf1's queue (peak $peak B)"
	[ "$hits" -gt 0 ] || fail "cache on: no cache hit at the senders' ToRs ($qbts BTS from leaf1)"
	a=$(p50 0) b=$(p50 1)
	[ -n "$a" ] && [ -n "$b" ] || fail "cache on: no loop sample of origin 0 or 1: $(grep '^loop delay' <<<"$TXT" | tr '\n' ';')"
	d=$(jq -n "($a - $b) * 1000 | round")
	echo "cache on, run $rep: peak $peak B, $hits cache hits (at most $occ entry live), $qbts BTS from leaf1; BTS loop p50 origin 0 $a us (n $(nsamples 0)), origin 1 $b us (n $(nsamples 1)): difference $d ns"
	peaks_on+=("$peak") diffs+=("$d")
done
# The scan runs every 1 ms wall; entries live for their pause (hundreds of µs of wall time at
# D = 200, refreshed while hits keep coming), so three runs with hits and no live entry seen
# means the gauge is broken.
[ "$occ_max" -eq 1 ] || fail "cache on: the occupancy gauge saw no live entry in three runs with cache hits"
DIFF=$(median3 "${diffs[@]}")
holds "(($DIFF - $WANT_NS) | fabs) <= $TOL_NS" ||
	fail "median(origin 0) - median(origin 1) = $DIFF ns (median of three runs), expected 2 (T_A - T_ToR) = $WANT_NS ns within $TOL_NS ns"

for sw in $SWITCHES; do "$QUENCH" switch set "$TOPO_NAME/$sw" sfc_cache=off >/dev/null; done
peaks_off=()
for rep in 1 2 3; do
	incast --keep-switch-stages
	read -r peak hits qbts drops occ <<<"$RUN"
	[ "$occ" -eq 0 ] || fail "cache off: $occ pause-cache entries live"
	[ "$drops" -eq 0 ] || fail "cache off: $drops drops: $(why)"
	[ "$hits" -eq 0 ] || fail "cache off: $hits cache hits"
	[ "$qbts" -gt 0 ] || fail "cache off: no BTS from leaf1's queue: the control shows nothing"
	[ -z "$(p50 1)" ] || fail "cache off: origin-1 BTS reached the senders: $(grep '^loop delay bts origin 1' <<<"$TXT")"
	echo "cache off, run $rep: peak $peak B, 0 cache hits, $qbts BTS from leaf1; BTS loop p50 origin 0 $(p50 0) us"
	peaks_off+=("$peak")
done
ON=$(median3 "${peaks_on[@]}") OFF=$(median3 "${peaks_off[@]}")
[ "$ON" -lt "$OFF" ] || fail "peak queue with the cache $ON B is not below the peak without it, $OFF B"
echo "cache loop: median difference $DIFF ns (expected $WANT_NS +- $TOL_NS); peak queue $ON B with the cache, $OFF B without ($(jq -n "$ON / $OFF * 100 | round")%)"
"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null

# ---- (3): SFC-P on the star ----
"$QUENCH" topo up "$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/star.topo")")" --param N=3 \
	--dilation 200 >/dev/null
PIN=/sys/fs/bpf/quench/$TOPO_NAME/tor
q=1100000
le() { local i; for ((i = 0; i < $2; i++)); do printf '%d ' $((($1 >> (8 * i)) & 255)); done; }
# struct qn_test_qdepth {u32 valid; u32 pkts; u64 bytes}, port 0 = tor-p1 (toward h1)
# shellcheck disable=SC2046
bpftool map update pinned "$PIN/qn_test_qdepth" key 0 0 0 0 value $(le 1 4) $(le $((q / 2062)) 4) $(le $q 8)
LOG=/run/quench/$TOPO_NAME.switchd.log
[ -f "$LOG" ] || fail "no switchd log for $TOPO_NAME at $LOG"
sfcp_run() { # sfc_p value -> OUT, TXT; RUN "PAUSES_SENT PFC_RX_H2 BTS_RX PAUSED_NS LOGGED_LINES QUANTA"
	local attempt p0 l0
	for attempt in 1 2 3; do
		"$QUENCH" switch set "$TOPO_NAME/tor" sfc=on sfc_p="$1" qdepth=on >/dev/null
		p0=$(ctr tor sfcp_pause) l0=$(wc -l <"$LOG")
		OUT=$("$QUENCH" gen "$TOPO_NAME" --pattern incast --senders h2 --dst h1 --size 64KB --count 1 \
			--cc none/sfc:lossy --mode sr --keep-switch-stages --format json 2>"$WORK/gen.txt") ||
			fail "gen (SFC-P $1): $(tail -3 "$WORK/gen.txt")"
		TXT=$(cat "$WORK/gen.txt")
		sleep 0.2 # switchd's log lines for the last PAUSE
		local lines
		lines=$(tail -n +$((l0 + 1)) "$LOG" | grep -c 'SFC-P PAUSE' || true)
		RUN="$(($(ctr tor sfcp_pause) - p0)) $(jq '.counters["host.pfc_rx"]' <<<"$OUT") $(jq '.counters["host.bts_rx"]' <<<"$OUT") $(jq '.counters["host.paused_ns.prio3"]' <<<"$OUT") $lines $(tail -n +$((l0 + 1)) "$LOG" | sed -n 's/.*SFC-P PAUSE quanta \([0-9]*\).*/\1/p' | sort -u | tr '\n' ',')"
		jq -e '.valid and .flows_done == 1 and .content_errors == 0' <<<"$OUT" >/dev/null && return 0
	done
	machine_stalls "$OUT" || fail "no VALID SFC-P run in three attempts on a quiet machine ($STALLS)"
	skip "inconclusive: no VALID SFC-P run in three attempts; $STALLS"
}
# The settings for a 10 Gbit/s star with 1 us links: derive them once through gen
"$QUENCH" gen "$TOPO_NAME" --pattern incast --senders h2 --dst h1 --size 4KB --count 1 --cc none/sfc:lossy \
	--format json >/dev/null 2>"$WORK/derive.txt" || fail "derive: $(tail -3 "$WORK/derive.txt")"
qtg=$(sed -n 's/^switch stages:.* sfc_qtg=\([0-9]*\).*/\1/p' "$WORK/derive.txt")
[ -n "$qtg" ] || fail "gen printed no derived sfc_qtg"
PAUSE_US=$(jq -n "(($q - $qtg) * 8e6 / 1e10) | ceil")
QUANTA=$(jq -n "($PAUSE_US * 1e10 / 512e6) | ceil")
QUANTA_NS=$(jq -n "$QUANTA * 512e9 / 1e10 | floor")
sfcp_run on
read -r sent pfcrx btsrx paused lines quanta <<<"$RUN"
echo "SFC-P on: $sent PAUSE requests, switchd sent $lines ('quanta $quanta'), h2 received $pfcrx PFC frames and $btsrx BTS, paused $paused ns; each BTS asks $PAUSE_US us = $QUANTA quanta"
[ "$sent" -gt 0 ] || fail "SFC-P on: no PAUSE with every BTS asking $PAUSE_US us"
[ "$lines" -eq "$sent" ] || fail "SFC-P on: $sent requests, switchd logged $lines PAUSE frames"
[ "$quanta" = "$QUANTA," ] || fail "SFC-P on: quanta '$quanta', computed $QUANTA"
# No refresh: h2 never receives more PFC frames than there were requests (a refresh every half
# pause would add frames during each 873 us pause). It may count fewer: the PAUSE for the
# flow's last packets can reach h2 after the flow completed and gen stopped counting.
[ "$pfcrx" -ge 1 ] && [ "$pfcrx" -le "$sent" ] || fail "SFC-P on: h2 received $pfcrx PFC frames for $sent PAUSE requests (refreshes?)"
[ "$btsrx" -eq 0 ] || fail "SFC-P on: h2 received $btsrx BTS (SFC-P replaces them)"
holds "$paused >= $QUANTA_NS and $paused <= $pfcrx * $QUANTA_NS" ||
	fail "SFC-P on: h2 paused $paused ns, not between one PAUSE ($QUANTA_NS ns) and the $pfcrx it received"
sfcp_run off
read -r sent2 pfcrx2 btsrx2 paused2 lines2 quanta2 <<<"$RUN"
echo "SFC-P off: $sent2 PAUSE requests, $lines2 sent, h2 received $pfcrx2 PFC frames and $btsrx2 BTS"
[ "$sent2" -eq 0 ] && [ "$lines2" -eq 0 ] && [ "$pfcrx2" -eq 0 ] || fail "SFC-P off: $sent2 requests, $lines2 frames, $pfcrx2 received"
[ "$btsrx2" -gt 0 ] || fail "SFC-P off: no BTS reached h2: the control shows nothing"
"$QUENCH" switch set "$TOPO_NAME/tor" qdepth=off sfc_p=off >/dev/null
"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null

# ---- (4): fairness on the long-10g star ----
up_auto "$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/star.topo")")" --param N=5 \
	--preset long-10g
for attempt in 1 2 3; do
	OUT=$("$QUENCH" gen "$TOPO_NAME" --pattern long --senders h2,h3,h4,h5 --dst h1 --size 12MB --interval 2ms \
		--cc dcqcn+w/sfc:lossy --mode sr --trace 4 --trace-out "$WORK/fair.csv" --format json 2>"$WORK/gen.txt") ||
		fail "fairness run: $(tail -3 "$WORK/gen.txt")"
	jq -e '.valid and .flows_done == .flows' <<<"$OUT" >/dev/null && break
	[ "$attempt" -lt 3 ] || { machine_stalls "$OUT" || fail "no VALID fairness run on a quiet machine ($STALLS)"; skip "inconclusive: no VALID fairness run; $STALLS"; }
done
first_done=$(jq .first_completion_ns <<<"$OUT")
fbts=$(jq '.counters["host.bts_rx"]' <<<"$OUT")
fair=$("$QUENCH" analyze trace "$WORK/fair.csv" --from 6ms --to "${first_done}ns" --window 1ms --jain 0.9 --run 3)
jain=$(jq '.jain_mean_after * 10000 | round / 10000' <<<"$fair")
echo "fairness: 4 long flows, dcqcn+w/sfc: Jain $jain over 1 ms windows from the last start to the first completion ($first_done ns); $fbts BTS"
[ "$fbts" -gt 0 ] || fail "fairness run: SFC never triggered (0 BTS)"
holds "$jain >= 0.9" || fail "fairness: Jain $jain < 0.9"

pass "cache loop difference $DIFF ns (expected $WANT_NS +- $TOL_NS), peak $ON B with the cache vs $OFF B without; cache off: 0 hits; SFC-P: $sent PAUSE of $QUANTA quanta, once each, none when off; Jain $jain"
