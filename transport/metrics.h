// metrics.h - the numbers an experiment reports (common.md §4, DESIGN.md §6): percentiles,
// FCT-slowdown size bins, and sample statistics of a queue series.
//
// Percentile convention (HPCC-sim fct_analysis.py): the p-th percentile of n sorted values is
// the value at index min(n - 1, floor(n * p)); no interpolation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qn::tp {

// Return: the p-th percentile (p in [0, 1]) of `sorted` (ascending); 0 when empty.
double percentile(const std::vector<double> &sorted, double p);
uint64_t percentile(const std::vector<uint64_t> &sorted, double p);

struct SizeBin {
	uint64_t min_size = 0, max_size = 0; // sizes of the bin's smallest and largest flow
	size_t count = 0;
	double p50 = 0, p95 = 0, p99 = 0;    // slowdown percentiles within the bin
};

// Split (size, slowdown) pairs into at most `nbins` bins at size percentiles, as the ns-3
// simulator's fct_analysis does (common.md §4 uses 20 bins, 5% of flows each): after sorting by
// size, bin boundaries sit at ranks floor(i n / k), k = min(nbins, n), except that a size never
// spans two bins: a boundary inside a run of equal sizes moves to the run's end, and bins that
// leaves empty are dropped. So 60% of flows of one size make one bin of that size, not six.
std::vector<SizeBin> size_bins(std::vector<std::pair<uint64_t, double>> flows, size_t nbins);

// Return: the bin of every input element under size_bins()'s rule.
std::vector<size_t> size_bin_index(const std::vector<uint64_t> &sizes, size_t nbins);

struct SeriesStats {
	size_t samples = 0;
	double mean = 0;
	uint64_t p50 = 0, p99 = 0, max = 0;
};
SeriesStats series_stats(const std::vector<uint64_t> &values);

// Jain's fairness index (sum x)^2 / (n sum x^2): 1 when every x is equal, 1/n when one takes
// everything; 0 for an empty or all-zero input.
double jain_index(const std::vector<double> &x);

// A QP's rate trace (engine.h RatePoint, `gen --trace-out`, a run's rates.csv): time ascending.
struct TraceSample {
	uint64_t t_ns = 0, rate_bps = 0, acked_bytes = 0;
};
struct TraceSeries {
	std::string label;
	std::vector<TraceSample> samples;
};

// Goodput per window: windows [t, t + win) for t = from, from + win, ... while t + win <= to;
// each series' goodput is (acked(t + win) - acked(t)) * 8 / win, where acked(x) is the acked
// bytes of its last sample at or before x (0 before its first). Jain's index over the series.
struct GoodputWindow {
	uint64_t t_ns = 0;
	double jain = 0, total_gbps = 0;
	std::vector<double> gbps; // per series, in input order
};
std::vector<GoodputWindow> goodput_windows(const std::vector<TraceSeries> &series, uint64_t from, uint64_t to,
					   uint64_t win);

// The start of the first of `run` consecutive windows whose Jain index is at least `threshold`.
std::optional<uint64_t> jain_convergence(const std::vector<GoodputWindow> &w, double threshold, size_t run);

// The first time at which every one of the series has a sample and their latest rates sum to at
// most `cap_bps` (the senders' rates have converged to the bottleneck). Samples of all series
// are taken in time order (ties in input order).
std::optional<uint64_t> rate_sum_within(const std::vector<TraceSeries> &series, double cap_bps);

// A series' first cut: its first sample whose rate is below its first sample's (a sender that
// starts at its line rate and is cut by its congestion control). nullopt: never cut.
std::optional<TraceSample> first_cut(const TraceSeries &s);

// The series' summed rate at `t_ns`: each series' latest rate at or before it; a series with no
// sample by then counts as `absent_bps` (a sender that has not been traced yet sends at its line
// rate).
double rate_sum_at(const std::vector<TraceSeries> &series, uint64_t t_ns, double absent_bps);

} // namespace qn::tp
