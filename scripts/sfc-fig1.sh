#!/usr/bin/env bash
# sfc-fig1.sh - SFC's Fig. 1 in quench (../shared/specs/sfc.md S8; docs/sfc.md "Reproductions"):
# N senders on the incast dumbbell (netns/incast-dumbbell.topo: senders on tor1, the receiver rx
# on tor2, a full-bisection cable) starting within a window, no congestion control, the queue of
# tor2's port toward rx over time for
#   none:lossy                   no flow control
#   none/sfc:lossy, cache off    ingress BTS from the congested switch only
#   none/sfc:lossy, cache tor    ingress BTS + the near-source cache at tor1
# in one plot (gnuplot), with each run's peak and its validity.
#
# Usage: sudo scripts/sfc-fig1.sh [OUT_DIR] [--n N] [--size B] [--window T] [--core-delay T]
#                                 [--dilation D] [--quench BIN]
# Defaults: 16 senders of 256 KB starting within 50 us, 1 us links and a 1 us core cable,
# D = 200. Every run is VALID or reported as INVALID (its numbers are then not a result).
set -euo pipefail

OUT=results/sfc-fig1-$(date +%Y%m%d-%H%M%S)
N=16 SIZE=256KB WINDOW=50us CORE_DELAY=1us D=200
QUENCH=${QUENCH:-build/quench}
while [ $# -gt 0 ]; do
	case $1 in
	--n) N=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--window) WINDOW=$2; shift 2 ;;
	--core-delay) CORE_DELAY=$2; shift 2 ;;
	--dilation) D=$2; shift 2 ;;
	--quench) QUENCH=$2; shift 2 ;;
	-h|--help) sed -n 2,16p "$0"; exit 0 ;;
	-*) echo "sfc-fig1.sh: unknown option $1" >&2; exit 2 ;;
	*) OUT=$1; shift ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "sfc-fig1.sh: needs root (namespaces, BPF)" >&2; exit 1; }
[ -x "$QUENCH" ] || { echo "sfc-fig1.sh: no quench binary at $QUENCH (build first: make)" >&2; exit 1; }
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NAME=fig1$$
NAME=${NAME:0:12}
trap '"$QUENCH" topo down --name "$NAME" >/dev/null 2>&1 || true' EXIT
"$QUENCH" topo up "$ROOT/netns/incast-dumbbell.topo" --name "$NAME" --param N="$N" \
	--param CORE="$((N * 10))Gbps" --param CORE_DELAY="$CORE_DELAY" --dilation "$D" >/dev/null
SENDERS=$(seq -s, -f 'h%g' 1 "$N")

# run LABEL SCHEME CACHE: one incast; its queue samples go to OUT/LABEL.csv
run() {
	local label=$1 scheme=$2 cache=$3 sw
	for sw in tor1 tor2; do "$QUENCH" switch set "$NAME/$sw" sfc_cache="$cache" >/dev/null; done
	"$QUENCH" gen "$NAME" --pattern incast --senders "$SENDERS" --dst rx --size "$SIZE" --count 1 \
		--sync-window "$WINDOW" --seed 1 --cc "$scheme" --mode sr --queues tor2:tor2-p2 --queue-interval 2us \
		--queue-out "$OUT/$label.csv" --format json >"$OUT/$label.json" 2>"$OUT/$label.txt"
	printf '%-12s %-16s cache %-4s peak %9s B  BTS %5s (cache hits %s)  %s\n' "$label" "$scheme" "$cache" \
		"$(jq '[.queues[] | select(.port == "tor2/tor2-p2") | .max] | add' "$OUT/$label.json")" \
		"$(jq '.counters["host.bts_rx"] // 0' "$OUT/$label.json")" \
		"$("$QUENCH" switch stats "$NAME/tor1" --format json | jq '[.switches[].ports[].counters.sfc_bts_cache] | add')" \
		"$(jq -r 'if .valid then "VALID" else "INVALID: " + (.reasons | join("; ")) end' "$OUT/$label.json")" | tee -a "$OUT/summary.txt"
}
: >"$OUT/summary.txt"
echo "N=$N senders of $SIZE within $WINDOW, core delay $CORE_DELAY, D=$D" | tee -a "$OUT/summary.txt"
run noFC none:lossy off
# --keep-switch-stages is not used: gen derives Q_Th/Q_Tg/T_BF for the scheme; the cache
# setting is not derived, so the value set above stays in force.
run bts none/sfc:lossy off
run bts+cache none/sfc:lossy tor

# queue CSVs: port,t_ns,bytes -> one plot, fabric us on x, KB on y
cat >"$OUT/fig1.gp" <<EOF
set terminal pngcairo size 900,500 noenhanced
set output "$OUT/fig1.png"
set datafile separator ","
set xlabel "time (fabric us)"
set ylabel "queue toward rx (KB)"
set title "SFC Fig. 1 in quench: $N:1 incast of $SIZE within $WINDOW, no CC, D=$D"
set key top right
plot "$OUT/noFC.csv" every ::1 using (\$2/1000):(\$3/1000) with lines title "no flow control", \
     "$OUT/bts.csv" every ::1 using (\$2/1000):(\$3/1000) with lines title "ingress BTS", \
     "$OUT/bts+cache.csv" every ::1 using (\$2/1000):(\$3/1000) with lines title "ingress BTS + cache"
EOF
if command -v gnuplot >/dev/null; then
	gnuplot "$OUT/fig1.gp" && echo "plot: $OUT/fig1.png"
else
	echo "gnuplot not installed (scripts/install-deps.sh installs it): the data and script are in $OUT"
fi
