#!/usr/bin/env bash
# netns: control packets (CNPs) cross a full data queue at the bottleneck with a delay far
# below the data queue's. h1 floods h3 through a 300 Mbit/s bottleneck (the 2-core machine offers it 3-4x, even with probers running); h2 sends stamped CNPs
# and stamped data probes to h4 through the same bottleneck port; h4 measures one-way delays.
source "$(dirname "$0")/lib.sh"

topo=$(write_dumbbell 300Mbps)
"$QUENCH" topo up "$topo" >/dev/null
H1=$(host_ip h1); H2=$(host_ip h2); H3=$(host_ip h3); H4=$(host_ip h4)
M1=$(gw_mac h1); M2=$(gw_mac h2)

# attempt N: the flood, the probes and the receiver once; sets data_p50 ctrl_p50 ctrl_p99 ctrl_n data_n
attempt() {
	local n=$1
	bg "flood$n" "$TRAFFIC" send --netns "$(ns h1)" --dev h1-eth0 --dst-mac "$M1" --src-ip "$H1" --dst-ip "$H3" \
		--seconds 7 --size 2000 --flows 8
	sleep 1.5 # let the data queue build
	bg "rx$n" "$TRAFFIC" recv --netns "$(ns h4)" --dev h4-eth0 --seconds 4
	sleep 0.2
	bg "cnp$n" "$TRAFFIC" send --netns "$(ns h2)" --dev h2-eth0 --dst-mac "$M2" --src-ip "$H2" --dst-ip "$H4" \
		--seconds 3 --size 100 --rate 1e6 --opcode 0x81 --tos $((48 << 2)) --stamp
	bg "dprobe$n" "$TRAFFIC" send --netns "$(ns h2)" --dev h2-eth0 --dst-mac "$M2" --src-ip "$H2" --dst-ip "$H4" \
		--seconds 3 --size 100 --rate 1e6 --stamp --seq-base 1000000000
	local p
	for p in cnp dprobe rx; do
		eval "wait \"\$PID_$p$n\"" || fail "$p$n: $(cat "$WORK/$p$n.out")"
	done
	eval "wait \"\$PID_flood$n\"" || true # the flood ends by itself (7 s)
	cat "$WORK/rx$n.out"
	data_p50=$(field "$WORK/rx$n.out" delay_us_p50 'class=data')
	ctrl_p50=$(field "$WORK/rx$n.out" delay_us_p50 'class=control')
	ctrl_p99=$(field "$WORK/rx$n.out" delay_us_p99 'class=control')
	ctrl_n=$(field "$WORK/rx$n.out" n 'class=control')
	data_n=$(field "$WORK/rx$n.out" n 'class=data')
	[ "${ctrl_n:-0}" -gt 100 ] || fail "too few CNPs arrived ($ctrl_n)"
	[ "${data_n:-0}" -gt 100 ] || fail "too few data probes arrived ($data_n)"
}
# Up to three attempts. The delays are one-way through a machine whose two CPUs the flood
# saturates: a stop of the CPU that runs the switch path or the receiver delays control packets
# as much as data (CI 2026-11-28: control p50 236.6 us, p99 1.9 ms, against data p50 1.7 ms).
# An attempt whose data queue held less than 10 ms (p50; a full queue here is ~160 ms, and the
# control class's own delay through the saturated machine is ~250 us, so 20x needs at least 5 ms)
# or whose control class is not 20x below is repeated, with the count printed; the test fails when all three saw a standing queue and none had the control class
# far below it (a class that is not prioritized gives control ~ data in every attempt), and is
# inconclusive when no attempt built the queue.
deep=0
ok=""
for n in 1 2 3; do
	attempt "$n"
	if ! holds "$data_p50 >= 10000"; then
		echo "attempt $n inconclusive: the data queue held $data_p50 us (p50), below 10 ms"
		continue
	fi
	deep=$((deep + 1))
	if holds "$ctrl_p50 * 20 < $data_p50"; then
		ok=1
		break
	fi
	echo "attempt $n: control p50 $ctrl_p50 us (p99 $ctrl_p99) not 20x below data p50 $data_p50 us; repeated"
done
if [ -z "$ok" ]; then
	[ "$deep" -gt 0 ] || skip "inconclusive: no standing data queue (data p50 >= 10 ms) in 3 attempts; last data p50 $data_p50 us"
	fail "control p50 ${ctrl_p50} us is not far below data p50 ${data_p50} us (in $deep attempts with a standing queue)"
fi
echo "attempts: $n ($((n - deep)) without a standing queue)"
stats=$("$QUENCH" switch stats "${TOPO_NAME}/s1")
echo "$stats"
ctrl_tx=$("$QUENCH" switch stats "${TOPO_NAME}/s1" --format json | jq '.switches[0].ports[] | select(.ifname == "s1-p3") | .counters.tx_ctrl_pkts')
[ "${ctrl_tx:-0}" != "0" ] || fail "s1-p3 classified no packet into the control class"
pass "CNP delay p50 ${ctrl_p50} us (p99 ${ctrl_p99}) vs data p50 ${data_p50} us through a full queue"
