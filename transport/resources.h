// resources.h - what an engine takes from the machine, computed before it takes it: file
// descriptors (one AF_XDP socket per served host and per cable end, each with its own UMEM, plus
// the io_uring and a margin for the BPF maps and files a run opens) and UMEM bytes (every chunk of
// every socket, mapped and populated at open). A fabric that needs more than the machine has gets
// an error naming the limit before any socket exists; the soft open-files limit is raised to what
// the fabric needs (up to the hard limit), since the default soft limit (often 1024) is below a
// k=8 fat-tree with cables (128 hosts + 2 x 256 cable ends).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace qn::tp {

struct EngineNeeds {
	uint64_t sockets = 0;    // AF_XDP sockets: served hosts + 2 x cables
	uint64_t fds = 0;        // file descriptors the engine holds at once (sockets + margin)
	uint64_t umem_bytes = 0; // UMEM mapped and populated: sockets x frames x chunk bytes
};

// Margin of file descriptors beyond the sockets (a gen run of the 9-host star peaked at 16 open
// descriptors, 7 beyond its sockets): the io_uring, the pinned maps a run opens
// (XSKMAPs while binding, switch counters, dequeue marks), trace and result files, stdio.
inline constexpr uint64_t kFdMargin = 64;

// UMEM chunks per AF_XDP socket unless a run sets EngineOptions::frames_per_port: half RX, half TX
// (a TX frame is held until the switch has forwarded it).
inline constexpr uint32_t kDefaultFramesPerPort = 8192;

EngineNeeds engine_needs(uint64_t hosts, uint64_t cables, uint32_t frames_per_port);

// The machine's side: the open-files hard limit and the memory the kernel reports available.
struct MachineLimits {
	uint64_t nofile_hard = 0;
	uint64_t mem_available_bytes = 0; // 0 = unknown (not checked)
};

// Error (naming the fabric, the need and the limit) when `n` does not fit `m`: more descriptors
// than the hard limit, or UMEM above 3/4 of the available memory (the kernel's veths, skbs and
// the switches' queues need the rest).
Status check_engine_needs(const std::string &fabric, const EngineNeeds &n, const MachineLimits &m);

// This process's limits (getrlimit, /proc/meminfo's MemAvailable).
MachineLimits machine_limits();

// Raise the soft open-files limit to `need` (at most the hard limit); no change when it is
// already at or above it.
Status raise_nofile(uint64_t need);

} // namespace qn::tp
