#!/usr/bin/env bash
# Install everything quench's build, tests and `make run` use, through apt-get.
# Idempotent: when every package is present this is a fast no-op (one dpkg-query).
# Package sources come from the machine's own apt configuration; nothing here names a host.
set -euo pipefail

PKGS=(
	# build
	cmake make g++ clang llvm pkg-config
	libbpf-dev libxdp-dev libelf-dev zlib1g-dev liburing-dev
	bpftool xdp-tools
	libcli11-dev
	# netlink for the pause gate (switchd, tcgate.cc)
	libmnl-dev
	# JSON output (`--format json`, issue 16): header-only
	nlohmann-json3-dev
	# tests
	catch2 iproute2 iputils-ping tcpdump ethtool procps
	# the tests read JSON output with jq
	jq
	# results and plots (issue 7 uses it; installed now so `make run` never fetches mid-run)
	gnuplot-nox
	# kernels in VMs (scripts/vmtest.sh) and Soft-RoCE inside them
	qemu-system-x86 busybox-static cpio kmod xz-utils zstd
	rdma-core ibverbs-utils libibverbs-dev perftest rdmacm-utils
)

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: run as root (or: sudo $0)" >&2
	exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Try with the current package lists first; refresh them only if that fails.
if ! apt-get install -y --no-install-recommends "${missing[@]}"; then
	apt-get update
	apt-get install -y --no-install-recommends "${missing[@]}"
fi
