// flows.h - the flow list of a set of workloads on a topology: the one builder behind
// `quench run` (an experiment's `workload` lines) and `quench gen` (its --pattern options), so the
// same workload and seed give the same flows and flow-list hash in both (docs/experiments.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "control/experiment.h"
#include "control/topology.h"
#include "transport/traffic.h"

namespace qn {

// The flows of `workloads` on topology `t`, sorted by start time, ids 0..n-1. Workload i draws
// from seed `seed` x 1000003 + i x 7919 (incast round r adds r). Errors name `source`, the
// workload's line and the field (an unknown host, too few senders, a CDF or flow file that does
// not load, a flow file naming a node that is not a host).
Result<std::vector<tp::FlowSpec>> build_flows(const std::vector<Workload> &workloads, uint64_t seed,
					       const Topology &t, const std::string &source);

// The slowest host link of `t` (what a Poisson load is a fraction of).
uint64_t host_link_rate(const Topology &t);

} // namespace qn
