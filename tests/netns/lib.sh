# lib.sh - shared helpers for quench's netns integration tests (sourced).
#
# Every test gets a unique topology name (so namespaces qn-<name>-*, pins and state files are
# its own), a temporary directory, and a trap that removes all of it and kills its background
# processes on any exit, including failures. Exit 77 means "skipped" (ctest SKIP_RETURN_CODE).
set -euo pipefail

QUENCH=${1:?usage: test.sh QUENCH_BIN QN_TRAFFIC_BIN}
TRAFFIC=${2:?usage: test.sh QUENCH_BIN QN_TRAFFIC_BIN}
TEST_NAME=$(basename "$0" .sh)
# [a-z0-9]{1,12}: 't' + 5 digits of pid + 4 random hex digits
TOPO_NAME=$(printf 't%05d%04x' $(($$ % 100000)) $((RANDOM % 65536)))
WORK=$(mktemp -d "/tmp/quench-${TEST_NAME}.XXXXXX")
BG_PIDS=()

skip() {
	echo "SKIP ${TEST_NAME}: $*"
	exit 77
}
fail() {
	echo "FAIL ${TEST_NAME}: $*" >&2
	exit 1
}
pass() {
	echo "PASS ${TEST_NAME}: $*"
}

cleanup() {
	local rc=$?
	for p in "${BG_PIDS[@]:-}"; do
		[ -n "$p" ] && kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	# By name, not by file: write_topo runs inside $(...), a subshell, so it cannot record
	# anything for this trap; everything a test brings up is named after TOPO_NAME.
	"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null 2>&1 || true
	# and any other topology named after it (a test that runs a second one, e.g. ${TOPO_NAME}b)
	local t
	for t in $("$QUENCH" topo show 2>/dev/null | sed -n "s/^topology \(${TOPO_NAME}[a-z0-9]*\) .*/\1/p"); do
		"$QUENCH" topo down --name "$t" >/dev/null 2>&1 || true
	done
	rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

[ "$(id -u)" -eq 0 ] || skip "needs root (namespaces, tc, BPF)"
for tool in ip tc; do
	command -v "$tool" >/dev/null || skip "missing $tool"
done

# write_topo BODY: write a topology file named after this test (the EXIT trap removes
# whatever runs under that name). Return (stdout): the file path.
write_topo() {
	local f="$WORK/${TOPO_NAME}.topo"
	{
		echo "name ${TOPO_NAME}"
		printf '%s\n' "$1"
	} >"$f"
	echo "$f"
}

ns() { echo "qn-${TOPO_NAME}-$1"; }

# vm_or IN_VM OUTSIDE: the first value under emulation (QN_IN_VM set), else the second.
vm_or() { if [ -n "${QN_IN_VM:-}" ]; then echo "$1"; else echo "$2"; fi; }

# write_dumbbell BOTTLENECK [MTU] [HOST_RATE] [BUFFER]: the dumbbell (h1, h2 on s1; h3, h4 on
# s2) with the s1-s2 link at BOTTLENECK. The s1-s2 link has no propagation delay: a delayed
# switch link is a cable that only carries traffic while an engine serves it, and these
# switch tests drive raw frames without an engine. Return (stdout): the file path.
write_dumbbell() {
	write_topo "defaults rate=${3:-10Gbps} mtu=${2:-2048} delay=1us buffer=${4:-12MB}
switch s1
switch s2
host h1
host h2
host h3
host h4
link h1 s1
link h2 s1
link s1 s2 rate=$1 delay=0ns
link s2 h3
link s2 h4"
}

# Background a command, remember its pid for cleanup. Output goes to $WORK/<label>.out.
bg() {
	local label=$1
	shift
	"$@" >"$WORK/$label.out" 2>&1 &
	BG_PIDS+=($!)
	eval "PID_${label}=$!"
}

# Field value from "key=value" output: field FILE KEY [LINE_PATTERN]
field() {
	local pat=${3:-.}
	grep -E "$pat" "$1" | head -1 | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}

# Host facts from this test's running topology (quench topo show $TOPO_NAME; other topologies
# may be up on the machine).
host_ip() { "$QUENCH" topo show "$TOPO_NAME" --detail | awk -v n="$1" '$1=="host" && $2==n {print $6}' | head -1; }
gw_mac() {
	# MAC of the switch port the host is attached to
	local peer
	peer=$("$QUENCH" topo show "$TOPO_NAME" --detail | awk -v n="$1" '$1=="host" && $2==n {getline; print $7}' | head -1)
	local sw=${peer%%:*} port=${peer#*:}
	"$QUENCH" topo show "$TOPO_NAME" --detail | awk -v p="$port" '$1==p {print $5}' | head -1
}

# engine_bg LABEL [ARGS...]: run `quench engine TOPO_NAME ARGS` in the background (serving the
# topology's hosts and cables) and wait until it is serving.
engine_bg() {
	local label=$1
	shift
	bg "$label" "$QUENCH" engine "$TOPO_NAME" "$@"
	local i
	for i in $(seq 100); do
		grep -q "serving" "$WORK/$label.out" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "engine did not start: $(cat "$WORK/$label.out")"
}

# up_auto FILE [topo up options]: bring FILE up at the D this machine needs for it (`topo up
# --dilation auto`: every host at line rate at once, docs/experiments.md "Dilation and
# calibration"), not at a constant D. Sets D (an integer); prints the paced checks.
up_auto() {
	local j
	j=$("$QUENCH" topo up "$@" --dilation auto --format json 2>"$WORK/up_auto.txt") ||
		fail "topo up --dilation auto: $(tail -3 "$WORK/up_auto.txt")"
	D=$(jq '.dilation | ceil' <<<"$j")
	echo "topo up --dilation auto: D=$D ($(jq -c '[.calibration.paced[] | {d, busy: (.busy_frac * 1000 | round / 1000), pass_frames: (.pass_p90_wall_ns / .frame_wall_ns * 100 | round / 100)}]' <<<"$j"))"
}

# holds EXPR: a comparison of numbers evaluated by jq, e.g. holds "$mean >= 9.0"; exit 0 when
# true (results are read from JSON with jq; no awk re-derives them).
holds() { jq -en "$1" >/dev/null; }

# machine_stalls GEN_OUTPUT: after no attempt came out VALID, measure whether this machine
# itself stops bare spinning loops past the engine's stall threshold (read from the engine's
# health report in GEN_OUTPUT, text or `gen --format json`) at least every other second. One loop per CPU: during a run every
# CPU is busy (the engine on one, the kernel's datapath on the others), and an idle CPU would
# absorb the background work that stops a loop then (measured: 0 gaps over 733 us in 4 s with
# one loop, 1-3.5 per second with two, on this 2-CPU VM). Sets STALLS (a sentence for the
# skip or fail message). Return: 0 if it does (a VALID run of a few seconds is improbable
# here: the machine is at fault), 1 if the machine is quiet (the engine is).
# The gap measured is the engine's stall threshold or, when shorter, the switches' fidelity
# credit (one largest frame at the slowest port's wall rate, qn_fid.credit_wall_ns of this
# test's topology): a stop longer than one frame and shorter than the stall threshold (334 us and
# 734 us on the star at D = 200) is no engine stall, yet the switches' monitors count the lost
# link time and the catch-up after it, and the run comes out INVALID (measured 2026-11-27: the
# c7ef1ad build INVALID on the star at D = 200 in two of two runs with 1.3-1.4% fast windows,
# while `jitter` saw 4.7 stops a second over 500 us and none over the stall threshold; the
# check at the threshold alone called such a machine quiet and failed the test).
# window_touched JSON UPTO: true when at least 1% of the run's first UPTO ns (fabric, from t0) lay
# in affected periods (gen's `affected`): the bound at which a flow is tagged (fidelity.h),
# applied to a timing check's window; sets TOUCHED to the periods that met it (for the message).
# A period of a few ns (a switch link that lost a fraction of a frame) moves nothing the window
# measures and does not count against it alone.
window_touched() {
	TOUCHED=$(jq -c --argjson upto "$2" '[.affected[] | select(.[0] < $upto)]' <<<"$1")
	jq -e --argjson upto "$2" '[.affected[] | select(.[0] < $upto) | ([.[1], $upto] | min) - .[0]] | add // 0 | . >= 0.01 * $upto' <<<"$1" >/dev/null
}

machine_stalls() {
	local thr jit rate credit
	if [ "${1:0:1}" = "{" ]; then
		thr=$(jq .stall_threshold_wall_ns <<<"$1")
	else
		thr=$(sed -n 's/.*stalls [0-9]* (threshold \([0-9]*\) ns wall.*/\1/p' <<<"$1")
	fi
	credit=$(for m in /sys/fs/bpf/quench/"$TOPO_NAME"/*/qn_fid; do
		[ -e "$m" ] && bpftool -j map dump pinned "$m" 2>/dev/null
	done | jq -s '[.[][] | (.formatted // .).value.credit_wall_ns | select(. > 0)] | min // empty')
	[ -n "$credit" ] && holds "$credit < $thr" && thr=$credit
	jit=$("$QUENCH" jitter --seconds 4 --gap-us $((thr / 1000)) --threads "$(nproc)")
	echo "$jit"
	rate=$(sed -n 's/.* (\([0-9.]*\) per second.*/\1/p' <<<"$jit")
	STALLS="this machine (every CPU busy) stops a spinning loop for over $((thr / 1000)) us $rate times a second ($jit)"
	holds "$rate >= 0.5"
}
