// engine_desc.h - the engine description of a running topology (transport/engine_desc.h): the
// graph, every host's port as an AF_XDP socket made inside its namespace and registered in its
// steering program's XSKMAP, the cables, the switches' queue depth probes and fidelity
// monitors from their pins, and liveness from the state file.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "control/topology.h"
#include "transport/engine_desc.h"
#include "transport/xsk.h"

namespace qn {

// Opens a port: (namespace, interface, XSKMAP pin or "", UMEM frames). The default makes an
// AF_XDP socket (open_xsk_port); tests give FakePorts.
using PortFactory = std::function<Result<std::unique_ptr<tp::FramePort>>(
	const std::string &netns, const std::string &ifname, const std::string &xskmap_pin, uint32_t frames)>;

// Open `p` on `ifname` inside namespace `netns` and put it into the XSKMAP pinned at
// `xskmap_pin` ("" = none).
Status open_xsk(tp::XskPort &p, const std::string &netns, const std::string &ifname, const std::string &xskmap_pin,
		uint32_t frames);
// The same, as a new port.
Result<std::unique_ptr<tp::FramePort>> open_xsk_port(const std::string &netns, const std::string &ifname,
						      const std::string &xskmap_pin, uint32_t frames);

// The description of topology `t` as brought up by `topo up` (ports from `ports`, probes on
// its pins). With `probes` false: hosts only, with no cables, queue probes, monitors, interface
// counters or liveness (a topology that was never brought up: unit tests on FakePorts).
tp::EngineDesc engine_desc(const Topology &t, const PortFactory &ports = open_xsk_port, bool probes = true);

} // namespace qn
