#!/usr/bin/env bash
# netns: the engine's validity check can fail: a 3:1 incast of 10 Gbit/s hosts at D=1 (real
# time, far beyond this machine) is reported INVALID with reasons. A positive control: a single
# long flow at a generous D is reported VALID in at least one of five attempts (hypervisor
# stalls of milliseconds can invalidate an attempt; that is the check working). If none is
# VALID, `quench jitter` decides: a machine that stops a bare spinning loop past the stall
# threshold every other second skips the positive control with that reason; otherwise it fails.
# A control of the fidelity tagging: the engine stopped for 5 ms during a flow tags it.
source "$(dirname "$0")/lib.sh"
[ -z "${QN_IN_VM:-}" ] || skip "validity thresholds are wall-clock (DESIGN.md §7)"

topo=$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/star.topo")")
"$QUENCH" topo up "$topo" --param N=4 --dilation 1 >/dev/null
out=$("$QUENCH" gen "$TOPO_NAME" --pattern incast --senders 3 --size 500KB --dst h1 --mode sr) ||
	fail "the D=1 run did not complete: $out"
echo "$out" | grep -E "^(goodput|validity|  reason)"
grep -q "^validity: INVALID" <<<"$out" || fail "D=1 was not marked invalid: $out"
grep -q "link rate\|lateness" <<<"$out" || fail "invalid without a pacing reason: $out"
"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null

"$QUENCH" topo up "$topo" --param N=2 --dilation 100 >/dev/null
ok=0
for i in 1 2 3 4 5; do
	out=$("$QUENCH" gen "$TOPO_NAME" --pattern long --size 5MB --dst h1 --senders h2) || fail "long flow: $out"
	echo "attempt $i: $(grep -E '^validity' <<<"$out") $(grep -E '^  reason' <<<"$out" | tr -d '\n')"
	if grep -q "^validity: VALID" <<<"$out"; then
		ok=1
		break
	fi
done
if [ "$ok" -ne 1 ]; then
	# Never VALID: the engine's fault on a quiet machine (fail), not a result on a machine
	# that itself stops a bare spinning loop past the stall threshold every other second
	# (skip, with that measurement as the reason; as netns_dcqcn does).
	machine_stalls "$out" || fail "a single 10 Gbit/s flow at D=100 was never valid on a quiet machine ($STALLS)"
	skip "the D=1 check passed; the positive control was never VALID in five attempts and $STALLS"
fi
# Control of the fidelity tagging: the engine stopped (SIGSTOP) for 5 ms wall in the middle of a
# long flow. Expect: a stall period, the flow tagged (its lifetime met it), and at least 40 us of
# fabric time inside its lifetime (the stop is >= 5 ms = 50 us at D=100; the loop may have been
# asleep for up to 0.1 ms of it, which is not a stall).
bg stopped "$QUENCH" gen "$TOPO_NAME" --pattern long --size 10MB --dst h1 --senders h2 --out "$WORK/stopped.csv"
txp() { ip -n "$(ns h2)" -s link show h2-eth0 | awk '/TX:/ {getline; print $2; exit}'; }
t0=$(txp)
for i in $(seq 200); do
	[ "$(txp)" -gt $((t0 + 1000)) ] && break
	kill -0 "$PID_stopped" 2>/dev/null || fail "gen ended before it could be stopped: $(cat "$WORK/stopped.out")"
	sleep 0.05
done
kill -STOP "$PID_stopped"
sleep 0.005
kill -CONT "$PID_stopped"
wait "$PID_stopped" || fail "the stopped run failed: $(cat "$WORK/stopped.out")"
grep -E "^(validity|  stalls|fidelity)" "$WORK/stopped.out"
grep -qE "^fidelity: [1-9][0-9]* affected periods" "$WORK/stopped.out" || fail "the 5 ms stop left no affected period"
tagged=$(awk -F, 'NR == 2 {print $12, $13}' "$WORK/stopped.csv")
read -r tag frac <<<"$tagged"
lifetime=$(awk -F, 'NR == 2 {print $7}' "$WORK/stopped.csv")
echo "stopped flow: tagged $tag, affected fraction $frac of its $lifetime ns lifetime"
[ "$tag" = 1 ] || fail "the flow the stop met is not tagged"
awk -v f="$frac" -v l="$lifetime" 'BEGIN {exit !(f * l >= 40000)}' ||
	fail "less than 40 us of the stop's 50 us of fabric time counted in the flow's lifetime ($frac x $lifetime ns)"

pass "D=1 is invalid (with reasons), D=100 is valid, a 5 ms engine stop tags the flow it met"
