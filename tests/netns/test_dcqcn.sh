#!/usr/bin/env bash
# netns: DCQCN end to end on the engine and the switch (../shared/specs/dcqcn.md). Negative
# control: with the notification point off no CNP is sent and the rate trace stays at line rate.
# An 8:1 incast of long flows with the spec's parameters for this 10 Gbit/s fabric and RED at
# dequeue: every mark the port decides reaches the receiver; the bottleneck's p99 and mean queue
# stay below the no-CC run, CNPs are seen, mean goodput from 5 ms to the first completion is
# >= 90% of the bottleneck and within 5% of the reference model (quench model). PFC only: the
# switch drops nothing, PAUSE frames are seen and nothing is retransmitted. The same incast (paper parameters) at D and 2D
# gives the same fabric-time FCTs, queue p99 and convergence time within 10% (medians of three
# VALID runs). Two flows on the dumbbell converge to a fair share (Jain >= 0.95, the median of
# three VALID runs; convergence time reported).
# Only VALID runs are results: an INVALID incast attempt is retried at 1.5 x D, up to three
# times (how often is printed); when a check has no VALID run and `quench jitter` shows this
# machine itself (every CPU busy) stopping a spinning loop past the stall threshold every other
# second or more, that check is skipped with the measurement, after every other check passed;
# on a quiet machine it fails.
source "$(dirname "$0")/lib.sh"
[ -z "${QN_IN_VM:-}" ] || skip "fabric dynamics need line-rate engines; not run under emulation (DESIGN.md §7)"

# D is measured for each fabric (`topo up --dilation auto`), not a constant: at D=200 the 8:1
# incasts lost 5-50% of their senders' backlogged arrival time on this machine (2026-11-27).
topo=$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/star.topo")")
up_auto "$topo" --param N=9
# Results are read from JSON (gen --format json, switch stats --format json) and the analyses
# come from `quench analyze` (transport/metrics.h, unit-tested); the text goes to stderr.
gen() { "$QUENCH" gen "$TOPO_NAME" --format json "$@" 2>"$WORK/gen.txt"; }
# counter NAME GEN_JSON: a counter of the run by name (host.* summed over hosts, qp.*)
counter() { jq ".counters[\"$1\"]" <<<"$2"; }
# qstat GEN_JSON FIELD: tor-p1's queue statistic (mean, p99, max; bytes)
qstat() { jq ".queues[] | select(.port == \"tor/tor-p1\") | .$2" <<<"$1"; }
verdict() { jq -r 'if .valid then "VALID" else "INVALID: " + (.reasons | join("; ")) end' <<<"$1"; }

# 1. negative control: NP off -> no CNP, the rate never leaves line rate; NP on -> CNPs, cuts.
"$QUENCH" switch set "$TOPO_NAME/tor" pfc=on >/dev/null
out=$(gen --pattern long --senders 2 --size 2MB --dst h1 --cc dcqcn --no-np --trace 2 --trace-out "$WORK/off.csv") ||
	fail "NP off: $out"
cnp=$(counter host.cnp_tx "$out")
rates=$("$QUENCH" analyze trace "$WORK/off.csv" | jq -c '[.series[] | .lowest_rate_bps, .highest_rate_bps] | unique')
echo "NP off: CNPs sent $cnp, rates in the trace: $rates"
[ "$cnp" -eq 0 ] || fail "NP off sent $cnp CNPs"
[ "$rates" = "[10000000000]" ] || fail "NP off: the rate left line rate: $rates"
out=$(gen --pattern long --senders 2 --size 2MB --dst h1 --cc dcqcn --trace 2 --trace-out "$WORK/on.csv") ||
	fail "NP on: $out"
cnp=$(counter host.cnp_tx "$out")
low=$("$QUENCH" analyze trace "$WORK/on.csv" | jq '[.series[].lowest_rate_bps] | min')
echo "NP on: CNPs sent $cnp, lowest rate $low bit/s"
[ "$cnp" -gt 0 ] || fail "NP on sent no CNP"
[ "$low" -lt 10000000000 ] || fail "NP on: the rate never dropped"

