// metrics.h - the numbers an experiment reports (common.md §4, DESIGN.md §6): percentiles,
// FCT-slowdown size bins, and sample statistics of a queue series.
//
// Percentile convention (HPCC-sim fct_analysis.py): the p-th percentile of n sorted values is
// the value at index min(n - 1, floor(n * p)); no interpolation.
#pragma once

#include <cstddef>
#include <cstdint>
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

} // namespace qn::tp
