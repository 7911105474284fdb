#!/usr/bin/env bash
# Install, through apt-get, what one purpose of quench uses (docs/building.md "Dependencies"):
#   install-deps.sh run    the build of the CLI and BPF objects and `make run` (the default)
#   install-deps.sh test   run's packages plus the test suite's: Catch2, probes, and the VM
#                          kernels' tools (QEMU, busybox) and Soft-RoCE's (rdma-core, perftest)
#   install-deps.sh profile  run's packages plus perf (scripts/profile.sh)
# Idempotent: when every package is present this is a fast no-op (one dpkg-query).
# Package sources come from the machine's own apt configuration; nothing here names a host.
set -euo pipefail

RUN_PKGS=(
	# build: the CLI, the libraries and the BPF objects
	cmake make ninja-build g++ clang llvm pkg-config
	libbpf-dev libxdp-dev libelf-dev zlib1g-dev liburing-dev
	bpftool
	libcli11-dev
	# netlink for the pause gate (switchd, tcgate.cc)
	libmnl-dev
	# JSON output (`--format json`): header-only
	nlohmann-json3-dev
	# what `quench run` executes: ip and tc, and the plots of a results folder
	iproute2 procps gnuplot-nox
)
TEST_PKGS=(
	# the unit and BPF test binaries
	catch2
	# netns tests: probes, and JSON read with jq
	iputils-ping tcpdump ethtool jq
	# kernels in VMs (scripts/vmtest.sh) and Soft-RoCE inside them
	qemu-system-x86 busybox-static cpio kmod xz-utils zstd
	rdma-core ibverbs-utils libibverbs-dev perftest rdmacm-utils
)

PROFILE_PKGS=(
	# scripts/profile.sh: system-wide sampling (Debian 12's perf 6.1) and JSON from ip/bpftool
	linux-perf jq
)

case "${1:-run}" in
run) PKGS=("${RUN_PKGS[@]}") ;;
profile) PKGS=("${RUN_PKGS[@]}" "${PROFILE_PKGS[@]}") ;;
test) PKGS=("${RUN_PKGS[@]}" "${TEST_PKGS[@]}") ;;
*) echo "install-deps: usage: $0 [run|test|profile] (got '$1')" >&2; exit 2 ;;
esac

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
	echo "install-deps: run as root (or: sudo $0 ${1:-run})" >&2
	exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Try with the current package lists first; refresh them only if that fails.
if ! apt-get install -y --no-install-recommends "${missing[@]}"; then
	apt-get update
	apt-get install -y --no-install-recommends "${missing[@]}"
fi
