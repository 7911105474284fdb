// runner.h - the experiment runner (`quench run`): bring the topology up at a dilation, calibrate
// D, run every scheme on the identical flow list with its switch settings and CC parameters,
// retry INVALID attempts, and gather what each attempt measured, counters by name included.
// The report writers (report.h) turn the results into files. docs/experiments.md.
//
// Units: fabric ns, bytes, bit/s (wall ns only where named).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "control/bringup.h"
#include "control/calibration.h"
#include "control/experiment.h"
#include "control/stats.h"
#include "control/topology.h"
#include "transport/engine.h"
#include "transport/metrics.h"
#include "transport/traffic.h"

namespace qn {

// Counters by name over one attempt: "switch.<name>" summed over every port of every switch
// (after - before), "host.<name>" summed over hosts, "qp.<name>" from the run's report. Ordered
// by name; a counter added to the switch ABI, the hosts or the report reaches every output.
using Counters = std::map<std::string, uint64_t>;

// The switch counters an attempt added: after - before per name, summed over switches and
// ports. Gauges (queue depths, peaks) are not counters and are left out: the queue series
// report them. Ports match by switch and port index; a port missing from `before` counts from 0.
Counters switch_counter_delta(const std::vector<SwitchCounters> &before, const std::vector<SwitchCounters> &after);
// Every host's counters, summed per name ("host.<name>").
Counters host_counter_sum(const std::vector<tp::HostCounters> &hosts);
// The run report's own totals ("qp.packets_sent", "qp.retransmitted", "qp.timeouts",
// "qp.duplicates", "qp.delivered_bytes", "qp.corrupt_messages").
Counters report_counters(const tp::RunReport &r);

// The summary table's counter columns: a title and the counter it shows.
struct CounterColumn {
	std::string title, counter;
};
// The summary table's counter columns for a comparison of `schemes`: the ones every run has,
// then those the schemes' parts ask for (cc::summary_columns), each once, in scheme order.
std::vector<CounterColumn> headline_counters(const std::vector<std::string> &schemes);

struct PortQueue {
	std::string label;
	tp::SeriesStats st;
};

// A series relative to the attempt's start (fabric ns).
struct QueueTrace {
	std::string label;
	std::vector<std::pair<uint64_t, uint64_t>> samples; // (t, bytes)
};
struct RateTrace {
	std::string label;                 // "flow ID SRC->DST"
	uint64_t flow = 0;
	std::vector<tp::RatePoint> points; // t_ns relative to the attempt's start
};

// One switch's settings as read back from its pinned map after they were applied.
struct SwitchInForce {
	std::string sw;
	std::vector<std::pair<std::string, std::string>> settings; // key, exact value (swcfg_values)
	std::vector<std::string> warnings; // checks over the settings in force (ecn_before_pfc)
};

struct SchemeResult {
	std::string scheme;
	std::string cc_describe;
	std::vector<std::string> derived_notes;
	std::vector<std::pair<std::string, std::string>> switch_applied; // derived, then the experiment's
	std::vector<SwitchInForce> switch_in_force;
	std::vector<std::string> warnings; // "switch: why" of every switch's in-force warnings
	tp::RunReport rep;
	size_t done = 0, bad = 0;
	uint64_t delivered = 0, sent_bytes = 0;
	double goodput_gbps = 0;
	std::vector<double> sd;            // sorted slowdowns of completed flows
	std::vector<uint64_t> fct;         // sorted FCTs
	std::vector<tp::SizeBin> bins;
	size_t nbins = 0;
	std::vector<PortQueue> ports;      // by peak, descending
	std::vector<QueueTrace> series;
	std::vector<std::pair<uint64_t, uint64_t>> rx; // delivered data bytes, all hosts (t, total)
	std::vector<RateTrace> rates;      // the experiment's `trace` flows
	Counters counters;
	bool valid = true;
	std::vector<std::string> reasons;
	double wall_s = 0;
	int attempt = 1;                   // which attempt this is (the first VALID one, or the last)
	double d = 0;                      // the dilation it ran at
	std::vector<std::string> earlier;  // why earlier attempts were INVALID
	std::string skipped;               // non-empty: the scheme refused the fabric, why (not run)
	uint64_t counter(const std::string &name) const
	{
		auto it = counters.find(name);
		return it == counters.end() ? 0 : it->second;
	}
	uint64_t queue_peak() const { return ports.empty() ? 0 : ports.front().st.max; }
	uint64_t queue_p99() const;
};

// Fill the derived numbers of a result from its report (done, FCT and slowdown lists, bins,
// goodput, validity reasons of flows that did not complete or delivered wrong content).
void summarize_flows(SchemeResult &s, size_t nflows);

// Progress and Ctrl-C, supplied by the command.
struct RunHooks {
	std::function<bool()> stop = [] { return false; };
	std::function<void(const std::string &what, double expected_s)> phase = [](const std::string &, double) {};
	std::function<void(const std::string &what, double expected_s)> tick = [](const std::string &, double) {};
	// Asked before every attempt with its expected wall time: a reason it must not start
	// (`run --max-wall`), or "".
	std::function<std::string(double expected_s)> budget = [](double) { return std::string(); };
};

struct ExperimentRun {
	Experiment x;
	Topology topo;
	Preset preset;
	bool have_preset = false;
	std::string name;                  // running topology name
	tp::EngineOptions eo;
	RunHooks hooks;
	bool up = false;
	UpOptions up_opts = [] {
		UpOptions o;
		o.owned = true; // a run killed by SIGKILL leaves it up: the next run takes it down
		return o;
	}();                               // how bring_up brings the topology up (its D aside)
	double d_now = 0;                  // the D the topology runs at
	Calibration cal;
	std::vector<tp::FlowSpec> flows;
	uint64_t hash = 0;
	bool interrupted = false;          // a signal stopped the run (summary and metadata say so)
	// Schemes that refused the fabric (cc::Derived::refused), with the reason: not run, and
	// listed under the summary table.
	std::vector<std::pair<std::string, std::string>> skipped;
	// The engines' AF_XDP ports between one engine and the next (calibration steps, attempts):
	// opened once while the topology only changes D in place (tp::PortPool); cleared when
	// bring_up makes the topology again and when it goes down.
	std::shared_ptr<tp::PortPool> pool = std::make_shared<tp::PortPool>();
	uint64_t queue_interval_ns() const;
};

// Load the experiment's topology and preset, derive, build the flow list. `name` is the running
// topology's name ("" = from the experiment's name and the pid).
Result<ExperimentRun> prepare_run(const Experiment &x, const std::string &name);
Status bring_up(ExperimentRun &r, double d);
void take_down(ExperimentRun &r);
// Measure and choose D (forced_d > 0: that D, no capacity measurement).
Status calibrate(ExperimentRun &r, double forced_d);
// `quench topo up --dilation auto`: bring `t` up at the D calibrate() chooses for every host of
// the topology sending at once at line rate, each to the next host (its capacity at D = 1, the
// D rule, the paced checks); the topology stays up at that D, brought up with `base` (its
// dilation aside). Errors: fewer than two hosts, a host the engine does not serve (rxe), a
// failed measurement (the topology is then taken down).
Result<Calibration> up_calibrated(const Topology &t, const UpOptions &base, const RunHooks &hooks);
// One attempt of one scheme at the running D.
Result<SchemeResult> run_scheme(ExperimentRun &r, const std::string &scheme, size_t idx);
// Attempts until one is VALID (DESIGN.md §5): a CPU-bound attempt at an auto D is retried at
// next_dilation(D), any other at the same D; every scheme starts at the calibrated D.
Result<SchemeResult> run_scheme_attempts(ExperimentRun &r, const std::string &scheme, size_t idx);

// The expected wall time of one attempt at D: the flows' span plus the busiest host link's bytes
// (sent or received) at the host rate, capped by the experiment's time limit, times D, plus the
// attempt's fixed cost (the engine opening its sockets, counters read before and after:
// `fixed_s`). A core bottleneck or a scheme that backs off takes longer.
double expected_attempt_wall_s(const ExperimentRun &r, double d, double fixed_s = 2.0);

// The switch settings a scheme runs with: its derived profile, then the experiment's `switch`
// lines for every scheme, then those for this scheme (later wins).
// The fabric a scheme's parameters are derived for, from the topology: the largest host link
// rate and the smallest MTU (links_fabric), and with an engine the base RTTs (common.md §4):
// base_rtt_ns the smallest over the flows' host pairs, min/max_base_rtt_ns over every host pair
// of the fabric (network-wide, the same for any flow list). Errors: a flow without a path.
tp::cc::Fabric links_fabric(const Topology &t);
Result<tp::cc::Fabric> flows_fabric(const Topology &t, const tp::Engine &e, const std::vector<tp::FlowSpec> &flows);
// Apply `kv` (switch keys, in order) to every switch of the running topology `topo`, validated;
// return what each switch then holds, read back from its pinned map.
Result<std::vector<SwitchInForce>> set_running_switches(const std::string &topo,
							  const std::vector<std::pair<std::string, std::string>> &kv);

std::vector<std::pair<std::string, std::string>>
switch_settings_for(const Experiment &x, const std::string &scheme,
		    const std::vector<std::pair<std::string, std::string>> &derived);

} // namespace qn
