#!/usr/bin/env bash
# netns: Ctrl-C stops `quench run` (docs/experiments.md "Interrupting a run"). During a scheme's
# attempt (two long flows, minutes of work at D=50) SIGINT is sent; then no frame reaches the
# switch from any host from 1 s after the signal on (host ports' rx_pkts, read from
# `switch stats --format json` every 0.1 s while the topology exists), the topology is down and
# the process gone within 10 s (exit status 130), and the results folder holds what was measured,
# marked interrupted (summary.md, metadata.txt, the running scheme's validity.txt). The same for
# `quench gen` on a topology it does not own: no frame 1 s after SIGINT, exit 130 within 10 s,
# its JSON marked interrupted with what was delivered; the topology stays up for its owner.
# SIGKILL: the run's topology stays up, `topo show` names it as orphaned, and the next
# `quench run` takes it down first.
# The checks can fail: before each signal the same counter is shown to grow over 1 s.
source "$(dirname "$0")/lib.sh"
[ -z "${QN_IN_VM:-}" ] || skip "experiments need line-rate engines; not run under emulation (DESIGN.md §7)"
command -v jq >/dev/null || fail "jq is missing (scripts/install-deps.sh installs it)"

cat >"$WORK/long.exp" <<F
name interrupt
topology $(cd "$(dirname "$0")/../../netns" && pwd)/star.topo
param N=3
dilation 50
schemes none dcqcn
workload long dst=h1 senders=2 size=2GB
duration 20s
attempts 1
F
host_rx() { # packets the switch received from hosts so far; empty when the topology is gone
	"$QUENCH" switch stats "$TOPO_NAME/tor" --format json 2>/dev/null |
		jq '[.switches[0].ports[] | select(.role == "host") | .counters.rx_pkts] | add' 2>/dev/null || true
}
now() { date +%s.%N; }
# observe V EL WHO: one sample V of host_rx at EL s after the signal: remember when it last
# changed (last_change, prev); from 1 s on it must not change (after1)
observe() {
	if [ "$1" != "$prev" ]; then
		last_change=$2
		prev=$1
	fi
	if holds "$2 >= 1.0"; then
		[ -n "$after1" ] || after1=$1
		[ "$1" = "$after1" ] || fail "$3: a host sent frames more than 1 s after the signal ($after1 -> $1 at $2 s)"
	fi
}
# wait_traffic PID LOG WHAT: until the switch has received more than 20000 packets from hosts
# (more than calibration sends: the measured run is on), at most 60 s; sets n
wait_traffic() {
	n=0
	for _ in $(seq 1 600); do
		n=$(host_rx)
		[ -n "$n" ] && [ "$n" -gt 20000 ] && return 0
		kill -0 "$1" 2>/dev/null || fail "$3 ended before the signal: $(tail -5 "$2")"
		sleep 0.1
	done
	fail "$3: no traffic after 60 s: $(tail -5 "$2")"
}
since() { jq -n "($(now) - $1) * 100 | round / 100"; }

"$QUENCH" run "$WORK/long.exp" --name "$TOPO_NAME" --out "$WORK/r" --quiet >"$WORK/run.out" 2>&1 &
pid=$!
BG_PIDS+=("$pid")
wait_traffic "$pid" "$WORK/run.out" "quench run"
sleep 1
n2=$(host_rx)
[ -n "$n2" ] && [ "$n2" -gt "$n" ] || fail "the host packet counter did not grow during the run ($n -> $n2): the check could not see traffic"
echo "before the signal: host packets $n -> $n2 over 1 s"

t0=$(now)
kill -INT "$pid"
after1="" gone="" last_change=0 prev=$n2
while :; do
	el=$(since "$t0")
	v=$(host_rx)
	if [ -z "$v" ]; then
		gone=$el
		break
	fi
	observe "$v" "$el" "quench run"
	holds "$el >= 10" && fail "the topology is still up 10 s after the signal"
	sleep 0.1
done
echo "after the signal: last host packet counted at ${last_change} s; the topology was gone at ${gone} s"
rc=0
for _ in $(seq 1 100); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$pid" 2>/dev/null && fail "quench run still running $(since "$t0") s after the signal"
wait "$pid" || rc=$?
[ "$rc" -eq 130 ] || fail "exit status $rc, expected 130: $(tail -5 "$WORK/run.out")"
! "$QUENCH" topo show | grep -qw "$TOPO_NAME" || fail "topology $TOPO_NAME still listed after the run ended"
grep -q "^Interrupted: \*\*yes\*\*" "$WORK/r/summary.md" || fail "summary.md not marked interrupted: $(head -8 "$WORK/r/summary.md")"
grep -q "^interrupted yes" "$WORK/r/metadata.txt" || fail "metadata.txt not marked interrupted"
grep -q "interrupted by a signal" "$WORK/r/none/validity.txt" || fail "none/validity.txt does not say interrupted: $(cat "$WORK/r/none/validity.txt")"
[ -s "$WORK/r/none/flows.csv" ] || fail "what was measured (none/flows.csv) was not written"
[ ! -e "$WORK/r/dcqcn" ] || fail "the scheme after the interrupted one ran"
grep -E "^interrupted" "$WORK/run.out"
run_last=$last_change run_gone=$gone

