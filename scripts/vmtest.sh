#!/usr/bin/env bash
# vmtest.sh [--build DIR] [--tier ci|all] [KERNEL...]: run the kernel-dependent tests
# (tests/vm/guest-suite.sh, the tier `all` by default; `make test` runs `ci`) inside each kernel
# of scripts/vm/kernels.conf (all of them by default) under QEMU, and print a table kernel x
# test -> pass / fail / skip (reason), with each test's seconds. Logs: BUILD/vmtest/<kernel>/.
# Exit 1 when any test failed or a VM did not finish.
# vmtest.sh --run 'COMMAND' KERNEL: run one command (bash, from the project root) inside
# KERNEL instead, print its output and exit with its exit code.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="$ROOT/build"
kernels=()
run_cmd=""
tier=all

while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$(cd "$2" && pwd); shift 2 ;;
	--run) run_cmd=$2; shift 2 ;;
	--tier) tier=$2; shift 2 ;;
	-h | --help) sed -n '2,7p' "$0"; exit 0 ;;
	*) kernels+=("$1"); shift ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "SKIP vmtest: needs root (QEMU shares /, the guest runs BPF and namespaces)"; exit 77; }
# The project and build folders are shared explicitly: the guest mounts tmpfs over /tmp and
# /run, which would hide a clone living there.
export QN_VM_SHARES="$ROOT"
case "$BUILD/" in "$ROOT"/*) ;; *) QN_VM_SHARES="$ROOT $BUILD" ;; esac
if [ -n "$run_cmd" ]; then
	[ ${#kernels[@]} -eq 1 ] || { echo "vmtest: --run needs exactly one KERNEL" >&2; exit 2; }
	layout=$(awk -v n="${kernels[0]}" '$1 == n {print $4}' "$ROOT/scripts/vm/kernels.conf")
	kdir=$("$ROOT/scripts/vm/fetch-kernel.sh" "${kernels[0]}")
	work=$(mktemp -d /tmp/quench-vm.XXXXXX)
	trap 'rm -rf "$work"' EXIT
	printf 'export QN_RXE_LAYOUT=%s\n%s\n' "${layout:-netns}" "$run_cmd" >"$work/cmd.sh"
	rc=0
	"$ROOT/scripts/vm/run-vm.sh" "$kdir" "$work" "$work/cmd.sh" "$ROOT" || rc=$?
	cat "$work/output.log" 2>/dev/null || tail -20 "$work/console.log"
	reboots=$(cat "$work/reboots" 2>/dev/null || echo 0)
	[ "$reboots" -eq 0 ] || echo "vmtest: $reboots boot(s) of ${kernels[0]} died (before the guest's init, or on a breakpoint the kernel was patching) and were repeated (inconclusive boots, not results)"
	exit $rc
fi
if [ ${#kernels[@]} -eq 0 ]; then
	mapfile -t kernels < <(awk '!/^#/ && NF {print $1}' "$ROOT/scripts/vm/kernels.conf")
fi
for b in quench qn_traffic tests/qn_unit_tests tests/qn_bpf_tests tests/qn_verifier_gate; do
	[ -x "$BUILD/$b" ] || { echo "vmtest: $BUILD/$b is missing: build first (make)" >&2; exit 1; }
done

rm -rf "$BUILD/vmtest"
mkdir -p "$BUILD/vmtest"
status=0
for k in "${kernels[@]}"; do
	layout=$(awk -v n="$k" '$1 == n {print $4}' "$ROOT/scripts/vm/kernels.conf")
	kdir=$("$ROOT/scripts/vm/fetch-kernel.sh" "$k") || { echo "vmtest: cannot fetch kernel $k" >&2; status=1; continue; }
	work=$(mktemp -d /tmp/quench-vm.XXXXXX)
	cat >"$work/cmd.sh" <<CMD
export QN_RXE_LAYOUT=${layout:-netns}
bash "$ROOT/tests/vm/guest-suite.sh" "$BUILD" "$tier"
CMD
	start=$(date +%s)
	rc=0
	"$ROOT/scripts/vm/run-vm.sh" "$kdir" "$work" "$work/cmd.sh" "$ROOT" || rc=$?
	secs=$(($(date +%s) - start))
	dest="$BUILD/vmtest/$k"
	mkdir -p "$dest"
	cp -r "$work"/logs "$work"/console*.log "$work"/output.log "$work"/results.txt "$work"/times.txt "$work"/accel "$dest"/ 2>/dev/null || true
	reboots=$(cat "$work/reboots" 2>/dev/null || echo 0)
	echo "$(cat "$kdir/version") $(cat "$work/accel" 2>/dev/null) ${secs}s$([ "$reboots" -eq 0 ] || echo ", $reboots inconclusive boot(s) repeated: console-boot1.log")" >"$dest/kernel"
	rm -rf "$work"
	if [ ! -s "$dest/results.txt" ]; then
		echo "vmtest: kernel $k produced no results (exit $rc); console tail:" >&2
		tail -20 "$dest/console.log" >&2 || true
		echo "vm_boot fail no_results_(exit_$rc)" >"$dest/results.txt"
		status=1
	fi
	if grep -q ' fail' "$dest/results.txt"; then
		status=1
		for t in $(awk '$2 == "fail" {print $1}' "$dest/results.txt"); do
			# A Catch2 binary's failures (test case, file:line, expression, expansion) come
			# first: its last lines are only the summary and the cases that ran after them.
			if grep -q 'FAILED:' "$dest/logs/$t.log" 2>/dev/null; then
				echo "---- $k / $t (its first failures, from $dest/logs/$t.log)"
				grep -B14 -A8 -m3 'FAILED:' "$dest/logs/$t.log" || true
			fi
			echo "---- $k / $t (last 25 lines of $dest/logs/$t.log)"
			tail -25 "$dest/logs/$t.log" 2>/dev/null || true
		done
	fi
done

# The table: one row per test, one column per kernel.
{
	printf '%-30s' "test"
	for k in "${kernels[@]}"; do printf ' | %-34s' "$k ($(awk '{print $1}' "$BUILD/vmtest/$k/kernel" 2>/dev/null))"; done
	echo
	tests=$(cat "$BUILD"/vmtest/*/results.txt 2>/dev/null | awk '!seen[$1]++ {print $1}')
	for t in $tests; do
		printf '%-30s' "$t"
		for k in "${kernels[@]}"; do
			cell=$(awk -v t="$t" '$1 == t {s=$2; $1=""; $2=""; r=$0; gsub(/^ +/, "", r); gsub(/_/, " ", r); print s (r != "" ? " (" r ")" : ""); exit}' "$BUILD/vmtest/$k/results.txt" 2>/dev/null)
			secs=$(awk -v t="$t" '$1 == t {print $2 " s"; exit}' "$BUILD/vmtest/$k/times.txt" 2>/dev/null)
			cell="${cell:-not run}${secs:+, $secs}"
			printf ' | %-34s' "$cell"
		done
		echo
	done
	for k in "${kernels[@]}"; do echo "$k: $(cat "$BUILD/vmtest/$k/kernel" 2>/dev/null)"; done
} | tee "$BUILD/vmtest/table.txt"
exit $status
