#!/usr/bin/env bash
# pbfs-repro.sh - PB-FS's headline claims in quench (../shared/specs/pbfs.md §7 B1, B2, B3, B5;
# docs/pbfs.md "Reproduction"): netns/experiments/pbfs-hadoop-incast.exp (the PB-FS preset on the
# leaf-spine, FB Hadoop at 70% plus 15:1 incasts of 3 KB and 100 KB; dcqcn and dcqcn/pbfs,
# lossless and lossy, selective repeat) once per seed, then per scheme and seed, from each
# run's fct.txt and summary.json:
#   short p95 FCT   p95 FCT of the background flows below PB-FS's eligibility size (line rate x τ,
#                   from the PB-FS scheme's cc.txt): the flows PB-FS never marks (B1)
#   1-pkt p95 FCT   the same for one-frame flows (at most 1000 B, the preset's payload) (B5)
#   incast max FCT  the slowest flow of each incast size (the paper's incast metric)
#   peak queue      the largest egress queue of any switch port (B2, B5)
#   postcards/flow  postcards over PB-FS-eligible flows (B3), PAUSE frames, drops
# and the PB-FS scheme's change against its base in the same seed. Only VALID runs count; an
# INVALID one is printed with its reasons and left out.
#
# Usage: sudo scripts/pbfs-repro.sh [OUT_DIR] [--seeds "1 2 3"] [--dilation D] [--quench BIN]
# Default: seeds 1 2 3, D by calibration (each run decides).
set -euo pipefail

OUT=results/pbfs-repro-$(date +%Y%m%d-%H%M%S)
SEEDS="1 2 3" DIL=()
QUENCH=${QUENCH:-build/quench}
while [ $# -gt 0 ]; do
	case $1 in
	--seeds) SEEDS=$2; shift 2 ;;
	--dilation) DIL=(--dilation "$2"); shift 2 ;;
	--quench) QUENCH=$2; shift 2 ;;
	-h|--help) sed -n 2,18p "$0"; exit 0 ;;
	-*) echo "pbfs-repro.sh: unknown option $1" >&2; exit 2 ;;
	*) OUT=$1; shift ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "pbfs-repro.sh: needs root (namespaces, BPF)" >&2; exit 1; }
[ -x "$QUENCH" ] || { echo "pbfs-repro.sh: no quench binary at $QUENCH (build first: make)" >&2; exit 1; }
command -v jq >/dev/null || { echo "pbfs-repro.sh: needs jq (scripts/install-deps.sh)" >&2; exit 1; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
EXP=$ROOT/netns/experiments/pbfs-hadoop-incast.exp
mkdir -p "$OUT"

# pct P: the P-th percentile (nearest rank) of the numbers on stdin; "-" when there are none
pct() { sort -g | awk -v p="$1" '{ v[NR] = $1 } END { if (!NR) { print "-"; exit } i = int(NR * p / 100 + 0.999999); if (i < 1) i = 1; print v[i] }'; }
us() { awk '{ if ($1 == "-") print "-"; else printf "%.1f", $1 / 1000 }'; }

TABLE=$OUT/table.md
{
	echo "| seed | scheme | valid | D | short p95 FCT µs | 1-pkt p95 FCT µs | incast 3 KB max µs | incast 100 KB max µs | peak queue KB | postcards/eligible flow | PAUSE | drops |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
} >"$TABLE"
for seed in $SEEDS; do
	sed "s/^seed .*/seed $seed/" "$EXP" >"$OUT/seed$seed.exp"
	R=$OUT/seed$seed
	"$QUENCH" run "$OUT/seed$seed.exp" --out "$R" "${DIL[@]}" --quiet >"$OUT/seed$seed.log" 2>&1 ||
		{ echo "seed $seed: quench run failed: $(tail -3 "$OUT/seed$seed.log")" >&2; continue; }
	ELIG=$(sed -n 's/.*messages of at least \([0-9]*\) B mark.*/\1/p' "$R/dcqcn_pbfs/cc.txt" | head -1)
	[ -n "$ELIG" ] || { echo "seed $seed: no eligibility size in $R/dcqcn_pbfs/cc.txt" >&2; exit 1; }
	for i in $(seq 0 $(($(jq '.schemes | length' "$R/summary.json") - 1))); do
		S=$(jq -r ".schemes[$i].scheme" "$R/summary.json")
		F=$R/$(tr -c 'a-zA-Z0-9\n-' '_' <<<"$S")/fct.txt
		V=$(jq -r ".schemes[$i].valid" "$R/summary.json")
		if [ "$V" != true ]; then
			echo "seed $seed $S INVALID: $(jq -c ".schemes[$i].reasons" "$R/summary.json")" >&2
			V=INVALID
		else
			V=VALID
		fi
		SHORT=$(awk -v e="$ELIG" '$4 == 100 && $5 < e { print $7 }' "$F" | pct 95 | us)
		ONE=$(awk '$4 == 100 && $5 <= 1000 { print $7 }' "$F" | pct 95 | us)
		I3=$(awk '$4 == 200 && $5 < 10000 { print $7 }' "$F" | pct 100 | us)
		I100=$(awk '$4 == 200 && $5 >= 10000 { print $7 }' "$F" | pct 100 | us)
		jq -r --arg seed "$seed" --arg v "$V" --arg short "$SHORT" --arg one "$ONE" --arg i3 "$I3" --arg i100 "$I100" ".schemes[$i] |
			.counters as \$c |
			\"| \(\$seed) | \(.scheme) | \(\$v) | \(.dilation) | \(\$short) | \(\$one) | \(\$i3) | \(\$i100) | \(.queue_peak_bytes / 1000 | floor) | \" +
			(if (\$c[\"cc.pbfs.eligible\"] // 0) > 0 then ((\$c[\"cc.pbfs.postcards\"] / \$c[\"cc.pbfs.eligible\"]) * 100 | round / 100 | tostring) else \"-\" end) +
			\" | \(\$c[\"host.pfc_rx\"] // 0) | \(\$c[\"switch.drops\"] // 0) |\"" "$R/summary.json" >>"$TABLE"
	done
done

# PB-FS against its base, per seed and loss mode: the change of each metric (negative = lower)
CHANGE=$OUT/change.md
{
	echo "| seed | loss | short p95 FCT | 1-pkt p95 FCT | incast 3 KB max | incast 100 KB max | peak queue |"
	echo "|---|---|---|---|---|---|---|"
	awk -F' *\\| *' 'NR > 2 && $4 == "VALID" {
		loss = ($3 ~ /:lossy$/) ? "lossy" : "lossless"; pb = ($3 ~ /pbfs/) ? 1 : 0
		for (k = 6; k <= 10; k++) v[$2, loss, pb, k] = $k; seeds[$2] = 1; seen[$2, loss, pb] = 1 }
		END { for (s in seeds) for (l = 0; l < 2; l++) { loss = l ? "lossy" : "lossless"
			if (!seen[s, loss, 0] || !seen[s, loss, 1]) continue
			line = "| " s " | " loss
			for (k = 6; k <= 10; k++) { a = v[s, loss, 0, k]; b = v[s, loss, 1, k]
				line = line " | " ((a == "-" || b == "-" || a == 0) ? "-" : sprintf("%+.0f%%", (b / a - 1) * 100)) }
			print line " |" } }' "$TABLE" | sort -n
} >"$CHANGE"
cat "$TABLE"
echo
cat "$CHANGE"
echo "results: $OUT (table.md, change.md, seed*/ runs)"
