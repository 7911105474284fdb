// testrun.h - BPF_PROG_TEST_RUN wrappers for tc (__sk_buff) and XDP programs, used by the BPF
// unit tests and the per-packet cost in `quench bench switch`.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "control/packet.h"

namespace qn {

struct TestRunOut {
	uint32_t retval = 0;     // program verdict
	Bytes data;              // packet after the program
	uint32_t duration_ns = 0; // mean ns per run (kernel-measured)
	uint32_t priority = 0;   // skb->priority after the run (tc only)
	uint32_t mark = 0;
	uint64_t tstamp = 0;     // skb->tstamp after the run (tc only: an EDT departure time)
};

// Run a SCHED_CLS program once (or `repeat` times) on `in`. ingress_ifindex/ifindex go into
// the __sk_buff context (ifindex must exist in the current namespace, or be 0 for lo).
Result<TestRunOut> test_run_tc(int prog_fd, const Bytes &in, uint32_t ingress_ifindex, uint32_t ifindex = 0,
			       uint32_t repeat = 1);
// Run an XDP program; rx_queue is the queue index seen by the program.
Result<TestRunOut> test_run_xdp(int prog_fd, const Bytes &in, uint32_t repeat = 1);

// A warning line when the kernel's BPF run-time statistics are on (kernel.bpf_stats_enabled=1:
// every program run then reads sched_clock twice, ~100-200 ns on this VM's pvclock), else "".
// A benchmark comparing pipelines with different numbers of programs per packet is skewed by it.
std::string bpf_stats_warning();

} // namespace qn
