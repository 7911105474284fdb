// traffic.h - workloads for the engine: long flows, N:1 incast (message size, start
// synchronisation window), Poisson all-to-all from a flow-size CDF (common.md §5), and serial
// ping-pong; a runner that posts each flow at its start time, records per-message FCT and
// checks every delivered payload by content.
//
// Units: fabric ns, bytes, bit/s. Start times are relative to the start of the run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "transport/engine.h"

namespace qn::tp {

struct FlowSpec {
	uint64_t id = 0;
	std::string src, dst;
	uint64_t size = 0;
	uint64_t start_ns = 0;
	uint16_t dport = 100;      // ns-3 convention: 100 background, 200 incast
};

// A flow-size CDF: (size_bytes, percentile 0..100) points, interpolated linearly.
class Cdf {
public:
	// Parse "size percentile" lines ('#' comments). Errors name source, line and field;
	// sizes and percentiles must not decrease, the last percentile must be 100.
	static Result<Cdf> parse(const std::string &text, const std::string &source);
	static Result<Cdf> load(const std::string &path);
	// Return: the size at quantile u in [0, 1).
	uint64_t sample(double u) const;
	double mean() const;
	const std::vector<std::pair<double, double>> &points() const { return pts_; }

private:
	std::vector<std::pair<double, double>> pts_;
};

std::vector<FlowSpec> gen_incast(const std::vector<std::string> &senders, const std::string &dst,
				 uint64_t size, uint64_t window_ns, uint64_t seed, uint64_t first_id = 0);
std::vector<FlowSpec> gen_long(const std::vector<std::string> &senders, const std::string &dst, uint64_t size,
			       uint64_t first_id = 0);
// Per host Poisson arrivals, mean gap = mean_size * 8 / (link_bps * load), destinations
// uniform over the other hosts, until `duration_ns`.
std::vector<FlowSpec> gen_poisson(const std::vector<std::string> &hosts, double load, uint64_t link_bps,
				  const Cdf &cdf, uint64_t duration_ns, uint64_t seed, uint64_t first_id = 0);
// Return: a hash of the flow list (same list, same hash: every scheme of a run gets it).
uint64_t flow_list_hash(const std::vector<FlowSpec> &flows);

struct FlowResult {
	FlowSpec spec;
	bool done = false;
	uint64_t post_ns = 0;       // when it was posted (fabric, since run start)
	uint64_t fct_ns = 0;
	bool content_ok = false;    // the receiver saw exactly `size` bytes of the expected content
	uint32_t sip = 0, dip = 0;  // host order
	uint16_t sport = 0;         // the sending QP's UDP source port
	uint64_t standalone_ns = 0; // common.md §4: base RTT + wire bytes / bottleneck rate
	bool tagged = false;        // affected periods (stalls, lost link time) covered at least
				    // kTagAffectedFrac of its lifetime (fidelity.h)
	bool touched = false;       // an affected period met its lifetime at all
	double affected_frac = 0;   // the fraction of its lifetime in affected periods
	uint64_t paused_ns = 0;     // fabric time its QP's flow control paused it (by completion)
	// Return: FCT / standalone FCT, floored at 1 (common.md §4).
	double slowdown() const
	{
		return standalone_ns ? std::max(1.0, double(fct_ns) / double(standalone_ns)) : 0.0;
	}
};

// Return: the ns-3 RDMA simulator's fct.txt line for a completed flow (DESIGN.md §6):
// "%08x %08x %u %u %lu %lu %lu %lu" = sip dip sport dport size start_ns fct_ns standalone_ns.
std::string ns3_fct_line(const FlowResult &f);

struct RunOptions {
	QpOptions qp;
	uint64_t timeout_ns = 1'000'000'000; // stop waiting this long (fabric) after the last start
	bool serial_per_pair = false;        // post a pair's next message only after the last completes (ping-pong)
	bool qp_per_flow = false;            // a QP per flow (else one per ordered host pair, shared in order)
	size_t trace_pairs = 0;              // record the rate trace of the first N QPs (host pairs' when
					     // shared; flows' with qp_per_flow, labelled "src->dst[#k]")
	std::vector<uint64_t> trace_flows;   // with qp_per_flow: record these flows' QPs' rate traces
	// Called about every 4096 loop iterations with (flows done, flows, fabric ns since the
	// start); for progress displays. Must be cheap.
	std::function<void(size_t, size_t, uint64_t)> progress;
	// Asked every 256 loop iterations (at most ~26 ms of wall time: one sleep is at most 100 us):
	// true stops the run (Ctrl-C); the report says interrupted and holds what was measured so
	// far. Must be cheap (e.g. read a flag).
	std::function<bool()> stop;
};

struct RunReport {
	std::vector<FlowResult> flows;
	uint64_t elapsed_ns = 0;
	uint64_t delivered_bytes = 0, retx_pkts = 0, tx_pkts = 0, timeouts = 0;
	uint64_t corrupt_msgs = 0, dup_pkts = 0;
	std::map<std::string, uint64_t> cc; // the sending QPs' controller counters, summed by name
	Health health;
	FidelityReport fidelity;             // affected periods and the flows they touched
	uint64_t t0_ns = 0;                  // engine time of the run's start (trace times are engine time)
	std::vector<std::pair<std::string, QpHandle>> traced; // "src->dst" ("flow ID src->dst") and the sending QP
	std::string cc_describe;             // the controller of the first QP
	bool interrupted = false;            // RunOptions::stop ended the run before every flow was done
};

// Run `flows` on the engine (connecting one QP per ordered host pair). Return: the report.
Result<RunReport> run_flows(Engine &e, const std::vector<FlowSpec> &flows, const RunOptions &o);

} // namespace qn::tp