# gen: the same signal, the topology left up (gen does not own it)
"$QUENCH" topo up "$(cd "$(dirname "$0")/../../netns" && pwd)/star.topo" --param N=3 --dilation 50 --name "$TOPO_NAME" >/dev/null
"$QUENCH" gen "$TOPO_NAME" --pattern long --senders 2 --size 2GB --dst h1 --cc none --timeout 60s --format json \
	>"$WORK/gen.json" 2>"$WORK/gen.txt" &
pid=$!
BG_PIDS+=("$pid")
wait_traffic "$pid" "$WORK/gen.txt" "quench gen"
sleep 1
n2=$(host_rx)
[ -n "$n2" ] && [ "$n2" -gt "$n" ] || fail "gen: the host packet counter did not grow ($n -> $n2)"
t0=$(now)
kill -INT "$pid"
after1="" last_change=0 prev=$n2 ended=""
while :; do
	el=$(since "$t0")
	v=$(host_rx)
	[ -n "$v" ] || fail "gen took the topology down"
	observe "$v" "$el" "quench gen"
	if ! kill -0 "$pid" 2>/dev/null; then
		[ -n "$ended" ] || ended=$el
		# watch the counter for 1.5 s after the signal, even when gen ended earlier
		holds "$el >= 1.5" && break
	fi
	holds "$el >= 10" && fail "quench gen still running 10 s after the signal"
	sleep 0.1
done
rc=0
wait "$pid" || rc=$?
[ "$rc" -eq 130 ] || fail "gen: exit status $rc, expected 130: $(tail -5 "$WORK/gen.txt")"
jq -e .interrupted "$WORK/gen.json" >/dev/null || fail "gen's JSON is not marked interrupted: $(head -c 400 "$WORK/gen.json")"
# the 2 GB messages cannot complete: what was measured is the data the receiver took in
delivered=$(jq '.counters["host.rx_data_bytes"]' "$WORK/gen.json")
[ "$delivered" -gt 0 ] || fail "gen's JSON reports no data received before the signal"
grep -q "^interrupted by a signal" "$WORK/gen.txt" || fail "gen's text does not say interrupted"
echo "gen after the signal: last host packet counted at ${last_change} s, ended at ${ended} s, exit 130, $delivered data bytes received and reported"
"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null

# SIGKILL cannot be caught: the run's topology stays up, `topo show` says its owner is gone, and
# the next `quench run` takes it down before it starts (UpOptions::owned, orphaned_topologies).
"$QUENCH" run "$WORK/long.exp" --name "$TOPO_NAME" --out "$WORK/k" --quiet >"$WORK/kill.out" 2>&1 &
pid=$!
BG_PIDS+=("$pid")
wait_traffic "$pid" "$WORK/kill.out" "quench run (to be killed)"
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
"$QUENCH" topo show | grep -qw "$TOPO_NAME" || fail "after SIGKILL the topology is gone: nothing to clean up, the check cannot see it"
show=$("$QUENCH" topo show)
grep -q "^note: topology $TOPO_NAME was brought up by a quench run that is gone" <<<"$show" ||
	fail "topo show does not name the orphaned topology: $(grep -E '^(topology|note)' <<<"$show")"
cat >"$WORK/short.exp" <<F
name orphan
topology $(cd "$(dirname "$0")/../../netns" && pwd)/star.topo
param N=3
schemes none
workload incast dst=h1 senders=2 size=20KB
attempts 1
F
"$QUENCH" run "$WORK/short.exp" --name "${TOPO_NAME}b" --out "$WORK/s" --dilation 50 --quiet >"$WORK/short.out" 2>&1 ||
	fail "the next run failed: $(tail -5 "$WORK/short.out")"
grep -q "taking down topology $TOPO_NAME, left up by a quench run that is gone" "$WORK/short.out" ||
	fail "the next run did not say it removed the orphan: $(head -3 "$WORK/short.out")"
! "$QUENCH" topo show | grep -qw "$TOPO_NAME" || fail "the orphaned topology is still up after the next run"
echo "SIGKILL: the topology stayed up, topo show named it, the next run took it down"
pass "SIGINT: run: last host frame at ${run_last} s, topology down at ${run_gone} s, exit 130, partial results marked interrupted; gen: last host frame at ${last_change} s, exit 130 at ${ended} s, JSON marked interrupted; SIGKILL: the next run removed the orphaned topology"
