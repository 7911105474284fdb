// experiment.h - experiment files, fabric presets and ns-3 flow files (docs/experiments.md).
//
// An experiment names a topology, a fabric preset, the dilation (a number or auto), the
// workloads, the schemes to compare, a time limit and a seed. Paths are relative to the file;
// bare names find what the project ships in netns/ (topologies, presets/, workloads/).
// Every error names the file, the line and the field.
//
// Units: fabric ns, bit/s, bytes.
#pragma once

#include <cstdint>
#include <map>
#include <functional>
#include <string>
#include <vector>

#include "common/params.h"
#include "common/result.h"
#include "control/topology.h"

namespace qn {

// A target fabric: what a paper's evaluation ran on (DESIGN.md §5).
struct Preset {
	std::string name, source, description;
	uint64_t host_rate_bps = 0;     // links with a host end
	uint64_t fabric_rate_bps = 0;   // switch-to-switch links (0 = host rate)
	uint64_t host_delay_ns = 0;     // propagation delay of host links
	uint64_t fabric_delay_ns = 0;   // of switch-to-switch links
	uint32_t mtu = 0;
	uint64_t buffer_bytes = 0;      // per switch, shared
	uint64_t switch_delay_ns = 0;   // switch pipeline latency (engine, fabric time)
	uint64_t nic_delay_ns = 0;      // NIC processing each way (engine, fabric time)
	std::string paper;              // the scheme whose paper this fabric is ("" = none): on it
					// that scheme's constants are used unchanged (common.md §7)
};
Result<Preset> parse_preset(const std::string &text, const std::string &source);
Result<Preset> load_preset(const std::string &path);
// A preset by file path, or by name from the shipped ones (netns/presets/NAME.preset).
Result<Preset> find_preset(const std::string &name_or_path);
// Set every link's rate, delay and MTU and every switch's buffer from the preset.
void apply_preset(Topology &t, const Preset &p);

struct Workload {
	enum class Kind { Incast, Long, Poisson, Flows } kind = Kind::Incast;
	int line = 0;
	std::string dst;                  // incast, long
	std::vector<std::string> senders; // explicit names (incast, long)
	int nsenders = 0;                 // or a count: the first N hosts other than dst
	uint64_t size = 0;                // incast, long: bytes per message
	uint64_t window_ns = 0;           // incast: start times uniform in this window
	uint64_t count = 1;               // incast: rounds
	uint64_t interval_ns = 0;         // incast: between rounds; long: between senders' starts
	uint64_t start_ns = 0;            // offset of the workload's first flow
	double load = 0;                  // poisson: fraction of each host's link
	std::string cdf;                  // poisson: CDF file (resolved)
	uint64_t duration_ns = 0;         // poisson: arrivals until start + duration
	std::string file;                 // flows: an ns-3 flow file (resolved)
};

struct SchemeCc {
	std::string params = "derived";   // derived (spec rules for this fabric), paper, mellanox
	std::map<std::string, std::string> overrides;
};

struct Experiment {
	std::string name, source;
	std::string topology;             // resolved path
	Params params;                    // topology parameters
	std::string preset;               // resolved path ("" = the topology's own values)
	double dilation = 0;              // 0 = auto
	std::vector<std::string> schemes;
	std::map<std::string, SchemeCc> cc; // per scheme
	std::vector<Workload> workloads;
	uint64_t duration_ns = 50'000'000; // time limit per scheme after the last flow's start
	uint64_t seed = 1;
	uint64_t queue_interval_ns = 0;   // 0 = one base RTT
	std::string mode = "gbn";         // reliability: gbn or sr
	int attempts = 3;                 // runs per scheme until one is VALID (DESIGN.md §5)
	// `switch [SCHEME] KEY=VALUE...`: switch settings over the scheme's derived profile, for every
	// scheme ("" key) or one; applied in file order, later wins (runner.h switch_settings_for).
	std::map<std::string, std::vector<std::pair<std::string, std::string>>> switch_settings;
	std::vector<uint64_t> trace_flows; // `trace ID...`: per-QP rate traces of these flows
	int line_of_schemes = 0;
};

// Where bare names are looked up (the project's netns/ folder).
std::string data_dir();
// The schemes an experiment may name: `all` is what `schemes all` runs, `check` says why a name
// is not a scheme ("" when it is one; e.g. cc::scheme()'s grammar). Built from a plain list,
// exactly those names exist.
struct SchemeCatalog {
	std::vector<std::string> all;
	std::function<std::string(const std::string &)> check;
	// why a `cc` line's KEY=VALUE is not a parameter of the scheme ("" when it is; unset: any)
	std::function<std::string(const std::string &, const std::string &, const std::string &)> check_param;
	SchemeCatalog(std::vector<std::string> a, std::function<std::string(const std::string &)> c,
		      std::function<std::string(const std::string &, const std::string &, const std::string &)> p = {})
		: all(std::move(a)), check(std::move(c)), check_param(std::move(p)) {}
	SchemeCatalog(const std::vector<std::string> &names); // NOLINT: implicit on purpose
};
// The experiment's single-value directives (name, dilation, duration, seed, queue-interval, mode,
// attempts): parsing, ranges and usage text from one table (common/params.h).
const ParamTable<Experiment> &experiment_table();
// Parse an experiment. Schemes the catalog rejects are errors naming the file, line and reason.
Result<Experiment> parse_experiment(const std::string &text, const std::string &source, const SchemeCatalog &schemes);
Result<Experiment> load_experiment(const std::string &path, const SchemeCatalog &schemes);

// One flow of an ns-3 RDMA simulator flow file ("src dst pg dport size start_s", after a count line).
struct Ns3Flow {
	int src = 0, dst = 0, pg = 0, dport = 0;
	uint64_t size = 0;
	uint64_t start_ns = 0;
	int line = 0;
};
Result<std::vector<Ns3Flow>> parse_ns3_flows(const std::string &text, const std::string &source);

} // namespace qn
