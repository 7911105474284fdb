#!/usr/bin/env bash
# netns: RED/ECN at the bottleneck marks only ECT packets, and the marked fraction rises with
# the standing queue (small vs large sender buffers, same RED profile).
source "$(dirname "$0")/lib.sh"

topo=$(write_dumbbell 300Mbps)
"$QUENCH" topo up "$topo" >/dev/null
"$QUENCH" switch set "${TOPO_NAME}/s1" kmin=50KB kmax=5MB pmax=1 >/dev/null
H1=$(host_ip h1); H2=$(host_ip h2); H3=$(host_ip h3); H4=$(host_ip h4)
M1=$(gw_mac h1); M2=$(gw_mac h2)

run() { # run SNDBUF -> prints the s1-p3 ECN counters before and after: "ect ce ect ce"
	local sb=$1
	local c0 c1
	bg rx3 "$TRAFFIC" recv --netns "$(ns h3)" --dev h3-eth0 --seconds 3.5
	bg rx4 "$TRAFFIC" recv --netns "$(ns h4)" --dev h4-eth0 --seconds 3.5
	sleep 0.2
	c0=$(bpftool_free_counters)
	bg ect "$TRAFFIC" send --netns "$(ns h1)" --dev h1-eth0 --dst-mac "$M1" --src-ip "$H1" --dst-ip "$H3" \
		--seconds 3 --size 1500 --flows 8 --sndbuf "$sb" --tos $(((26 << 2) | 2))
	bg notect "$TRAFFIC" send --netns "$(ns h2)" --dev h2-eth0 --dst-mac "$M2" --src-ip "$H2" --dst-ip "$H4" \
		--seconds 3 --size 1500 --flows 8 --sndbuf "$sb" --tos $((26 << 2))
	wait "$PID_ect" "$PID_notect" "$PID_rx3" "$PID_rx4" || true
	c1=$(bpftool_free_counters)
	echo "$c0 $c1"
}
bpftool_free_counters() {
	# exact ecn_ect and ecn_marked of port 2 (s1-p3), summed over CPUs (read with bpftool, as a
	# user would, rather than through quench)
	bpftool -j map lookup pinned "/sys/fs/bpf/quench/${TOPO_NAME}/s1/qn_port_stats" key 2 0 0 0 |
		jq -r '[([.formatted.values[].value.ecn_ect] | add), ([.formatted.values[].value.ecn_marked] | add)] | join(" ")'
}
command -v bpftool >/dev/null || skip "missing bpftool"

read -r e0 m0 e1 m1 < <(run 200000)
cp "$WORK/rx3.out" "$WORK/rx3.small"; cp "$WORK/rx4.out" "$WORK/rx4.small"
read -r f0 n0 f1 n1 < <(run 8000000)
frac() { jq -n "if $1 > 0 then ($2 / $1 * 10000 | round / 10000) else 0 end"; }
small=$(frac $((e1 - e0)) $((m1 - m0)))
large=$(frac $((f1 - f0)) $((n1 - n0)))
echo "small buffers: $((m1 - m0)) CE of $((e1 - e0)) ECT ($small); large buffers: $((n1 - n0)) CE of $((f1 - f0)) ECT ($large)"
cat "$WORK/rx3.small" "$WORK/rx4.small" "$WORK/rx3.out" "$WORK/rx4.out" | grep ecn
"$QUENCH" switch stats "${TOPO_NAME}/s1" | sed -n '/^port queue/,/^  buffer/p'

[ $((e1 - e0)) -gt 1000 ] || fail "too few ECT packets counted ($((e1 - e0)))"
holds "$large > $small + 0.1" ||
	fail "marked fraction did not rise with the queue ($small -> $large)"
for f in rx4.small rx4.out; do
	ce=$(field "$WORK/$f" all_ce ecn); nt=$(field "$WORK/$f" all_notect ecn)
	[ "${nt:-0}" -gt 100 ] || fail "receiver of Not-ECT traffic saw too little ($nt)"
	[ "${ce:-1}" -eq 0 ] || fail "Not-ECT traffic arrived CE-marked ($ce)"
done
ce=$(field "$WORK/rx3.out" all_ce ecn)
[ "${ce:-0}" -gt 0 ] || fail "no CE arrived at the ECT receiver"
pass "ECT marked $small -> $large as the queue grew; Not-ECT never marked"
