// bench.h - `quench bench switch`: forwarding Mpps of quench's switch program against the bare
// redirect baseline, measured side by side (alternating rounds) on the same topology, and the
// per-packet cost of each program from BPF_PROG_TEST_RUN repeat.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace qn {

struct BenchOptions {
	double seconds = 1.0;   // per round per variant
	int rounds = 10;
	size_t frame_bytes = 64;
	int senders = 1;        // AF_PACKET sender threads in the sending host
	uint32_t testrun_repeat = 20000; // single TEST_RUN calls whose median is reported
	bool ecn_dequeue = false; // the quench switch decides RED at dequeue (switch setting ecn_at)
	bool sfc = false;         // SFC's stage on with the egress depth forced above Q_Th (the
				  // qdepth test knob): every packet runs the trigger and the Bloom filter,
				  // and each one the filter lets through is cloned into a BTS
	uint64_t sfc_tbf_ns = 1'000'000'000; // with sfc: T_BF (1 s: the filter passes one packet per
				  // flow and second; 0: no suppression, every packet cloned)
	int sfc_cache = 1;        // with sfc: enum qn_sfc_cache_mode (tor: a cache lookup per packet)
	bool gate_leaf = false;   // s1's port toward h2 gets a switch-facing port's data leaf: the open
	                          // pause gate (a tbf, tcgate.h) instead of the bfifo
	bool sfc_est = false;     // with sfc: the incast estimator (a spin-locked slot update per packet
				  // from a host; tau 10 us, R_dst the port's rate)
	// Any scheme's stage, by its switch settings (`quench switch set` keys: `ldcp=on`,
	// `pbfs=on`), applied in order after the flags above; with depth_bytes > 0 the egress depth
	// toward the sink is forced to it (the qdepth test knob); tos: the frames' TOS byte.
	std::vector<std::pair<std::string, std::string>> sets;
	uint64_t depth_bytes = 0;
	int tos = -1;             // -1: ECT(0) in the data DSCP
	std::string baseline_obj; // an older qn_switch.bpf.o whose ingress TEST_RUN cost is compared
	std::string only;         // "quench" or "bare": run that variant alone (to profile it); "" both
};

// Return: the report text; the bench topology is removed on every path.
Result<std::string> bench_switch(const BenchOptions &o);

} // namespace qn
