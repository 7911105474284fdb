#!/usr/bin/env bash
# netns: SFC end to end on real packets (docs/sfc.md; issue 18's "what must be shown").
# The fabric is the star with the long-10g preset (10 Gbit/s links of 10 us: base RTT 43.3 us,
# a BDP of 54 KB = 26 frames of 2 KB, far above HTB's burst), D = 200, RED as DCQCN's spec set
# for 10 Gbit/s (Kmin 4096 B, Kmax 50 KB, Pmax 1%, at dequeue), PFC off. gen derives SFC's
# switch settings for the scheme (Q_Th 2 BDP, Q_Tg BDP, T_BF RTT/2; off for a scheme without
# /sfc).
#
# (1) Incast slope: N in {4, 8, 16, 24} senders of 64 KB each, all starting together, into h1;
#     dcqcn+w/sfc:lossy and dcqcn+w:lossy; the median peak queue (sampled every 5 us) of three (five when
#     the three differ by more than 3%) VALID runs per point; least-squares slope of peak against N. SFC's senders stop T_F after
#     the queue crosses Q_Th, each after sending R * T_F more (spec App. C: B_incast = N R T_F),
#     with T_F = 2 host-link delays + one data frame + one BTS serialized = 21.76 us here, so
#     the slope must be within +-30% of R * T_F = 27.2 KB per sender. Without SFC, DCQCN+W's
#     window (one BDP per sender) sets the peak: at least 1.5x steeper. The reference model
#     (quench model, same switch and scheme) gives both slopes: the emulator's within 10%.
#     Every run: 0 drops; BTS > 0 with SFC, 0 BTS without (the stage is off).
# (2) Negative control: the same SFC scheme with the switch stage forced off
#     (--keep-switch-stages, sfc=off): 0 BTS, and the slope check fails.
# (3) Pause against retransmission: the egress depth toward h1 forced to 1.1 MB (the qdepth
#     test knob), so every BTS pauses (1.1 MB - Q_Tg) / R = 837 us, more than the 320 us high
#     RTO; one sender of 128 KB, ACKs every 16 packets (so data is unacknowledged when a pause
#     begins), none/sfc:lossy, selective repeat. With the RTO held during pauses: nothing
#     dropped, 0 timeouts, 0 retransmissions. With the hold off (gen --test-no-rto-hold): more
#     than 0 of both (the check can fail).
# Reported, not asserted: the BTS loop (send of the PSN a BTS names -> the pause applied) next
# to the ECN loop (send of a CE-marked PSN -> the CNP naming it), p50/p99 in fabric time.
source "$(dirname "$0")/lib.sh"
[ -z "${QN_IN_VM:-}" ] || skip "fabric dynamics need line-rate engines; not run under emulation (DESIGN.md §7)"
command -v bpftool >/dev/null || skip "missing bpftool"

SIZES="4 8 16 24"
RATE=10000000000
# R * T_F in bytes: 2 x 10 us of propagation at R, plus a 2062-byte frame and a 90-byte BTS
# frame, each with 24 bytes of preamble, gap and FCS
RTF=$((RATE / 8 * 20 / 1000000 + 2062 + 24 + 90 + 24))
RED="ecn=on ecn_at=dequeue kmin=4096 kmax=50000 pmax=0.01"

STAR=$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/star.topo")")
# star_at D: the star at dilation D (changed in place: `topo up` of the same topology) with the
# RED settings and $STAR_SET
STAR_SET=""
star_at() {
	"$QUENCH" topo up "$STAR" --preset long-10g --param N=25 --dilation "$1" >/dev/null
	# shellcheck disable=SC2086
	"$QUENCH" switch set "$TOPO_NAME/tor" $RED $STAR_SET >/dev/null
	STAR_D=$1
}
# D measured for the star (`topo up --dilation auto`), not a constant
up_auto "$STAR" --preset long-10g --param N=25
"$QUENCH" switch set "$TOPO_NAME/tor" $RED >/dev/null
STAR_D=$D
PIN=/sys/fs/bpf/quench/$TOPO_NAME/tor

# counter NAME: a counter of the congested port tor-p1 (port 0) or of the switch, summed
ctr() { "$QUENCH" switch stats "$TOPO_NAME/tor" --format json | jq "[.switches[].ports[].counters.$1] | add"; }

