// capacity.h - the engine's capacity at D = 1 as calibration measures it (docs/experiments.md
// "Dilation and calibration"), shared by `quench run`'s calibration and `quench bench fabric`:
// every sender at once, each to the next host of the topology (a ring, so no receiver takes more
// than one sender's load), the payload bit/s they moved together.
//
// Units: payload bit/s of wall time.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/result.h"
#include "transport/traffic.h"

namespace qn {

// One flow per distinct sender (in the order given) to the host after it in `hosts` (wrapping),
// 16 MB in all, each at least 128 KB (64 full frames; up to 16 senders that is 1 MB each, and
// the 320-host tree moves 40 MB rather than 320 MB at its fabric's slow D = 1 pace). A sender that is not in `hosts` sends to hosts[0].
std::vector<tp::FlowSpec> ring_flows(const std::vector<std::string> &hosts, const std::vector<std::string> &senders);

// The payload bit/s `flows` moved at once (their bytes over the span from the first post to the
// last completion), the best of three runs (one stall of this VM, up to 14 ms, must not set the
// figure); 0 when a flow did not complete within `ro.timeout_ns`. An interrupted run is an
// error "interrupted by a signal".
// How long capacity_of waits for `flows` (wall ns at D = 1): 4 s, or their bytes at 20 Mbit/s
// when that is longer (a large fabric's ring at the pace its D = 1 allows).
uint64_t capacity_timeout_ns(const std::vector<tp::FlowSpec> &flows);

Result<double> capacity_of(tp::Engine &e, const std::vector<tp::FlowSpec> &flows, const tp::RunOptions &ro);

// The run options of the capacity measure for `flows`: no congestion control, an ACK per
// packet, and the retransmission timeout of a lossless fabric ("none:lossless", a RoCE NIC's
// 67 ms), since the switches run PFC while it is measured and drop nothing. With IRN's 100 us
// (the lossy "none", before 2026-11-29) the measure's own overload, every sender at line rate
// at D = 1 with millisecond queues, fired timeouts spuriously: go-back-N resent 8-80% of the
// packets of a k=4 ring, more with the engine's shards, whose senders run ahead of a busy
// receiver's shard (docs/PERFORMANCE.md "Shards").
tp::RunOptions capacity_run_options(const std::vector<tp::FlowSpec> &flows, std::function<bool()> stop);

} // namespace qn