# 2. 8:1 incast of long flows (8 x 5 MB to h1) on the 10 Gbit/s star: no congestion control (PFC
#    off) vs DCQCN with the spec's parameters for this fabric (dcqcn.md §4 "Scaling for emulator",
#    what `quench run` derives, unit [experiment]: Kmin 2 MTU = 4096 B, Kmax 50 KB, Pmax 1%,
#    R_AI 10, R_HAI 50, R_min 25 Mbit/s, B 2.5 MB; N 50 us and T = tau' 55 us as the paper) and
#    RED decided at dequeue (common.md §3). Results only from VALID runs (up to four attempts, D
#    raised 1.5x after each INVALID one).
q="--queues tor:tor-p1 --queue-interval 5us"
derived="--cc-set rai=10Mbps --cc-set rhai=50Mbps --cc-set rmin=25Mbps --cc-set b=2500000"
ce_sw() { "$QUENCH" switch stats "$TOPO_NAME/tor" --format json | jq '.switches[0].ports[] | select(.ifname == "tor-p1") | .counters.ecn_marked'; }
# valid_run NAME SETTINGS COMMAND...: up to four attempts for a VALID run; the last output in
# $NAME. An INVALID attempt is retried at 1.5 x the D of the one before (the topology is brought
# up again at that D and the switch SETTINGS applied again; everything checked is in fabric time,
# which D does not change), as `quench run` retries a CPU-bound attempt; how many attempts it took
# is printed. The topology is left at D with SETTINGS applied.
valid_run() {
	local name=$1 settings=$2 attempt out d=$D
	shift 2
	"$QUENCH" switch set "$TOPO_NAME/tor" $settings >/dev/null
	for attempt in 1 2 3 4; do
		out=$("$@") || fail "$name: $out"
		printf -v "$name" '%s' "$out"
		echo "$name attempt $attempt at D=$d: $(verdict "$out")"
		jq -e .valid <<<"$out" >/dev/null && break
		[ "$attempt" -lt 4 ] || break
		d=$(((d * 3 / 2 + 9) / 10 * 10))
		"$QUENCH" topo up "$topo" --param N=9 --dilation "$d" >/dev/null
		"$QUENCH" switch set "$TOPO_NAME/tor" $settings >/dev/null
	done
	echo "$name: $((attempt - 1)) INVALID attempt(s) before $(jq -e .valid <<<"$out" >/dev/null && echo "a VALID one at D=$d" || echo "giving up at D=$d")"
	if [ "$d" != "$D" ]; then
		"$QUENCH" topo up "$topo" --param N=9 --dilation "$D" >/dev/null
		"$QUENCH" switch set "$TOPO_NAME/tor" $settings >/dev/null
	fi
	jq -e .valid <<<"$out" >/dev/null
}
unchecked=""
# (no CC: 8 x 1 MB; its queue reaches the buffer's limit within a few ms and stays there, and
# longer flows only lengthen a run of drops and go-back-N retransmissions)
valid_run none pfc=off gen --pattern long --senders 8 --size 1MB --dst h1 --cc none $q || unchecked="no-CC incast"
dq="pfc=on ecn_at=dequeue kmin=4096 kmax=50000 pmax=0.01"
"$QUENCH" switch set "$TOPO_NAME/tor" $dq >/dev/null
# Every mark the port decides at dequeue reaches the receiver (h1's XDP applies it): exact counts
# (PFC on: nothing is dropped between the port and the receiver).
# The count is exact only when every packet crossed the port once: a run that retransmitted
# (nothing should be lost with PFC on; seen once in a fresh-clone make test: 17 resent
# packets, the receiver counting 249 CE against 242 decisions) is inconclusive and repeated,
# up to three times.
dq_ok=""
for attempt in 1 2 3; do
	ce0=$(ce_sw)
	out=$(gen --pattern long --senders 8 --size 512KB --dst h1 --cc dcqcn $derived) || fail "dequeue marks: $out"
	ce_dq=$(($(ce_sw) - ce0))
	ce_rx=$(counter host.ce_rx "$out")
	resent=$(jq '[.counters["qp.retransmitted", "qp.timeouts", "qp.duplicates"]] | add' <<<"$out")
	echo "dequeue marks attempt $attempt: tor-p1 decided $ce_dq, the receiver saw $ce_rx CE packets; retransmitted, timeouts and duplicates: $resent"
	if [ "$resent" -ne 0 ]; then
		echo "dequeue marks attempt $attempt inconclusive: packets were resent, so they crossed the port more than once"
		continue
	fi
	[ "$ce_dq" -gt 0 ] || fail "the port decided no mark at dequeue"
	[ "$ce_rx" -eq "$ce_dq" ] || fail "the port decided $ce_dq marks at dequeue, the receiver saw $ce_rx ($(jq -c .hosts <<<"$out"); $(verdict "$out"))"
	dq_ok=1
	break
