#!/usr/bin/env bash
# sfc-p-sweep.sh - SFC-P's incast-degree sweep in quench (../shared/specs/sfc.md S10; docs/sfc.md
# "Reproductions"): N senders on the star (netns/star.topo: one ToR, the paper's intra-rack
# incast) each send one message to h1 at once (starts within 1 us), DCQCN on the NICs, and the
# queue of the ToR's port toward h1 is compared for
#   sfcp   dcqcn/sfc:lossy      SFC at the ToR with SFC-P: the BTS it builds for its own hosts
#                               become one PFC PAUSE each, of the pause's length (the NICs know
#                               nothing of BTS); no PFC
#   pfc    dcqcn:lossless       PFC from the ToR's ingress accounting, no SFC
# For each N: the peak, the stable depth (the median of the samples in the middle half of the
# span in which the queue was non-empty), drops, PAUSE frames and BTS the hosts received, and
# next to them feedback delay x N x rate with the feedback delay taken as the base RTT of a
# sender-receiver pair (what the paper's 6 us x 40 x 100 Gbit/s stands for). Every run is VALID
# or reported INVALID (its numbers are then not a result).
#
# Usage: sudo scripts/sfc-p-sweep.sh [OUT_DIR] [--n "4 8 16"] [--size B] [--dilation D] [--quench BIN]
set -euo pipefail

OUT=results/sfc-p-sweep-$(date +%Y%m%d-%H%M%S)
NS="4 8 16" SIZE=1MB D=500
QUENCH=${QUENCH:-build/quench}
while [ $# -gt 0 ]; do
	case $1 in
	--n) NS=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--dilation) D=$2; shift 2 ;;
	--quench) QUENCH=$2; shift 2 ;;
	-h|--help) sed -n 2,16p "$0"; exit 0 ;;
	-*) echo "sfc-p-sweep.sh: unknown option $1" >&2; exit 2 ;;
	*) OUT=$1; shift ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "sfc-p-sweep.sh: needs root (namespaces, BPF)" >&2; exit 1; }
[ -x "$QUENCH" ] || { echo "sfc-p-sweep.sh: no quench binary at $QUENCH (build first: make)" >&2; exit 1; }
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NAME=sfcp$$
NAME=${NAME:0:12}
trap '"$QUENCH" topo down --name "$NAME" >/dev/null 2>&1 || true' EXIT

# stable CSV: the median queue (bytes) of the samples in the middle half of the non-empty span
stable() {
	local span
	span=$(awk -F, 'NR > 1 && $3 > 0 { if (f == "") f = $2; l = $2 } END { if (f == "") print "0 0"; else print f + (l - f) / 4, l - (l - f) / 4 }' "$1")
	awk -F, -v lo="${span% *}" -v hi="${span#* }" 'NR > 1 && $2 >= lo && $2 <= hi { print $3 }' "$1" |
		sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'
}
# drops: the ToR's drops other than not_ipv4 (IPv6 and ARP chatter a switch routing IPv4 drops)
drops() {
	"$QUENCH" switch stats "$NAME/tor" --format json | jq '[.switches[].ports[].counters | .drops - .["drops.not_ipv4"]] | add'
}

: >"$OUT/summary.txt"
echo "star, $SIZE per sender, starts within 1 us, D=$D; queue of tor toward h1" | tee -a "$OUT/summary.txt"
printf '%-3s %-5s %-16s %9s %9s %11s %6s %7s %7s  %s\n' N run scheme peak_B stable_B predicted_B drops pauses bts_rx verdict |
	tee -a "$OUT/summary.txt"
for N in $NS; do
	"$QUENCH" topo down --name "$NAME" >/dev/null 2>&1 || true
	"$QUENCH" topo up "$ROOT/netns/star.topo" --name "$NAME" --param N="$((N + 1))" --dilation "$D" >/dev/null
	SENDERS=$(seq -s, -f 'h%g' 2 "$((N + 1))")
	rtt=
	for run in sfcp pfc; do
		if [ "$run" = pfc ]; then
			scheme=dcqcn:lossless sfcp=off
		else
			scheme=dcqcn/sfc:lossy sfcp=on
		fi
		"$QUENCH" switch set "$NAME/tor" sfc_p=$sfcp >/dev/null
		d0=$(drops)
		label=n$N-$run
		"$QUENCH" gen "$NAME" --pattern incast --senders "$SENDERS" --dst h1 --size "$SIZE" --count 1 \
			--sync-window 1us --seed 1 --cc "$scheme" --queues tor:tor-p1 --queue-interval 2us \
			--queue-out "$OUT/$label.csv" --format json >"$OUT/$label.json" 2>"$OUT/$label.txt"
		d1=$(drops)
		# the sender-receiver base RTT SFC's derivation printed (sfc runs come first)
		[ -n "$rtt" ] || rtt=$(sed -n 's/^derived sfc: .* base RTT \([0-9.]*\) us.*/\1/p' "$OUT/$label.txt" | head -1)
		printf '%-3s %-5s %-16s %9s %9s %11s %6s %7s %7s  %s\n' "$N" "$run" "$scheme" \
			"$(jq '[.queues[] | select(.port == "tor/tor-p1") | .max] | add' "$OUT/$label.json")" \
			"$(stable "$OUT/$label.csv")" \
			"$(jq -n "${rtt:-0} * 1e-6 * $N * 1e10 / 8 | round")" \
			"$((d1 - d0))" \
			"$(jq '.counters["host.pfc_rx"] // 0' "$OUT/$label.json")" \
			"$(jq '.counters["host.bts_rx"] // 0' "$OUT/$label.json")" \
			"$(jq -r 'if .valid then "VALID" else "INVALID: " + (.reasons | join("; ")) end' "$OUT/$label.json")" |
			tee -a "$OUT/summary.txt"
	done
done
echo "feedback delay in predicted_B: the base RTT $rtt us (sender-receiver, from SFC's derivation)" | tee -a "$OUT/summary.txt"
echo "results: $OUT (summary.txt; per run the gen JSON, its text and the queue CSV)"
