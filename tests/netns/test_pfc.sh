#!/usr/bin/env bash
# netns: edge PFC. With XOFF low on s1 and a sender that honors PAUSE, 802.1Qbb XOFF frames
# (priority 3, quanta 65535) and XON frames (quanta 0) reach the sender, s1 drops nothing, and
# s1's buffer accounting returns to zero once its queues drained.
source "$(dirname "$0")/lib.sh"

# Under emulation a raw sender reaches ~30 Mbit/s: the bottleneck must be well below that. The
# sender keeps listening after it stops (--linger): a slow (emulated) sender that overshoots
# XOFF may see the XON only once the queue drains (5 s at the 5 Mbit/s bottleneck). Here the
# bottleneck is 100 Mbit/s: at 300 Mbit/s a CI-equivalent run's unpaced sender offered only
# 293 Mbit/s (2026-11-27), the queue peaked at 57 KB and no XOFF was sent.
topo=$(write_dumbbell "$(vm_or 5Mbps 100Mbps)")
"$QUENCH" topo up "$topo" >/dev/null
"$QUENCH" switch set "${TOPO_NAME}/s1" pfc=on xoff=200KB xon=150KB >/dev/null
H1=$(host_ip h1); H3=$(host_ip h3); M1=$(gw_mac h1)

"$TRAFFIC" send --netns "$(ns h1)" --dev h1-eth0 --dst-mac "$M1" --src-ip "$H1" --dst-ip "$H3" \
	--seconds 3 --size 1500 --flows 8 --honor-pfc 3 --link-rate 10e9 --linger "$(vm_or 5 1)" >"$WORK/tx.out"
cat "$WORK/tx.out"
stats=$("$QUENCH" switch stats "${TOPO_NAME}/s1")
echo "$stats"
xoff=$(field "$WORK/tx.out" xoff pfc); xon=$(field "$WORK/tx.out" xon pfc); q=$(field "$WORK/tx.out" xoff_quanta pfc)
[ "${xoff:-0}" -gt 0 ] || fail "no XOFF frame reached the sender"
[ "${xon:-0}" -gt 0 ] || fail "no XON frame reached the sender"
[ "$q" = 65535 ] || fail "XOFF quanta were [$q], expected 65535"
if echo "$stats" | grep -E '^  s1-p[0-9]+:.*(buffer|truncated|redirect)='; then
	fail "s1 dropped packets while PFC was on"
fi
# Expect: once the queues drained, s1 holds no charge: every byte charged at ingress was released
# at departure, or by the accounting repair when the dequeue hook missed the departure (acct.h).
# Before the repair existed, 0.3-2% of departures stayed charged here and could hold h1 paused.
used=""
for _ in $(seq 50); do
	used=$("$QUENCH" switch stats "${TOPO_NAME}/s1" --format json | jq '.switches[0].buffer_used')
	[ "$used" = 0 ] && break
	sleep 0.1
done
[ "$used" = 0 ] || fail "s1 still accounts $used B of buffer after its queues drained"
sw_xoff=$("$QUENCH" switch stats "${TOPO_NAME}/s1" --format json | jq '.switches[0].ports[] | select(.ifname == "s1-p1") | .counters.pfc_xoff_sent')
[ "${sw_xoff:-0}" != 0 ] || fail "s1 counted no XOFF on s1-p1"
pass "sender saw $xoff XOFF (incl. refreshes) and $xon XON at priority 3; no drops"
