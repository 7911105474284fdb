#!/usr/bin/env bash
# profile.sh - where a packet's time goes: one QP (ACK per packet, no CC) at D = 1 through 1 or
# 5 switches, sampled system-wide with perf, every sample attributed to a stage of the packet's
# path (scripts/profile-stages.awk), in ns of CPU per data packet with its ACK; the BPF programs'
# own statistics (kernel.bpf_stats_enabled) in a second window as a cross-check.
# docs/PERFORMANCE.md "Where a packet's time goes" has the results and how to read them.
#
#   sudo scripts/profile.sh [--build DIR] [--seconds S] [--shards N] [--out DIR] [CASE ...]
#
# --shards N: the engine's threads (gen --shards; default the engine's, one per CPU). The
# tables in docs/PERFORMANCE.md before cut 4 were taken with one thread (--shards 1).
# Cases (default: all four):
#   star-1hop   a star of 8 hosts at 100 Gbit/s, h1 -> h2: one switch
#   k4-1hop     a k=4 fat-tree without cables (20 switches), h1 -> h2: one switch
#   k4-5hop     the same fat-tree, h1 -> h16: edge, aggregation, core, aggregation, edge
#   k4c-5hop    a k=4 fat-tree whose switch links are 1 us cables (the engine forwards them)
# Installs linux-perf if missing (scripts/install-deps.sh profile). Needs root. Every topology
# it makes is named qnpf<random> and taken down on every way out.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build"
secs=3
out=""
shards=""
cases=()
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build="$2"; shift 2 ;;
	--seconds) secs="$2"; shift 2 ;;
	--out) out="$2"; shift 2 ;;
	--shards) shards="$2"; shift 2 ;;
	-h|--help) sed -n '2,19p' "$0"; exit 0 ;;
	star-1hop|k4-1hop|k4-5hop|k4c-5hop) cases+=("$1"); shift ;;
	*) echo "profile.sh: unknown argument '$1' (cases: star-1hop k4-1hop k4-5hop k4c-5hop)" >&2; exit 2 ;;
	esac
