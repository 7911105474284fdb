#!/usr/bin/env bash
# netns: a k=4 fat-tree written by `quench topo fattree` (docs/topology-format.md "Fat-trees")
# with 1 us cables between switches: 16 hosts, 20 switches, 32 cables, so the engine polls 80
# sockets (16 hosts + 2 x 32 cable ends), more than the 64 entries its io_uring had when such a
# fabric crashed `quench run` (issue 45). Checks:
#  - it comes up, and the engine serves it: 32 flows of 64 KB, each host to the host in the
#    same position one and two pods on (every flow crosses the core), all delivered and
#    content-checked (gen --format json);
#  - ECMP across pods: every core switch carried frames of those flows (each pair of pods has
#    four equal-cost paths, one per core), and every aggregation switch;
#  - one departure hook for the whole topology (the dispatcher, docs/switch.md "Maps"), not one
#    per switch: the machine's qdisc_dequeue links grow by exactly 1 for 20 switches;
#  - IPv6 is off in the cable namespace (no router solicitations into the switch ports);
#  - `topo down` leaves no namespace, pin or state of it.
# Correctness only, at a fixed D: no timing and no verdict is asserted (issue 45's runs are in
# docs/PERFORMANCE.md).
source "$(dirname "$0")/lib.sh"

"$QUENCH" topo fattree --k 4 --name "$TOPO_NAME" --rate 10Gbps -o "$WORK/ft.topo"
dq_links() { bpftool link show -j | jq '[.[] | select(.tp_name? == "qdisc_dequeue")] | length'; }
links0=$(dq_links)
up=$("$QUENCH" topo up "$WORK/ft.topo" --dilation 200 --format json) || fail "topo up of the k=4 fat-tree failed: $up"
links1=$(dq_links)
[ $((links1 - links0)) -eq 1 ] || fail "20 switches added $((links1 - links0)) qdisc_dequeue links (want 1: the topology's dispatcher)"
# IPv6 off in the cable namespace as in every other (on, its cable ends sent router solicitations
# to the switch ports, dropped there as not_ipv4: docs/PERFORMANCE.md "Cut 3").
for k in all default; do
	v=$(ip netns exec "qn-$TOPO_NAME-cable-ns" sysctl -n "net.ipv6.conf.$k.disable_ipv6")
	[ "$v" = 1 ] || fail "the cable namespace has IPv6 on (net.ipv6.conf.$k.disable_ipv6 = $v)"
done
# `topo up` states what the topology took: switchd's resident memory and descriptors (one
# netlink socket, ring buffer and map set per switch: at least one per switch) and the kernel's.
echo "topo up: $(jq -c '{seconds, kernel_mib, switchd_rss_mib, switchd_fds}' <<<"$up")"
holds "$(jq '.switchd_rss_mib > 0 and .switchd_fds >= .switches and .kernel_mib != null' <<<"$up")" ||
	fail "topo up did not state switchd's memory and descriptors: $up"
# 32 cross-pod flows (ns-3 flow file: node id n-1 is h<n>), 64 KB each, all at t=0
{
	echo 32
	for n in $(seq 0 15); do
		for hop in 4 8; do echo "$n $(((n + hop) % 16)) 3 100 65536 0"; done
	done
} >"$WORK/flows.txt"
out=$("$QUENCH" gen "$TOPO_NAME" --format json --flows "$WORK/flows.txt" --cc none --timeout 200ms 2>"$WORK/gen.txt") ||
	fail "gen over the fat-tree: $(tail -5 "$WORK/gen.txt")"
echo "$out" | jq -c '{flows, flows_done, content_errors, valid, dilation}'
holds "$(jq '.flows == 32 and .flows_done == 32 and .content_errors == 0' <<<"$out")" ||
	fail "not every cross-pod flow was delivered intact: $(jq -c '{flows, flows_done, content_errors}' <<<"$out")"
# Frames each switch forwarded (the sum of its ports' tx_pkts): every core and aggregation switch
# carried some.
for sw in c1 c2 c3 c4 a1x1 a1x2 a2x1 a2x2 a3x1 a3x2 a4x1 a4x2; do
	"$QUENCH" switch stats "$TOPO_NAME/$sw" --format json
done | jq -s '[.[].switches[] | {switch, tx: ([.ports[].counters.tx_pkts] | add)}]' >"$WORK/spread.json"
jq -c '.[]' "$WORK/spread.json" | tr '\n' ' '
echo
holds "$(jq 'all(.[]; .tx > 0)' "$WORK/spread.json")" ||
	fail "ECMP left a core or aggregation switch unused: $(jq -c '[.[] | select(.tx == 0) | .switch]' "$WORK/spread.json")"
"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null
left=$( (ip netns list | awk '{print $1}' | grep -c "^qn-$TOPO_NAME-") || true)
[ "$left" -eq 0 ] || fail "topo down left $left namespaces"
[ ! -e "/sys/fs/bpf/quench/$TOPO_NAME" ] || fail "topo down left pins under /sys/fs/bpf/quench/$TOPO_NAME"
[ ! -e "/run/quench/$TOPO_NAME.topo" ] || fail "topo down left the state file /run/quench/$TOPO_NAME.topo"
pass "k=4 fat-tree with 32 cables (80 engine sockets) up; 32 cross-pod flows delivered intact; every core and aggregation switch carried frames; down leaves nothing"
