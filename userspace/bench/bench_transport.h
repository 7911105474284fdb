// bench_transport.h - `quench bench transport`: the engine against its baselines, measured side
// by side in one run on one topology (two hosts on one switch, 100 Gbit/s links, no delay,
// D = 1): 64 B message RTT against kernel UDP ping-pong on the same veth path and against a raw
// AF_XDP ping-pong with the same thread layout; one-QP goodput of 64 KiB messages against the
// raw AF_XDP TX rate; 64 B messages per second on one core. docs/PERFORMANCE.md.
#pragma once

#include <string>

#include "common/result.h"

namespace qn::tp {

struct TransportBenchOptions {
	int rounds = 5;              // alternating rounds per variant; medians are reported
	int pings = 2000;            // ping-pongs per round
	double seconds = 0.5;        // per throughput round
};

// Return: the report; the bench topology is removed on every path.
Result<std::string> bench_transport(const TransportBenchOptions &o);

} // namespace qn::tp
