// stats.h - per-port switch counters read from the pinned maps (`quench switch stats`).
#pragma once

#include "common/counters.h"

#include <cstdint>
#include <string>
#include <vector>

#include "common/abi.h"
#include "common/result.h"
#include "control/topology.h"

namespace qn {

struct PortCounters {
	std::string ifname;
	uint32_t ifindex = 0;
	uint32_t port_no = 0;
	uint32_t role = 0;
	qn_port_stats s{}; // summed over CPUs
	qn_qstate q{};     // egress queue state (depth last read, peak, accounting, PAUSE received)
	uint64_t read_ns = 0; // CLOCK_MONOTONIC when q was read (an open pause's length)
	uint64_t hdrm_bytes = 0; // the port's PFC headroom as sized at load (qn_port.hdrm_bytes)
	// PFC accounts of this ingress port, the highest over its priorities (pfc.h):
	uint64_t pfc_hdrm_peak = 0;    // bytes above the account's XOFF level while paused
	uint64_t pfc_pause_rx_max = 0; // bytes one pause took in
};

struct SwitchCounters {
	std::string topology, sw;
	std::vector<PortCounters> ports;  // in port order
	uint64_t orphan_drops[QN_DROP_MAX] = {};
	int64_t buffer_used = 0;
	std::vector<std::pair<std::string, uint64_t>> gauges; // QN_SW_GAUGES by name (gauges.h)
	qn_swcfg cfg{};
};

// Read the pinned maps of switch `sw` of running topology `t`.
Result<SwitchCounters> read_switch_counters(const Topology &t, int sw);

// A port's counters by name, exact (summed over CPUs): its qn_port_stats fields, drops by reason
// ("drops.<reason>", every reason), its queue's depth and peak. A counter added to the ABI is
// added here once and reaches every reader (JSON, the experiment's reports) by name.
// Each carries its kind (common/counters.h): queue depths and the PFC maxima and means are levels.
NamedCounters counters_by_name(const PortCounters &p);

// The switches' counters and settings as one JSON document (`quench switch stats --format json`):
// {"switches": [{"topology", "switch", "buffer_used", "settings", "ports": [{"port", "ifname",
// "role", "counters": {name: value}}]}]}. Integers are exact.
std::string counters_json(const std::vector<SwitchCounters> &cs);

// Zero the `_peak` gauges of every switch of running topology t (an experiment's start).
Status zero_switch_peak_gauges(const Topology &t);

// The `_peak` gauges of running topology t by name, the highest over its switches.
std::vector<std::pair<std::string, uint64_t>> switch_peak_gauges(const Topology &t);

// Format as the table `quench switch stats` prints. With `prev` and `dt_s` > 0, adds rates.
std::string format_counters(const SwitchCounters &c, const SwitchCounters *prev = nullptr, double dt_s = 0);

// Resolve "T/s1", "s1" or "" into (topology, switch id) pairs among running topologies.
Result<std::vector<std::pair<Topology, int>>> resolve_switches(const std::string &spec);

} // namespace qn
