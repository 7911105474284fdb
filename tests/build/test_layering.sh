#!/usr/bin/env bash
# build: the planes include and link only downwards (docs/building.md).
#  1. Includes name their plane; a file under transport/ includes only "transport/..." and
#     "common/..." headers (no "control/", "bench/" or "quench/" one, and no bare name that
#     could reach another plane's directory); a file under transport/cc/ only "transport/cc/",
#     "transport/pacer.h" and "common/"; a file under userspace/common/ only "common/".
#  2. qn_transport_only links quench_transport without the control plane (its link line names
#     no quench_control or quench_bench) and runs: an engine on a fabric described by hand, on
#     FakePorts, delivers a 1 MB message verified by content.
# Negative controls: the include check flags a planted file that includes "control/topology.h"
# and one with a bare "topology.h"; the link check finds quench_control in quench's link line.
# usage: test_layering.sh BUILD_DIR QN_TRANSPORT_ONLY_BIN   (from the source root)
set -euo pipefail
build=$1 bin=$2
fail() { echo "FAIL build_layering: $*"; exit 1; }
source "$(dirname "$0")/lib.sh"

# check_dir DIR ALLOWED_REGEX: print every quoted include under DIR (not below a subdirectory
# listed in SKIP) that does not match ALLOWED_REGEX.
check_dir() {
	local dir=$1 allowed=$2 skip=${3:-}
	find "$dir" \( -name '*.h' -o -name '*.cc' \) ${skip:+-not -path "$skip/*"} -print0 |
		xargs -0 grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' 2>/dev/null |
		grep -vE "#[[:space:]]*include[[:space:]]*\"($allowed)" || true
}
# qn_abi.h is the BPF ABI (bpf/include), shared by both sides; generated skeletons never here.
T_OK='transport/|common/|qn_abi\.h"'
CC_OK='transport/cc/|transport/pacer\.h"|common/|qn_abi\.h"'
# qn_version.h: the build's generated version header (cmake/version.cmake), included by
# common/version.cc alone
COMMON_OK='common/|qn_abi\.h"|qn_version\.h"'
bad=$(check_dir transport "$T_OK" transport/cc)
[ -z "$bad" ] || fail "transport/ includes headers of another plane:"$'\n'"$bad"
bad=$(check_dir transport/cc "$CC_OK")
[ -z "$bad" ] || fail "the CC library includes headers outside it and the base:"$'\n'"$bad"
bad=$(check_dir userspace/common "$COMMON_OK")
[ -z "$bad" ] || fail "the base library includes headers of another plane:"$'\n'"$bad"
# The Soft-RoCE agent: itself, the CC library, the wire codec and the base; never the engine or
# the control plane (it links quench_cc, quench_wire and libbpf only: checked below).
AGENT_OK='agent/|transport/cc/|transport/wire\.h"|common/|qn_abi\.h"'
bad=$(check_dir agent "$AGENT_OK")
[ -z "$bad" ] || fail "the agent includes headers outside the CC library, the wire codec and the base:"$'\n'"$bad"

# negative control: planted files are flagged
tmp=$(mktemp -d /tmp/qn-layering.XXXXXX)
trap 'rm -rf "$tmp" "$QN_LINK_TMP"' EXIT
printf '#include "transport/engine.h"\n#include "control/topology.h"\n' >"$tmp/a.cc"
printf '#include "topology.h"\n' >"$tmp/b.h"
planted=$(check_dir "$tmp" "$T_OK")
echo "$planted" | grep -q 'a.cc:2:' || fail "the include check missed a planted \"control/topology.h\": it cannot fail"
echo "$planted" | grep -q 'b.h:1:' || fail "the include check missed a planted bare \"topology.h\": it cannot fail"
echo "$planted" | grep -q 'a.cc:1:' && fail "the include check flagged \"transport/engine.h\", which is allowed"

# the link line
link=$(link_line "$build" qn_transport_only)
[ -n "$link" ] || fail "no link command for qn_transport_only under $build"
if grep -qE 'quench_control|quench_bench' "$link"; then
	fail "qn_transport_only links the control plane: $(grep -oE 'libquench_[a-z]+\.a' "$link" | sort -u | tr '\n' ' ')"
fi
qlink=$(link_line "$build" quench)
[ -n "$qlink" ] || fail "no link command for quench under $build"
grep -q quench_control "$qlink" || fail "the link check finds no quench_control in quench's link line either: it cannot fail"
# the agent links without the engine and the control plane (qn_agent_only links quench_agent)
alink=$(link_line "$build" qn_agent_only)
[ -n "$alink" ] || fail "no link command for qn_agent_only under $build"
if grep -qE 'quench_(transport|control|bench)' "$alink"; then
	fail "the agent links $(grep -oE 'libquench_[a-z]+\.a' "$alink" | sort -u | tr '\n' ' ')"
fi
"$(dirname "$bin")/qn_agent_only" >/dev/null || fail "qn_agent_only failed"
grep -qE 'quench_(transport|control|bench)' "$(link_line "$build" qn_transport_only)" ||
	fail "the agent's link check finds no engine in qn_transport_only's link line either: it cannot fail"
planted=$(check_dir "$tmp" "$AGENT_OK")
echo "$planted" | grep -q 'a.cc:1:' || fail "the agent include check missed a planted \"transport/engine.h\": it cannot fail"
out=$("$bin") || fail "qn_transport_only failed: $out"
echo "$out"
echo "PASS build_layering: transport/ includes only transport/ and common/ headers, agent/ only itself, the CC library, the wire codec and the base (planted includes flagged); qn_agent_only links $(grep -oE 'libquench_[a-z]+\.a' "$alink" | sort -u | tr '\n' ' ')and runs; qn_transport_only links $(grep -oE 'libquench_[a-z]+\.a' "$link" | sort -u | tr '\n' ' ')and delivers"
