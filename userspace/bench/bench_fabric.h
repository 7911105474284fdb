// bench_fabric.h - `quench bench fabric`: what a fabric costs and carries, per shape (stars of 8
// and 32 hosts (a switch has at most 32 ports), a leaf-spine, k=4 and k=8 fat-trees, the ns-3 simulator's 320-host tree):
// bring-up and teardown time, memory, sockets, veths and descriptors, and the capacity at D = 1
// with every host sending (the calibration's measure, control/capacity.h) against two baselines
// with no engine through the same hops, measured in the same rounds: raw AF_XDP senders on one
// thread (`raw_1core`) and one thread per CPU (`limit`), each data frame answered by an ACK frame
// as the engine's are (its encoding, 74 bytes). docs/PERFORMANCE.md "`quench bench fabric`".
//
// Units: Gbit/s of payload per wall second, seconds, MiB.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/result.h"
#include "transport/engine.h"

namespace qn {

struct FabricBenchOptions {
	std::vector<std::string> shapes; // names from fabric_shape_names(); empty: the default list
	int rounds = 5;                  // interleaved rounds per shape (engine, raw_1core, limit)
	double seconds = 0.3;            // per raw measurement, per 64 sockets of the shape
	bool json = false;
	std::string prefix = "qnbf";     // topology names: the prefix and a shape code (s8, s32, ls, k4, k8, f320)
	tp::EngineOptions engine;        // the engine's options for the capacity measure
	std::function<bool()> stop;      // true: stop after the current measurement (a signal)
};

// Every shape `bench fabric` knows, and the ones it runs when none is named (the rest take
// minutes and up to 10 GiB of UMEM each: fattree-k8, ns3-fat320).
std::vector<std::string> fabric_shape_names();
std::vector<std::string> fabric_default_shapes();

// The topology text of a shape (quench's format, or the ns-3 simulator's for ns3-fat320), under
// topology name `topo`. Error: an unknown shape.
Result<std::string> fabric_shape_text(const std::string &shape, const std::string &topo);

// One shape's figures (medians over the rounds; the per-round values kept for the spread).
struct FabricShapeResult {
	std::string name;
	size_t hosts = 0, switches = 0, links = 0, cables = 0;
	size_t sockets = 0;     // AF_XDP sockets: hosts + 2 x cables
	size_t veth_pairs = 0;  // one per link, two per cable
	uint32_t frames_per_port = 0;
	size_t shards = 0;         // the engine's shards (its default, or --shards)
	double up_s = 0, down_s = 0;
	double mem_topo_mib = 0;   // kernel memory the topology took (namespaces, veths, qdiscs, maps) and switchd's RSS
	double mem_engine_mib = 0; // kernel memory and this process's RSS the engine's sockets took (UMEM, rings)
	size_t engine_fds = 0;     // descriptors this process held with the engine open
	size_t switchd_fds = 0;    // descriptors switchd held
	double mean_hops = 0;      // switches on each ring pair's shortest path, averaged
	double capacity_gbps = 0, raw_1core_gbps = 0, limit_gbps = 0;
	std::vector<double> capacity_rounds, raw_1core_rounds, limit_rounds;
	uint64_t raw_stalls = 0;   // raw windows reset after 1 s without an ACK
	uint64_t raw_lost = 0;     // raw data and ACK frames pushed and never received (after a drain)
	uint64_t raw_other = 0;    // frames the raw hosts received that were neither (PAUSE, strays)
	uint64_t raw_socket_drops = 0; // of the raw rounds: frames the sockets' kernel side dropped (XskStats)
	double engine_open_s = 0;  // the engine's open (sockets, UMEM, rings), first round
	size_t left_behind = 0;    // namespaces of the shape still present after teardown
	double ratio_to_raw() const { return raw_1core_gbps > 0 ? capacity_gbps / raw_1core_gbps : 0; }
	double ratio_to_limit() const { return limit_gbps > 0 ? capacity_gbps / limit_gbps : 0; }
};

// Return: the report (a table, or JSON with --format json); every shape's topology is removed on
// every path.
Result<std::string> bench_fabric(const FabricBenchOptions &o);

} // namespace qn
