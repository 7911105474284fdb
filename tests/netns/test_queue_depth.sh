#!/usr/bin/env bash
# netns: the BPF queue depth equals `tc -s qdisc` exactly (bytes and packets) on a static queue
# (a 2 kbit/s shaper: a 2 KB frame leaves every 8 s, long enough even under emulation); forced to the virtual queue, the
# depth agrees within one packet.
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
	echo "try $try: tc before probe [$before], after [$after]; BPF read at the probe [$got]"
	# valid only if no packet left between the two tc reads
	if [ "$(echo "$after" | awk '{print $2}')" -eq $(( $(echo "$before" | awk '{print $2}') + 1 )) ]; then
		[ "$got" = "$before" ] || fail "BPF depth [$got] != tc backlog [$before]"
		ok=1
		break
	fi
done
[ -n "$ok" ] || fail "a departure raced every probe (3 tries)"
[ "$(echo "$before" | awk '{print $2}')" -ge 5 ] || fail "no static queue formed: [$before]"

# --- the virtual queue, forced (port sw-p3 = port 2)
"$QUENCH" switch set "${TOPO_NAME}/sw" queue=virtual >/dev/null
send h3 10
sleep 0.3
before=$(tc_backlog sw-p3)
send h3 1
got=$(bpf_depth 2)
echo "virtual: tc [$before], BPF virtual queue [$got]"
diff=$(( $(echo "$got" | awk '{print $1}') - $(echo "$before" | awk '{print $1}') ))
[ ${diff#-} -le 2014 ] || fail "virtual queue off by $diff bytes (more than one 2014-byte frame)"
pass "real depth = tc backlog [$(echo "$before")]; virtual within one packet ($diff B)"