# emulate SCHEME N [gen options]: one incast until VALID (three attempts). Sets OUT (gen's
# JSON), TXT (its text) and RUN ("PEAK BTS DROPS SWITCH_BTS"). Return: 0 when VALID. An INVALID
# attempt is retried at 1.5 x the D of the one before, the star brought up again at that D (what
# is checked is in fabric time, which D does not change; an attempt whose senders could not keep
# the port backlogged at a fixed D = 200 was seen once in CI-like runs with N = 24, on a quiet
# machine); the star goes back to the calibrated D afterwards.
emulate() {
	local scheme=$1 n=$2
	shift 2
	local attempt d0 b0 rc=1
	for attempt in 1 2 3; do
		if [ "$attempt" -gt 1 ]; then
			star_at $(((STAR_D * 3 / 2 + 9) / 10 * 10))
			echo "  retrying at D=$STAR_D"
		fi
		d0=$(ctr drops) b0=$(ctr sfc_bts_queue)
		OUT=$("$QUENCH" gen "$TOPO_NAME" --pattern incast --senders "$n" --dst h1 --size 64KB --count 1 --sync-window 0 \
			--cc "$scheme" --mode sr --queues tor:tor-p1 --queue-interval 5us --format json "$@" 2>"$WORK/gen.txt") ||
			fail "gen $scheme N=$n $*: $(tail -3 "$WORK/gen.txt")"
		TXT=$(cat "$WORK/gen.txt")
		RUN="$(jq '.queues[] | select(.port == "tor/tor-p1") | .max' <<<"$OUT") $(jq '.counters["host.bts_rx"]' <<<"$OUT") $(($(ctr drops) - d0)) $(($(ctr sfc_bts_queue) - b0))"
		if jq -e '.valid and .flows_done == .flows' <<<"$OUT" >/dev/null; then
			rc=0
			break
		fi
		echo "  $scheme N=$n attempt $attempt at D=$STAR_D INVALID: $(jq -c .reasons <<<"$OUT")"
	done
	[ "$STAR_D" -eq "$D" ] || star_at "$D"
	return $rc
}

# slope "X Y X Y ...": least-squares slope of Y against X
slope() {
	jq -n --arg p "$1" '($p | split(" ") | map(tonumber)) as $v | [range(0; $v | length; 2) | [$v[.], $v[. + 1]]] as $xy |
		($xy | map(.[0]) | add / length) as $mx | ($xy | map(.[1]) | add / length) as $my |
		([$xy[] | (.[0] - $mx) * (.[1] - $my)] | add) / ([$xy[] | (.[0] - $mx) * (.[0] - $mx)] | add)'
}
# median X...: the middle value (the lower middle of an even count)
median() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }
# spread X...: (max - min) / min, in percent
spread() { printf '%s\n' "$@" | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print int((hi - lo) * 100 / lo) }'; }

# model SCHEME N: the reference model's peak queue for the same incast and switch
model_peak() {
	"$QUENCH" model --senders "$2" --rate 10Gbps --delay 10us --size 64KB --duration 20ms --cc "$1" \
		--kmin 4096 --kmax 50000 --pmax 0.01 --dequeue | sed -n 's/^queue: .* peak \([0-9]*\) B.*/\1/p'
}

