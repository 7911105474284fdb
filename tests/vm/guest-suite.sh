#!/usr/bin/env bash
# guest-suite.sh BUILD [TIER]: the kernel-dependent part of quench's tests, run inside a VM
# kernel (scripts/vmtest.sh boots it). Writes one line per test to /mnt/results.txt:
#   NAME pass|fail|skip REASON
# its time to /mnt/times.txt (NAME SECONDS) and each test's output to /mnt/logs/NAME.log.
# Tests with timing assertions are not run under emulation (TCG is slow and jittery); they are
# listed as skipped with that reason.
# TIER (docs/testing.md "Tiers"): `ci` (what `make test` runs in the 6.1 guest: what only
# that kernel can show: the verifier and BPF_PROG_TEST_RUN on its BPF, the switch's and the
# engine's datapath on its veth, tc and AF_XDP, and the Soft-RoCE agent on its rxe) or `all`
# (`make vmtest`: also the tests whose code paths the host kernel already covers: the unit
# tests, topology lifecycle, queue depth, PFC, mirror, engine signals; and agent_pause, which
# `make test` runs in the backports guest).
set -uo pipefail
BUILD=${1:?usage: guest-suite.sh BUILD [ci|all]}
TIER=${2:-all}
case $TIER in ci | all) ;; *) echo "guest-suite: TIER must be ci or all, got '$TIER'" >&2; exit 2 ;; esac
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${QN_VM_OUT:-/mnt}
mkdir -p "$OUT/logs"
: >"$OUT/results.txt"
: >"$OUT/times.txt"

record() { echo "$1 $2 ${3:-}" >>"$OUT/results.txt"; echo "== $1: $2 ${3:-}"; }

# run_test NAME CMD...: exit 0 pass, 77 skip (reason: the SKIP line), else fail (reason: last line).
run_test() {
	local name=$1
	shift
	local log="$OUT/logs/$name.log" rc=0 t0=$SECONDS
	timeout 900 "$@" >"$log" 2>&1 || rc=$?
	echo "$name $((SECONDS - t0))" >>"$OUT/times.txt"
	case $rc in
	0) record "$name" pass ;;
	77) record "$name" skip "$(grep -h -m1 'SKIP' "$log" | sed 's/^SKIP [^:]*: //' | tr ' ' '_')" ;;
	*) record "$name" fail "$(grep -v '^\s*$' "$log" | tail -1 | cut -c1-120 | tr ' ' '_')" ;;
	esac
}
# all_only NAME CMD...: run_test in the `all` tier; in `ci`, listed as run by `make vmtest`
all_only() {
	if [ "$TIER" = all ]; then run_test "$@"; else record "$1" skip "make_vmtest_only_(the_host_kernel_runs_it)"; fi
}

G="$BUILD/gen"
run_test verifier_gate "$BUILD/tests/qn_verifier_gate" "$G/qn_switch.bpf.o" "$G/qn_bare.bpf.o" "$G/qn_steer.bpf.o" "$G/qn_rxe.bpf.o"
run_test verifier_gate_rejects_broken "$BUILD/tests/qn_verifier_gate" --expect-fail "$G/qn_broken_fixture.bpf.o"
all_only unit "$BUILD/tests/qn_unit_tests"
# Every table but the fixture's own check that a reused object starts as a fresh load (a test of
# the test harness, 12 s of the guest's 39; the host kernel's run keeps it); each case's time in
# the log.
run_test bpf_prog_test_run "$BUILD/tests/qn_bpf_tests" "~switch_fixture__a_reused_object_starts_as_a_fresh_load" --durations yes
run_test netns_forward_dumbbell bash "$ROOT/tests/netns/test_forward_dumbbell.sh" "$BUILD/quench" "$BUILD/qn_traffic"
all_only netns_topo_lifecycle bash "$ROOT/tests/netns/test_topo_lifecycle.sh" "$BUILD/quench" "$BUILD/qn_traffic"
all_only netns_queue_depth bash "$ROOT/tests/netns/test_queue_depth.sh" "$BUILD/quench" "$BUILD/qn_traffic"
all_only netns_pfc bash "$ROOT/tests/netns/test_pfc.sh" "$BUILD/quench" "$BUILD/qn_traffic"
all_only netns_mirror bash "$ROOT/tests/netns/test_mirror.sh" "$BUILD/quench" "$BUILD/qn_traffic"
run_test netns_engine_star bash "$ROOT/tests/netns/test_engine_star.sh" "$BUILD/quench" "$BUILD/qn_traffic"
all_only netns_engine_signals bash "$ROOT/tests/netns/test_engine_signals.sh" "$BUILD/quench" "$BUILD/qn_traffic"
record netns_engine_cable skip "RTT_within_10%_is_a_timing_assertion;_not_run_under_emulation"
record netns_engine_pfc skip "wall-clock_pause_windows_are_not_asserted_under_emulation"
record netns_engine_validity skip "validity_thresholds_are_wall-clock;_not_run_under_emulation"
record netns_ecn skip "needs_line-rate_floods_to_hold_two_queue_levels;_not_run_under_emulation"
record netns_htb_rate skip "timing_assertions_(rates_within_2%)_are_not_run_under_emulation"
record netns_control_class skip "timing_assertions_(delay_ratios)_are_not_run_under_emulation"
# rxe alone (no quench): in `ci` the agent test runs rxe through a quench switch
# (ibv_rc_pingpong, ib_write_bw); this one tells, in `make vmtest`, whether a failure there is
# rxe's own (11 s of the 6.1 guest)
if [ "$TIER" = all ]; then
	run_test rxe_smoke bash "$ROOT/tests/vm/test_rxe_smoke.sh"
else
	record rxe_smoke skip "make_vmtest_only_(the_agent_test_runs_rxe_in_ci)"
fi
run_test agent bash "$ROOT/tests/vm/test_agent.sh" "$BUILD/quench" "$BUILD/qn_traffic"
# PAUSE and BTS on rxe hosts: `make test` runs them in the backports guest (vm_backports_agent,
# rxe in namespaces); here the BPF tables (bpf_prog_test_run's [rxe]) show this kernel's
# programs holding a priority and a QP, and `agent` the initial-namespace layout
all_only agent_pause bash "$ROOT/tests/vm/test_agent_pause.sh" "$BUILD/quench" "$BUILD/qn_traffic"
! grep -q ' fail' "$OUT/results.txt"
