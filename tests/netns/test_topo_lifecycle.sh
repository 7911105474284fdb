#!/usr/bin/env bash
# netns: leaf-spine comes up in under 10 s; `up` is idempotent; `up` at another D changes it in
# place (namespaces kept, shapers, programs and switchd follow); hosts reach each other across
# spines (through the engine's cables); ECMP uses both spines; `down` leaves no namespace, veth, pin or state file, also
# after an `up` that was killed half-way.
source "$(dirname "$0")/lib.sh"

topo=$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/leafspine.topo")")

leftovers() {
	local n
	n=$(ip netns list | awk '{print $1}' | grep -c "^qn-${TOPO_NAME}-" || true)
	[ "$n" -eq 0 ] || echo "namespaces: $n"
	[ ! -e "/sys/fs/bpf/quench/${TOPO_NAME}" ] || echo "pins: /sys/fs/bpf/quench/${TOPO_NAME}"
	[ ! -e "/run/quench/${TOPO_NAME}.topo" ] || echo "state: /run/quench/${TOPO_NAME}.topo"
	# veths live inside the namespaces; none may be left in the root namespace
	local v
	v=$(ip -o link show | grep -c -E "(h[0-9]+-eth0|leaf[0-9]-p|spine[0-9]-p)" || true)
	[ "$v" -eq 0 ] || echo "veths in the root namespace: $v"
}

start=$(date +%s.%N)
"$QUENCH" topo up "$topo" >"$WORK/up.out"
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')
cat "$WORK/up.out"
if [ -n "${QN_IN_VM:-}" ]; then
	echo "under emulation: bring-up took ${secs} s (not asserted; TCG is slow)"
else
	awk -v t="$secs" 'BEGIN { exit t < 10 ? 0 : 1 }' || fail "leaf-spine took ${secs} s to come up (limit 10 s)"
fi

# RPS: the kernel's default (none) unless `topo up --rps` asks for every online CPU on every switch
# port (docs/PERFORMANCE.md "Cut 2, tried"). --rps is another topology state: a full re-up.
rps_of() { ip netns exec "$(ns "$1")" cat "/sys/class/net/$2/queues/rx-0/rps_cpus" | sed 's/^[0,]*//'; }
online=$(cat /sys/devices/system/cpu/online)
want=$(awk -F, '{ m = 0; for (i = 1; i <= NF; i++) { n = split($i, r, "-"); a = r[1]; b = n > 1 ? r[2] : r[1]; for (c = a; c <= b; c++) m += 2 ^ c }; printf "%x", m }' <<<"$online")
[ -z "$(rps_of leaf1 leaf1-p1)" ] || fail "leaf1/leaf1-p1 has rps_cpus $(rps_of leaf1 leaf1-p1) without --rps"
"$QUENCH" topo up "$topo" --rps >/dev/null || fail "up --rps failed"
for p in "leaf1 leaf1-p1" "spine2 spine2-p1"; do
	read -r sw port <<<"$p"
	got=$(rps_of "$sw" "$port" | tr -d ,)
	[ "$got" = "$want" ] || fail "$sw/$port: rps_cpus '$got' after up --rps, want every online CPU ($online: $want)"
done
"$QUENCH" topo up "$topo" >/dev/null || fail "up without --rps failed"
[ -z "$(rps_of leaf1 leaf1-p1)" ] || fail "up without --rps kept rps_cpus $(rps_of leaf1 leaf1-p1)"

# (captured first: `| grep -q` would close the pipe early and, with pipefail, fail on SIGPIPE)
second=$("$QUENCH" topo up "$topo" 2>&1) || fail "second up failed: $second"
grep -q "already up" <<<"$second" || fail "second up was not a no-op: $second"

