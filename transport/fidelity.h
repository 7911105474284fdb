// fidelity.h - which flows an emulation artefact touched (DESIGN.md §5, issue 14): periods in
// fabric time when the emulator was not the fabric it models (the event loop stalled, a host
// link lost time, a frame left later than a stated bound) and the flows whose lifetimes
// overlapped one. A run's figures are then given over all flows and over the untouched ones.
//
// Units: fabric ns (engine time), bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace qn::tp {

// A set of half-open intervals [from, to) kept sorted and merged.
class IntervalSet {
public:
	// Add [from, to); empty intervals are ignored, overlapping and touching ones merge.
	void add(uint64_t from, uint64_t to);
	// Return: the set of `v` (sorted by start; may overlap), merged in one pass.
	static IntervalSet from_sorted(const std::vector<std::pair<uint64_t, uint64_t>> &v);
	// Return: true when [from, to] (closed: a flow that ends as a stall begins was touched)
	// meets an interval.
	bool overlaps(uint64_t from, uint64_t to) const;
	// Return: the total length of the intervals, clipped to [from, to).
	uint64_t covered(uint64_t from, uint64_t to) const;
	size_t size() const { return iv_.size(); }
	bool empty() const { return iv_.empty(); }
	const std::vector<std::pair<uint64_t, uint64_t>> &intervals() const { return iv_; }
	void clear() { iv_.clear(); }

private:
	std::vector<std::pair<uint64_t, uint64_t>> iv_; // sorted, disjoint, non-adjacent
};

// What the engine saw go wrong, in engine fabric time: periods that touched every host (the
// event loop stalled, with one shard), periods of one host (its link lost time, or a frame of it
// left later than the lateness bound) and periods of one shard (its loop stalled).
struct Affected {
	IntervalSet all;
	std::map<std::string, IntervalSet> host;
	// An engine of several shards: per shard, the periods its loop stalled; they touch a flow
	// when `shards_of(src, dst)` (a bit per shard) names the shard: its endpoints' shards and the
	// shards of the cables on any of its shortest paths (transport/engine.h flow_shards).
	std::vector<IntervalSet> shard;
	std::function<uint64_t(const std::string &src, const std::string &dst)> shards_of;
};

// A flow as the tagging sees it: its lifetime in engine fabric time and its endpoints.
struct FlowSpan {
	std::string src, dst;
	uint64_t from_ns = 0, to_ns = 0;  // post to completion (or to the end of the run)
	uint64_t bytes = 0;
};

// A flow is tagged when at least this fraction of its lifetime lay in affected periods: the
// emulator lost that much of its time, so its FCT may be off by about as much. Any overlap at
// all ("touched") is reported too, but on this machine's hypervisor pauses (about one per CPU
// per second) it reaches nearly every flow that lives longer than a second of wall time
// (docs/experiments.md "Validity", measured).
constexpr double kTagAffectedFrac = 0.01;
// A run is INVALID when more than this fraction of its bytes is affected: each flow's bytes
// weighted by the fraction of its lifetime in affected periods (FidelityReport::
// bytes_affected_frac), a bound on the bytes' FCT error. Why 5% and not the tag's 1%: lost link
// time itself is bounded at 1% by the switches' arrivals and departures kept (health), and an
// affected period over-counts a flow's loss (an engine stop while a standing queue keeps the
// bottleneck busy costs its flows nothing: docs/experiments.md "Validity", measured); 5% is the
// tolerance at which quench's results are compared with the ns-3 simulator's. A run whose flows
// all lived through a share of stops above the tag's bound is then still a result, and a run
// whose bytes mostly lived inside stops is not.
constexpr double kMaxAffectedBytesFrac = 0.05;

struct FidelityReport {
	std::vector<bool> tagged;         // per flow: affected_frac >= the tagging bound
	std::vector<bool> touched;        // per flow: its lifetime met an affected period of the
					  // fabric or of its source or destination host at all
	std::vector<double> affected_frac; // per flow: the fraction of its lifetime in such periods
	size_t flows_tagged = 0, flows_touched = 0;
	double bytes_tagged_frac = 0;     // tagged flows' bytes / all bytes
	double bytes_affected_frac = 0;   // sum of bytes x affected_frac / all bytes
	double bytes_touched_frac = 0;
	double time_affected_frac = 0;    // fabric time in any affected period / the run's span
	uint64_t periods = 0;             // affected periods (fabric-wide and per host)
	// Fabric time in any affected period, merged over the fabric and every host, as [from, to)
	// in ns from the run's start, clipped to its span, the first kMaxAffectedSpans: where a
	// timing check looks whether its window was touched (gen's JSON `affected`).
	std::vector<std::pair<uint64_t, uint64_t>> spans;
};
constexpr size_t kMaxAffectedSpans = 256;

// Tag `flows` against `a` over the run's span [from, to): a flow is tagged when at least
// `tag_frac` of its lifetime lay in affected periods.
FidelityReport tag_flows(const std::vector<FlowSpan> &flows, const Affected &a, uint64_t from, uint64_t to,
			 double tag_frac = kTagAffectedFrac);
// One run-level figure of a FidelityReport under its JSON and CSV name; `count` when it is a
// whole number.
struct FidelityFigure {
	const char *name;
	double value;
	bool count;
};
// Return: every run-level figure, in one place: `gen --format json` and `run`'s summary.json
// write this list (a figure added here reaches both).
std::vector<FidelityFigure> fidelity_figures(const FidelityReport &r);

// Return: why the run is INVALID on its affected periods (more than kMaxAffectedBytesFrac of
// its bytes affected), or "" when it is not.
std::string fidelity_verdict(const FidelityReport &r);

} // namespace qn::tp
