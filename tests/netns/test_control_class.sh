#!/usr/bin/env bash
# netns: control packets (CNPs) cross a full data queue at the bottleneck with a delay far
# below the data queue's. h1 floods h3 through a 300 Mbit/s bottleneck (the 2-core machine offers it 3-4x, even with probers running); h2 sends stamped CNPs
# and stamped data probes to h4 through the same bottleneck port; h4 measures one-way delays.
source "$(dirname "$0")/lib.sh"

topo=$(write_dumbbell 300Mbps)
"$QUENCH" topo up "$topo" >/dev/null
H1=$(host_ip h1); H2=$(host_ip h2); H3=$(host_ip h3); H4=$(host_ip h4)
M1=$(gw_mac h1); M2=$(gw_mac h2)

bg flood "$TRAFFIC" send --netns "$(ns h1)" --dev h1-eth0 --dst-mac "$M1" --src-ip "$H1" --dst-ip "$H3" \
	--seconds 7 --size 2000 --flows 8
sleep 1.5 # let the data queue build
bg rx "$TRAFFIC" recv --netns "$(ns h4)" --dev h4-eth0 --seconds 4
sleep 0.2
bg cnp "$TRAFFIC" send --netns "$(ns h2)" --dev h2-eth0 --dst-mac "$M2" --src-ip "$H2" --dst-ip "$H4" \
	--seconds 3 --size 100 --rate 1e6 --opcode 0x81 --tos $((48 << 2)) --stamp
bg dprobe "$TRAFFIC" send --netns "$(ns h2)" --dev h2-eth0 --dst-mac "$M2" --src-ip "$H2" --dst-ip "$H4" \
	--seconds 3 --size 100 --rate 1e6 --stamp --seq-base 1000000000
wait "$PID_cnp" || fail "CNP sender: $(cat "$WORK/cnp.out")"
wait "$PID_dprobe" || fail "data probe sender: $(cat "$WORK/dprobe.out")"
wait "$PID_rx" || fail "receiver: $(cat "$WORK/rx.out")"
cat "$WORK/rx.out"
backlog=$(tc -n "$(ns s1)" -s qdisc show dev s1-p3 | awk '/^qdisc bfifo 20:/ {f=1} f && /backlog/ {print $2; exit}')
echo "data backlog at s1-p3 during the run: $backlog"

data_p50=$(field "$WORK/rx.out" delay_us_p50 'class=data')
ctrl_p50=$(field "$WORK/rx.out" delay_us_p50 'class=control')
ctrl_p99=$(field "$WORK/rx.out" delay_us_p99 'class=control')
ctrl_n=$(field "$WORK/rx.out" n 'class=control')
data_n=$(field "$WORK/rx.out" n 'class=data')
[ "${ctrl_n:-0}" -gt 100 ] || fail "too few CNPs arrived ($ctrl_n)"
[ "${data_n:-0}" -gt 100 ] || fail "too few data probes arrived ($data_n)"
awk -v d="$data_p50" 'BEGIN { exit d > 1000 ? 0 : 1 }' || fail "no standing data queue (data p50 ${data_p50} us)"
awk -v d="$data_p50" -v c="$ctrl_p50" 'BEGIN { exit c * 20 < d ? 0 : 1 }' ||
	fail "control p50 ${ctrl_p50} us is not far below data p50 ${data_p50} us"
stats=$("$QUENCH" switch stats "${TOPO_NAME}/s1")
echo "$stats"
ctrl_tx=$("$QUENCH" switch stats "${TOPO_NAME}/s1" --format json | jq '.switches[0].ports[] | select(.ifname == "s1-p3") | .counters.tx_ctrl_pkts')
[ "${ctrl_tx:-0}" != "0" ] || fail "s1-p3 classified no packet into the control class"
pass "CNP delay p50 ${ctrl_p50} us (p99 ${ctrl_p99}) vs data p50 ${data_p50} us through a full queue"
