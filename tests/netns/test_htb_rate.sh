#!/usr/bin/env bash
# netns: the bottleneck's egress rate (wire bits: frame + 24 B, as HTB charges) is within 2% of
# the configured rate at 1 and 8 Gbit/s, with two AF_PACKET senders that offer more than the
# bottleneck and are not limited by a socket buffer (QDISC_BYPASS, 8 MB send buffers).
# Jumbo frames (MTU 9000) keep the packet rate within what 2 cores forward (notes/datapath.md:
# ~240 kpps of 4 KB frames on both cores); hosts then run without XDP steering (MTU > 3506).
source "$(dirname "$0")/lib.sh"

check_rate() {
	local gbps=$1
	topo=$(write_dumbbell ${gbps}Gbps 9000 20Gbps)
	"$QUENCH" topo up "$topo" 2>/dev/null >/dev/null
	# The receivers are sinks: a tc ingress program that drops everything (the bare redirect
	# program with an empty port map) keeps their IP stack from competing for the 2 cores.
	local h
	for h in h3 h4; do
		tc -n "$(ns $h)" qdisc add dev $h-eth0 clsact
		tc -n "$(ns $h)" filter add dev $h-eth0 ingress bpf direct-action obj "$(dirname "$QUENCH")/gen/qn_bare.bpf.o" sec tc ||
			fail "cannot attach the sink on $h"
	done
	local H1 H2 H3 H4 M1 M2
	H1=$(host_ip h1); H2=$(host_ip h2); H3=$(host_ip h3); H4=$(host_ip h4)
	M1=$(gw_mac h1); M2=$(gw_mac h2)
	bg tx1 "$TRAFFIC" send --netns "$(ns h1)" --dev h1-eth0 --dst-mac "$M1" --src-ip "$H1" --dst-ip "$H3" \
		--seconds 6 --size 9000 --flows 4
	bg tx2 "$TRAFFIC" send --netns "$(ns h2)" --dev h2-eth0 --dst-mac "$M2" --src-ip "$H2" --dst-ip "$H4" \
		--seconds 6 --size 9000 --flows 4
	bg rate "$TRAFFIC" rate --netns "$(ns s1)" --dev s1-p3 --warmup 2 --seconds 3
	# While the rate is measured, the data class must hold a queue: the shaper, not the
	# senders, sets the rate. Ten samples; HTB drains in bursts, so allow a few empty ones.
	sleep 2
	local backlog="" busy=0 i b
	for i in 1 2 3 4 5 6 7 8 9 10; do
		b=$(tc -n "$(ns s1)" -s qdisc show dev s1-p3 | awk '/^qdisc bfifo 20:/ {f=1} f && /backlog/ {print $2; exit}')
		[ "$b" = 0b ] || busy=$((busy + 1))
		backlog="$backlog $b"
		sleep 0.25
	done
	wait "$PID_rate" || fail "rate measurement: $(cat "$WORK/rate.out")"
	wait "$PID_tx1" || fail "sender h1: $(cat "$WORK/tx1.out")"
	wait "$PID_tx2" || fail "sender h2: $(cat "$WORK/tx2.out")"
	local wire offered
	wire=$(field "$WORK/rate.out" wire_bps)
	offered=$(( $(field "$WORK/tx1.out" rate_bps) + $(field "$WORK/tx2.out" rate_bps) ))
	echo "configured ${gbps} Gbit/s: $(cat "$WORK/rate.out"); offered ${offered} bit/s (L2); data backlog samples:${backlog}"
	[ "$busy" -ge 7 ] || fail "the bottleneck queue was empty in $((10 - busy)) of 10 samples at ${gbps} Gbit/s: the senders, not the shaper, set the rate"
	awk -v w="$wire" -v g="$gbps" 'BEGIN { r = w / (g * 1e9); printf "ratio %.4f\n", r; exit (r >= 0.98 && r <= 1.02) ? 0 : 1 }' ||
		fail "bottleneck at ${gbps} Gbit/s ran at ${wire} wire bit/s (outside 2%)"
	"$QUENCH" topo down "$topo"
}

check_rate 1
check_rate 8
pass "HTB bottleneck within 2% of 1 and 8 Gbit/s"
