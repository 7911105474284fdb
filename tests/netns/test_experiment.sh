#!/usr/bin/env bash
# netns: a tiny experiment end to end (`quench run`, docs/experiments.md). Calibration picks D;
# two schemes run the identical flow list (same hash); the outputs agree with each other: flows
# written = flows generated, bytes delivered = bytes sent, fct.txt in the simulator's format,
# the peak queue >= every sample; an ns-3 flow file is imported; plots are PNGs; `quench
# compare` prints ratios; `gen --flows` replays the same flow file. Results are read from
# summary.json. Switch settings given for every scheme and for one scheme are the ones in force
# (read back from the pinned maps) and printed; `trace` lines give per-QP rate traces. A run
# forced to D=1 is reported INVALID in summary.md. A scheme that does not exist is rejected by
# name before anything is brought up.
source "$(dirname "$0")/lib.sh"
[ -z "${QN_IN_VM:-}" ] || skip "experiments need line-rate engines; not run under emulation (DESIGN.md §7)"
command -v gnuplot >/dev/null || fail "gnuplot is missing (scripts/install-deps.sh installs gnuplot-nox)"

# node ids of star.topo: tor 0, h1 1, h2 2, ... (declaration order, as ns-3 numbers nodes)
cat >"$WORK/flows.txt" <<'F'
2
2 1 3 100 30000 2.000000
3 1 3 100 5000 2.000050
F
cat >"$WORK/tiny.exp" <<F
name tiny
topology $(cd "$(dirname "$0")/../../netns" && pwd)/star.topo
param N=4
dilation auto
schemes none dcqcn
workload incast dst=h1 senders=3 size=20KB window=5us count=2 interval=300us
workload flows file=flows.txt start=100us
duration 20ms
seed 3
attempts 1
switch buffer=3MB
switch dcqcn kmin=400KB kmax=1600KB pmax=0.2
trace 0 1
F
# 6 incast flows (3 senders x 2 rounds) + 2 from the flow file
EXPECT=8
BYTES=$((6 * 20000 + 30000 + 5000))

out=$("$QUENCH" run "$WORK/tiny.exp" --name "$TOPO_NAME" --out "$WORK/a" --quiet) || fail "run: $out"
echo "$out" | grep -E "^(dilation|base_rtt|rtt_check|link_rate)"
echo "$out" | grep -E "^\| (none|dcqcn) "
R="$WORK/a"
for f in summary.md summary.csv bins.csv metadata.txt experiment.exp queue.png slowdown.png throughput.png; do
	[ -s "$R/$f" ] || fail "missing $f"
