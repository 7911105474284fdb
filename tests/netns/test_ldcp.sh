#!/usr/bin/env bash
# netns: LDCP end to end on the engine and the switch (../shared/specs/ldcp.md, docs/ldcp.md).
# (1) Fast-start threshold, 10 Gbit/s star (1 us links, base RTT ~7.3 us: IW = BDP = 5 packets),
#     D = 200, the switch buffer limited to L = 16 frames (buffer 16 x 2062 B, alpha 1000), RED at
#     dequeue Kmin = K = 4096 B (2 MTU), Kmax = 9172 B (the BDP), Pmax 1. N senders each send one
#     IW-sized message at once: each message's last packet is ECT and sits on top of K bytes of
#     Not-ECT packets (and HTB's 2-frame burst), so N <= L - ceil(K / frame) - 2 = 12 fits:
#     0 timeouts, 0 tail drops, every message delivered and content-checked, drops only with
#     the LDCP reason (and some). N = 24 >= 1.5 L: timeouts > 0 (the threshold can fail).
#     The switch rule off (ldcp=off) at N = 12: tail drops and timeouts > 0.
# (2) Sub-packet windows (spec L5), same star: N = 24 long flows (300 KB, starts spread over
#     300 us), N x MTU = 49 KB > BDP + buffer = 42 KB: 0 tail drops with the gamma floor (LDCP
#     drops of fast-start packets allowed); with the floor forced to one packet (cw_min=1):
#     tail drops > 0.
# (3) Stable stage (spec L3) on the long-10g star (10 us links, base RTT ~43 us, BDP 54 KB; the
#     derived profile Kmin 10876 B, Kmax 54378 B, Pmax 1): 8 flows of 2 MB; the mean queue from
#     2 ms to the first completion within +-20% of the fluid model's q* for N = 8 (printed by
#     `quench model --derived`) and within 10% of the reference model's steady mean (the
#     model-against-emulator check for ldcp); goodput >= 95% of the payload ceiling. Negative
#     control: RED off: the mean queue is more than 1.2 q* (the check can fail).
# Only VALID runs are results: an INVALID attempt is retried (three attempts).
source "$(dirname "$0")/lib.sh"
[ -z "${QN_IN_VM:-}" ] || skip "fabric dynamics need line-rate engines; not run under emulation (DESIGN.md §7)"
command -v jq >/dev/null || skip "missing jq"

# D: measured for each fabric (up_auto), not a constant
FRAME=2062
L=16
K=4096
# sw COUNTER: the switch's counter summed over its ports
sw() { "$QUENCH" switch stats "$TOPO_NAME/tor" --format json | jq "[.switches[].ports[] | .counters[\"$1\"]] | add"; }

# run ARGS...: one gen run until VALID (three attempts). Sets OUT (gen's JSON) and DELTA
# ("TAIL LDCP ALL": the switch's drops by reason during the run). Return: 0 when VALID.
run() {
	local attempt t0 l0 a0
	for attempt in 1 2 3; do
		t0=$(sw drops.buffer) l0=$(sw drops.ldcp_not_ect) a0=$(sw drops)
		OUT=$("$QUENCH" gen "$TOPO_NAME" --format json --cc ldcp --dst h1 "$@" 2>"$WORK/gen.txt") ||
			fail "gen $*: $(tail -3 "$WORK/gen.txt")"
		DELTA="$(($(sw drops.buffer) - t0)) $(($(sw drops.ldcp_not_ect) - l0)) $(($(sw drops) - a0))"
		jq -e .valid <<<"$OUT" >/dev/null && return 0
		echo "  attempt $attempt INVALID: $(jq -c .reasons <<<"$OUT")"
	done
	machine_stalls "$OUT" || fail "no VALID run of gen $* in three attempts on a quiet machine ($STALLS)"
	skip "inconclusive: no VALID run of gen $* in three attempts; $STALLS"
}
c() { jq ".counters[\"$1\"]" <<<"$OUT"; }

# ---- (1) and (2): the 10 Gbit/s star with a 16-frame buffer
up_auto "$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/star.topo")")" --param N=25
"$QUENCH" switch set "$TOPO_NAME/tor" ecn=on ecn_at=dequeue kmin=$K kmax=9172 pmax=1 buffer=$((L * FRAME)) alpha=1000 >/dev/null

run --pattern incast --senders 1 --size 2004 --count 1
IW=$(sed -n 's/.*(IW \([0-9]*\) packets.*/\1/p' "$WORK/gen.txt")
[ -n "$IW" ] || fail "gen did not print LDCP's IW: $(grep '^cc' "$WORK/gen.txt")"
SIZE=$((IW * 2004))
NOK=$((L - (K + FRAME - 1) / FRAME - 2))
echo "IW $IW packets ($SIZE B messages); L $L frames, K $K B: N <= $NOK must fit"

