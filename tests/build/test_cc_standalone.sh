#!/usr/bin/env bash
# build: the CC library stands alone. qn_cc_only links only quench_cc and the base library; its
# link line (CMake's link.txt) and its dynamic dependencies name no kernel library (libbpf,
# libxdp, liburing), and it runs: every named scheme builds and reacts to a CNP, the reference
# model delivers every byte. Negative control: the same check on the quench binary's link line
# finds libbpf (the check can fail).
# usage: test_cc_standalone.sh BUILD_DIR QN_CC_ONLY_BIN
set -euo pipefail
build=$1 bin=$2
fail() { echo "FAIL build_cc_standalone: $*"; exit 1; }
source "$(dirname "$0")/lib.sh"
kernel_libs() { { grep -oE "lib(bpf|xdp|uring)[^ ]*|-l(bpf|xdp|uring)\b" "$1" || true; } | sort -u | tr '\n' ' '; }
link=$(link_line "$build" qn_cc_only)
[ -n "$link" ] || fail "no link command for qn_cc_only under $build"
libs=$(kernel_libs "$link")
[ -z "$libs" ] || fail "qn_cc_only links kernel libraries: $libs"
dyn=$(ldd "$bin" | grep -E "libbpf|libxdp|liburing" || true)
[ -z "$dyn" ] || fail "qn_cc_only depends on: $dyn"
# the negative control: the engine's binary does link them
qlink=$(link_line "$build" quench)
[ -n "$qlink" ] || fail "no link command for quench under $build"
[ -n "$(kernel_libs "$qlink")" ] || fail "the check found no kernel library in quench's link line either: it cannot fail"
"$bin" || fail "qn_cc_only failed"
# (what the CC library includes is checked by test_layering.sh)
echo "PASS build_cc_standalone: qn_cc_only links without libbpf, libxdp and liburing (quench links $(kernel_libs "$qlink")) and runs"