done
for p in queue slowdown throughput; do
	[ "$(head -c 8 "$R/$p.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "$p.png is not a PNG"
done
grep -q "^dilation [0-9]* (auto)" "$R/metadata.txt" || fail "metadata: no auto dilation: $(cat "$R/metadata.txt")"
for k in kernel commit seed flow_hash base_rtt_ns "derived dcqcn"; do
	grep -q "^$k" "$R/metadata.txt" || fail "metadata has no '$k'"
done
# the same flow list for every scheme (summary.json: one hash for the run; summary.csv per row)
J="$R/summary.json"
jq -e . "$J" >/dev/null || fail "summary.json is not JSON"
hcol=$(head -1 "$R/summary.csv" | tr ',' '\n' | grep -nx flow_hash | cut -d: -f1)
[ -n "$hcol" ] || fail "summary.csv has no flow_hash column"
hashes=$(cut -d, -f"$hcol" "$R/summary.csv" | tail -n +2 | sort -u | wc -l)
[ "$hashes" -eq 1 ] || fail "schemes ran different flow lists: $(cat "$R/summary.csv")"
printed=$(sed -n 's/.*flow-list hash \([0-9a-f]*\),.*/\1/p' <<<"$out")
[ "$(jq -r .flow_hash "$J")" = "$printed" ] || fail "printed hash $printed is not the one in summary.json"
# The engines' sockets are opened once (tp::PortPool): calibration's later steps and both schemes
# take every host port (this star's 4 hosts) from the engine before instead of opening it.
reused=$(jq .engine_ports_reused "$J")
[ "$reused" -ge 10 ] || fail "engine_ports_reused $reused: later engines opened their ports again (want >= 10)"
grep -q ",$printed," "$R/summary.csv" || fail "printed hash $printed is not the one in summary.csv"
for s in none dcqcn; do
	d="$R/$s"
	S=".schemes[] | select(.scheme == \"$s\")"
	n=$(($(wc -l <"$d/flows.csv") - 1))
	[ "$n" -eq "$EXPECT" ] || fail "$s: flows.csv has $n flows, generated $EXPECT"
	[ "$(jq "$S | .flows" "$J")" -eq "$EXPECT" ] || fail "$s: summary.json counts $(jq "$S | .flows" "$J") flows"
	done_n=$(jq "$S | .flows_done" "$J")
	[ "$done_n" -eq "$EXPECT" ] || fail "$s: $done_n of $EXPECT flows completed"
	[ "$(tail -n +2 "$d/flows.csv" | cut -d, -f11 | grep -c '^1$')" -eq "$done_n" ] ||
		fail "$s: flows.csv's done column disagrees with summary.json's $done_n"
	[ "$(wc -l <"$d/fct.txt")" -eq "$done_n" ] || fail "$s: fct.txt lines != completed flows"
	# fct.txt: "%08x %08x %u %u %lu %lu %lu %lu"; dport 200 for incast, 100 for background
	bad=$(grep -cvE '^[0-9a-f]{8} [0-9a-f]{8} [0-9]+ (100|200) [0-9]+ [0-9]+ [0-9]+ [0-9]+$' "$d/fct.txt" || true)
	[ "$bad" -eq 0 ] || fail "$s: $bad fct.txt lines off the simulator's format: $(head -3 "$d/fct.txt")"
	[ "$(grep -cE '^[0-9a-f]{8} [0-9a-f]{8} [0-9]+ 200 ' "$d/fct.txt")" -eq 6 ] || fail "$s: expected 6 incast lines (dport 200)"
	sent=$(jq "$S | .sent_bytes" "$J")
	delivered=$(jq "$S | .counters[\"qp.delivered_bytes\"]" "$J")
	[ "$sent" -eq "$BYTES" ] || fail "$s: summary.json's sent bytes $sent, expected $BYTES"
	[ "$delivered" -eq "$sent" ] || fail "$s: delivered $delivered bytes of $sent"
	grep -q "^qp.delivered_bytes $delivered\$" "$d/counters.txt" || fail "$s: counters.txt disagrees with summary.json"
	# content checked by the receivers
	[ "$(jq "$S | .content_errors" "$J")" -eq 0 ] || fail "$s: a flow delivered wrong content"
	# peak queue >= every sample, per port (summary.json's per-port max = the samples' maximum)
	for port in $(jq -r "$S | .queues[].port" "$J"); do
		m1=$(grep "^$port," "$d/queues.csv" | cut -d, -f3 | sort -n | tail -1)
		m2=$(jq "$S | .queues[] | select(.port == \"$port\") | .max" "$J")
		[ "${m1:-0}" -eq "$m2" ] || fail "$s: $port's peak $m2 differs from the samples' maximum ${m1:-0}"
	done
	peak=$(jq "$S | .queue_peak_bytes" "$J")
	maxs=$(tail -n +2 "$d/queues.csv" | cut -d, -f3 | sort -n | tail -1)
	[ "$peak" -ge "$maxs" ] || fail "$s: peak queue $peak below a sample $maxs"
	[ "$maxs" -gt 0 ] || fail "$s: the incast never queued (samples all 0)"
	grep -qE "^(VALID|INVALID)" "$d/validity.txt" || fail "$s: no verdict"
	# flows per size bin in flows.csv = the counts in summary.json
	a=$(tail -n +2 "$d/flows.csv" | cut -d, -f13 | grep -v -- '^-1$' | sort -n | uniq -c | sed 's/^ *\([0-9]*\) \(.*\)/\2 \1/')
	b=$(jq -r "$S | .bins | to_entries[] | \"\\(.key) \\(.value.flows)\"" "$J")
	[ "$a" = "$b" ] || fail "$s: flows.csv bins [$a] differ from summary.json [$b]"
done
grep -q "^## Slowdown by flow size" "$R/summary.md" || fail "summary.md has no size-bin table"
grep -q "CNPs" "$R/summary.md" || fail "summary.md has no CNP column"
# every counter of summary.json is a column of summary.csv (c.<name>) with the same value
for c in $(jq -r '.schemes[0].counters | keys[]' "$J"); do
	col=$(head -1 "$R/summary.csv" | tr ',' '\n' | grep -nx "c.$c" | cut -d: -f1)
	[ -n "$col" ] || fail "counter $c is not a summary.csv column"
	[ "$(sed -n 2p "$R/summary.csv" | cut -d, -f"$col")" = "$(jq ".schemes[0].counters[\"$c\"]" "$J")" ] ||
		fail "counter $c: summary.csv and summary.json differ"
done
# switch settings: `switch buffer=3MB` for every scheme, `switch dcqcn kmin=400KB kmax=1600KB
# pmax=0.2` (the ns-3 simulator's profile) for dcqcn only, over the derived profile: what the
# runner read back from the pinned maps, printed in summary.json, summary.md and metadata.txt
ds='.schemes[] | select(.scheme == "dcqcn") | .switch_in_force.tor'
ns='.schemes[] | select(.scheme == "none") | .switch_in_force.tor'
echo "in force: dcqcn $(jq -c "$ds | {buffer, kmin, kmax, pmax, pfc}" "$J"), none $(jq -c "$ns | {buffer, kmin, kmax, pmax, pfc}" "$J")"
[ "$(jq -r "$ds | \"\\(.buffer) \\(.kmin) \\(.kmax) \\(.pmax)\"" "$J")" = "3000000 400000 1600000 0.2" ] ||
	fail "dcqcn's per-scheme switch settings are not in force: $(jq -c "$ds" "$J")"
[ "$(jq -r "$ns | .buffer" "$J")" = 3000000 ] || fail "the global switch setting is not in force for none"
[ "$(jq -r "$ns | .kmin" "$J")" != 400000 ] || fail "dcqcn's kmin leaked into none's settings"
grep -q "in force at tor: .*kmin=400000 kmax=1600000 pmax=0.2" "$R/summary.md" || fail "summary.md does not print dcqcn's settings"
grep -q "^switch_in_force dcqcn tor buffer=3000000 .*kmin=400000" "$R/metadata.txt" || fail "metadata.txt does not print them"
# "ECN before PFC" (docs/switch.md): dcqcn runs with PFC on, and kmin 400 KB from 3 of the ToR's
# 4 ports reaches its XOFF level: a warning naming the switch and the values in summary.json and
# metadata.txt; none runs with PFC off: no warning
w=$(jq -c '.schemes[] | select(.scheme == "dcqcn") | .warnings' "$J")
echo "dcqcn's warnings: $w"
jq -e '.schemes[] | select(.scheme == "dcqcn") | .warnings | any(startswith("tor: ECN before PFC does not hold") and contains("kmin 400000 B"))' "$J" >/dev/null ||
	fail "dcqcn ran kmin 400 KB with PFC on and no 'ECN before PFC' warning: $w"
jq -e '.schemes[] | select(.scheme == "none") | .warnings == []' "$J" >/dev/null || fail "none (PFC off) has warnings"
grep -q "^warning dcqcn tor: ECN before PFC does not hold" "$R/metadata.txt" || fail "metadata.txt does not print the warning"
# rate traces of flows 0 and 1 (`trace 0 1`): each ends with every byte acked
for s in none dcqcn; do
	for f in 0 1; do
		last=$(grep "^$f," "$R/$s/rates.csv" | tail -1 | cut -d, -f5)
		[ "${last:-0}" -eq 20000 ] || fail "$s: flow $f's rate trace ends at ${last:-nothing} acked bytes, not 20000"
	done
	[ "$(jq "[.schemes[] | select(.scheme == \"$s\") | .rate_traces[].flow] | sort" -c "$J")" = "[0,1]" ] ||
		fail "$s: summary.json lists other rate traces"
done
echo "dcqcn flow 0's rate trace: $(grep -c '^0,' "$R/dcqcn/rates.csv") points, rates $(grep '^0,' "$R/dcqcn/rates.csv" | cut -d, -f3 | sort -un | head -3 | tr '\n' ' ')"

# compare: the run with itself gives ratios of 1
cmp=$("$QUENCH" compare "$R" "$R") || fail "compare: $cmp"
echo "$cmp" | head -4
grep -qE "^B / A +none +dcqcn$" <<<"$cmp" || fail "compare: not a column per scheme: $cmp"
grep -qE "^goodput_gbps +1.000 +1.000$" <<<"$cmp" || fail "compare: goodput ratios are not 1: $cmp"

# forced too-small D: reported INVALID
out=$("$QUENCH" run "$WORK/tiny.exp" --name "$TOPO_NAME" --out "$WORK/b" --quiet --dilation 1 --schemes none) ||
	fail "D=1 run: $out"
grep -q "^Validity: \*\*INVALID\*\*" "$WORK/b/summary.md" || fail "D=1 run not reported INVALID: $(head -8 "$WORK/b/summary.md")"
grep -E "^- none: INVALID" "$WORK/b/summary.md" | cut -c1-200

# adaptive D: started at D=1 (--adapt-from: as if calibration had picked it), every attempt
# that fails because the engine's CPU cannot keep the pace is retried at 1.5 x D; with a D
# given (--dilation 1 above) it is not. Expect: attempt 1 at D=1 failed, the row ran at D > 1.
out=$("$QUENCH" run "$WORK/tiny.exp" --name "$TOPO_NAME" --out "$WORK/d" --quiet --adapt-from 1 --attempts 4 \
	--schemes none) || fail "adaptive run: $out"
grep -E "attempt [0-9]+ at D=" "$WORK/d/summary.md" | cut -c1-160
grep -q "attempt 1 at D=1: " "$WORK/d/summary.md" || fail "no CPU-bound attempt at D=1 recorded: $(grep -A3 '^- none' "$WORK/d/summary.md")"
dfinal=$(jq '.schemes[0].dilation' "$WORK/d/summary.json")
echo "adaptive run: the row's D is $dfinal (attempt $(jq '.schemes[0].attempt' "$WORK/d/summary.json"), valid $(jq '.schemes[0].valid' "$WORK/d/summary.json"))"
jq -e '.schemes[0].dilation > 1' "$WORK/d/summary.json" >/dev/null || fail "the retries did not raise D (row D '$dfinal')"
! grep -q "attempt 2 at D=1:" "$WORK/d/summary.md" || fail "a CPU-bound attempt was retried at the same D"

# a composition with a loss mode (docs/cc.md "Schemes and baselines"): dcqcn:lossy runs with
# the switches' PFC off and DCQCN's RED profile; plain dcqcn (run a) with PFC on.
dgiven=$(jq .calibration.dilation "$J")
out=$("$QUENCH" run "$WORK/tiny.exp" --name "$TOPO_NAME" --out "$WORK/l" --quiet --dilation "$dgiven" --attempts 1 \
	--schemes dcqcn:lossy) || fail "lossy composition: $out"
lossy=$(find "$WORK/l" -name cc.txt | head -1)
[ -n "$lossy" ] || fail "no cc.txt for dcqcn:lossy under $WORK/l"
grep -q "^switch pfc=off$" "$lossy" || fail "dcqcn:lossy did not run with PFC off: $(cat "$lossy")"
grep -q "^switch kmin=" "$lossy" || fail "dcqcn:lossy lost DCQCN's RED profile: $(cat "$lossy")"
grep -q "dcqcn/line-rate/no-pause:lossy" "$lossy" || fail "cc.txt does not name the composition: $(cat "$lossy")"
grep -q "^switch pfc=on$" "$R/dcqcn/cc.txt" || fail "plain dcqcn did not run with PFC on: $(cat "$R/dcqcn/cc.txt")"
echo "dcqcn:lossy ran with $(grep -E '^switch (pfc|kmin)' "$lossy" | tr '\n' ' ')(dcqcn: $(grep '^switch pfc' "$R/dcqcn/cc.txt"))"

# gen replays the same ns-3 flow file (control/flows.h, the experiment's builder): every flow
# delivered, content verified by the receivers, at run a's calibrated D
topo=$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/star.topo")")
"$QUENCH" topo up "$topo" --param N=4 --dilation "$dgiven" >/dev/null
g=$("$QUENCH" gen "$TOPO_NAME" --flows "$WORK/flows.txt" --cc none) || fail "gen --flows: $g"
grep -E "^(gen|flows done)" <<<"$g"
grep -q "^gen $TOPO_NAME: 2 flows (flows)" <<<"$g" || fail "gen --flows did not build the file's 2 flows: $g"
grep -q "^flows done 2/2, content errors 0, corrupt messages 0" <<<"$g" || fail "gen --flows: not every flow delivered intact: $g"
"$QUENCH" topo down "$TOPO_NAME" >/dev/null

# an unknown scheme: rejected by name, nothing brought up
sed 's/^schemes .*/schemes none hpcc/' "$WORK/tiny.exp" >"$WORK/bad.exp"
if err=$("$QUENCH" run "$WORK/bad.exp" --name "$TOPO_NAME" --out "$WORK/c" 2>&1); then fail "an unknown scheme was accepted"; fi
grep -q "bad.exp:5: field 'schemes': scheme 'hpcc': no base algorithm 'hpcc'" <<<"$err" || fail "unclear error: $err"
! "$QUENCH" topo show | grep -q "$TOPO_NAME" || fail "a rejected experiment left a topology up"
pass "tiny experiment: $EXPECT flows per scheme, same hash, bytes and peaks consistent, D=1 INVALID, CPU-bound retries at a larger D (row at D=$dfinal), dcqcn:lossy with PFC off, gen --flows replays the flow file intact"
