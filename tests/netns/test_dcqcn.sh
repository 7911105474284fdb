#!/usr/bin/env bash
# netns: DCQCN end to end on the engine and the switch (../shared/specs/dcqcn.md, paper
# parameters, unchanged). Negative control: with the notification point off no CNP is sent and
# the rate trace stays at line rate. An 8:1 incast of long flows keeps the bottleneck's p99 and
# mean queue below the no-CC run, with CNPs seen; goodput after the first 5 ms is reported.
# PFC only: the switch drops nothing and PAUSE frames are seen. Two flows on the dumbbell
# converge to a fair share (Jain >= 0.95); the convergence time is reported. The same incast at D
# and 2D gives the same fabric-time FCTs and queue p99 within 10%, convergence time reported (VALID runs only; when four
# attempts are all INVALID and `quench jitter` shows the machine itself stopping a spinning
# loop past the stall threshold every other second or more, that comparison is skipped with the
# reason after every other check has passed; on a quiet machine it fails).
source "$(dirname "$0")/lib.sh"
[ -z "${QN_IN_VM:-}" ] || skip "fabric dynamics need line-rate engines; not run under emulation (DESIGN.md §7)"
AWK="$(dirname "$0")/goodput.awk"

D=200
topo=$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/star.topo")")
"$QUENCH" topo up "$topo" --param N=9 --dilation "$D" >/dev/null
gen() { "$QUENCH" gen "$TOPO_NAME" "$@"; }
hostsum() { awk -v k="$2" '$1=="host" {for (i=1;i<=NF;i++) if ($i==k) s+=$(i+1)} END {print s+0}' <<<"$1"; }
qstat() { sed -n "s/^queue tor\/tor-p1: .* $2 \([0-9.]*\) B.*/\1/p" <<<"$1"; }

# 1. negative control: NP off -> no CNP, the rate never leaves line rate; NP on -> CNPs, cuts.
"$QUENCH" switch set "$TOPO_NAME/tor" pfc=on >/dev/null
out=$(gen --pattern long --senders 2 --size 2MB --dst h1 --cc dcqcn --no-np --trace 2 --trace-out "$WORK/off.csv") ||
	fail "NP off: $out"
cnp=$(hostsum "$out" cnp_tx)
rates=$(awk -F, 'NR>1 {print $3}' "$WORK/off.csv" | sort -u | tr '\n' ' ')
echo "NP off: CNPs sent $cnp, rates in the trace: $rates"
[ "$cnp" -eq 0 ] || fail "NP off sent $cnp CNPs"
[ "$rates" = "10000000000 " ] || fail "NP off: the rate left line rate: $rates"
out=$(gen --pattern long --senders 2 --size 2MB --dst h1 --cc dcqcn --trace 2 --trace-out "$WORK/on.csv") ||
	fail "NP on: $out"
cnp=$(hostsum "$out" cnp_tx)
low=$(awk -F, 'NR>1 && (m == "" || $3 < m) {m = $3} END {print m}' "$WORK/on.csv")
echo "NP on: CNPs sent $cnp, lowest rate $low bit/s"
[ "$cnp" -gt 0 ] || fail "NP on sent no CNP"
[ "$low" -lt 10000000000 ] || fail "NP on: the rate never dropped"

# 2. 8:1 incast of long flows: DCQCN (PFC on) vs no congestion control (PFC off).
q="--queues tor:tor-p1 --queue-interval 5us"
"$QUENCH" switch set "$TOPO_NAME/tor" pfc=off >/dev/null
none=$(gen --pattern long --senders 8 --size 1MB --dst h1 --cc none $q) || fail "no-CC incast: $none"
"$QUENCH" switch set "$TOPO_NAME/tor" pfc=on >/dev/null
dcqcn=$(gen --pattern long --senders 8 --size 1MB --dst h1 --cc dcqcn $q --trace 8 --trace-out "$WORK/incast.csv" \
	--out "$WORK/incast-flows.csv") || fail "DCQCN incast: $dcqcn"
for v in none dcqcn; do
	echo "$v: $(grep -E '^queue' <<<"${!v}") | $(grep -E '^validity' <<<"${!v}") | CNPs $(hostsum "${!v}" cnp_tx)"
