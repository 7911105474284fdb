#!/usr/bin/env bash
# netns: a tiny experiment end to end (`quench run`, docs/experiments.md). Calibration picks D;
# two schemes run the identical flow list (same hash); the outputs agree with each other: flows
# written = flows generated, bytes delivered = bytes sent, fct.txt in the simulator's format,
# the peak queue >= every sample; an ns-3 flow file is imported; plots are PNGs; `quench
# compare` prints ratios; `gen --flows` replays the same flow file. A run forced to D=1 is reported INVALID in summary.md. A scheme that
# does not exist is rejected by name before anything is brought up.
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
# the same flow list for every scheme
hashes=$(awk -F, 'NR > 1 {print $NF}' "$R/summary.csv" | sort -u | wc -l)
[ "$hashes" -eq 1 ] || fail "schemes ran different flow lists: $(cat "$R/summary.csv")"
printed=$(sed -n 's/.*flow-list hash \([0-9a-f]*\),.*/\1/p' <<<"$out")
grep -q ",$printed\$" "$R/summary.csv" || fail "printed hash $printed is not the one in summary.csv"
for s in none dcqcn; do
	d="$R/$s"
	n=$(($(wc -l <"$d/flows.csv") - 1))
	[ "$n" -eq "$EXPECT" ] || fail "$s: flows.csv has $n flows, generated $EXPECT"
	done_n=$(awk -F, 'NR > 1 && $11 == 1' "$d/flows.csv" | wc -l)
	[ "$done_n" -eq "$EXPECT" ] || fail "$s: $done_n of $EXPECT flows completed"
	[ "$(wc -l <"$d/fct.txt")" -eq "$done_n" ] || fail "$s: fct.txt lines != completed flows"
	# fct.txt: "%08x %08x %u %u %lu %lu %lu %lu"; dport 200 for incast, 100 for background
	bad=$(grep -cvE '^[0-9a-f]{8} [0-9a-f]{8} [0-9]+ (100|200) [0-9]+ [0-9]+ [0-9]+ [0-9]+$' "$d/fct.txt" || true)
	[ "$bad" -eq 0 ] || fail "$s: $bad fct.txt lines off the simulator's format: $(head -3 "$d/fct.txt")"
	[ "$(awk '$4 == 200' "$d/fct.txt" | wc -l)" -eq 6 ] || fail "$s: expected 6 incast lines (dport 200)"
	sent=$(awk -F, 'NR > 1 {s += $5} END {print s}' "$d/flows.csv")
	delivered=$(awk '$1 == "delivered_bytes" {print $2}' "$d/counters.txt")
	[ "$sent" -eq "$BYTES" ] || fail "$s: flows.csv sizes sum to $sent, expected $BYTES"
	[ "$delivered" -eq "$sent" ] || fail "$s: delivered $delivered bytes of $sent"
	# content checked by the receivers
	[ "$(awk -F, 'NR > 1 && $12 != 1' "$d/flows.csv" | wc -l)" -eq 0 ] || fail "$s: a flow delivered wrong content"
	# peak queue >= every sample, per port and overall
	awk -F, 'NR > 1 {if (!($1 in m) || $3 > m[$1]) m[$1] = $3} END {for (p in m) print p, m[p]}' "$d/queues.csv" | sort >"$WORK/m1"
	awk '$1 == "queue" {print $2, $7}' "$d/counters.txt" | sort >"$WORK/m2"
	diff "$WORK/m1" "$WORK/m2" >/dev/null || fail "$s: per-port peaks differ from the samples' maxima"
	peak=$(awk -F, -v s="$s" '$1 == s {print $11}' "$R/summary.csv")
	maxs=$(awk -F, 'NR > 1 && $3 > m {m = $3} END {print m + 0}' "$d/queues.csv")
	[ "$peak" -ge "$maxs" ] || fail "$s: peak queue $peak below a sample $maxs"
	[ "$maxs" -gt 0 ] || fail "$s: the incast never queued (samples all 0)"
	grep -qE "^(VALID|INVALID)" "$d/validity.txt" || fail "$s: no verdict"
	# flows per size bin in flows.csv = the counts in bins.csv
	a=$(awk -F, 'NR > 1 && $13 >= 0 {n[$13]++} END {for (b in n) print b, n[b]}' "$d/flows.csv" | sort)
	b=$(awk -F, -v s="$s" '$1 == s {print $2, $5}' "$R/bins.csv" | sort)
	[ "$a" = "$b" ] || fail "$s: flows.csv bins [$a] differ from bins.csv [$b]"
done
grep -q "^## Slowdown by flow size" "$R/summary.md" || fail "summary.md has no size-bin table"
grep -q "CNPs" "$R/summary.md" || fail "summary.md has no CNP column"
[ "$(awk -F, -v s=dcqcn '$1 == s {print $13}' "$R/summary.csv")" -ge 0 ]

# compare: the run with itself gives ratios of 1
cmp=$("$QUENCH" compare "$R" "$R") || fail "compare: $cmp"
echo "$cmp" | head -3
awk '$1 == "dcqcn" {print $4}' <<<"$cmp" | grep -qx "1.000" || fail "compare: dcqcn goodput ratio is not 1: $cmp"

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
dfinal=$(awk -F'|' '$2 ~ /^ none / {gsub(/ /, "", $4); print $4; exit}' "$WORK/d/summary.md")
echo "adaptive run: the row's D is $dfinal ($(awk -F'|' '$2 ~ /^ none / {print $3}' "$WORK/d/summary.md"))"
awk -v d="$dfinal" 'BEGIN {exit !(d > 1)}' || fail "the retries did not raise D (row D '$dfinal')"
! grep -q "attempt 2 at D=1:" "$WORK/d/summary.md" || fail "a CPU-bound attempt was retried at the same D"

# a composition with a loss mode (docs/cc.md "Schemes and baselines"): dcqcn:lossy runs with
# the switches' PFC off and DCQCN's RED profile; plain dcqcn (run a) with PFC on.
dgiven=$(sed -n 's/^dilation \([0-9.]*\) .*/\1/p' "$R/metadata.txt")
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