done
dq_unchecked=""
[ -n "$dq_ok" ] || dq_unchecked="dequeue marks not counted (inconclusive): every attempt of 3 resent packets"
valid_run dcqcn "$dq" gen --pattern long --senders 8 --size 5MB --dst h1 --cc dcqcn $derived $q --trace 8 \
	--trace-out "$WORK/incast.csv" --out "$WORK/incast-flows.csv" || unchecked="${unchecked:+$unchecked, }DCQCN incast"
for v in none dcqcn; do
	echo "$v: tor-p1 queue mean $(qstat "${!v}" mean) B, p99 $(qstat "${!v}" p99) B, max $(qstat "${!v}" max) B | $(verdict "${!v}") | CNPs $(counter host.cnp_tx "${!v}")"
done
first_done=$(jq .first_completion_ns <<<"$dcqcn")
g=$("$QUENCH" analyze trace "$WORK/incast.csv" --from 5ms --to "${first_done}ns" --window 1ms)
read -r mean lowest nwin < <(jq -r '"\(.mean_gbps) \(.lowest_gbps) \(.windows | length)"' <<<"$g")
# The same incast in the reference model (an ideal network, the same controllers; docs/cc.md)
model=$("$QUENCH" model --senders 8 --size 5MB --duration 80ms --derived --window 1ms)
mmean=$(sed -n 's/^goodput from .*: mean \([0-9.]*\) Gbit.*/\1/p' <<<"$model")
mlow=$(sed -n 's/.*lowest 1ms window \([0-9.]*\) Gbit.*/\1/p' <<<"$model")
echo "DCQCN incast goodput from 5 ms to the first completion ($first_done ns): mean $mean Gbit/s, lowest 1 ms window $lowest Gbit/s ($nwin windows); reference model: mean $mmean, lowest $mlow Gbit/s (bottleneck 10 Gbit/s)"
if [ -z "$unchecked" ]; then
	[ "$(qstat "$dcqcn" p99)" -lt "$(qstat "$none" p99)" ] || fail "DCQCN p99 queue is not below no-CC"
	holds "$(qstat "$dcqcn" mean) < $(qstat "$none" mean)" || fail "DCQCN mean queue is not below no-CC"
	[ "$(counter host.cnp_rx "$dcqcn")" -gt 0 ] || fail "no CNP reached the senders"
	[ "$nwin" -ge 20 ] || fail "only $nwin goodput windows after 5 ms"
	holds "$mean >= 9.0" || fail "goodput after 5 ms $mean Gbit/s < 90% of 10 Gbit/s"
	holds "(($mean - $mmean) / $mmean | fabs) <= 0.05" ||
		fail "goodput after 5 ms $mean Gbit/s is more than 5% from the reference model's $mmean Gbit/s"
else
	machine_stalls "$dcqcn" || fail "no VALID run of: $unchecked, in four attempts (D raised 1.5x after each) on a quiet machine ($STALLS)"
	unchecked="incast queues and goodput not checked (inconclusive): no VALID run of $unchecked in four attempts (D raised 1.5x after each); $STALLS"
