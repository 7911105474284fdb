#!/usr/bin/env bash
# netns: back-to-sender signals reach the engine through the real path (the switch port's veth,
# the host's XDP steering, AF_XDP) and are dispatched to the QP they name. While `quench gen`
# runs a flow h2 -> h3, BTS and CC-postcard frames are sent from the switch's port toward h2
# as a switch sends them (qn_traffic signal, the codec's reference encoders): one BTS naming
# the sender's QP by its UDP source port, one by its trimmed DestQP and address, one postcard,
# and one BTS naming no QP. Expect h2 to count 2 BTS, 1 postcard and 1 signal for no QP, and
# nothing malformed (on 48ec9aa all four were counted malformed: the codec took only UDP 4791).
source "$(dirname "$0")/lib.sh"

topo=$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/star.topo")")
"$QUENCH" topo up "$topo" --param N=3 --dilation "$(vm_or 200 50)" >/dev/null
h2=$(host_ip h2)
h3=$(host_ip h3)
h2mac=$("$QUENCH" topo show "$TOPO_NAME" --detail | awk '$1 == "host" && $2 == "h2" {print $8}')
[ -n "$h2" ] && [ -n "$h3" ] && [ -n "$h2mac" ] || fail "no addresses for h2/h3 ($h2 $h3 $h2mac)"
# The flow's QPs: gen connects h2 -> h3 first, so h2's QP is 0x100 (UDP source port 0xC100)
# and h3's is 0x101 (the DestQP of h2's data).
# (60 MB: 48 ms of fabric time, 2.4 s at D=50, 9.6 s at D=200 in a VM)
bg gen "$QUENCH" gen "$TOPO_NAME" --pattern long --senders h2 --dst h3 --size 60MB --cc dcqcn
txp() { ip -n "$(ns h2)" -s link show h2-eth0 | awk '/TX:/ {getline; print $2; exit}'; }
for i in $(seq 200); do
	[ "$(txp)" -gt 1000 ] && break
	kill -0 "$PID_gen" 2>/dev/null || fail "gen ended before it sent: $(cat "$WORK/gen.out")"
	sleep 0.05
done
[ "$(txp)" -gt 1000 ] || fail "h2 did not start sending within 10 s"
sig() { "$TRAFFIC" signal --netns "$(ns tor)" --dev tor-p2 --dst-mac "$h2mac" --dst-ip "$h2" "$@" >/dev/null; }
sig --src-ip "$h3" --kind bts --sport 0xC100 --dest-qp 0x101 --pause-us 0
sig --src-ip "$h3" --kind bts --sport 0x1234 --dest-qp 0x101 --pause-us 0 --peer-ip "$h3"
sig --src-ip "$h3" --kind postcard --sport 0xC100 --dest-qp 0x101 --peer-ip "$h3"
sig --src-ip "$h3" --kind bts --sport 0x1234 --dest-qp 0x3777 --pause-us 0
kill -0 "$PID_gen" 2>/dev/null || fail "gen ended before the signals arrived (the flow must outlast them): $(cat "$WORK/gen.out")"
wait "$PID_gen" || fail "gen failed: $(cat "$WORK/gen.out")"
line=$(grep -E '^host h2:' "$WORK/gen.out")
echo "$line"
val() { awk -v k="$1" '{for (i = 1; i <= NF; i++) if ($i == k) print $(i + 1)}' <<<"$line"; }
[ "$(val bts_rx)" = 2 ] || fail "h2 took $(val bts_rx) BTS, expected 2 (by source port and by trimmed DestQP)"
[ "$(val postcard_rx)" = 1 ] || fail "h2 took $(val postcard_rx) postcards, expected 1"
[ "$(val signal_unknown_qp)" = 1 ] || fail "h2 counted $(val signal_unknown_qp) signals for no QP, expected 1"
[ "$(val malformed)" = 0 ] || fail "h2 counted $(val malformed) malformed frames"
grep -q "flows done 1/1, content errors 0" "$WORK/gen.out" || fail "the flow did not complete intact: $(cat "$WORK/gen.out")"
pass "BTS (by port and by trimmed headers), postcard and an unknown-QP signal reached h2's engine through veth, XDP and AF_XDP and were dispatched"
