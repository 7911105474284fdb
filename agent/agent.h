// agent.h - the Soft-RoCE agent (docs/agent.md): gives rdma_rxe QPs the CC library's reactions.
// Per rxe host it reads the QPs from rdma netlink and learns their peers from the packets
// (qn_rxe.bpf.c's qn_rxe_qps), runs one controller and one notification point per QP on
// CLOCK_MONOTONIC, sends CNPs for CE-marked arrivals over AF_PACKET, and writes each QP's rate
// into the pacer's map (qn_rxe_rate). PFC and SFC's BTS are obeyed by the host programs
// themselves; the agent reports their pauses. It links the CC library and the wire codec, not
// the engine.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/addr.h"
#include "common/result.h"

namespace qn::agent {

// One rxe host, as the topology brought it up (filled by the control plane).
struct HostDesc {
	std::string name;
	std::string rdma_dev;   // its rxe device
	std::string pin_dir;    // where its qn_rxe maps are pinned
	std::string netns;      // its namespace (for the CNP socket)
	std::string ifname;
	uint32_t ifindex = 0;
	Mac mac{};
	uint32_t ip = 0;        // host order
	Mac gw{};               // the switch port's MAC (next hop of everything)
	uint64_t link_bps = 0;  // its link's rate = the QPs' line rate
	uint32_t mtu = 0;
};

struct Options {
	std::string scheme = "dcqcn";
	std::map<std::string, std::string> overrides; // --cc-set
	bool derived = true;          // the scheme's parameters derived for the fabric (common.md §7)
	uint64_t base_rtt_ns = 100'000;
	uint64_t duration_ns = 0;     // 0: until stopped
	bool pace = true;             // negative control: compute rates but never write them
	bool obey_pauses = true;      // negative control: false = the host programs ignore PFC and
				      // BTS while the agent runs (they obey them whenever the host is up)
	std::string trace_path;       // rate changes, CSV (empty: none)
	uint64_t scan_ns = 20'000'000; // rdma netlink QP scan period
};

struct Summary {
	uint64_t qps = 0;             // QPs controlled
	uint64_t cnp_tx = 0;          // CNPs the notification points sent
	uint64_t cnp_rx = 0;          // CNPs the reaction points received
	uint64_t ce_rx = 0;           // CE events received
	uint64_t rate_cuts = 0;       // rate decreases applied
	uint64_t rate_writes = 0;     // pacer map writes
	uint64_t lowest_rate_bps = 0; // over all QPs (0: none)
	uint64_t ect_set = 0;         // data frames the egress programs set ECT(0) on
	uint64_t events_lost = 0;     // ring buffer overflows
	uint64_t send_errors = 0;     // CNPs the socket refused
	uint64_t bts = 0;             // BTS the host programs took for the controlled QPs
	uint64_t bts_paused_ns = 0;   // their pauses' union, summed over QPs
	std::vector<std::string> per_qp; // one line per QP: CE, CNPs, rates, BTS and paused time
	std::vector<std::string> pfc;   // one line per host and paused priority: XOFF, XON, paused time
	std::vector<std::string> notes; // the scheme's parameters in force, per host
};

// Check that `scheme` can run on rxe QPs. Return: the reason it cannot, or "".
std::string refuse_reason(const std::string &scheme);

// Run until `stop` is set or the duration passes. Errors name the host and the step.
Result<Summary> run(const std::vector<HostDesc> &hosts, const Options &o, const std::atomic<bool> &stop);

// rxe's UDP source port for local QPN `qpn` (drivers/infiniband/sw/rxe: 0xC000 plus a 14-bit
// hash of the QPN), which the agent matches against a QP's packets to find its peer.
uint16_t rxe_sport(uint32_t qpn);

} // namespace qn::agent
