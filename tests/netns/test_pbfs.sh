#!/usr/bin/env bash
# netns: PB-FS end to end on the engine and the switch (../shared/specs/pbfs.md, docs/pbfs.md),
# on the long-10g star (10 Gbit/s, 10 us links: DC_RTT ~43 us, N = 2, Δ = 7), D = 200.
# (1) The analytic single-port case, emulator against the reference model on the same
#     scenario: flow A (h2, 4 MB) runs alone at line rate (its own fast start, if a postcard
#     cut it, has recovered by then), then flow B (h3, 1 MB) starts 2 ms later at line rate;
#     ECN off, so only PB-FS acts; lossy (dcqcn/pbfs:lossy), as the model is: with PFC the
#     growing queue pauses the senders (XOFF 100 KB) and its slope no longer shows B's rate.
#     The expected c depends on where B's first Δ packets fall in the switch's slots: each trial reads the slots' phase (the run's t0_wall_ns, the switch
#     clock, and pbfs_slot) and runs `quench model` with that phase and the emulator's own
#     PB-FS values; the model's rate for B after its postcards is C / c; in at least 4 of 5
#     trials B's rate is within 15% of the model's within ±500 ns of the phase. Over 5 VALID trials
#     (medians): B's rate measured on the wire at the port (the real queue's slope from the
#     postcard's arrival until B's next rate change, at most 8 DC_RTT: A keeps the port busy at
#     C) within 15% of C / c; the port's arrivals over that DC_RTT within 10% of (1 + 1/c) T; without PB-FS
#     (dcqcn:lossy: the switch stage off) within 10% of 2 T; B's postcards 1 .. ceil(first-RTT packets
#     / Δ).
# (2) Postcards per flow and eligibility, 8-to-1 incast, 1 MB each, ECN on, dcqcn/pbfs and
#     dcqcn+w/pbfs (at least one postcard changed a rate in each): every postcard the
#     switch decided reached its sender (switch pbfs_congested = hosts' postcard_rx = the
#     senders' cc.pbfs.postcards), each flow at most ceil(first-RTT packets / Δ); the PBT-marked
#     packets counted at the switch are the senders' own count; how many postcards arrived after
#     the interval's end (a CNP that cut the rate) and were ignored is reported. 20 KB messages
#     (below line rate x τ) put 0 marked packets on the wire; with τ = 1 us they do (the check
#     can fail).
# (3) `quench run` on the 1 us star skips dcqcn/pbfs with its reason (N < 2) and runs dcqcn; on
#     long-10g the summary shows postcards per eligible flow and the postcard loop delay.
# Only VALID runs are results: an INVALID attempt is retried.
source "$(dirname "$0")/lib.sh"
[ -z "${QN_IN_VM:-}" ] || skip "fabric dynamics need line-rate engines; not run under emulation (DESIGN.md §7)"
command -v jq >/dev/null || skip "missing jq"

C=10000000000
FRAME=2062
HOP=10000
TRIALS=${QN_PBFS_TRIALS:-5}
STAR=$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/star.topo")")
up_auto "$STAR" --preset long-10g --param N=9 # sets D
CUR_D=$D SW_SET=""
# sw_set SETTINGS...: switch settings of the test, kept to be applied again after a change of D
# (the switch programs are loaded again then, with the topology's settings)
sw_set() { SW_SET="$*"; "$QUENCH" switch set "$TOPO_NAME/tor" "$@" >/dev/null; }
# at_d D: the star at dilation D, changed in place, with the test's switch settings
at_d() {
	"$QUENCH" topo up "$STAR" --preset long-10g --param N=9 --dilation "$1" >/dev/null
	# shellcheck disable=SC2086
	[ -z "$SW_SET" ] || "$QUENCH" switch set "$TOPO_NAME/tor" $SW_SET >/dev/null
	CUR_D=$1
}
sw() { "$QUENCH" switch stats "$TOPO_NAME/tor" --format json | jq "[.switches[].ports[] | .counters[\"$1\"]] | add"; }
# sw_run COUNTER: the switch's counter over gen_valid's VALID attempt only (an INVALID attempt
# before it counts too in a snapshot taken before gen_valid: seen in CI, 48 PBT packets for the
# senders' 24)
sw_run() { echo $(($(sw "$1") - $(jq "[.switches[].ports[] | .counters[\"$1\"]] | add" "$WORK/sw_before.json"))); }