declare -A EMU MOD SLOPE MSLOPE LOOPS
for scheme in dcqcn+w/sfc:lossy dcqcn+w:lossy; do
	pts="" mpts=""
	for n in $SIZES; do
		peaks=()
		for rep in 1 2 3 4 5; do
			# Two more runs only when the first three disagree by more than 3%: a peak ~5-10% high
			# with no fidelity flag turns up in about 1 run in 10 (docs/testing.md "netns_sfc"), and
			# the median of five needs three of them.
			[ "$rep" -le 3 ] || [ "$(spread "${peaks[@]}")" -gt 3 ] || break
			if ! emulate "$scheme" "$n"; then
				machine_stalls "$OUT" || fail "no VALID run of $scheme N=$n in three attempts on a quiet machine ($STALLS)"
				skip "inconclusive: no VALID run of $scheme N=$n in three attempts; $STALLS"
			fi
			read -r peak bts drops swbts <<<"$RUN"
			[ "$drops" -eq 0 ] || fail "$scheme N=$n: the switch dropped $drops packets (the 12 MB buffer holds the incast)"
			if [ "${scheme#*/sfc}" != "$scheme" ]; then
				[ "$bts" -gt 0 ] && [ "$swbts" -gt 0 ] || fail "$scheme N=$n: no BTS (switch $swbts, hosts $bts) with the queue at $peak B"
			else
				[ "$bts" -eq 0 ] && [ "$swbts" -eq 0 ] || fail "$scheme N=$n: $swbts BTS with SFC off (the stage must be off for a scheme without /sfc)"
			fi
			peaks+=("$peak")
			[ "$n" -ne 24 ] || [ "$rep" -ne 1 ] || LOOPS[$scheme]=$(grep -E '^loop delay (bts|cnp)' <<<"$TXT" | tr '\n' ';')
		done
		EMU[$scheme,$n]=$(median "${peaks[@]}")
		MOD[$scheme,$n]=$(model_peak "$scheme" "$n")
		echo "$scheme N=$n: peaks ${peaks[*]} B, median ${EMU[$scheme,$n]} B; model ${MOD[$scheme,$n]} B; BTS (last run) $bts"
		pts="$pts $n ${EMU[$scheme,$n]}" mpts="$mpts $n ${MOD[$scheme,$n]}"
	done
	SLOPE[$scheme]=$(slope "${pts# }")
	MSLOPE[$scheme]=$(slope "${mpts# }")
	echo "$scheme: slope $(jq -n "${SLOPE[$scheme]} | round") B per sender (model $(jq -n "${MSLOPE[$scheme]} | round")), R*T_F $RTF B"
done
S=dcqcn+w/sfc:lossy W=dcqcn+w:lossy
for s in "$S" "$W"; do
	holds "((${SLOPE[$s]} - ${MSLOPE[$s]}) / ${MSLOPE[$s]}) | fabs <= 0.10" ||
		fail "$s: slope ${SLOPE[$s]} B/sender, the model's ${MSLOPE[$s]}: more than 10% apart"
done
holds "((${SLOPE[$S]} - $RTF) / $RTF) | fabs <= 0.30" ||
	fail "SFC's slope ${SLOPE[$S]} B/sender is not within 30% of R*T_F = $RTF B"
holds "${SLOPE[$W]} >= 1.5 * ${SLOPE[$S]}" ||
	fail "without SFC the slope ${SLOPE[$W]} B/sender is not 1.5x SFC's ${SLOPE[$S]}"
echo "slopes: SFC $(jq -n "${SLOPE[$S]} | round") B/sender ($(jq -n "${SLOPE[$S]} / $RTF * 100 | round")% of R*T_F), without SFC $(jq -n "${SLOPE[$W]} | round") ($(jq -n "${SLOPE[$W]} / ${SLOPE[$S]} * 100 | round / 100")x); the model within 10% on both"
echo "loops at N=24 (fabric): SFC run: ${LOOPS[$S]} DCQCN+W run: ${LOOPS[$W]}"

# (2) The SFC scheme with its switch stage off: no BTS, and the slope check fails.
STAR_SET="sfc=off"
# shellcheck disable=SC2086
"$QUENCH" switch set "$TOPO_NAME/tor" $STAR_SET >/dev/null
pts=""
for n in $SIZES; do
	emulate "$S" "$n" --keep-switch-stages || skip "inconclusive: no VALID run of the stage-off control at N=$n"
	read -r peak bts drops swbts <<<"$RUN"
	[ "$bts" -eq 0 ] && [ "$swbts" -eq 0 ] || fail "stage off: $swbts BTS at the switch, $bts at the hosts"
	pts="$pts $n $peak"
done
off=$(slope "${pts# }")
if holds "(($off - $RTF) / $RTF) | fabs <= 0.30"; then
	fail "with the SFC stage off the slope $off is still within 30% of R*T_F: the check cannot fail"
fi
echo "stage off: 0 BTS, slope $(jq -n "$off | round") B/sender: the slope check fails, as it must"
STAR_SET=""