done
[ "$(qstat "$dcqcn" p99)" -lt "$(qstat "$none" p99)" ] || fail "DCQCN p99 queue is not below no-CC"
awk -v a="$(qstat "$dcqcn" mean)" -v b="$(qstat "$none" mean)" 'BEGIN {exit !(a < b)}' ||
	fail "DCQCN mean queue is not below no-CC"
[ "$(hostsum "$dcqcn" cnp_rx)" -gt 0 ] || fail "no CNP reached the senders"
first_done=$(awk -F, 'NR>1 {d = $6 + $7; if (m == "" || d < m) m = d} END {print m}' "$WORK/incast-flows.csv")
after5=$(awk -v from=5000000 -v to="$first_done" -v win=500000 -f "$AWK" "$WORK/incast.csv" |
	awk '{s += $3; n++; if (m == "" || $3 < m) m = $3} END {if (n) printf "mean %.2f Gbit/s, lowest 0.5 ms window %.2f Gbit/s (%d windows)", s/n, m, n}')
echo "DCQCN incast goodput from 5 ms to the first completion ($first_done ns): ${after5:-no window} (bottleneck 10 Gbit/s; reported, see docs/cc.md)"

# 3. PFC only: lossless, PAUSE frames seen.
"$QUENCH" switch set "$TOPO_NAME/tor" pfc=on >/dev/null
# exact drop counts: the per-port reason lines ("  tor-p1: buffer=1621436")
drops() { "$QUENCH" switch stats "$TOPO_NAME/tor" | awk '/^  tor-p[0-9]+:/ {for (i = 2; i <= NF; i++) {split($i, kv, "="); s += kv[2]}} END {print s+0}'; }
before=$(drops)
out=$(gen --pattern long --senders 8 --size 1MB --dst h1 --cc pfc) || fail "PFC only: $out"
after=$(drops)
pauses=$(hostsum "$out" pfc_rx)
echo "PFC only: switch drops $((after - before)), PAUSE frames received by hosts $pauses, $(grep -E '^goodput' <<<"$out")"
[ "$((after - before))" -eq 0 ] || fail "PFC only: the switch dropped $((after - before)) packets"
[ "$pauses" -gt 0 ] || fail "PFC only: no PAUSE frame reached a host"
grep -q "flows done 8/8, content errors 0" <<<"$out" || fail "PFC only: $out"
"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null

