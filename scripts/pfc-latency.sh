#!/usr/bin/env bash
# Switch-to-switch PAUSE latency (docs/switch.md "PFC", "Measured"): two switches, two raw
# senders on s1 (honouring PAUSE) into one receiver on s2 whose link is half the s1-s2 link, so
# s2 keeps pausing s1; PFC on both. Prints, per (rate, D): s2's PAUSE/XON to s1, what s1's gate
# let slip (max per pause), the time from a PAUSE's arrival to s1's last data departure (quiet),
# from a pause's end to its first data departure (resume), switchd's PAUSE-to-gate-closed
# latency (p50/p99/max) and drops.
# Usage: sudo scripts/pfc-latency.sh [BUILD] [SECONDS] ["RATE:D ..."]   (RATE: the s1-s2 link, fabric)
set -euo pipefail
BUILD=${1:-build}
SECS=${2:-3}
CASES=${3:-"300Mbps:1 600Mbps:1 1200Mbps:4 2400Mbps:4"}
Q="$BUILD/quench"
T="$BUILD/qn_traffic"
NAME=qnpfclat
F=$(mktemp /tmp/qnpfclat.XXXXXX.topo)
cleanup() { "$Q" topo down --name $NAME >/dev/null 2>&1 || true; rm -f "$F"; }
trap cleanup EXIT
for c in $CASES; do
	rate=${c%%:*}
	d=${c##*:}
	cat >"$F" <<T
name $NAME
param UP=$rate
defaults rate=$rate mtu=2048 delay=1us buffer=12MB
switch s1
switch s2
host h1
host h2
host h3
link h1 s1
link h2 s1
link s1 s2 delay=0ns
link s2 h3 rate=\$UP
T
	"$Q" topo up "$F" --dilation "$d" >/dev/null
	# the receiver's link at half the s1-s2 link: s2 is the congested switch
	"$Q" topo down --name $NAME >/dev/null
	half=$(awk -v r="$rate" 'BEGIN { n = r + 0; u = substr(r, length(n "") + 1); printf "%g%s", n / 2, u }')
	sed -i "s/^param UP=.*/param UP=$half/" "$F"
	"$Q" topo up "$F" --dilation "$d" >/dev/null
	for s in s1 s2; do "$Q" switch set $NAME/$s pfc=on >/dev/null; done
	# the raw senders honour PAUSE between batches (slower than a NIC): s1's host ports get room
	"$Q" switch set $NAME/s1 pfc_hdrm=2MB >/dev/null
	show=$("$Q" topo show $NAME)
	ip_of() { echo "$show" | awk -v n="$1" '$1=="host" && $2==n {print $6}' | head -1; }
	wall="$(jq -n "$(numfmt --from=si "${rate%bps}") / $d / 1e6") Mbit/s"
	pids=()
	for h in 1 2; do
		m=$(echo "$show" | awk -v p=s1-p$h '$1==p {print $5}')
		"$T" send --netns qn-$NAME-h$h --dev h$h-eth0 --dst-mac "$m" --src-ip "$(ip_of h$h)" --dst-ip "$(ip_of h3)" \
			--seconds "$SECS" --size 1500 --flows 8 --honor-pfc 3 --link-rate 1e9 --linger 0.5 >/dev/null &
		pids+=($!)
	done
	wait "${pids[@]}"
	j=$("$Q" switch stats $NAME/s1 --format json | jq '.switches[0].ports[] | select(.ifname == "s1-p3") | .counters')
	hdrm=$("$Q" switch stats $NAME/s2 --format json | jq '.switches[0].ports[] | select(.ifname == "s2-p1") | .pfc_hdrm_bytes')
	drops=$(( $("$Q" switch stats $NAME/s1 --format json | jq '[.switches[0].ports[].counters.drops] | add') +
		$("$Q" switch stats $NAME/s2 --format json | jq '[.switches[0].ports[].counters.drops] | add') ))
	pkill -TERM -f "quench switchd $NAME" || true
	sleep 1
	lat=$(grep -o 'PAUSE arrival to gate closed.*' /run/quench/$NAME.switchd.log | head -1 || true)
	printf 's1-s2 %s at D=%s (%s wall): pauses %s, slip max %s B, quiet max %.2f ms, resume mean %.3f ms max %.2f ms; s2 headroom %s B; drops %s; switchd %s\n' \
		"$rate" "$d" "$wall" "$(jq .pfc_pauses_rx <<<"$j")" "$(jq .pfc_slip_max_bytes <<<"$j")" \
		"$(jq '.pfc_quiet_max_ns / 1e6' <<<"$j")" "$(jq '.pfc_resume_mean_ns / 1e6' <<<"$j")" \
		"$(jq '.pfc_resume_max_ns / 1e6' <<<"$j")" "$hdrm" "$drops" "$lat"
	"$Q" topo down --name $NAME >/dev/null
done