# D changes in place: `up` of the same topology at another D re-shapes the ports, reloads the
# switch programs and restarts switchd, and keeps the namespaces (the same inode) and veths.
# Fails when the change falls back to down and up (a new namespace inode) or leaves a rate.
# (iproute2 6.1 prints no JSON for HTB classes: the rate is matched in its text, e.g. "10Gbit")
htb_rate() {
	local line
	line=$(ip netns exec "$(ns leaf1)" tc class show dev leaf1-p1 classid 1:1)
	[[ $line =~ \ rate\ ([0-9.]+[KMG]?bit) ]] && echo "${BASH_REMATCH[1]}"
}
nsid() { stat -L -c %i "/run/netns/$(ns "$1")"; }
read -r _ d0 </run/quench/"$TOPO_NAME".meta
r0=$(htb_rate) i0=$(nsid h1) s0=$(cat /run/quench/"$TOPO_NAME".switchd.pid)
d1=$(jq -n "$d0 * 2")
third=$("$QUENCH" topo up "$topo" --dilation "$d1" 2>&1) || fail "up at D=$d1 failed: $third"
! grep -q "in place failed" <<<"$third" || fail "D did not change in place: $third"
read -r _ dn </run/quench/"$TOPO_NAME".meta
r1=$(htb_rate) i1=$(nsid h1) s1=$(cat /run/quench/"$TOPO_NAME".switchd.pid)
echo "D $d0 -> $dn in place: leaf1-p1 shaped at $r0 -> $r1, h1's namespace inode $i0 -> $i1, switchd $s0 -> $s1"
holds "$dn == $d1" || fail "the meta file says D=$dn after an up at D=$d1"
# the leaf-spine's links are 10 Gbit/s: 10Gbit at D=1, 5Gbit at D=2
[ "$r0" = 10Gbit ] && [ "$r1" = 5Gbit ] || fail "leaf1-p1's shaper did not follow D $d0 -> $dn: $r0 -> $r1 (10Gbit -> 5Gbit)"
[ "$i1" = "$i0" ] || fail "h1's namespace was made again (inode $i0 -> $i1): not in place"
[ "$s1" != "$s0" ] && kill -0 "$s1" || fail "switchd was not restarted for the new D ($s0 -> $s1)"
[ -e "/sys/fs/bpf/quench/$TOPO_NAME/leaf1/qn_fib" ] || fail "leaf1's pins are missing after the change"

# Leaf-spine links have propagation delay: they are cables, carried by the engine.
engine_bg engine
ip netns exec "$(ns h1)" ping -c 2 -i 0.2 -W 1 "$(host_ip h16)" >/dev/null || fail "ping h1 -> h16 failed"
ip netns exec "$(ns h6)" ping -c 2 -i 0.2 -W 1 "$(host_ip h11)" >/dev/null || fail "ping h6 -> h11 failed"

# ECMP: 64 flows from h1 to h16 must use both spines.
"$TRAFFIC" send --netns "$(ns h1)" --dev h1-eth0 --dst-mac "$(gw_mac h1)" --src-ip "$(host_ip h1)" \
	--dst-ip "$(host_ip h16)" --count 640 --size 200 --flows 64 --rate 50e6 >/dev/null
rx_p1() { "$QUENCH" switch stats "${TOPO_NAME}/$1" --format json | jq '[.switches[0].ports[] | select(.ifname | endswith("-p1")) | .counters.rx_pkts][0]'; }
s1=$(rx_p1 spine1)
s2=$(rx_p1 spine2)
echo "frames from leaf1 at spine1: $s1, at spine2: $s2"
[ "${s1:-0}" != "0" ] && [ "${s2:-0}" != "0" ] || fail "ECMP used one spine only ($s1 / $s2)"

kill "$PID_engine" 2>/dev/null || true
wait "$PID_engine" 2>/dev/null || true
"$QUENCH" topo down "$topo"
left=$(leftovers)
[ -z "$left" ] || fail "after down: $left"

# An up killed half-way, then down.
"$QUENCH" topo up "$topo" >/dev/null 2>&1 &
upid=$!
sleep 0.15
kill -9 $upid 2>/dev/null || true
wait $upid 2>/dev/null || true
partial=$(ip netns list | grep -c "^qn-${TOPO_NAME}-" || true)
echo "namespaces left by the killed up: $partial"
"$QUENCH" topo down "$topo"
left=$(leftovers)
[ -z "$left" ] || fail "after a killed up and down: $left"

pass "leaf-spine up in ${secs} s, idempotent, ECMP over both spines, down leaves nothing"
