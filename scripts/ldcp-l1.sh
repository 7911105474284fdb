#!/usr/bin/env bash
# ldcp-l1.sh - LDCP's small-message FCT comparison against DCQCN (../shared/specs/ldcp.md L1;
# docs/ldcp.md "Reproduction"): on the leaf-spine (16 hosts at 10 Gbit/s, 4 per leaf, 2 spines),
# `ldcp` (PFC off) against `dcqcn` (PFC on) on the identical flow list, for four workloads
#   websearch   Poisson all-to-all, WebSearch sizes
#   hadoop      Poisson all-to-all, FB Hadoop sizes
#   rpc         Poisson all-to-all, Google RPC sizes
#   incast      WebSearch background plus repeated 15:1 incasts of 64 KB (an incast-heavy mix)
# and two subscription ratios: 1:1 (leaf-spine cables of 20 Gbit/s: 4 x 10 up = 2 x 20 down) and
# 4:1 (cables of 5 Gbit/s). Prints, per run, the average FCT of the messages smaller than the
# cut-off (100 KB: the spec's [D]; the slides do not give one) for both schemes and LDCP's change
# against DCQCN, next to the slides' numbers. A run either scheme did not finish VALID is
# reported as such: its numbers are not a result.
#
# Usage: sudo scripts/ldcp-l1.sh [OUT_DIR] [--load F] [--span T] [--cut B] [--workloads "websearch ..."]
#                                [--ratios "1:1 4:1"] [--dilation D|auto] [--quench BIN]
set -euo pipefail

OUT=results/ldcp-l1-$(date +%Y%m%d-%H%M%S)
LOAD=0.5 SPAN=8ms CUT=100000 D=auto
WORKLOADS="websearch hadoop rpc incast" RATIOS="1:1 4:1"
QUENCH=${QUENCH:-build/quench}
while [ $# -gt 0 ]; do
	case $1 in
	--load) LOAD=$2; shift 2 ;;
	--span) SPAN=$2; shift 2 ;;
	--cut) CUT=$2; shift 2 ;;
	--workloads) WORKLOADS=$2; shift 2 ;;
	--ratios) RATIOS=$2; shift 2 ;;
	--dilation) D=$2; shift 2 ;;
	--quench) QUENCH=$2; shift 2 ;;
	-h|--help) sed -n 2,17p "$0"; exit 0 ;;
	-*) echo "ldcp-l1.sh: unknown option $1" >&2; exit 2 ;;
	*) OUT=$1; shift ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "ldcp-l1.sh: needs root (namespaces, BPF)" >&2; exit 1; }
[[ $SPAN =~ ^[0-9.]+ms$ ]] || { echo "ldcp-l1.sh: --span wants milliseconds (8ms), got '$SPAN'" >&2; exit 2; }
[ -x "$QUENCH" ] || { echo "ldcp-l1.sh: no quench binary at $QUENCH (build first: make)" >&2; exit 1; }
[[ $CUT =~ ^[0-9]+$ ]] || { echo "ldcp-l1.sh: --cut wants bytes, got '$CUT'" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# the slides' reductions, in the order websearch hadoop rpc incast (their workloads are not named:
# the order is the slides', the pairing with ours is an assumption)
declare -A PAPER=([1:1]="28.0 48.2 34.9 59.9" [4:1]="35.2 30.3 29.8 50.8")

# small FLOWS_CSV: "<count> <mean FCT ns>" of the completed flows smaller than the cut-off
small() {
	awk -F, -v cut="$CUT" 'NR > 1 && $5 < cut && $11 == 1 { n++; s += $8 } END { printf "%d %.0f\n", n, n ? s / n : 0 }' "$1"
}

: >"$OUT/summary.txt"
echo "leaf-spine, 16 hosts at 10 Gbit/s, load $LOAD for $SPAN, small = < $CUT B, dcqcn (PFC on) vs ldcp (PFC off)" |
	tee -a "$OUT/summary.txt"
printf '%-5s %-10s %6s %14s %14s %8s %8s  %s\n' ratio workload small dcqcn_avg_us ldcp_avg_us change slides verdicts |
	tee -a "$OUT/summary.txt"
for ratio in $RATIOS; do
	case $ratio in
	1:1) fabric=20Gbps ;;
	4:1) fabric=5Gbps ;;
	*) echo "ldcp-l1.sh: ratio '$ratio' is not 1:1 or 4:1" >&2; exit 2 ;;
	esac
	i=0
	for w in $WORKLOADS; do
		case $w in
		websearch | hadoop) cdf=$w extra="" span=$SPAN ;;
		# Google RPC messages are small: a quarter of the span keeps the flow count (about 4,000)
		# inside an engine's QP numbers (16K)
		rpc) cdf=$w extra="" span=$(awk -v s="${SPAN%ms}" 'BEGIN { print s / 4 "ms" }') ;;
		incast) cdf=websearch span=$SPAN extra="workload incast dst=h1 senders=15 size=64KB window=20us count=8 interval=1ms start=0.5ms" ;;
		*) echo "ldcp-l1.sh: unknown workload '$w' (websearch hadoop rpc incast)" >&2; exit 2 ;;
		esac
		paper=$(awk -v i=$((i + 1)) '{ print $i }' <<<"${PAPER[$ratio]}")
		i=$((i + 1))
		run="$OUT/${w}-${ratio/:/to}"
		exp="$run.exp"
		cat >"$exp" <<EOF
# written by scripts/ldcp-l1.sh: $w at $ratio
name ldcp-l1-$w
topology leafspine
param FABRIC=$fabric FABRIC_DELAY=1us
dilation $D
schemes dcqcn ldcp
workload poisson load=$LOAD cdf=$cdf duration=$span
$extra
duration 60ms
seed 1
EOF
		"$QUENCH" run "$exp" --out "$run" --quiet --name "ldl1$$" >"$run.log" 2>&1 ||
			{ echo "ldcp-l1.sh: quench run $exp failed (log: $run.log)" >&2; tail -5 "$run.log" >&2; exit 1; }
		read -r nd md < <(small "$run/dcqcn/flows.csv")
		read -r nl ml < <(small "$run/ldcp/flows.csv")
		vd=$(awk -F, 'NR > 1 && $1 == "dcqcn" { print $2 }' "$run/summary.csv")
		vl=$(awk -F, 'NR > 1 && $1 == "ldcp" { print $2 }' "$run/summary.csv")
		change=$(awk -v a="$md" -v b="$ml" 'BEGIN { if (a > 0) printf "%+.1f%%", 100 * (b - a) / a; else print "-" }')
		printf '%-5s %-10s %6s %14.1f %14.1f %8s %8s  %s\n' "$ratio" "$w" "$nd/$nl" "$(awk -v x="$md" 'BEGIN { print x / 1000 }')" \
			"$(awk -v x="$ml" 'BEGIN { print x / 1000 }')" "$change" "-$paper%" "dcqcn $vd, ldcp $vl" | tee -a "$OUT/summary.txt"
	done
done
echo "results: $OUT (summary.txt; per run: <workload>-<ratio>/summary.md)"
