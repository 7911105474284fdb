// switchd.h - the per-topology switch control process (`quench switchd TOPO`, started by
// `topo up`, stopped by `topo down`). One thread per switch reads that switch's qn_pfc_events
// ring buffer and sends what no packet can carry: 802.1Qbb XOFF when a host-facing ingress
// crosses XOFF, refreshes every half pause while it stays paused, XON when it falls to the
// resume threshold. Frames go out through AF_PACKET with PACKET_QDISC_BYPASS, so they never
// wait behind data in the port's HTB queue.
#pragma once

#include <string>

#include "common/result.h"

namespace qn {

// Run until SIGTERM/SIGINT. Return: an error if the topology is not up.
Status run_switchd(const std::string &topology);

// Start `quench switchd NAME` detached (own session, log in /run/quench/NAME.switchd.log,
// pid in /run/quench/NAME.switchd.pid). `self` is this executable's path; `switches` sizes the
// wait for its ready line (its start-up opens sockets and maps per switch and port).
Status spawn_switchd(const std::string &self, const std::string &topology, size_t switches = 1);
// Stop it (pidfile, then any process whose command line is `... switchd NAME`).
void stop_switchd(const std::string &topology);
// Return: the pid its pidfile names, as text ("" when there is none), for /proc lookups
// (control/sysmem.h).
std::string switchd_pid(const std::string &topology);

} // namespace qn
