#!/usr/bin/env bash
# make-initramfs.sh KERNEL_DIR OUT: a busybox initramfs that loads the 9p/virtio modules of
# that kernel, mounts the host's root (9p, read-only), the run's work share and the kernel's
# modules, and switch_roots into the host root to run /mnt/guest-init.sh (scripts/vm/guest-init.sh).
set -euo pipefail
KDIR=${1:?usage: make-initramfs.sh KERNEL_DIR OUT}
OUT=${2:?usage: make-initramfs.sh KERNEL_DIR OUT}
VER=$(cat "$KDIR/version")
BUSYBOX=$(command -v busybox || true)
[ -x /bin/busybox ] && BUSYBOX=/bin/busybox
[ -n "$BUSYBOX" ] || { echo "make-initramfs: busybox-static is not installed" >&2; exit 1; }

tmp=$(mktemp -d /tmp/quench-initramfs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/mods" "$tmp/proc" "$tmp/sys" "$tmp/dev" "$tmp/newroot"
cp "$BUSYBOX" "$tmp/bin/busybox"

# Modules needed to reach the 9p shares, in dependency order (builtins are skipped).
n=0
while read -r kind path _; do
	[ "$kind" = insmod ] || continue
	n=$((n + 1))
	base=$(basename "$path")
	dst="$tmp/mods/$(printf '%02d' $n)-${base%%.ko*}.ko"
	case "$path" in
	*.ko.xz) xz -dc "$path" >"$dst" ;;
	*.ko.zst) zstd -qdc "$path" >"$dst" ;;
	*.ko.gz) gzip -dc "$path" >"$dst" ;;
	*) cp "$path" "$dst" ;;
	esac
done < <(modprobe -d "$KDIR" -S "$VER" -a --show-depends virtio_pci 9pnet_virtio 9p 2>/dev/null | awk '!seen[$0]++')

cat >"$tmp/init" <<'INIT'
#!/bin/busybox sh
B=/bin/busybox
$B mount -t proc proc /proc
$B mount -t sysfs sys /sys
$B mount -t devtmpfs dev /dev
for m in /mods/*.ko; do
	[ -e "$m" ] || continue
	$B insmod "$m" 2>/dev/null || echo "initramfs: insmod $m failed"
done
O=trans=virtio,version=9p2000.L,msize=524288
$B mount -t 9p -o $O,ro,cache=loose hostroot /newroot || { echo "initramfs: cannot mount hostroot"; $B poweroff -f; }
$B mount -t 9p -o $O work /newroot/mnt || { echo "initramfs: cannot mount work"; $B poweroff -f; }
$B mount -t 9p -o $O,ro kernel /newroot/mnt/kernel || { echo "initramfs: cannot mount kernel"; $B poweroff -f; }
$B mount --move /proc /newroot/proc
$B mount --move /sys /newroot/sys
$B mount --move /dev /newroot/dev
exec $B switch_root /newroot /bin/bash /mnt/guest-init.sh
INIT
chmod +x "$tmp/init"
(cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "$OUT"
