#!/usr/bin/env bash
# netns: the bottleneck's egress rate (wire bits: frame + 24 B, as HTB charges) is within 2% of
# the configured rate at 1 Gbit/s (low) and at a high rate derived in the same run from the CPU
# the raw senders, switches and shaper took at 1 Gbit/s (below), with two AF_PACKET senders that offer more
# than the bottleneck and are not limited by a socket buffer (QDISC_BYPASS, 8 MB send buffers).
# A fixed high rate was wrong for the machine: 8, 6, 5 and 4 Gbit/s all exceeded the ~2.8
# Gbit/s two raw senders push through one switch on 2 cores, so the high case was skipped every
# time.
# 16 KB frames (veth allows MTUs up to 65535) keep the packet rate low enough for 2 cores to
# forward through two switches with the full pipeline; hosts then run without XDP steering
# (MTU > 3506). A 24 MB switch buffer puts the bfifo leaves (2 B) above both senders' socket
# buffers, so senders are back-pressured and nothing is dropped.
source "$(dirname "$0")/lib.sh"

steal_ticks() { awk '/^cpu / {print $9}' /proc/stat; }
idle_ticks() { awk '/^cpu / {print $5 + $6}' /proc/stat; } # idle + iowait

# senders_up MBPS: the dumbbell with its bottleneck at MBPS Mbit/s, the sinks on h3 and h4, the
# two raw senders started for 6 s (PID_tx1, PID_tx2)
senders_up() {
	topo=$(write_dumbbell "${1}Mbps" 16000 20Gbps 24MB)
	"$QUENCH" topo up "$topo" 2>/dev/null >/dev/null
	# Admission off: the senders are then back-pressured by their socket buffers (veth keeps
	# skb->sk) instead of spinning on admission drops, which starves the shaper's own timer
	# softirq on 2 cores (measured: 1 Gbit/s fell to 0.986 with 35 Gbit/s of dropped offer).
	"$QUENCH" switch set "${TOPO_NAME}/s1" admission=off >/dev/null
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
		--seconds 6 --size 16000 --flows 4
	bg tx2 "$TRAFFIC" send --netns "$(ns h2)" --dev h2-eth0 --dst-mac "$M2" --src-ip "$H2" --dst-ip "$H4" \
		--seconds 6 --size 16000 --flows 4
}


# check_rate MBPS: one attempt at MBPS Mbit/s. Return: 0 pass, 1 fail, 2 inconclusive: a precondition of the
# measurement did not hold, with the reason in $WHY: the hypervisor stole more than 2% of the CPU
# time (the shaper's timers ran late for reasons outside the machine, DESIGN.md §5), the
# senders did not keep the bottleneck's queue busy (they, not the shaper, set the rate: 7.73 of
# 8 Gbit/s offered was seen once on a busy machine), or the rate missed while the CPUs were
# busy (under 25% idle: the shaper's dequeue ran late).
check_rate() {
	local mbps=$1
	senders_up "$mbps"
	local st0 st1 id0 id1
	sleep 2
	st0=$(steal_ticks)
	id0=$(idle_ticks)
	bg rate "$TRAFFIC" rate --netns "$(ns s1)" --dev s1-p3 --warmup 0 --seconds 3
	# While the rate is measured, the data class must hold a queue: the shaper, not the
	# senders, sets the rate. Ten samples; HTB drains in bursts, so allow a few empty ones. The
	# data class's leaf on a switch-facing port is the pause gate's tbf (docs/switch.md "PFC"):
	# until 2026-11-27 this read only a bfifo leaf, found none there, and counted every sample
	# busy (the check could not fail).
	local backlog="" busy=0 i b
	for i in 1 2 3 4 5 6 7 8 9 10; do
		b=$(tc -n "$(ns s1)" -s qdisc show dev s1-p3 | awk '/^qdisc [a-z]+ 20:/ {f=1} f && /backlog/ {print $2; exit}')
		[ -n "$b" ] || fail "no backlog line for the data class's leaf (20:) on s1-p3: $(tc -n "$(ns s1)" qdisc show dev s1-p3)"
		[ "$b" = 0b ] || busy=$((busy + 1))
		backlog="$backlog $b"
		sleep 0.25
	done
	wait "$PID_rate" || fail "rate measurement: $(cat "$WORK/rate.out")"
	st1=$(steal_ticks)
	id1=$(idle_ticks)
	wait "$PID_tx1" || fail "sender h1: $(cat "$WORK/tx1.out")"
	wait "$PID_tx2" || fail "sender h2: $(cat "$WORK/tx2.out")"
	local wire offered
	wire=$(field "$WORK/rate.out" wire_bps)
	offered=$(( $(field "$WORK/tx1.out" rate_bps) + $(field "$WORK/tx2.out" rate_bps) ))
	echo "configured ${mbps} Mbit/s: $(cat "$WORK/rate.out"); offered ${offered} bit/s (L2); data backlog samples:${backlog}"
	# steal and idle are in USER_HZ ticks summed over CPUs: their share of 3 s on $(nproc) CPUs
	local steal_pct idle_pct ratio
	steal_pct=$(jq -n "100 * $((st1 - st0)) / (300 * $(nproc)) | . * 10 | floor / 10")
	idle_pct=$(jq -n "100 * $((id1 - id0)) / (300 * $(nproc)) | . * 10 | floor / 10")
	ratio=$(jq -n "$wire / ($mbps * 1e6) | . * 10000 | floor / 10000")
	echo "steal during the measurement: ${steal_pct}%; CPUs idle ${idle_pct}%; ratio $ratio"
	IDLE=$idle_pct
	if holds "$steal_pct > 2"; then
		WHY="the hypervisor stole ${steal_pct}% of the CPU time (> 2%)"
		"$QUENCH" topo down "$topo"
		return 2
	fi
	if [ "$busy" -lt 7 ]; then
		WHY="the bottleneck queue was empty in $((10 - busy)) of 10 samples (offered ${offered} bit/s): the senders, not the shaper, set the rate"
		"$QUENCH" topo down "$topo"
		return 2
	fi
	if ! holds "$ratio >= 0.98 and $ratio <= 1.02"; then
		# A miss while the CPUs were mostly busy (under 25% idle) is the machine, not the
		# shaper: at 8 Gbit/s both senders, both switches' pipelines and HTB's dequeue and
		# watchdog share 2 cores, and the dequeue runs late (measured 2026-11-23 with this
		# test: 8 Gbit/s at 9-19% idle gave ratios 0.966-0.993 with the queue never empty and
		# no steal, the binaries of 22e3cd6 the same; 1 Gbit/s at 90% idle 0.9999). It is
		# retried at a lower wall rate; a miss with CPU to spare fails.
		if holds "$idle_pct < 25"; then
			WHY="the shaper ran at ${wire} wire bit/s with the CPUs ${idle_pct}% idle (busy: the senders, not the shaper, held the CPU)"
			"$QUENCH" topo down "$topo"
			return 2
		fi
		fail "bottleneck at ${mbps} Mbit/s ran at ${wire} wire bit/s (outside 2%) with the CPUs ${idle_pct}% idle"
	fi
	"$QUENCH" topo down "$topo"
}

