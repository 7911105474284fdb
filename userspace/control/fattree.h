// fattree.h - k-ary fat-trees (Al-Fares et al., SIGCOMM 2008) written as quench topology files
// (docs/topology-format.md "Fat-trees"): k pods of k/2 edge and k/2 aggregation switches,
// (k/2)^2 core switches, k^3/4 hosts; edge i of a pod links to every aggregation switch of its
// pod, aggregation j of every pod to cores (j-1)k/2+1 .. jk/2. Hosts are declared first, so
// host h<n> has node id n-1 (the ns-3 simulator's numbering: its flow files replay as they are).
#pragma once

#include <string>

#include "common/result.h"

namespace qn {

struct FatTreeSpec {
	int k = 4;                    // even, 4..16 (an edge switch has k ports; an edge or
				      // aggregation switch's upward ECMP fan-out is k/2 <= 8 next hops)
	std::string name;             // default ft<k>
	std::string rate = "100Gbps"; // host links ($RATE)
	std::string fabric_rate;      // switch links ($FABRIC), default = rate
	std::string delay = "1us";    // host links ($DELAY)
	std::string fabric_delay = "1us"; // switch links ($FABRIC_DELAY; > 0: cables)
	std::string buffer = "32MB";  // every switch
	std::string mtu = "2048";
};

// Return: the topology file's text, or an error naming the bad field. Rates, delays, buffer
// and MTU are written as given (the file's parser validates them) and stay overridable with
// `--param RATE=.. FABRIC=.. DELAY=.. FABRIC_DELAY=..`.
Result<std::string> fattree_text(const FatTreeSpec &s);

// The ns-3 RDMA simulator's standard 320-host tree (its mix/fat.txt), in the simulator's own
// format, so it comes up through the importer as the simulator's file does: 376 nodes (hosts
// 0..319, 20 ToRs 320..339 of 16 hosts, 20 aggregation switches 340..359, 16 cores 360..375), 480
// links; pods of 4 ToRs and 4 aggregation switches, aggregation switch j of every pod to cores
// 360+4j..363+4j; hosts at 100 Gbit/s, every switch link 400 Gbit/s, every link 1000 ns.
std::string ns3_fat320_text();

} // namespace qn