fi

# 3. PFC only: lossless, PAUSE frames seen, no retransmission.
"$QUENCH" switch set "$TOPO_NAME/tor" pfc=on >/dev/null
# exact drop counts, every reason, every port
drops() { "$QUENCH" switch stats "$TOPO_NAME/tor" --format json | jq '[.switches[].ports[].counters.drops] | add'; }
before=$(drops)
out=$(gen --pattern long --senders 8 --size 1MB --dst h1 --cc pfc) || fail "PFC only: $out"
after=$(drops)
pauses=$(counter host.pfc_rx "$out")
echo "PFC only: switch drops $((after - before)), PAUSE frames received by hosts $pauses, goodput $(jq .goodput_gbps <<<"$out") Gbit/s"
[ "$((after - before))" -eq 0 ] || fail "PFC only: the switch dropped $((after - before)) packets"
[ "$pauses" -gt 0 ] || fail "PFC only: no PAUSE frame reached a host"
jq -e '.flows_done == 8 and .content_errors == 0' <<<"$out" >/dev/null || fail "PFC only: $out"
# Lossless: nothing to retransmit. (Before lossless schemes got a RoCE NIC's QP timeout, IRN's
# 100/320 us RTO fired behind the paused queue: 150-1232 spurious go-back-N resends per run.)
jq -e '[.counters["qp.retransmitted", "qp.timeouts", "qp.duplicates"]] | add == 0' <<<"$out" >/dev/null ||
	fail "PFC only: retransmissions in a lossless run: $(jq -c '.counters | with_entries(select(.key | startswith("qp.")))' <<<"$out")"
"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null

# 3b. dilation is real: the same DCQCN incast (8 x 512 KB, paper parameters, the topology's
#     default switch: RED at enqueue) at D and 2D gives the same fabric-time FCTs (p50, max), queue
#     p99 and convergence time (the first instant the eight senders' traced rates sum to at most
#     the bottleneck) within 10%. Each is the median of three VALID runs per D (up to nine
#     attempts): a run's convergence time moves in steps of the NP's 50 us CNP interval when a
#     mark lands on the other side of an interval boundary (single VALID runs gave 304.5 us at
#     D=200 and 353.3 us at D=400), and the median of three takes out such a run. Only VALID
#     runs are results (DESIGN.md §5).
declare -A fct50 fct99 qp99 convt
dil_unchecked=""
median() { "$QUENCH" analyze numbers | jq .p50; }
for d in $D $((2 * D)); do
	"$QUENCH" topo up "$topo" --param N=9 --dilation "$d" >/dev/null
	nvalid=0
	: >"$WORK/runs$d"
	for attempt in 1 2 3 4 5 6 7 8 9; do
		out=$(gen --pattern long --senders 8 --size 512KB --dst h1 --cc dcqcn $q --out "$WORK/d$d.csv" \
			--trace 8 --trace-out "$WORK/t$d.csv") || fail "DCQCN incast at D=$d: $out"
		c=$("$QUENCH" analyze trace "$WORK/t$d.csv" --rate-cap 10Gbps | jq .rate_cap_ns)
		[ "$c" != null ] || fail "D=$d: the senders' rates never summed to the bottleneck or less"
		f50=$(jq .fct_ns.p50 <<<"$out")
		f99=$(jq .fct_ns.max <<<"$out")
		qp=$(qstat "$out" p99)
		echo "D=$d attempt $attempt: FCT p50 $f50 ns, max $f99 ns, queue p99 $qp B, convergence $c ns, $(verdict "$out")"
		if jq -e .valid <<<"$out" >/dev/null; then
			echo "$f50 $f99 $qp $c" >>"$WORK/runs$d"
			nvalid=$((nvalid + 1))
			[ "$nvalid" -lt 3 ] || break
		fi
	done
	"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null
	if [ "$nvalid" -lt 3 ]; then
		# Invalid runs are not results. If bare spinning loops on this machine (one per CPU, as
		# during a run) are stopped past the engine's stall threshold at least once every two
		# seconds, three clean runs are improbable: the machine, not the engine, is at fault,
		# and the comparison is skipped (reported at the end, after the other checks).
		machine_stalls "$out" ||
			fail "only $nvalid VALID DCQCN incast runs at D=$d in nine attempts on a quiet machine ($STALLS)"
		dil_unchecked="D vs 2D not compared: $nvalid VALID runs at D=$d in nine attempts; $STALLS"
		break
	fi
	fct50[$d]=$(cut -d' ' -f1 "$WORK/runs$d" | median)
	fct99[$d]=$(cut -d' ' -f2 "$WORK/runs$d" | median)
	qp99[$d]=$(cut -d' ' -f3 "$WORK/runs$d" | median)
	convt[$d]=$(cut -d' ' -f4 "$WORK/runs$d" | median)
