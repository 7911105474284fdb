// gauges.h - a switch's gauges (qn_abi.h QN_SW_GAUGES): levels its control thread (switchd)
// computes by scanning the switch's tables through read-only mmaps, written to the pinned
// qn_sw_gauges map, read by `quench switch stats` and by experiments.
//
// A table that wants a gauge registers one TableScan in gauges.cc: the pinned map's name, the
// gauge of its current level, the gauge of its peak, and a function counting the live words. The
// scanner knows nothing else about the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/abi.h"
#include "common/result.h"
#include "common/units.h"

namespace qn {

struct TableScan {
	const char *map;  // pinned map name (an mmapable ARRAY of __u64)
	unsigned live;    // enum qn_sw_gauge: the live count at the last scan
	unsigned peak;    // enum qn_sw_gauge: the highest live count since zeroed
	// Live words among n at monotonic time now_ns, for a switch running at dilation d.
	uint64_t (*count)(const uint64_t *words, size_t n, uint64_t now_ns, const Dilation &d);
};
const std::vector<TableScan> &table_scans();

// The gauge names and docs of QN_SW_GAUGES, by enum qn_sw_gauge.
const char *gauge_name(unsigned g);
const char *gauge_doc(unsigned g);

// The scans of one switch's tables (switchd): maps opened and mmapped once.
class SwitchGauges {
public:
	static Result<SwitchGauges> open(const std::string &pin_dir, const Dilation &d);
	SwitchGauges() = default;
	SwitchGauges(SwitchGauges &&o) noexcept { *this = std::move(o); }
	SwitchGauges &operator=(SwitchGauges &&o) noexcept;
	SwitchGauges(const SwitchGauges &) = delete;
	SwitchGauges &operator=(const SwitchGauges &) = delete;
	~SwitchGauges();
	// Count every table's live words, write its live gauge and raise its peak gauge.
	void scan(uint64_t now_ns);
	uint64_t scans() const { return scans_; }
	uint64_t scan_ns() const { return scan_ns_; } // wall time spent scanning, in total

private:
	struct Table {
		const TableScan *reg = nullptr;
		const uint64_t *words = nullptr;
		size_t n = 0, len = 0;
	};
	std::vector<Table> tables_;
	uint64_t *gauges_ = nullptr; // the mmapped qn_sw_gauges
	size_t gauges_len_ = 0;
	Dilation d_;
	uint64_t scans_ = 0, scan_ns_ = 0;
	void close_all();
};

// A switch's gauges by name from its pin directory (all zero when the map is not there: a switch
// loaded by an older quench).
std::vector<std::pair<std::string, uint64_t>> read_gauges(const std::string &pin_dir);
// A gauge that holds a peak since it was last zeroed (its name ends in `_peak`).
bool is_peak_gauge(const std::string &name);
// Zero every `_peak` gauge of the switch (an experiment attempt's start).
Status zero_peak_gauges(const std::string &pin_dir);

} // namespace qn
