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
#include "transport/port.h"

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

// The fewest chunks a socket may get when a fabric's UMEM is fitted to the machine: 512 RX and
// 512 TX. Measured (docs/transport.md): in an 8:1 incast of 5 MB on the 10 Gbit/s star a socket
// held at most 52 TX frames in the kernel under PFC, and 2,916 lossy (no CC, a 12 MB buffer
// full, 461,137 drops); a lossy fabric on a floor-sized UMEM runs out and says so (INVALID).
inline constexpr uint32_t kMinFramesPerPort = 1024;

struct MachineLimits;
// Chunks per socket for `sockets` sockets: `wanted` when their UMEM fits 3/4 of the available
// memory (or the memory is unknown), else the largest power of two below it that fits, down to
// kMinFramesPerPort; 0 when even that does not fit (check_engine_needs then refuses the needs
// at the floor, naming them). A socket
// that runs out of TX chunks makes its run INVALID (tx_no_frame), so a smaller UMEM is a
// shortage the verdict sees, never a silent one.
uint32_t frames_to_fit(uint64_t sockets, uint32_t wanted, const MachineLimits &m);

// The needs of `hosts` served hosts and `cables` cables with the chunks per socket fitted to `m`
// (frames_to_fit; the floor when nothing fits, which check_engine_needs then refuses), and that
// chunk count: what the engine opens and what `topo check` states.
struct FittedNeeds {
	EngineNeeds need;
	uint32_t frames_per_port = 0;
};
FittedNeeds fit_engine_needs(uint64_t hosts, uint64_t cables, uint32_t wanted, const MachineLimits &m);

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