done
within() { holds "((($1) - ($2)) / ($2) | fabs) <= 0.10"; }
if [ -z "$dil_unchecked" ]; then
	D2=$((2 * D))
	echo "D vs 2D (medians of 3 VALID runs): FCT p50 ${fct50[$D]} / ${fct50[$D2]} ns, max ${fct99[$D]} / ${fct99[$D2]} ns, queue p99 ${qp99[$D]} / ${qp99[$D2]} B, convergence ${convt[$D]} / ${convt[$D2]} ns"
	within "${fct50[$D2]}" "${fct50[$D]}" || fail "FCT p50 differs by more than 10% between D=$D and D=$D2"
	within "${fct99[$D2]}" "${fct99[$D]}" || fail "FCT max differs by more than 10% between D=$D and D=$D2"
	within "${qp99[$D2]}" "${qp99[$D]}" || fail "queue p99 differs by more than 10% between D=$D and D=$D2"
	within "${convt[$D2]}" "${convt[$D]}" || fail "convergence time differs by more than 10% between D=$D and D=$D2"
fi

# 4. fairness: two long flows through the dumbbell's bottleneck, the second 5 ms later.
dumb=$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/dumbbell.topo")")
up_auto "$dumb"
FD=$D
# Marks decided at dequeue on s1's bottleneck port cross the s1-s2 cable (the engine's delay
# line) and are applied by s2's ingress: the receiver sees every one (exact; PFC on).
ce_all() { "$QUENCH" switch stats "$TOPO_NAME/s1" "$TOPO_NAME/s2" --format json | jq '[.switches[].ports[].counters.ecn_marked] | add'; }
for sw in s1 s2; do "$QUENCH" switch set "$TOPO_NAME/$sw" pfc=on ecn_at=dequeue kmin=4096 kmax=50000 >/dev/null; done
# The precondition is a queue at s1: two 1 MB flows into one 10 Gbit/s link build one only when
# their line-rate starts overlap, so a run with no mark decided is repeated (three attempts).
for attempt in 1 2 3; do
	ce0=$(ce_all)
	out=$(gen --pattern long --senders h1,h2 --dst h3 --size 1MB --cc dcqcn $derived) ||
		fail "dequeue marks across the cable: $out"
	ce_dq=$(($(ce_all) - ce0))
	ce_rx=$(counter host.ce_rx "$out")
	echo "dequeue marks on the dumbbell, attempt $attempt: the switches decided $ce_dq, h3 saw $ce_rx CE packets"
	[ "$ce_dq" -eq 0 ] || break