# 3b. dilation is real: the same DCQCN incast at D and 2D gives the same fabric-time FCTs,
#     queue p99 within 10%; the convergence time (the senders' rates first sum to the bottleneck)
#     is reported for both. Only valid runs are results (DESIGN.md §5): each D is tried up to
#     four times for a VALID run (hypervisor stalls invalidate some here).
declare -A fct50 fct99 qp99 conv
unchecked=""
for d in $D $((2 * D)); do
	"$QUENCH" topo up "$topo" --param N=9 --dilation "$d" >/dev/null
	valid=""
	for attempt in 1 2 3 4; do
		out=$(gen --pattern long --senders 8 --size 1MB --dst h1 --cc dcqcn $q --out "$WORK/d$d.csv" \
			--trace 8 --trace-out "$WORK/t$d.csv") || fail "DCQCN incast at D=$d: $out"
		# convergence: the first instant the eight senders' rates sum to at most the
		# bottleneck (10 Gbit/s), from the rate trace (fabric ns)
		tail -n +2 "$WORK/t$d.csv" | sort -t, -k2,2n >"$WORK/t$d.sorted"
		conv[$d]=$(awk -F, '{r[$1] = $3; k = 0; s = 0; for (p in r) {k++; s += r[p]}
			if (k >= 8 && s <= 10e9) {print $2; exit}}' "$WORK/t$d.sorted")
		[ -n "${conv[$d]}" ] || fail "D=$d: the senders' rates never summed to the bottleneck or less"
		fct50[$d]=$(awk -F, 'NR>1 {print $7}' "$WORK/d$d.csv" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
		fct99[$d]=$(awk -F, 'NR>1 {print $7}' "$WORK/d$d.csv" | sort -n | tail -1)
		qp99[$d]=$(qstat "$out" p99)
		echo "D=$d attempt $attempt: FCT p50 ${fct50[$d]} ns, max ${fct99[$d]} ns, queue p99 ${qp99[$d]} B, convergence ${conv[$d]} ns, $(grep -E '^validity' <<<"$out")"
		grep -E "^  reason:" <<<"$out" || true
		if grep -q "^validity: VALID" <<<"$out"; then
			valid=1
			break
		fi
	done
	if [ -z "$valid" ]; then
		# Invalid runs are not results. If a bare spinning loop on this machine is stopped
		# for longer than the engine's stall threshold at least once every two seconds, a
		# clean run of a few seconds is improbable: the machine, not the engine, is at fault,
		# and the comparison is skipped (reported at the end, after the other checks).
		# Otherwise the engine is: fail.
		machine_stalls "$out" ||
			fail "no valid DCQCN incast run at D=$d in four attempts on a quiet machine ($STALLS)"
		unchecked="D vs 2D not compared: no VALID run at D=$d in four attempts; $STALLS"
	fi
	"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null
	[ -z "$unchecked" ] || break
done
within() { awk -v a="$1" -v b="$2" 'BEGIN {d = (a - b) / b; if (d < 0) d = -d; exit !(d <= 0.10)}'; }
if [ -z "$unchecked" ]; then
	within "${fct50[$((2 * D))]}" "${fct50[$D]}" || fail "FCT p50 differs by more than 10% between D=$D and D=$((2 * D))"
	within "${fct99[$((2 * D))]}" "${fct99[$D]}" || fail "FCT max differs by more than 10% between D=$D and D=$((2 * D))"
	within "${qp99[$((2 * D))]}" "${qp99[$D]}" || fail "queue p99 differs by more than 10% between D=$D and D=$((2 * D))"
	# Reported, not asserted: this convergence time moves in steps of the NP's 50 us CNP
	# interval (VALID runs gave 304.5 us at D=200 and 353.3 us at D=400, one interval apart),
	# so a 10% bound on ~300 us is below its resolution (docs/cc.md).
	echo "D vs 2D: FCT p50 ${fct50[$D]} / ${fct50[$((2 * D))]} ns, queue p99 ${qp99[$D]} / ${qp99[$((2 * D))]} B, convergence ${conv[$D]} / ${conv[$((2 * D))]} ns"
fi

# 4. fairness: two long flows through the dumbbell's bottleneck, the second 5 ms later.
dumb=$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/dumbbell.topo")")
"$QUENCH" topo up "$dumb" --dilation 100 >/dev/null
"$QUENCH" switch set "$TOPO_NAME/s1" pfc=on >/dev/null
out=$("$QUENCH" gen "$TOPO_NAME" --pattern long --senders h1,h2 --dst h3 --size 25MB --interval 5ms --cc dcqcn \
	--trace 2 --trace-out "$WORK/fair.csv" --out "$WORK/fair-flows.csv") || fail "fairness run: $out"
first_done=$(awk -F, 'NR>1 {d = $6 + $7; if (m == "" || d < m) m = d} END {print m}' "$WORK/fair-flows.csv")
awk -v from=5000000 -v to="$first_done" -v win=1000000 -f "$AWK" "$WORK/fair.csv" >"$WORK/fair.txt"
echo "Jain per 1 ms window from the second flow's start: $(awk '{printf "%s ", $2}' "$WORK/fair.txt")"
# convergence: the first 1 ms window that starts three in a row with Jain >= 0.95
conv=$(awk '{j[NR] = $2; t[NR] = $1} END {for (i = 1; i + 2 <= NR; i++) if (j[i] >= 0.95 && j[i+1] >= 0.95 && j[i+2] >= 0.95) {print t[i]; exit}}' "$WORK/fair.txt")
[ -n "$conv" ] || fail "the two flows never converged"
# after convergence: the mean of the per-window Jain index up to the first completion
jain=$(awk -v c="$conv" '$1 >= c {s += $2; n++} END {printf "%.4f", s/n}' "$WORK/fair.txt")
echo "fairness: Jain $jain over 1 ms windows from $(((conv - 5000000) / 1000)) us after the second flow started (convergence time, fabric) to ${first_done} ns; $(grep -E '^validity' <<<"$out")"
awk -v j="$jain" 'BEGIN {exit !(j >= 0.95)}' || fail "Jain index $jain < 0.95"
[ -z "$unchecked" ] || skip "every other check passed; $unchecked"
pass "NP-off control, incast queues below no-CC, PFC lossless, D vs 2D within 10%, fair share (Jain $jain, converged $(((conv - 5000000) / 1000)) us after the second flow started)"
