// engine_desc.h - what an engine serves, as the control plane describes it (DESIGN.md §8, §9):
// the fabric's graph (for paths and base RTTs), the host ports with their addresses and links,
// the cables, and the probes the engine reads the switches through. The engine knows no
// topology file, namespace, pin path or state file: every host port, cable end and probe is a
// function the control plane made (control/engine_desc.h builds one from a running topology;
// tests build theirs on FakePorts).
//
// Units: fabric ns and fabric bit/s.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/addr.h"
#include "common/result.h"
#include "transport/port.h"
#include "transport/wire.h"

namespace qn::tp {

// Opens a host's port or a cable end with `frames` UMEM chunks (half RX, half TX).
using PortOpen = std::function<Result<std::unique_ptr<FramePort>>(uint32_t frames)>;

// A node of the fabric's graph. Hosts do not forward (paths never cross them).
struct FabricNode {
	std::string name;
	bool host = false;
};

// A link of the graph between nodes a and b (indices into EngineDesc::nodes).
struct FabricLink {
	int a = -1, b = -1;
	uint64_t rate_bps = 0;
	uint64_t delay_ns = 0;  // one way
	uint32_t mtu = 0;       // IP MTU
};

struct HostDesc {
	std::string name;
	int node = -1;          // its node in EngineDesc::nodes
	Endpoint ep;            // its MAC and IPv4 address
	Mac gw{};               // the MAC of the switch port it faces (every frame's destination)
	uint64_t link_bps = 0;  // its link: rate, one-way delay, IP MTU, loss per frame and direction
	uint64_t delay_ns = 0;
	uint32_t mtu = 0;
	double error_rate = 0;
	PortOpen open;
	// Frames its port's interface dropped so far (both directions; a hidden drop that makes a
	// run invalid). Empty: the port has no such counter.
	std::function<Result<uint64_t>()> port_drops;
};

// A delay line between two switch ports (DESIGN.md §1): frames received on end k leave on the
// other end after their serialization at rate_bps (store and forward: a frame arrives when its
// last bit does; the upstream HTB releases it at its first) and delay_ns.
struct CableDesc {
	std::string name;
	int link = -1;          // the link of EngineDesc::links it is (-1: unknown)
	uint64_t delay_ns = 0;
	uint64_t rate_bps = 0;  // 0: no serialization added
	double error_rate = 0;
	PortOpen open[2];
};

// One switch egress queue the engine can sample: its depth in bytes now.
struct QueueDesc {
	std::string sw, port;   // the switch and its port's name (the sample's label is "sw/port")
	std::function<Result<uint64_t>()> depth;
};

// A switch's fidelity monitor (bpf/include/fidmon.h): a memory-mappable array of QN_MAX_PORTS
// qn_fid_port entries and a ring buffer of lost periods. open() returns the two file
// descriptors, which the engine owns from then on.
struct MonitorDesc {
	std::string name;                    // the switch
	std::vector<std::string> port_label; // per port_no: "<switch>/<ifname>" ("" = no port)
	std::vector<std::string> port_host;  // per port_no: the host it faces ("" = a switch or none)
	struct Fds {
		int ports = -1, events = -1;
	};
	std::function<Result<Fds>()> open;
};

struct EngineDesc {
	std::string name;       // the fabric's name (messages)
	std::vector<FabricNode> nodes;
	std::vector<FabricLink> links;
	std::vector<HostDesc> hosts;
	std::vector<CableDesc> cables;
	std::vector<QueueDesc> queues;
	std::vector<MonitorDesc> monitors;
	// False once the fabric was taken down under the engine (its sockets are dead then); the
	// engine asks about every 100 ms of wall time. Empty: the fabric never goes away.
	std::function<bool()> alive;
};

} // namespace qn::tp
