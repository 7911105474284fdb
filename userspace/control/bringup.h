// bringup.h - `quench topo up|down|show`: namespaces, veth pairs, addresses, static neighbours,
// HTB shapers, switch programs and host steering, and their removal.
//
// What `up` makes, all named from the topology name T (so `down` finds it even after an `up`
// that died half-way): namespaces qn-T-<node>; veths inside them; pins under
// /sys/fs/bpf/quench/T/; the state file /run/quench/T.topo, written last.
#pragma once

#include <string>
#include <vector>

#include "common/paths.h"
#include "common/result.h"
#include "common/units.h"
#include "control/topology.h"

namespace qn {


struct UpOptions {
	Dilation dilation;
	bool attach_steering = true; // XDP steering on host veths
	bool cables = true;          // delayed switch-to-switch links run through engine cables
	bool owned = false;          // this process owns the topology (`quench run`): when it dies
				     // without taking it down, orphaned_topologies() names it
	bool rps = false;            // switch ports spread their receive work over every online CPU
				     // (RPS): the kernel path of a frame no longer runs whole on the
				     // CPU that sent it. Off by default: on a machine whose CPUs stop
				     // (hypervisor preemption) the frames then wait on stops the
				     // engine cannot see (docs/PERFORMANCE.md "Cut 2, tried")
};

// The options of `topo up` a user sets, one table (an option is added here once): its flag,
// the UpOptions field it sets (to false when it `negates`), and its key in the topology's meta
// file, so a topology brought up again with other options is made again instead of being taken
// as already up (or changed in place).
struct UpFlag {
	const char *flag, *doc;
	bool UpOptions::*field;
	bool negates;
	const char *meta;
};
const std::vector<UpFlag> &up_flags();
// The meta lines of `o` for `t`, one per up_flags() entry ("KEY yes|no"); cables say yes only
// when `t` has a delayed switch-to-switch link.
std::string up_flags_meta(const Topology &t, const UpOptions &o);

// The hex mask of every online CPU, as rps_cpus takes it (32-bit groups, comma-separated, most
// significant first), from the text of /sys/devices/system/cpu/online ("0-1", "0,2-5").
// Return: an error naming the text when it is not a CPU list.
Result<std::string> cpu_mask_of_list(const std::string &online);

// A cable: a switch-to-switch link with propagation delay, made of two veth pairs whose inner
// ends live in the topology's cable namespace, where the engine's delay line joins them
// (DESIGN.md §1). End 0 faces link endpoint a, end 1 faces b.
struct CableSpec {
	int link = -1;
	std::string name;            // "cb<link>"
	std::string netns;           // qn-<topo>-cable-ns
	std::string ifname[2];       // "cb<link>a", "cb<link>b"
	uint32_t ifindex[2] = {};
	std::string xskmap_pin[2];   // the XSKMAP of the XDP program on each end
	uint64_t delay_ns = 0;       // fabric
	uint64_t rate_bps = 0;       // the link's rate (fabric): a frame arrives when its last bit does
	double error_rate = 0.0;     // the link's loss probability, per frame and direction
};
// Return: true when link `l` becomes a cable at `topo up` (switch to switch, delay > 0).
bool is_cable_link(const Topology &t, const Link &l);
std::string cable_netns(const Topology &t);
// Return: the cables of a running topology (none when it was brought up without cables).
std::vector<CableSpec> cable_specs(const Topology &t);

// HTB parameters of one switch egress port (wall-clock rates: fabric rate / D).
struct HtbPlan {
	uint64_t rate_bps = 0;      // parent 1:1 and ceil of both leaves
	uint64_t leaf_rate_bps = 0; // own rate of the control (1:10) and data (1:20) leaves: the least
	                            // HTB takes, so both always borrow from 1:1 (plan_htb)
	uint64_t burst_bytes = 0;   // burst = cburst on every class
	uint64_t quantum_bytes = 0;
	uint64_t fifo_limit_bytes = 0; // bfifo leaf limit: deeper than the switch buffer
};
HtbPlan plan_htb(uint64_t fabric_rate_bps, uint32_t mtu, uint64_t buffer_bytes, const Dilation &d);

Status topo_up(const Topology &t, const UpOptions &o);
// Remove everything `up` made for topology `name`. Missing pieces are not errors.
Status topo_down(const std::string &name);
Status topo_down_all();
// Return: every running topology (or `only`), described: every node and port up to
// kShowAllNodes nodes or with `detail`, a summary beyond (Topology::summary).
Result<std::string> topo_show(const std::string &only = "", bool detail = false);

// Load the state of a running topology (the one `up` wrote). Return: error if it is not up.
Result<Topology> load_running(const std::string &name);
// Names of running topologies (state files).
std::vector<std::string> running_topologies();
// Running topologies whose owner process (UpOptions::owned) is gone: a `quench run` killed by
// SIGKILL leaves its topology up; the next `quench run` takes such topologies down.
std::vector<std::string> orphaned_topologies();
// Dilation recorded by `up`.
Result<Dilation> running_dilation(const std::string &name);

} // namespace qn
