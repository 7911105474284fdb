// switch_loader.h - load one quench switch: the qn_switch skeleton with its .rodata
// configuration, maps pinned under /sys/fs/bpf/quench/<topology>/<switch>/, ports and routes
// filled and validated inside the switch namespace, tc ingress/egress attached on every port.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <bpf/libbpf.h>

#include "common/paths.h"
#include "common/result.h"
#include "common/units.h"
#include "control/topology.h"

namespace qn {

// The worst wall time from a PAUSE's arrival at a switch port to the port's data class going
// quiet that headroom is sized for (measured: docs/switch.md "PFC", "Measured"). It does not
// cover this machine's CPU stops (docs/switch.md "Headroom").
inline constexpr uint64_t kPfcPauseLatencyWallNs = 6'000'000;
// The PFC headroom of an ingress account on link `l` (qn_port.hdrm_bytes): the wall rate times
// (kPfcPauseLatencyWallNs + the link's round trip) plus two frames.
uint64_t pfc_headroom_bytes(const Link &l, const Dilation &d);
// The headroom of each port of switch `sw`, by port_no: pfc_headroom_bytes, scaled down together
// when their sum exceeds half the switch's buffer (fast wall rates at small D). A scaled port
// covers less than the measured worst latency: a pause that overruns it is counted
// (pfc_slip_over) and invalidates an experiment attempt.
std::vector<uint64_t> switch_headrooms(const Topology &t, int sw, const Dilation &d);

// Return: /sys/fs/bpf/quench/<topology>/<switch>
std::string switch_pin_dir(const Topology &t, int sw);
// The topology's shared map of dequeue-time ECN marks (bpf/include/dqmark.h): every switch and
// host steering program of the topology uses the map pinned here.
std::string dqmarks_pin(const Topology &t);

// The topology's departure dispatcher (bpf/switch/qn_dqdisp.bpf.c): the one program on the
// qdisc_dequeue tracepoint, which hands each departure to its switch's program. Loaded,
// attached and pinned (maps qn_dq_nets, qn_dq_progs and the link, in the topology's pin folder)
// unless pins sized for `t` are there; also makes the shared qn_dqmarks. Call before the
// switches are loaded (they load in parallel and register themselves in it).
Status ensure_topology_bpf(const Topology &t);

// Load, pin, fill, validate the switch program for node `sw`, attach its tc programs and
// register its departure program with the topology's dispatcher (ensure_topology_bpf first).
Status load_switch(const Topology &t, int sw, const Dilation &d);

// Replace the switch's tc programs on every port with the bare redirect baseline (bench), or
// put quench's programs back. Maps stay pinned.
Status attach_bare(const Topology &t, int sw);
Status reattach_switch(const Topology &t, int sw);

// Pin map `m` as DIR/<its name>, replacing an old pin.
Status pin_map(bpf_map *m, const std::string &dir);
// Attach a tc program on ifindex's clsact hook (created if missing; handle 1, priority 1, so a
// re-attach replaces it). Run inside the device's namespace.
Status tc_attach(uint32_t ifindex, bpf_tc_attach_point where, int prog_fd, const std::string &what);
Status tc_detach(uint32_t ifindex, bpf_tc_attach_point where);

// Route libbpf's messages (verifier logs included) to stderr; warnings and above unless verbose.
void setup_libbpf_logging(bool verbose);

} // namespace qn
