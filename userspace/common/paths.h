// paths.h - where a running topology lives on this machine, as named functions: its pins under
// bpffs and its state files. Only the control plane uses them; the engine is handed ports and
// probes instead (transport/engine_desc.h).
#pragma once

#include <string>

namespace qn {

inline constexpr const char *kPinRoot = "/sys/fs/bpf/quench";
inline constexpr const char *kStateDir = "/run/quench";

// /sys/fs/bpf/quench/<topo>
inline std::string topo_pin_dir(const std::string &topo) { return std::string(kPinRoot) + "/" + topo; }
// The pins of one switch or host: /sys/fs/bpf/quench/<topo>/<node>
inline std::string node_pin_dir(const std::string &topo, const std::string &node)
{
	return topo_pin_dir(topo) + "/" + node;
}
// The pins of one cable end: /sys/fs/bpf/quench/<topo>/cables/<ifname>
inline std::string cable_pin_dir(const std::string &topo, const std::string &ifname)
{
	return topo_pin_dir(topo) + "/cables/" + ifname;
}
// The state file `topo up` writes last and `topo down` removes first: /run/quench/<topo>.topo
inline std::string state_path(const std::string &topo) { return std::string(kStateDir) + "/" + topo + ".topo"; }
inline std::string meta_path(const std::string &topo) { return std::string(kStateDir) + "/" + topo + ".meta"; }
// The process that owns a topology (`quench run`): "PID STARTTIME" (/proc/PID/stat field 22).
inline std::string owner_path(const std::string &topo) { return std::string(kStateDir) + "/" + topo + ".owner"; }
inline std::string switchd_pid_path(const std::string &topo)
{
	return std::string(kStateDir) + "/" + topo + ".switchd.pid";
}
inline std::string switchd_log_path(const std::string &topo)
{
	return std::string(kStateDir) + "/" + topo + ".switchd.log";
}

} // namespace qn