done
[ ${#cases[@]} -gt 0 ] || cases=(star-1hop k4-1hop k4-5hop k4c-5hop)
case "$secs" in ''|*[!0-9]*) echo "profile.sh: --seconds wants a whole number (got '$secs')" >&2; exit 2 ;; esac
[ "$secs" -ge 1 ] && [ "$secs" -le 60 ] || { echo "profile.sh: --seconds must be 1..60 (got $secs)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "profile.sh: needs root (namespaces, BPF, perf -a)" >&2; exit 1; }

bash "$here/install-deps.sh" profile
q="$build/quench"
[ -x "$q" ] || { echo "profile.sh: no $q (build first: make build)" >&2; exit 1; }
command -v perf >/dev/null || { echo "profile.sh: perf missing after install" >&2; exit 1; }
q=$(cd "$(dirname "$q")" && pwd)/quench

work=$(mktemp -d /tmp/qnprof.XXXXXX)
[ -n "$out" ] || out="$work"
mkdir -p "$out"
topo=""
genpid=""
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	sysctl -q kernel.bpf_stats_enabled="$stats_was" || true
	if [ -n "$genpid" ]; then kill -INT "$genpid" 2>/dev/null || true; wait "$genpid" 2>/dev/null || true; fi
	if [ -n "$topo" ]; then "$q" topo down "$topo" >/dev/null 2>&1 || true; fi
	[ "$out" = "$work" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# The egress port of the switch facing HOST: "NETNS IFNAME" (from `topo show --detail`).
port_facing() {
	local t=$1 host=$2 show sw ifn ns
	show=$("$q" topo show "$t" --detail)
	read -r sw ifn < <(echo "$show" | sed -n "s/^  $host-eth0 .*-> \([^:]*\):\([^ ]*\) .*/\1 \2/p")
	ns=$(echo "$show" | sed -n "s/^switch $sw  netns \([^ ]*\).*/\1/p")
	[ -n "$ns" ] && [ -n "$ifn" ] || { echo "profile.sh: no switch port faces $host in $t" >&2; return 1; }
	echo "$ns $ifn"
}
tx_packets() { # NETNS IFNAME
	ip -n "$1" -s -j link show "$2" | jq '.[0].stats64.tx.packets'
}
bpf_snapshot() { # name run_time_ns run_cnt, summed over the programs of that name
	bpftool prog show -j | jq -r '[.[] | select(.name != null and (.name | startswith("qn_")))]
		| group_by(.name)[] | "\(.[0].name) \(map(.run_time_ns // 0) | add) \(map(.run_cnt // 0) | add)"'
}

summary="$out/summary.tsv"
: >"$summary"
for c in "${cases[@]}"; do
	topo="qnpf$(printf '%06d' $(((RANDOM * 32768 + RANDOM) % 1000000)))"
	case "$c" in
	star-1hop)
		printf 'name %s\ndefaults rate=100Gbps mtu=2048 delay=1us buffer=32MB\nswitch tor\nhost h[1..8]\nlink h[1..8] tor\n' \
			"$topo" >"$work/$c.topo"
		src=h1 dst=h2 ;;
	k4-1hop) "$q" topo fattree --k 4 --fabric-delay 0 --name "$topo" -o "$work/$c.topo"; src=h1 dst=h2 ;;
	k4-5hop) "$q" topo fattree --k 4 --fabric-delay 0 --name "$topo" -o "$work/$c.topo"; src=h1 dst=h16 ;;
	k4c-5hop) "$q" topo fattree --k 4 --fabric-delay 1us --name "$topo" -o "$work/$c.topo"; src=h1 dst=h16 ;;
	esac
	"$q" topo up "$work/$c.topo" >/dev/null
	read -r dns dif < <(port_facing "$topo" "$dst")
	read -r ans aif < <(port_facing "$topo" "$src")
	swd=$(cat "/run/quench/$topo.switchd.pid")
	# Long enough for the warm-up and both windows; stopped with SIGINT once they are done.
	"$q" gen "$topo" --pattern long --senders "$src" --dst "$dst" --size 1000GB --cc none \
		--timeout "$((2 * secs + 30))s" ${shards:+--shards "$shards"} >"$work/$c.gen.txt" 2>&1 &
	genpid=$!
	engpid=$genpid
	d0=$(tx_packets "$dns" "$dif")
	for _ in $(seq 1 100); do # the engine's open: at most 10 s
		sleep 0.1
		[ "$(tx_packets "$dns" "$dif")" != "$d0" ] && break
	done
	[ "$(tx_packets "$dns" "$dif")" != "$d0" ] || { echo "profile.sh: $c: no data reached $dst in 10 s" >&2; exit 1; }
	sleep 1 # warm-up
	d1=$(tx_packets "$dns" "$dif"); a1=$(tx_packets "$ans" "$aif")
	perf record -q -a -g -e cpu-clock -c 100000 -o "$work/$c.perf.data" -- sleep "$secs" 2>/dev/null
	d2=$(tx_packets "$dns" "$dif"); a2=$(tx_packets "$ans" "$aif")
	# The BPF programs' own statistics, in a window of their own (they cost time themselves).
	sysctl -q kernel.bpf_stats_enabled=1
	bpf_snapshot >"$work/$c.bpf0"
	d3=$(tx_packets "$dns" "$dif")
	sleep "$secs"
	bpf_snapshot >"$work/$c.bpf1"
	d4=$(tx_packets "$dns" "$dif")
	sysctl -q kernel.bpf_stats_enabled="$stats_was"
	kill -INT "$genpid" 2>/dev/null || true
	wait "$genpid" 2>/dev/null || true
	genpid=""
	"$q" topo down "$topo" >/dev/null
	topo=""

	data=$((d2 - d1)) acks=$((a2 - a1))
	[ "$data" -gt 0 ] || { echo "profile.sh: $c: no data packets in the window" >&2; exit 1; }
	perf script -i "$work/$c.perf.data" -F comm,pid,tid,period,ip,sym 2>/dev/null |
		awk -v engine="$engpid" -v switchd="$swd" -f "$here/profile-stages.awk" >"$work/$c.stages"
	echo "$c data $data acks $acks secs $secs bpf_data $((d4 - d3))" >>"$summary"
	awk -F'\t' -v c="$c" -v data="$data" '{ printf "%s\t%s\t%d\t%.1f\n", c, $1, $2, $3 / data }' "$work/$c.stages" >>"$out/stages.tsv"
	join <(sort "$work/$c.bpf0") <(sort "$work/$c.bpf1") |
		awk -v c="$c" -v data="$((d4 - d3))" '{ dt = $4 - $2; dn = $5 - $3; if (dn > 0) printf "%s\t%s\t%.2f\t%.1f\t%.1f\n", c, $1, dn / data, dt / dn, dt / data }' \
		>>"$out/bpf.tsv"
done

# The table: ns of CPU per data packet (with its ACK) by stage, one column per case.
awk -F'\t' '
FNR == NR { split($0, w, " "); pk[w[1]] = w[3] / w[7]; order[++nc] = w[1]; next }
{ v[$2, $1] = $4; if (!($2 in seen)) { seen[$2] = 1; st[++ns] = $2 }; if ($2 != "idle") busy[$1] += $4 }
END {
	printf "| stage |"; for (i = 1; i <= nc; i++) printf " %s |", order[i]; printf "\n|---|"
	for (i = 1; i <= nc; i++) printf "---:|"; printf "\n"
	for (j = 1; j <= ns; j++) {
		if (st[j] == "idle") continue
		printf "| %s |", st[j]
		for (i = 1; i <= nc; i++) printf " %.0f |", v[st[j], order[i]]
		printf "\n"
	}
	printf "| **busy CPU, ns per data packet** |"; for (i = 1; i <= nc; i++) printf " **%.0f** |", busy[order[i]]; printf "\n"
	printf "| data packets per second |"; for (i = 1; i <= nc; i++) printf " %.0f |", pk[order[i]]; printf "\n"
}' "$summary" <(sort -t$'\t' -k1,1 -k3,3nr "$out/stages.tsv") | tee "$out/table.md"
echo
echo "BPF programs (kernel.bpf_stats_enabled window): case, program, runs per data packet, ns per run, ns per data packet"
column -t -s$'\t' "$out/bpf.tsv"
echo "profile.sh: files in $out"
