// bench_rxe.h - `quench bench rxe`: the per-packet cost of the Soft-RoCE host programs
// (bpf/host/qn_rxe.bpf.c) through BPF_PROG_TEST_RUN, each configuration against the agent-off
// egress (parse, QP learning, link EDT) side by side in the same run (docs/PERFORMANCE.md).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace qn {

// Return: the table (ns per packet, median of `rounds` alternating rounds, and the ratios).
Result<std::string> bench_rxe(uint32_t rounds);

} // namespace qn
