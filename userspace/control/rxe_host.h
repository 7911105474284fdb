// rxe_host.h - Soft-RoCE hosts of a topology (`host NAME stack=rxe`, docs/agent.md): rdma_rxe on
// the host's veth instead of the engine, sch_fq as its root qdisc, and qn_rxe.bpf.c on its tc
// hooks (ECT marking, EDT pacing per QP and per link, CNP and CE capture for `quench agent`).
#pragma once

#include <string>

#include "common/result.h"
#include "control/topology.h"

namespace qn {

// Return: the rdma device name of rxe host `host` ("qnr-<topology>-<host>").
std::string rxe_device(const Topology &t, int host);
// Return: true when the topology has an rxe host.
bool has_rxe_hosts(const Topology &t);
// Return: true when the loaded rdma_rxe keeps its sockets per network namespace (it has rxe_ns.c:
// 7.x kernels); Debian 12's 6.1 rxe works only in the initial namespace.
bool rxe_netns_aware();
// On a kernel whose rdma_rxe is loaded (or loadable) and not namespace-aware, move every
// `stack=rxe` host of `t` to the initial namespace (kStackRxeInitNs). Return: how many moved.
int place_rxe_hosts(Topology &t);
// Bring rxe host `host` up: qdisc, programs (maps pinned under the host's pin dir), rxe device.
// Errors name the step (a kernel without rdma_rxe says so).
Status rxe_host_up(const Topology &t, int host);
// Remove the rxe devices of topology `name` (before its namespaces go). Best effort.
void rxe_hosts_down(const std::string &name);

} // namespace qn
