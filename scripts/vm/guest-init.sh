#!/bin/bash
# guest-init.sh: first process after switch_root inside the VM (PID 1). Gives the read-only
# host root the writable places a system needs, points module auto-loading at the guest
# kernel's modules, runs /mnt/command, stores its exit code and log in the work share, and
# powers off. Runs under the guest kernel; everything else comes from the host's root.
# /mnt/started first: run-vm.sh boots once more only a guest that died before this line.
: >/mnt/started
mount -t tmpfs -o mode=755 tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /var/tmp
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t bpf bpf /sys/fs/bpf
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
# Extra shares (the project and build folders) at their host paths, over the fresh tmpfs.
while read -r tag path; do
	[ -n "$tag" ] || continue
	mkdir -p "$path" 2>/dev/null
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=524288 "$tag" "$path" ||
		echo "guest: cannot mount share $tag on $path"
done </mnt/shares
# The host root has no /lib/modules for this kernel: modprobe -d /mnt/kernel finds them, and
# the kernel's own request_module() goes through this wrapper.
cat >/run/qn-modprobe <<'W'
#!/bin/sh
exec /sbin/modprobe -d /mnt/kernel "$@"
W
chmod +x /run/qn-modprobe
echo /run/qn-modprobe >/proc/sys/kernel/modprobe
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp QN_IN_VM=1 QN_VM_MODPROBE=/run/qn-modprobe
ip link set lo up
echo "guest: kernel $(uname -r), $(nproc) CPUs; running /mnt/command"
cd "$(cat /mnt/cwd)"
bash /mnt/command >/mnt/output.log 2>&1
echo $? >/mnt/exit-code
sync
/bin/busybox poweroff -f
