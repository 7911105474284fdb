#!/usr/bin/env bash
# run-vm.sh KERNEL_DIR WORK COMMAND_FILE [CWD]: boot that kernel under QEMU (KVM when usable,
# TCG otherwise) with the host root shared read-only, WORK shared read-write and the kernel's
# modules shared, no network card; run COMMAND_FILE (bash) inside with CWD as working folder.
# Folders listed in QN_VM_SHARES (space-separated) are shared read-only too and mounted at
# the same path in the guest, after its tmpfs mounts: a project cloned under /tmp stays
# visible. Exits with the command's exit code; WORK/console.log is the console, WORK/output.log the
# command's output. A VM that does not power off within QN_VM_TIMEOUT seconds (default 1200)
# is killed and the run fails. A guest that dies before its init script starts (a kernel panic
# while booting, before any quench code: seen in the backports kernel under TCG), or whose kernel
# dies on an "Oops: int3" (a breakpoint trap in kernel text: the kernel was patching that
# instruction, and multi-threaded TCG ran the stale breakpoint on the other vCPU; see
# docs/kernel-ci.md "A kernel panic under TCG"), is booted once more and the command run again
# from the start; the reboot is printed and counted in WORK/reboots: an unmet precondition, not
# a result. Any other death of the guest after its init started is a failure, never retried.
set -euo pipefail
KDIR=${1:?usage: run-vm.sh KERNEL_DIR WORK COMMAND_FILE [CWD]}
WORK=${2:?}
CMD=${3:?}
CWD=${4:-$(pwd)}
HERE=$(cd "$(dirname "$0")" && pwd)
VER=$(cat "$KDIR/version")

command -v qemu-system-x86_64 >/dev/null || { echo "run-vm: qemu-system-x86 is not installed" >&2; exit 2; }
initrd="$KDIR/../.initramfs-$(basename "$KDIR").img"
if [ ! -f "$initrd" ] || [ "$HERE/make-initramfs.sh" -nt "$initrd" ]; then
	"$HERE/make-initramfs.sh" "$KDIR" "$initrd" >/dev/null
fi

mkdir -p "$WORK/kernel"
cp "$HERE/guest-init.sh" "$WORK/guest-init.sh"
cp "$CMD" "$WORK/command"
echo "$CWD" >"$WORK/cwd"
rm -f "$WORK/exit-code" "$WORK/output.log"
shares=()
: >"$WORK/shares"
i=0
for p in ${QN_VM_SHARES:-}; do
	[ -d "$p" ] || continue
	i=$((i + 1))
	shares+=(-virtfs "local,path=$p,mount_tag=qnshare$i,security_model=none,readonly=on,multidevs=remap")
	echo "qnshare$i $p" >>"$WORK/shares"
done

# KVM only where it really works: a writable /dev/kvm, hardware virtualisation flags, and not
# the PVM host module these machines have (QEMU aborts or the guest dies early there).
accel="tcg,thread=multi"
cpu="max"
if [ -w /dev/kvm ] && grep -q -E '\b(vmx|svm)\b' /proc/cpuinfo && [ ! -d /sys/module/kvm_pvm ]; then
	accel=kvm
	cpu=host
fi
echo "$accel" >"$WORK/accel"

boot() {
	timeout --foreground -k 10 "${QN_VM_TIMEOUT:-1200}" qemu-system-x86_64 \
		-accel "$accel" -cpu "$cpu" -smp 2 -m 2048 \
		-nographic -no-reboot -monitor none -serial stdio \
		-kernel "$KDIR/boot/vmlinuz-$VER" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 loglevel=3 quiet$extra" \
		-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
		-virtfs "local,path=$WORK,mount_tag=work,security_model=none,multidevs=remap" \
		-virtfs "local,path=$KDIR,mount_tag=kernel,security_model=none,readonly=on,multidevs=remap" \
		"${shares[@]}" \
		-nic none </dev/null >"$WORK/console.log" 2>&1
}

echo 0 >"$WORK/reboots"
for attempt in 1 2; do
	rm -f "$WORK/started"
	# QN_VM_FAIL_FIRST_BOOT=1 (a check of this loop): the first boot runs a missing init, so the
	# kernel panics before init, as the backports kernel once did by itself.
	extra=""
	[ "${QN_VM_FAIL_FIRST_BOOT:-0}" = 1 ] && [ "$attempt" -eq 1 ] && extra=" rdinit=/qn-no-such-init"
	qrc=0
	boot || qrc=$?
	# 124: the timeout killed it; a boot that hangs is not retried (it would cost the timeout twice).
	[ ! -f "$WORK/exit-code" ] && [ "$qrc" -ne 124 ] && [ "$attempt" -eq 1 ] || break
	if [ ! -f "$WORK/started" ]; then
		why="the guest died before its init started (QEMU exit $qrc)"
	elif grep -a -q 'Oops: int3' "$WORK/console.log"; then
		why="the guest kernel died on a breakpoint in its own text ($(grep -m1 -a -o 'Oops: int3.*' "$WORK/console.log" || true), at $(grep -m1 -a -o 'RIP: 0010:[^ ]*' "$WORK/console.log" || echo 'no kernel RIP')): code patching under TCG)"
	else
		break
	fi
	mv "$WORK/console.log" "$WORK/console-boot$attempt.log"
	[ -f "$WORK/output.log" ] && mv "$WORK/output.log" "$WORK/output-boot$attempt.log"
	rm -rf "$WORK/logs" "$WORK/results.txt" "$WORK/times.txt"
	echo "$attempt" >"$WORK/reboots"
	echo "run-vm: INCONCLUSIVE boot: $why; booting once more and running the command again; console tail:" >&2
	tail -8 "$WORK/console-boot$attempt.log" >&2
done

if [ ! -f "$WORK/exit-code" ]; then
	echo "run-vm: the VM ended without an exit code (timeout or crash); console:" >&2
	tail -30 "$WORK/console.log" >&2
	exit 3
fi
exit "$(cat "$WORK/exit-code")"