run --pattern incast --senders "$NOK" --size "$SIZE" --count 1 --sync-window 0
read -r tail ldcp all <<<"$DELTA"
echo "N=$NOK: timeouts $(c qp.timeouts), retransmitted $(c qp.retransmitted), drops: tail $tail, LDCP $ldcp, all $all"
jq -e '.flows_done == .flows and .content_errors == 0 and .counters["qp.corrupt_messages"] == 0' <<<"$OUT" >/dev/null ||
	fail "N=$NOK: not every message delivered intact: $(jq -c '[.flows_done, .flows, .content_errors]' <<<"$OUT")"
[ "$(c qp.timeouts)" -eq 0 ] || fail "N=$NOK: $(c qp.timeouts) retransmission timeouts (the last packets fit L)"
[ "$tail" -eq 0 ] || fail "N=$NOK: $tail tail drops"
[ "$all" -eq "$ldcp" ] || fail "N=$NOK: $all drops, of which only $ldcp with the LDCP reason"
[ "$ldcp" -gt 0 ] || fail "N=$NOK: no fast-start packet dropped at K: the rule did not act"

N2=$((L * 3 / 2))
run --pattern incast --senders "$N2" --size "$SIZE" --count 1 --sync-window 0
read -r tail2 ldcp2 _ <<<"$DELTA"
echo "N=$N2: timeouts $(c qp.timeouts), drops: tail $tail2, LDCP $ldcp2"
[ "$(c qp.timeouts)" -gt 0 ] || fail "N=$N2 (1.5 L): no timeout: the threshold check cannot fail"
jq -e '.flows_done == .flows' <<<"$OUT" >/dev/null || fail "N=$N2: not every message delivered after its timeouts"

"$QUENCH" switch set "$TOPO_NAME/tor" ldcp=off >/dev/null
run --pattern incast --senders "$NOK" --size "$SIZE" --count 1 --sync-window 0 --keep-switch-stages
read -r tail3 ldcp3 _ <<<"$DELTA"
echo "N=$NOK with the switch rule off: timeouts $(c qp.timeouts), drops: tail $tail3, LDCP $ldcp3"
[ "$ldcp3" -eq 0 ] || fail "ldcp=off: $ldcp3 LDCP drops"
[ "$tail3" -gt 0 ] && [ "$(c qp.timeouts)" -gt 0 ] || fail "ldcp=off at N=$NOK: no tail drop or timeout: the rule made no difference"

run --pattern incast --senders 24 --size 300KB --count 1 --sync-window 300us
read -r tail4 ldcp4 _ <<<"$DELTA"
echo "L5, 24 flows, gamma floor: tail drops $tail4, LDCP drops $ldcp4, timeouts $(c qp.timeouts), goodput $(jq .goodput_gbps <<<"$OUT") Gbit/s"
jq -e '.flows_done == .flows and .content_errors == 0' <<<"$OUT" >/dev/null || fail "L5: not every flow delivered intact"
[ "$tail4" -eq 0 ] || fail "L5: $tail4 tail drops with sub-packet windows"
run --pattern incast --senders 24 --size 300KB --count 1 --sync-window 300us --cc-set cw_min=1
read -r tail5 _ _ <<<"$DELTA"
echo "L5, floor one packet: tail drops $tail5, timeouts $(c qp.timeouts)"
[ "$tail5" -gt 0 ] || fail "L5: no tail drop with the floor at one packet: the check cannot fail"
"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null

# ---- (3): the long-10g star, stable stage
up_auto "$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/star.topo")")" --preset long-10g --param N=9
MODEL=$("$QUENCH" model --senders 8 --rate 10Gbps --delay 10us --duration 20ms --from 2ms --cc ldcp --derived)
QSTAR=$(sed -n 's/.*q\* .*N=8 \([0-9]*\) B.*/\1/p' <<<"$MODEL")
MQ=$(sed -n 's/^queue from [^:]*: mean \([0-9]*\) B.*/\1/p' <<<"$MODEL")
KMIN=$(sed -n 's/.* Kmin = [^=]*= \([0-9]*\) B.*/\1/p' <<<"$MODEL")
KMAX=$(sed -n 's/.* Kmax = [^=]*= \([0-9]*\) B.*/\1/p' <<<"$MODEL")
[ -n "$QSTAR" ] && [ -n "$MQ" ] && [ -n "$KMIN" ] && [ -n "$KMAX" ] || fail "quench model printed no q*, steady queue or profile: $MODEL"
echo "derived: Kmin $KMIN B, Kmax $KMAX B; q*(N=8) $QSTAR B; model steady mean $MQ B"
"$QUENCH" switch set "$TOPO_NAME/tor" ecn=on ecn_at=dequeue kmin="$KMIN" kmax="$KMAX" pmax=1 >/dev/null

