#!/usr/bin/env bash
# Soft-RoCE smoke test (inside a VM kernel): two rxe devices over a veth pair, then
# ibv_rc_pingpong and ib_write_bw must complete, and the veth counters must show the traffic
# really crossed the veth. Layout from QN_RXE_LAYOUT: "netns" puts each veth end and its rxe
# device in its own namespace; "initns" keeps both in the initial namespace (Debian 6.1's rxe
# only works there: accept_local=1, rp_filter=0). Behaviour only: no timing assertions.
set -euo pipefail
LAYOUT=${QN_RXE_LAYOUT:-netns}
MODPROBE=${QN_VM_MODPROBE:-modprobe}
source "$(dirname "$0")/rxe_lib.sh"
TAG="qr$$"
A="${TAG}a"; B="${TAG}b"; NSA="${TAG}-a"; NSB="${TAG}-b"
PIDS=()
skip() { echo "SKIP test_rxe_smoke: $*"; exit 77; }
fail() { echo "FAIL test_rxe_smoke: $*" >&2; exit 1; }
cleanup() {
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ "$LAYOUT" = netns ]; then
		ip netns exec "$NSA" rdma link delete "${TAG}x0" 2>/dev/null || true
		ip netns exec "$NSB" rdma link delete "${TAG}x1" 2>/dev/null || true
		ip netns del "$NSA" 2>/dev/null || true
		ip netns del "$NSB" 2>/dev/null || true
	else
		rdma link delete "${TAG}x0" 2>/dev/null || true
		rdma link delete "${TAG}x1" 2>/dev/null || true
		ip link del "$A" 2>/dev/null || true
	fi
}
trap cleanup EXIT

[ "$(id -u)" -eq 0 ] || skip "needs root"
for t in rdma ibv_rc_pingpong ib_write_bw; do command -v $t >/dev/null || skip "missing $t"; done
$MODPROBE rdma_rxe 2>/dev/null || skip "kernel has no rdma_rxe module"
# Newer kernels no longer pull ib_uverbs in with rdma_rxe (and a VM has no udev).
$MODPROBE ib_uverbs 2>/dev/null || true

in_a() { if [ "$LAYOUT" = netns ]; then ip netns exec "$NSA" "$@"; else "$@"; fi; }
in_b() { if [ "$LAYOUT" = netns ]; then ip netns exec "$NSB" "$@"; else "$@"; fi; }

if [ "$LAYOUT" = netns ]; then
	ip netns add "$NSA"
	ip netns add "$NSB"
	ip link add "$A" netns "$NSA" type veth peer name "$B" netns "$NSB"
else
	ip link add "$A" type veth peer name "$B"
	sysctl -qw net.ipv4.conf.all.accept_local=1 net.ipv4.conf.all.rp_filter=0
	for d in "$A" "$B"; do sysctl -qw "net.ipv4.conf.$d.accept_local=1" "net.ipv4.conf.$d.rp_filter=0"; done
fi
in_a ip link set lo up
in_b ip link set lo up
in_a ip link set "$A" mtu 4200 up
in_b ip link set "$B" mtu 4200 up
in_a ip addr add 10.201.0.1/24 dev "$A"
in_b ip addr add 10.201.0.2/24 dev "$B"
in_a rdma link add "${TAG}x0" type rxe netdev "$A"
in_b rdma link add "${TAG}x1" type rxe netdev "$B"

ga=""; gb=""
for _ in $(seq 1 50); do # GIDs appear asynchronously; bounded wait (5 s)
	ga=$(gid_index "${TAG}x0" 10.201.0.1) # rdma devices are visible from every namespace (shared mode)
	gb=$(gid_index "${TAG}x1" 10.201.0.2)
	[ -n "$ga" ] && [ -n "$gb" ] && break
	sleep 0.1
done
[ -n "$ga" ] && [ -n "$gb" ] || fail "no RoCE v2 IPv4 GID on ${TAG}x0/${TAG}x1"
echo "layout $LAYOUT: ${TAG}x0 gid $ga on $A, ${TAG}x1 gid $gb on $B"

tx_before=$(in_a cat "/sys/class/net/$A/statistics/tx_packets")
server_ip=10.201.0.1
[ "$LAYOUT" = netns ] || server_ip=127.0.0.1 # the TCP exchange; RDMA traffic still uses the veth

in_a timeout 120 ibv_rc_pingpong -d "${TAG}x0" -g "$ga" -n 200 >"/tmp/$TAG.pp-server" 2>&1 &
PIDS+=($!)
sleep 1.5 # clients do not retry their TCP connect
in_b timeout 120 ibv_rc_pingpong -d "${TAG}x1" -g "$gb" -n 200 "$server_ip" >"/tmp/$TAG.pp-client" 2>&1 ||
	fail "ibv_rc_pingpong client: $(cat "/tmp/$TAG.pp-client")"
wait "${PIDS[0]}" || fail "ibv_rc_pingpong server: $(cat "/tmp/$TAG.pp-server")"
grep -h "iters in" "/tmp/$TAG.pp-client"

in_a timeout 180 ib_write_bw -F -d "${TAG}x0" -x "$ga" -n 200 -s 65536 >"/tmp/$TAG.bw-server" 2>&1 &
PIDS+=($!)
sleep 1.5
in_b timeout 180 ib_write_bw -F -d "${TAG}x1" -x "$gb" -n 200 -s 65536 "$server_ip" >"/tmp/$TAG.bw-client" 2>&1 ||
	fail "ib_write_bw client: $(tail -5 "/tmp/$TAG.bw-client")"
wait "${PIDS[1]}" || fail "ib_write_bw server: $(tail -5 "/tmp/$TAG.bw-server")"
grep -A1 -h "#bytes" "/tmp/$TAG.bw-client" | tail -1

tx_after=$(in_a cat "/sys/class/net/$A/statistics/tx_packets")
[ $((tx_after - tx_before)) -gt 200 ] || fail "only $((tx_after - tx_before)) packets left $A: rxe did not use the veth"
echo "PASS test_rxe_smoke: pingpong and ib_write_bw over $A/$B ($((tx_after - tx_before)) packets on the veth)"