# (3) Pause against retransmission, the depth toward h1 (port 0) forced to 1.1 MB.
q=1100000
# le VALUE BYTES: VALUE as BYTES little-endian decimal bytes (bpftool's map value syntax)
le() { local i; for ((i = 0; i < $2; i++)); do printf '%d ' $((($1 >> (8 * i)) & 255)); done; }
# struct qn_test_qdepth {u32 valid; u32 pkts; u64 bytes}
# shellcheck disable=SC2046
bpftool map update pinned "$PIN/qn_test_qdepth" key 0 0 0 0 value $(le 1 4) $(le $((q / 2062)) 4) $(le $q 8)
"$QUENCH" switch set "$TOPO_NAME/tor" qdepth=on >/dev/null
pause() { # gen options -> sets OUT, TXT; "TIMEOUTS RETX DROPS BTS PAUSED_NS"
	local d0 attempt
	for attempt in 1 2 3; do
		d0=$(ctr drops)
		OUT=$("$QUENCH" gen "$TOPO_NAME" --pattern incast --senders 1 --dst h1 --size 128KB --count 1 \
			--cc none/sfc:lossy --mode sr --ack-every 16 --format json "$@" 2>"$WORK/gen.txt") || fail "gen (pause) $*: $(tail -3 "$WORK/gen.txt")"
		TXT=$(cat "$WORK/gen.txt")
		RUN="$(jq '.counters["qp.timeouts"]' <<<"$OUT") $(jq '.counters["qp.retransmitted"]' <<<"$OUT") $(($(ctr drops) - d0)) $(jq '.counters["host.bts_rx"]' <<<"$OUT") $(jq '.counters["host.qp_paused_ns"]' <<<"$OUT")"
		jq -e '.valid and .flows_done == 1 and .content_errors == 0' <<<"$OUT" >/dev/null && return 0
	done
	machine_stalls "$OUT" || fail "no VALID pause run in three attempts on a quiet machine ($STALLS)"
	skip "inconclusive: no VALID pause run in three attempts; $STALLS"
}
pause
read -r to rtx drops bts paused <<<"$RUN"
# the pause each BTS asks for, from the Q_Tg gen derived and applied
qtg=$(sed -n 's/^switch stages:.* sfc_qtg=\([0-9]*\).*/\1/p' <<<"$TXT")
[ -n "$qtg" ] || fail "gen printed no derived sfc_qtg: $(grep '^switch stages' <<<"$TXT")"
want_us=$(jq -n "(($q - $qtg) * 8e6 / $RATE) | ceil")
echo "held: timeouts $to, retransmitted $rtx, drops $drops, BTS $bts, paused $paused ns (each BTS asks $want_us us); $(grep -E '^loop delay bts' <<<"$TXT")"
[ "$drops" -eq 0 ] || fail "pause run: $drops drops"
[ "$bts" -gt 0 ] || fail "pause run: no BTS with the depth forced to $q B"
holds "$paused >= $want_us * 1000 and $want_us * 1000 > 320000" || fail "pause run: paused $paused ns, less than one $want_us us pause (or the pause is not above the high RTO)"
[ "$to" -eq 0 ] && [ "$rtx" -eq 0 ] || fail "with the RTO held during pauses: $to timeouts, $rtx retransmissions (nothing was dropped)"
pause --test-no-rto-hold
read -r to2 rtx2 drops2 bts2 paused2 <<<"$RUN"
echo "hold off: timeouts $to2, retransmitted $rtx2, drops $drops2, BTS $bts2"
[ "$drops2" -eq 0 ] || fail "pause run without the hold: $drops2 drops"
[ "$to2" -gt 0 ] && [ "$rtx2" -gt 0 ] || fail "without the hold, $to2 timeouts and $rtx2 retransmissions: the check cannot fail"
"$QUENCH" switch set "$TOPO_NAME/tor" qdepth=off >/dev/null
pass "SFC incast slope $(jq -n "${SLOPE[$S]} | round") B/sender (R*T_F $RTF B), without SFC $(jq -n "${SLOPE[$W]} | round"), model within 10%; stage off: 0 BTS and the check fails; ${want_us} us pauses: 0 timeouts held, $to2 without the hold"