# stable: the stable stage, from 2 ms to the first completion: QMEAN the mean queue (B) and GOOD
# the goodput over that window as a fraction of the payload ceiling (the senders' acked bytes
# from their rate traces, points at least every 10 us); RUNGOOD the whole run's (fast start and
# the last flows' tail included: reported, not asserted; a loss in the fast start or the tail
# costs it a retransmission timeout, 0.943 in one CI run of 2026-11-28 against 0.978-0.989 here).
stable() {
	run --pattern incast --senders 8 --size 2MB --count 1 --sync-window 0 --queues tor:tor-p1 --queue-interval 5us \
		--queue-out "$WORK/q.csv" --trace 8 --trace-out "$WORK/l.trace" "$@"
	local end
	end=$(jq .first_completion_ns <<<"$OUT")
	QMEAN=$(awk -F, -v e="$end" 'NR > 1 && $2 >= 2000000 && $2 <= e { s += $3; n++ } END { if (n) printf "%.0f", s / n; else print -1 }' "$WORK/q.csv")
	GOOD=$("$QUENCH" analyze trace "$WORK/l.trace" --from 2ms --to "${end}ns" --window "$((end - 2000000))ns" |
		jq '.mean_gbps / (10 * 2004 / 2086) * 10000 | round / 10000')
	RUNGOOD=$(jq '.goodput_gbps / (10 * 2004 / 2086) * 1000 | round / 1000' <<<"$OUT")
}
# The median of three VALID runs (five when the three differ by more than 25%, max / min). Runs
# that settled at 1.4-3 q* (2026-11-27/28) were the queue probe's error, not LDCP's: it read the
# switch's accounts, which keep every departure the dequeue hook missed until the queue empties,
# and a standing queue never does (docs/ldcp.md "Two levels in the stable stage": the levels
# followed the missed bytes; read from the real queue, six runs at 22-23 KB).
qs="" gs=""
for rep in 1 2 3 4 5; do
	if [ "$rep" -eq 4 ] && holds "$(printf '%s\n' $qs | jq -s 'max / min <= 1.25')"; then
		break
	fi
	stable
	echo "stable run $rep: mean queue $QMEAN B, goodput $GOOD of the payload ceiling (the whole run $RUNGOOD), retransmitted $(c qp.retransmitted), timeouts $(c qp.timeouts)"
	qs="$qs $QMEAN" gs="$gs $GOOD"
done
QMEAN=$(printf '%s\n' $qs | "$QUENCH" analyze numbers | jq '.p50 | round')
GOOD=$(printf '%s\n' $gs | "$QUENCH" analyze numbers | jq .p50)
QM1=$QMEAN
SPREAD=$(printf '%s\n' $qs | jq -s 'max / min * 1000 | round / 1000')
echo "stable: mean queue $QMEAN B (median of$qs; max / min $SPREAD; q* $QSTAR B, model $MQ B), goodput $GOOD of the payload ceiling (median)"
holds "$QMEAN >= 0.8 * $QSTAR and $QMEAN <= 1.2 * $QSTAR" || fail "stable: mean queue $QMEAN B is not within 20% of q* = $QSTAR B (runs:$qs)"
holds "$QMEAN >= 0.9 * $MQ and $QMEAN <= 1.1 * $MQ" || fail "stable: mean queue $QMEAN B is not within 10% of the model's $MQ B (runs:$qs)"
holds "$GOOD >= 0.95" || fail "stable: goodput $GOOD of the payload ceiling (< 0.95)"
"$QUENCH" switch set "$TOPO_NAME/tor" ecn=off >/dev/null
stable
echo "stable with RED off: mean queue $QMEAN B"
holds "$QMEAN > 1.2 * $QSTAR" || fail "RED off: the mean queue $QMEAN B is still within 20% of q*: the check cannot fail"

pass "fast start: N=$NOK IW messages into $L frames: 0 timeouts, 0 tail drops, $ldcp LDCP drops; N=$N2: timeouts; rule off: $tail3 tail drops; L5: 0 tail drops with gamma, $tail5 with cw_min=1; stable: queue $QM1 B vs q* $QSTAR B and model $MQ B"