done
[ "$ce_dq" -gt 0 ] || fail "the dumbbell's switches decided no mark at dequeue in three attempts"
[ "$ce_rx" -eq "$ce_dq" ] || fail "the dumbbell's switches decided $ce_dq marks at dequeue, h3 saw $ce_rx ($(jq -c .hosts <<<"$out"))"
# The fairness run: the paper's parameters and switch settings (RED 5 KB / 200 KB at enqueue).
for sw in s1 s2; do "$QUENCH" switch set "$TOPO_NAME/$sw" ecn_at=enqueue kmin=5000 kmax=200000 >/dev/null; done
"$QUENCH" switch set "$TOPO_NAME/s1" pfc=on >/dev/null
# The median of three VALID runs (up to six attempts): the per-window Jain mean of one run has a
# tail, a 4-6 ms dip to 0.77-0.86 after convergence taking a run's mean to 0.94 (seen once in CI;
# six runs here gave 0.976-0.992), which a median of three takes out. Convergence is the first 1 ms
# window that starts three in a row with Jain >= 0.95; the mean of the per-window Jain index runs
# from there to the first completion (quench analyze trace).
# An INVALID attempt is retried at 1.5 x the D of the one before (the dumbbell brought up again
# at that D with the same settings; at a fixed D=100 about one attempt in three kept a link
# backlogged only 97-98.5% of its time).
jains="" convs="" fair_valid=0 fd=$FD raise=""
for attempt in 1 2 3 4 5 6; do
	if [ "$attempt" -gt 1 ] && [ -n "$raise" ]; then
		fd=$(((fd * 3 / 2 + 9) / 10 * 10))
		"$QUENCH" topo up "$dumb" --dilation "$fd" >/dev/null # D changes in place
		for sw in s1 s2; do "$QUENCH" switch set "$TOPO_NAME/$sw" pfc=on ecn_at=enqueue kmin=5000 kmax=200000 >/dev/null; done
	fi
	raise=""
	out=$(gen --pattern long --senders h1,h2 --dst h3 --size 25MB --interval 5ms --cc dcqcn \
		--trace 2 --trace-out "$WORK/fair.csv") || fail "fairness run: $out"
	if ! jq -e .valid <<<"$out" >/dev/null; then
		echo "fairness attempt $attempt at D=$fd: $(verdict "$out")"
		raise=1
		continue
	fi
	first_done=$(jq .first_completion_ns <<<"$out")
	fair=$("$QUENCH" analyze trace "$WORK/fair.csv" --from 5ms --to "${first_done}ns" --window 1ms --jain 0.95 --run 3)
	echo "fairness attempt $attempt, Jain per 1 ms window from the second flow's start: $(jq -r '[.windows[].jain * 1000 | round / 1000] | join(" ")' <<<"$fair")"
	conv=$(jq .jain_convergence_ns <<<"$fair")
	[ "$conv" != null ] || fail "the two flows never converged (attempt $attempt)"
	jain=$(jq '.jain_mean_after * 10000 | round / 10000' <<<"$fair")
	echo "fairness attempt $attempt at D=$fd: Jain $jain from $(((conv - 5000000) / 1000)) us after the second flow started to ${first_done} ns; VALID"
	jains="$jains $jain" convs="$convs $((conv - 5000000))"
	fair_valid=$((fair_valid + 1))
	[ "$fair_valid" -lt 3 ] || break
done
if [ "$fair_valid" -lt 3 ]; then
	machine_stalls "$out" || fail "fairness: $fair_valid VALID runs of 6 on a quiet machine ($STALLS)"
	unchecked="${unchecked}${unchecked:+; }fairness not checked (inconclusive): $fair_valid VALID runs of 6; $STALLS"
else
	jain=$(printf '%s\n' $jains | median)
	conv=$(printf '%s\n' $convs | median)
	echo "fairness: Jain $jain (median of$jains) over 1 ms windows from convergence, $((conv / 1000)) us after the second flow started (median, fabric), to the first completion"
	holds "$jain >= 0.95" || fail "Jain index $jain (median of$jains) < 0.95"
fi
unchecked="${unchecked}${unchecked:+${dil_unchecked:+; }}${dil_unchecked}"
unchecked="${unchecked}${unchecked:+${dq_unchecked:+; }}${dq_unchecked}"
[ -z "$unchecked" ] || skip "every other check passed; $unchecked"
pass "NP-off control, dequeue marks delivered, incast queues below no-CC and goodput $mean Gbit/s after 5 ms (model $mmean), PFC lossless, D vs 2D within 10%, fair share (Jain $jain, converged $((conv / 1000)) us after the second flow started)"