# Up to 4 attempts per case; only attempts whose preconditions held count (a conclusive attempt
# that misses fails the test at once). An attempt whose senders could not keep the shaper busy
# is retried at a lower rate, one lost to steal at the same rate. Inconclusive attempts are
# counted and printed; four in a row make the test inconclusive (skipped with the reasons),
# never failed.
# The high rate comes from the low case's conclusive attempt in this run: the senders, both
# switches and the shaper kept the CPUs IDLE% idle at 1 Gbit/s; the busy share grows with the
# rate (measured 2026-11-27: 1 Gbit/s 32% busy; 12, 14 and 18 Gbit/s all 100% busy with 69-75%
# of the rate delivered), so the high case runs where it would keep them 40% idle, by
# proportion: 1 Gbit/s x 60 / (100 - IDLE), then 80% and 65% of that.
measured=""
for case in low high; do
	if [ "$case" = low ]; then
		rates=(1000 1000 1000 1000)
	else
		h=$(jq -n "1000 * 60 / ([100 - $IDLE, 1] | max) | floor / 10 | floor * 10")
		holds "$h >= 1200" || skip "the low case kept the CPUs only $IDLE% idle at 1 Gbit/s: a high case that leaves them 40% idle ($h Mbit/s) is not above the low one (this machine is too slow for two rates)"
		rates=("$h" "$(jq -n "$h * 0.8 | floor")" "$(jq -n "$h * 0.65 | floor")" "$(jq -n "$h * 0.65 | floor")")
	fi
	ok=""
	reasons=""
	k=0
	for attempt in 1 2 3 4; do
		m=${rates[$k]}
		rc=0
		WHY=""
		check_rate "$m" || rc=$?
		if [ $rc -eq 0 ]; then ok=1; break; fi
		echo "attempt $attempt at $m Mbit/s inconclusive: $WHY; retrying"
		reasons="${reasons:+$reasons; }$m Mbit/s: $WHY"
		case "$WHY" in *"senders, not the shaper"*) k=$((k + 1)) ;; esac # (both the empty queue and the saturated CPU)
	done
	echo "$case rate: $((attempt - ${ok:-0})) inconclusive attempt(s) before $([ -n "$ok" ] && echo "a conclusive one at $m Mbit/s" || echo "giving up")"
	[ -n "$ok" ] || skip "inconclusive ($case rate): no attempt of 4 could measure the shaper ($reasons)"
	measured="${measured:+$measured and }$m"
done
pass "HTB bottleneck within 2% of $measured Mbit/s"