# gen_valid ARGS...: one gen run until VALID (up to 3 attempts). Sets OUT (JSON) and TXT (stderr),
# and keeps the switch's counters from before the attempt that counts (sw_run). An attempt the
# engine's pace made INVALID (gen's cpu_bound, e.g. a short incast's start burst served late:
# 20 KB flows lost 7-11% of their bytes to it at D=340) is retried at 1.5 x D, as `quench run`
# retries; the star goes back to the calibrated D before the next gen_valid (not at once: sw_run
# reads this attempt's counters, and a change of D loads the switch programs again).
gen_valid() {
	local attempt
	[ "$CUR_D" -eq "$D" ] || at_d "$D"
	for attempt in 1 2 3; do
		"$QUENCH" switch stats "$TOPO_NAME/tor" --format json >"$WORK/sw_before.json"
		OUT=$("$QUENCH" gen "$TOPO_NAME" --format json "$@" 2>"$WORK/gen.txt") ||
			fail "gen $*: $(tail -3 "$WORK/gen.txt")"
		TXT=$(cat "$WORK/gen.txt")
		jq -e .valid <<<"$OUT" >/dev/null && return 0
		echo "  attempt $attempt at D=$CUR_D INVALID: $(jq -c .reasons <<<"$OUT")"
		if [ "$attempt" -lt 3 ] && jq -e .cpu_bound <<<"$OUT" >/dev/null; then
			at_d $(((CUR_D * 3 / 2 + 9) / 10 * 10))
			echo "  CPU-bound: retrying at D=$CUR_D"
		fi
	done
	machine_stalls "$OUT" || fail "no VALID run of gen $* in three attempts on a quiet machine ($STALLS)"
	skip "inconclusive: no VALID run of gen $* in three attempts; $STALLS"
}
c() { jq ".counters[\"$1\"]" <<<"$OUT"; }

