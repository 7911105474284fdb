// topology.h - quench topologies: the file format (docs/topology-format.md), the ns-3 RDMA
// simulator importer, derivation of addresses, MACs, interface names and ifindexes, and the
// ECMP routes the switches are programmed with.
//
// Units: rates in bit/s and delays in ns of fabric time; MTU is the IP MTU in bytes.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/addr.h"
#include "common/result.h"

namespace qn {

enum class NodeKind { Host, Switch };

struct LinkDefaults {
	uint64_t rate_bps = 10'000'000'000ULL;
	uint32_t mtu = 2048;
	uint64_t delay_ns = 1000;
};

// A host's RDMA stack: the quench engine (AF_XDP) or Soft-RoCE (rdma_rxe on its veth, driven
// by `quench agent`; docs/agent.md), in the host's namespace or, for kernels whose rxe works
// only in the initial namespace (Debian 12's 6.1), with its veth end in the initial namespace.
inline constexpr int kStackEngine = 0;
inline constexpr int kStackRxe = 1;
inline constexpr int kStackRxeInitNs = 2;
inline bool is_rxe_stack(int stack) { return stack == kStackRxe || stack == kStackRxeInitNs; }

// The veth name of an rxe host in the initial namespace (kStackRxeInitNs).
std::string initns_ifname(const std::string &topo, const std::string &host);

struct Node {
	std::string name;
	NodeKind kind = NodeKind::Host;
	int id = 0;               // index in Topology::nodes (ns-3 node id on import)
	int line = 0;             // where it was declared (0 when derived)
	uint32_t ip = 0;          // host IPv4, host order; derived when 0
	bool ip_given = false;
	Mac mac{};                // host MAC; derived when not given
	bool mac_given = false;
	int stack = 0;             // host: kStackEngine, kStackRxe or kStackRxeInitNs (`stack=rxe`)
	uint64_t buffer_bytes = 0; // switch shared buffer B
	// Other switch settings as written (admission, alpha, ecn, kmin, ...: swcfg.h), validated
	// at parse time and applied at `topo up`.
	std::vector<std::pair<std::string, std::string>> settings;
};

struct Link {
	int a = -1, b = -1;       // node ids
	uint64_t rate_bps = 0;
	uint32_t mtu = 0;
	uint64_t delay_ns = 0;
	double error_rate = 0.0;  // loss probability per frame and direction; applied by the engine
				  // on host links and cables (docs/transport.md)
	int line = 0;
};

// One end of a link, as brought up.
struct Port {
	int node = -1;            // owning node id
	int link = -1;            // link index
	int peer_node = -1;
	int peer_port = -1;       // index into Topology::ports
	int port_no = 0;          // 0-based port number on a switch; 0 on a host
	std::string ifname;       // "<node>-p<k>" on switches, "<node>-eth0" on hosts
	uint32_t ifindex = 0;     // explicit, distinct across the topology
	Mac mac{};
};

struct NextHop {
	int port = -1;            // index into Topology::ports (egress port on this switch)
};

struct Route {
	uint32_t dst_ip = 0;      // host order
	int prefix_len = 32;
	std::vector<NextHop> nexthops;
};

struct Topology {
	std::string name;         // [a-z0-9]+; namespaces are qn-<name>-<node>
	std::string source;       // file it came from
	std::vector<Node> nodes;
	std::vector<Link> links;
	std::vector<Port> ports;  // filled by derive()
	LinkDefaults defaults;
	uint64_t default_buffer_bytes = 12'000'000ULL; // DCQCN's Trident II: 12 MB
	std::vector<std::string> warnings; // filled by derive(): valid but limiting choices

	int find(const std::string &node) const;
	std::vector<int> ports_of(int node) const;
	// The node's namespace; "" for an rxe host in the initial namespace (kStackRxeInitNs).
	std::string netns(int node) const
	{
		return nodes[size_t(node)].stack == kStackRxeInitNs ? "" : "qn-" + name + "-" + nodes[size_t(node)].name;
	}
	// Return: the ECMP routes for one switch: a /32 per host with every shortest-path next hop.
	std::vector<Route> routes_for(int sw) const;
	// The topology in quench's own format with every value explicit; parsing it gives the
	// same topology (the state file of a running topology).
	std::string to_text() const;
	// A canonical text form of the derived topology (what `topo show` prints and the state
	// file stores).
	std::string describe() const;
	// A few lines for a topology of any size (what `topo show` prints beyond kShowAllNodes
	// nodes): nodes grouped by name pattern (h[1..320], e1x1 .. e8x4), switches by port count
	// and buffer, links by kind, rate, delay and MTU.
	std::string summary() const;
};

// `topo show` lists every node and port up to this many nodes, and summarises beyond.
inline constexpr size_t kShowAllNodes = 40;

using Params = std::map<std::string, std::string>;

// Parse quench's format. `overrides` replace `param` defaults (--param N=8).
// Return: the topology, derived and validated, or an error naming file, line and field.
Result<Topology> parse_topology(const std::string &text, const std::string &source,
				const Params &overrides = {});
Result<Topology> load_topology_file(const std::string &path, const Params &overrides = {});

// Import an ns-3 RDMA simulator topology (line 1: nodes switches links; line 2: switch ids;
// then `src dst rate delay error_rate` per link). Hosts become h<id>, switches sw<id>.
Result<Topology> parse_ns3_topology(const std::string &text, const std::string &source,
				    const std::string &name);

// Fill ports, interface names, ifindexes, MACs and host addresses; validate the graph.
Status derive(Topology &t);

// The ns-3 simulator's address for node id i: 11.0.0.0 + ((i/256) << 16) + ((i%256) << 8) + 1.
uint32_t ns3_node_ip(int id);

} // namespace qn
