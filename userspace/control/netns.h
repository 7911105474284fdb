// netns.h - working inside network namespaces from one process: enter a named namespace for
// the current thread (setns) and come back, look up interfaces there, write per-namespace
// sysctls, and keep bpffs mounted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace qn {

// RAII: enter /run/netns/<name> on construction, return to the original namespace on
// destruction. Check ok() (or status()) before using the namespace.
class NetnsScope {
public:
	explicit NetnsScope(const std::string &name); // "": stay where the thread is
	~NetnsScope();
	NetnsScope(const NetnsScope &) = delete;
	NetnsScope &operator=(const NetnsScope &) = delete;
	const Status &status() const { return status_; }
	bool ok() const { return status_.ok(); }

private:
	int orig_ = -1;
	Status status_;
};

bool netns_exists(const std::string &name);
// Return: every named namespace (from /run/netns).
std::vector<std::string> list_netns();

// Write a sysctl under /proc/sys of the current thread's namespace ("net/ipv6/conf/all/disable_ipv6").
Status write_sysctl(const std::string &key, const std::string &value);

// Mount bpffs on /sys/fs/bpf if it is not there. Return: error when mounting fails.
Status ensure_bpffs();

// 64-bit interface counters, from /proc/thread-self/net/dev inside `netns` ("" = current).
struct IfCounters {
	uint64_t rx_bytes = 0, rx_packets = 0, rx_dropped = 0;
	uint64_t tx_bytes = 0, tx_packets = 0, tx_dropped = 0;
};
Result<IfCounters> if_counters(const std::string &netns, const std::string &ifname);

// Remove a directory tree of pins (bpffs allows unlink/rmdir). Missing is not an error.
Status remove_tree(const std::string &path);

} // namespace qn