# final_rate CSV LABEL_FIELD LABEL START_NS WINDOW_NS: the last rate change of a flow's trace
# within WINDOW_NS of its start below the line rate (its postcards' work). Prints "T RATE"
# (T = the first trace time at that rate), or "0 0" when its rate never changed.
final_rate() {
	awk -F, -v col="$2" -v who="$3" -v s="$4" -v w="$5" -v line="$C" '
		NR > 1 && $col == who && $2 >= s && $2 <= s + w && $3 + 0 < line && $3 != last { t = $2; last = $3 }
		END { if (t) print t, last; else print 0, 0 }' "$1"
}
# arrivals CSV A B: the port's arrivals over [A, B] over what it sends at C in that time:
# (q(B) - q(A) + drain x (B - A)) / (drain x (B - A)), the queue (L2 bytes) read from the
# samples at or before A and B, drain = C x frame / (frame + 24) / 8 bytes per ns.
arrivals() {
	awk -F, -v a="$2" -v b="$3" -v rate="$C" -v f="$FRAME" '
		NR > 1 { t = $(NF - 1); if (t <= a) qa = $NF; if (t <= b) qb = $NF }
		END { d = rate / 8e9 * f / (f + 24); printf "%.4f\n", (qb - qa + d * (b - a)) / (d * (b - a)) }' "$1"
}
# next_change CSV LABEL AFTER RATE: the first trace time after AFTER at which the flow's rate
# is not RATE (0 if none)
next_change() {
	awk -F, -v who="$2" -v s="$3" -v r="$4" 'NR > 1 && $1 == who && $2 > s && $3 != r { print $2; found = 1; exit }
		END { if (!found) print 0 }' "$1"
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# ---- (1) the analytic single-port case
sw_set ecn=off
TB=2000000
printf '2\n2 1 3 100 4000000 0\n3 1 3 100 1000000 %s\n' "0.00$((TB / 1000))" >"$WORK/ab.flows"
RATIO_B="" RATIO_ARR="" RATIO_MODEL="" OFFS="" AT0=0 NEAR=0
PHASE_TOL=${QN_PBFS_PHASE_TOL:-500}
valid=0
for attempt in $(seq 1 $((TRIALS + 4))); do
	[ "$valid" -lt "$TRIALS" ] || break
	OUT=$("$QUENCH" gen "$TOPO_NAME" --format json --cc dcqcn/pbfs:lossy --flows "$WORK/ab.flows" --trace 2 \
		--trace-out "$WORK/t.csv" --queues tor:tor-p1 --queue-interval 1us --queue-out "$WORK/q.csv" 2>"$WORK/gen.txt") ||
		fail "gen dcqcn/pbfs: $(tail -3 "$WORK/gen.txt")"
	if ! jq -e .valid <<<"$OUT" >/dev/null; then
		echo "  trial attempt $attempt INVALID: $(jq -c .reasons <<<"$OUT")"
		continue
	fi
	# the emulator's PB-FS values, for the model: the sender's (cc) and the switch's (stages)
	CCSET=$(jq -r .cc <<<"$OUT" | sed -n 's/.*; pbfs: \([^;]*\);.*/\1/p')
	STAGES=$(sed -n 's/^switch stages: .*\(pbfs_n=[^ ]* pbfs_slot=[^ ]* pbfs_tdelta=[^ ]* pbfs_dc_rtt=[^ ]*\).*/\1/p' "$WORK/gen.txt")
	[ -n "$CCSET" ] && [ -n "$STAGES" ] || fail "gen printed no PB-FS values: $(jq -r .cc <<<"$OUT"); $(grep stages "$WORK/gen.txt")"
	SLOT=$(sed -n 's/.*pbfs_slot=\([0-9]*\)ns.*/\1/p' <<<"$STAGES")
	DCRTT=$(sed -n 's/.*pbfs_dc_rtt=\([0-9]*\)ns.*/\1/p' <<<"$STAGES")
	DELTA=$(sed -n 's/.*delta=\([0-9]*\).*/\1/p' <<<"$CCSET")
	BOUND=$(((((DCRTT + 1668) / 1669) + DELTA - 1) / DELTA)) # ceil(first-RTT packets / Δ)
	# the switch's slots: epoch = wall / (slot x D), wall = t0_wall + t x D
	PHASE=$(jq -r .t0_wall_ns <<<"$OUT" | awk -v d="$D" -v s="$SLOT" '{ x = int($1 / d); printf "%d", x - int(x / s) * s }')
	read -r TPC RB <<<"$(final_rate "$WORK/t.csv" 1 'h3->h1' "$TB" $((2 * DCRTT)))"
	PC=$(jq .hosts.h3.postcard_rx <<<"$OUT")
	[ "$RB" != 0 ] || fail "trial $((valid + 1)): B's rate never changed ($PC postcards): $(grep -E 'loop delay|^host h3' "$WORK/gen.txt")"
	sets=()
	for kv in $CCSET; do sets+=(--cc-set "$kv"); done
	for kv in $STAGES; do sets+=(--switch-set "$kv"); done
	# model_at PHASE: the model's run of the same scenario with the slots at PHASE; sets MT, RM
	# (B's last rate change by its postcards) and MARR (the port's arrivals over one DC_RTT from
	# then, as for the emulator)
	model_at() {
		MODEL=$("$QUENCH" model --senders 2 --delay 10us --stagger "${TB}ns" --size 4MB --duration 2200us --cc dcqcn/pbfs \
			--switch-set ecn=off "${sets[@]}" --switch-set pbfs_phase="$1ns" --trace 2 --trace-out "$WORK/mt.csv" \
			--queue-interval 1us --queue-out "$WORK/mq.csv") || fail "quench model: $MODEL"
		read -r MT RM <<<"$(final_rate "$WORK/mt.csv" 1 1 "$TB" $((2 * DCRTT)))"
		[ "$RM" != 0 ] || fail "the model cut B nowhere at phase $1 ns: $(grep '^pbfs:' <<<"$MODEL")"
		MARR=$(arrivals "$WORK/mq.csv" $((MT + HOP + 1669)) $((MT + HOP + 1669 + DCRTT)))
	}
	# The expected c: the model's at the measured phase, and, since c flips between about 2 and
	# 5 within a few hundred ns of alignment here (N = 2: the newest slot counts N + 1 times) and
	# the phase is known to about PHASE_TOL (docs/pbfs.md), the model's nearest within it.
	model_at "$PHASE"
	RM0=$RM MARR0=$MARR BEST="" BESTD=""
	holds "($RB / $RM0 - 1 | fabs) <= 0.15" && AT0=$((AT0 + 1))
	for d in $(seq -"$PHASE_TOL" "${QN_PBFS_PHASE_STEP:-100}" "$PHASE_TOL"); do
		model_at $(((PHASE + d + SLOT) % SLOT))
		e=$(jq -n "($RB / $RM - 1) | fabs")
		if [ -z "$BEST" ] || holds "$e < $BEST"; then BEST=$e BESTD=$d; fi
	done
	# one DC_RTT from when B's slower packets reach the port: the postcard's arrival + a hop + a frame
	A0=$((TPC + HOP + 1669)) A1=$((TPC + HOP + 1669 + DCRTT))
	ARR=$(arrivals "$WORK/q.csv" "$A0" "$A1")
	# B's rate on the wire over the whole time the controller held it at RB (until its next
	# rate change, at most 8 DC_RTT): one DC_RTT holds only ~5 of B's frames at c ~ 5, so the
	# queue's slope there is quantized to ~20% of B's rate (CI saw 0.80 from that alone).
	TNEXT=$(next_change "$WORK/t.csv" 'h3->h1' "$TPC" "$RB")
	W1=$((TPC + 8 * DCRTT))
	[ "$TNEXT" -gt 0 ] && [ "$TNEXT" -lt "$W1" ] && W1=$TNEXT
	[ $((W1 - TPC)) -ge $((2 * DCRTT)) ] || fail "trial $((valid + 1)): B held its postcards' rate only $((W1 - TPC)) ns (< 2 DC_RTT)"
	ARRW=$(arrivals "$WORK/q.csv" "$A0" $((W1 + HOP + 1669)))
	valid=$((valid + 1))
	echo "trial $valid: phase ${PHASE} ns; B: $PC postcards, rate $RB at $((TPC - TB)) ns after its start (held $((W1 - TPC)) ns), arrivals/T $ARR, B on the wire $(jq -n "($ARRW - 1) * $C | floor"); model at the phase: $RM0 ($(grep -o 'postcards per sender [0-9,]*' <<<"$MODEL")), arrivals/T $MARR0; nearest model within ${PHASE_TOL} ns: $BEST off at ${BESTD} ns"
	[ "$PC" -ge 1 ] && [ "$PC" -le "$BOUND" ] || fail "trial $valid: B got $PC postcards, not 1 .. ceil(first-RTT packets / Δ) = $BOUND"
	if holds "$BEST <= 0.15"; then NEAR=$((NEAR + 1)); else
		echo "  trial $valid: B's rate $RB is off every model rate within ${PHASE_TOL} ns of the phase by more than 15% (nearest: $BEST)"
	fi
	RATIO_B+=" $(jq -n "($ARRW - 1) * $C / $RB")"
	RATIO_ARR+=" $(jq -n "$ARR / (1 + $RB / $C)")"
	RATIO_MODEL+=" $(jq -n "$MARR0 / (1 + $RM0 / $C)")"
	OFFS+=" $((TPC - TB))"
done
[ "$valid" -ge "$TRIALS" ] || skip "inconclusive: $valid of $TRIALS trials VALID in $((TRIALS + 4)) attempts"
MB=$(median <<<"$RATIO_B") MA=$(median <<<"$RATIO_ARR") MM=$(median <<<"$RATIO_MODEL")
echo "the model at the measured phase itself within 15% of the emulator in $AT0 of $TRIALS trials (reported)"
# The phase is good to a few hundred ns (docs/pbfs.md), not always to PHASE_TOL: one trial in five
# may fall outside it (seen: 9.7% off at the window's edge); two may not.
[ "$NEAR" -ge $((TRIALS - 1)) ] || fail "B's rate after its postcards matched a model rate within ${PHASE_TOL} ns of the phase (15%) in only $NEAR of $TRIALS trials"
echo "medians over $TRIALS trials: B on the wire / (C / c) $MB; arrivals / (1 + 1/c) T $MA; the model's arrivals / (1 + 1/c) T $MM"
holds "$MB >= 0.85 and $MB <= 1.15" || fail "B's rate on the wire is $MB of C / c (not within 15%)"
holds "$MA >= 0.9 and $MA <= 1.1" || fail "the port's arrivals over one DC_RTT are $MA of (1 + 1/c) T (not within 10%)"
holds "$MM >= 0.9 and $MM <= 1.1" || fail "the model's own arrivals are $MM of (1 + 1/c) T"

# without PB-FS: both flows at line rate, the same window after B's start
OFF=$(median <<<"$OFFS")
NOPB=""
for i in $(seq 1 "$TRIALS"); do
	gen_valid --cc dcqcn:lossy --flows "$WORK/ab.flows" --queues tor:tor-p1 --queue-interval 1us --queue-out "$WORK/q.csv"
	[ "$(c host.postcard_rx)" -eq 0 ] || fail "dcqcn without PB-FS: $(c host.postcard_rx) postcards"
	NOPB+=" $(arrivals "$WORK/q.csv" $((TB + OFF + HOP + 1669)) $((TB + OFF + HOP + 1669 + DCRTT)))"
done
MN=$(median <<<"$NOPB")
echo "without PB-FS: arrivals / T over the same DC_RTT:$NOPB (median $MN)"
holds "$MN >= 1.8 and $MN <= 2.2" || fail "without PB-FS the port's arrivals are $MN T over one DC_RTT (not within 10% of 2 T)"

# ---- (2) postcards per flow, eligibility, the ignored count: 8-to-1 incast with ECN on
sw_set ecn=on kmin=10KB kmax=50KB pmax=0.2
IGN="" DECIDED_ALL=""
for CC in dcqcn/pbfs dcqcn+w/pbfs; do
	gen_valid --cc "$CC" --dst h1 --pattern incast --senders 8 --size 1MB --count 1 --sync-window 0
	MARKED=$(sw_run pbfs_marked) DECIDED=$(sw_run pbfs_congested)
	PER=$(jq -c '[.hosts | to_entries[] | select(.key != "h1") | .value.postcard_rx]' <<<"$OUT")
	echo "incast 8 x 1 MB, $CC: switch: $MARKED PBT packets, $DECIDED congested; postcards per flow $PER (bound $BOUND); senders: marked $(c cc.pbfs.marked), postcards $(c cc.pbfs.postcards), rate updates $(c cc.pbfs.rate_updates), ignored $(c cc.pbfs.ignored), CNPs $(c host.cnp_rx)"
	[ "$(c cc.pbfs.eligible)" -eq 8 ] || fail "incast, $CC: $(c cc.pbfs.eligible) of 8 flows eligible"
	[ "$MARKED" -eq "$(c cc.pbfs.marked)" ] || fail "incast, $CC: the switch counted $MARKED PBT packets, the senders marked $(c cc.pbfs.marked)"
	[ "$DECIDED" -gt 0 ] || fail "incast, $CC: no congestion decision"
	[ "$DECIDED" -eq "$(c host.postcard_rx)" ] && [ "$DECIDED" -eq "$(c cc.pbfs.postcards)" ] ||
		fail "incast, $CC: $DECIDED decisions, $(c host.postcard_rx) postcards at the hosts, $(c cc.pbfs.postcards) at the senders"
	jq -e --argjson b "$BOUND" 'all(.[]; . <= $b)' <<<"$PER" >/dev/null || fail "incast, $CC: a flow got more than $BOUND postcards: $PER"
	[ $(($(c cc.pbfs.rate_updates) + $(c cc.pbfs.ignored))) -le "$(c cc.pbfs.postcards)" ] || fail "incast, $CC: more updates and ignores than postcards"
	[ "$(c cc.pbfs.rate_updates)" -gt 0 ] || fail "incast, $CC: no postcard changed a rate"
	IGN+="$CC $(c cc.pbfs.ignored) "
	DECIDED_ALL+="$CC $DECIDED "
done

gen_valid --cc dcqcn/pbfs --dst h1 --pattern incast --senders 8 --size 20KB --count 1 --sync-window 0
MS0=$(sw_run pbfs_marked)
echo "incast 8 x 20 KB: $(c cc.pbfs.eligible) eligible, $MS0 PBT packets at the switch"
[ "$(c cc.pbfs.eligible)" -eq 0 ] && [ "$MS0" -eq 0 ] || fail "20 KB messages: $(c cc.pbfs.eligible) eligible, $MS0 marked packets on the wire"
gen_valid --cc dcqcn/pbfs --dst h1 --pattern incast --senders 8 --size 20KB --count 1 --sync-window 0 --cc-set tau=1us
MS1=$(sw_run pbfs_marked)
echo "incast 8 x 20 KB with tau = 1 us: $(c cc.pbfs.eligible) eligible, $MS1 PBT packets at the switch"
[ "$MS1" -gt 0 ] || fail "tau = 1 us: 20 KB messages still put no marked packet on the wire: the check cannot fail"

# ---- (3) `quench run`: a fabric PB-FS refuses (the 1 us star, N < 2) skips the scheme with its
# reason and runs the rest; on long-10g the summary has its columns (postcards per eligible flow,
# the postcard loop delay)
"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null
for f in star:"" long:"preset long-10g"; do
	{
		echo "name pbfs-${f%%:*}"
		echo "topology star"
		[ -z "${f#*:}" ] || echo "${f#*:}"
		printf 'param N=5\ndilation 200\nschemes dcqcn dcqcn/pbfs\n'
		printf 'workload incast dst=h1 senders=4 size=500KB window=0 count=1 start=100us\nduration 20ms\nseed 1\n'
	} >"$WORK/${f%%:*}.exp"
	"$QUENCH" run "$WORK/${f%%:*}.exp" --out "$WORK/run-${f%%:*}" --name "${TOPO_NAME}b" --quiet >"$WORK/run.txt" 2>&1 ||
		fail "quench run ${f%%:*}: $(tail -5 "$WORK/run.txt")"
done
S="$WORK/run-star/summary.json"
echo "star: $(jq -c '[.schemes[].scheme], .skipped' "$S")"
jq -e '[.schemes[].scheme] == ["dcqcn"] and .skipped[0].scheme == "dcqcn/pbfs" and (.skipped[0].reason | test("N = .* < 2"))' "$S" >/dev/null ||
	fail "the 1 us star: dcqcn/pbfs was not skipped with its reason: $(jq -c '[.schemes[].scheme], .skipped' "$S")"
grep -q "skipped dcqcn/pbfs: .*N = " "$WORK/run-star/summary.md" || fail "summary.md does not say why dcqcn/pbfs was skipped"
L="$WORK/run-long/summary.md"
grep -m1 "^| dcqcn/pbfs" "$L"
grep -q "postcards/eligible flow" "$L" && grep -q "postcard loop p50 ns" "$L" || fail "long-10g: no PB-FS columns in the summary"
jq -e '.skipped == [] and (.schemes[] | select(.scheme == "dcqcn/pbfs") | .counters["cc.pbfs.postcards"] > 0 and .counters["loop.postcard.n"] == .counters["cc.pbfs.postcards"])' \
	"$WORK/run-long/summary.json" >/dev/null || fail "long-10g: dcqcn/pbfs ran without postcards or their loop delays: $(jq -c '.schemes[].counters | with_entries(select(.key | test("pbfs|postcard")))' "$WORK/run-long/summary.json")"

pass "single port: B on the wire $MB of C / c, arrivals $MA of (1 + 1/c) T,  without PB-FS $MN T; incast: postcards all delivered ($DECIDED_ALL), per flow <= $BOUND, ignored: $IGN; small messages unmarked; quench run skips a refused fabric with its reason"
