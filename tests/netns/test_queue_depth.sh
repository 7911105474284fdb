#!/usr/bin/env bash
# netns: the BPF queue depth equals `tc -s qdisc` exactly (bytes and packets) on a static queue
# (a 2 kbit/s shaper: a 2 KB frame leaves every 8 s, long enough even under emulation); the
# queue the probes read (switch stats' queue_bytes) stays the real one when the accounts drift;
# forced to the virtual queue, the depth agrees within one packet.
source "$(dirname "$0")/lib.sh"
command -v bpftool >/dev/null || skip "missing bpftool"

topo=$(write_topo "defaults rate=10Gbps mtu=2048 delay=1us
switch sw
host h1
host h2
host h3
link h1 sw
link h2 sw rate=2kbps
link h3 sw rate=2kbps")
"$QUENCH" topo up "$topo" >/dev/null
H1=$(host_ip h1); M1=$(gw_mac h1)
PIN=/sys/fs/bpf/quench/${TOPO_NAME}/sw

# tc_backlog DEV: "bytes pkts" of the port's root qdisc
tc_backlog() { tc -n "$(ns sw)" -s qdisc show dev "$1" | awk '/^qdisc htb 1:/ {f=1} f && /backlog/ {sub(/b$/, "", $2); sub(/p$/, "", $3); print $2, $3; exit}'; }
# bpf_depth PORT_NO: "last_bytes last_pkts" of qn_qstate[PORT_NO]
bpf_depth() {
	bpftool -j map lookup pinned "$PIN/qn_qstate" key "$1" 0 0 0 |
		sed -n 's/.*"last_bytes":\([0-9]*\).*"last_pkts":\([0-9]*\).*/\1 \2/p'
}
send() { # send DST_HOST COUNT
	"$TRAFFIC" send --netns "$(ns h1)" --dev h1-eth0 --dst-mac "$M1" --src-ip "$H1" --dst-ip "$(host_ip "$1")" \
		--count "$2" --size 2000 --rate 1e9 >/dev/null
}

# --- real qdisc read (port sw-p2 = port 1)
send h2 10
sleep 0.3
ok=""
for try in 1 2 3; do
	before=$(tc_backlog sw-p2)
	send h2 1
	after=$(tc_backlog sw-p2)
	got=$(bpf_depth 1)
	echo "try $try: tc before probe [$before], after [$after]; BPF depth with the probe [$got]"
	# valid only if no packet left between the two tc reads
	if [ "$(echo "$after" | awk '{print $2}')" -eq $(( $(echo "$before" | awk '{print $2}') + 1 )) ]; then
		# the depth the ingress stage read ahead of the probe packet, plus that packet once
		# admitted (qn_charge): the queue after it, as tc shows it
		[ "$got" = "$after" ] || fail "BPF depth [$got] != tc backlog [$after] (before the probe packet: [$before])"
		ok=1
		break
	fi
done
[ -n "$ok" ] || fail "a departure raced every probe (3 tries)"
[ "$(echo "$before" | awk '{print $2}')" -ge 5 ] || fail "no static queue formed: [$before]"

# --- the probes read the real queue, not the accounts: 1 MB of phantom charge written into
#     sw-p2's account (what departures the dequeue hook never saw leave there until the queue
#     empties, acct.h) shows in charged_bytes, while queue_bytes still equals tc's backlog. With
#     the accounts as the probe (before 2026-11-28) queue_bytes read 1 MB and this fails.
val=$(bpftool -j map lookup pinned "$PIN/qn_qstate" key 1 0 0 0 |
	jq -r '.value | .[8:16] = ["0x40", "0x42", "0x0f", "0x00", "0x00", "0x00", "0x00", "0x00"] | join(" ")')
# shellcheck disable=SC2086
bpftool map update pinned "$PIN/qn_qstate" key 1 0 0 0 value $val || fail "could not write sw-p2's account"
st=$("$QUENCH" switch stats "$TOPO_NAME/sw" --format json | jq -c '.switches[0].ports[] | select(.ifname == "sw-p2") | .counters')
read -r tcb _ <<<"$(tc_backlog sw-p2)"
echo "phantom charge: charged_bytes $(jq .charged_bytes <<<"$st"), queue_bytes $(jq .queue_bytes <<<"$st"), tc backlog $tcb"
holds "$(jq .charged_bytes <<<"$st") == 1000000" || fail "the phantom charge is not in charged_bytes: $st"
holds "$(jq .queue_bytes <<<"$st") == $tcb" || fail "queue_bytes is not the real queue ($tcb B) under drifted accounts: $st"

# --- the virtual queue, forced (port sw-p3 = port 2)
"$QUENCH" switch set "${TOPO_NAME}/sw" queue=virtual >/dev/null
send h3 10
sleep 0.3
send h3 1
after=$(tc_backlog sw-p3)
got=$(bpf_depth 2)
echo "virtual: tc [$after], BPF virtual queue [$got]"
diff=$(( ${got%% *} - ${after%% *} ))
[ ${diff#-} -le 2014 ] || fail "virtual queue off by $diff bytes (more than one 2014-byte frame)"
pass "real depth = tc backlog, also under 1 MB of drifted accounts; virtual within one packet ($diff B)"
