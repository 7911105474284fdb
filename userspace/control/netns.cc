// netns.cc - setns() based namespace scopes and bpffs helpers.
#include "control/netns.h"

#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <optional>
#include <sstream>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

namespace qn {

NetnsScope::NetnsScope(const std::string &name) : status_(ok_status())
{
	if (name.empty()) // the current namespace (an rxe host in the initial one: Topology::netns)
		return;
	orig_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (orig_ < 0) {
		status_ = sys_error(errno, "open own network namespace");
		return;
	}
	std::string path = "/run/netns/" + name;
	int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		status_ = sys_error(errno, "open namespace " + name);
		return;
	}
	if (setns(fd, CLONE_NEWNET) < 0)
		status_ = sys_error(errno, "setns into " + name);
	close(fd);
}

NetnsScope::~NetnsScope()
{
	if (orig_ >= 0) {
		// Failing to return would leave this thread in the wrong namespace: nothing sane
		// can continue, so abort loudly rather than corrupt the next operation.
		if (setns(orig_, CLONE_NEWNET) < 0)
			std::abort();
		close(orig_);
	}
}

bool netns_exists(const std::string &name)
{
	struct stat st;
	return stat(("/run/netns/" + name).c_str(), &st) == 0;
}

std::vector<std::string> list_netns()
{
	std::vector<std::string> out;
	DIR *d = opendir("/run/netns");
	if (!d)
		return out;
	while (dirent *e = readdir(d)) {
		std::string n = e->d_name;
		if (n != "." && n != "..")
			out.push_back(n);
	}
	closedir(d);
	return out;
}

Status write_sysctl(const std::string &key, const std::string &value)
{
	std::string path = "/proc/sys/" + key;
	int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return sys_error(errno, "open " + path);
	ssize_t n = write(fd, value.data(), value.size());
	int err = errno;
	close(fd);
	if (n != ssize_t(value.size()))
		return sys_error(err, "write " + path);
	return ok_status();
}

Status ensure_bpffs()
{
	struct statfs sf;
	if (statfs("/sys/fs/bpf", &sf) == 0 && sf.f_type == BPF_FS_MAGIC)
		return ok_status();
	mkdir("/sys/fs/bpf", 0755);
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700") < 0)
		return sys_error(errno, "mount bpffs on /sys/fs/bpf");
	return ok_status();
}

Result<IfCounters> if_counters(const std::string &netns, const std::string &ifname)
{
	std::optional<NetnsScope> scope;
	if (!netns.empty()) {
		scope.emplace(netns);
		QN_TRY(scope->status());
	}
	// /proc/thread-self/net follows this thread's namespace (setns), unlike /sys/class/net.
	std::ifstream f("/proc/thread-self/net/dev");
	if (!f)
		return sys_error(errno, "open /proc/thread-self/net/dev");
	std::string line;
	while (std::getline(f, line)) {
		auto colon = line.find(':');
		if (colon == std::string::npos)
			continue;
		std::string name = line.substr(0, colon);
		name.erase(0, name.find_first_not_of(' '));
		if (name != ifname)
			continue;
		IfCounters c;
		uint64_t v[16] = {};
		std::istringstream in(line.substr(colon + 1));
		for (auto &x : v)
			in >> x;
		c.rx_bytes = v[0];
		c.rx_packets = v[1];
		c.rx_dropped = v[3];
		c.tx_bytes = v[8];
		c.tx_packets = v[9];
		c.tx_dropped = v[11];
		return c;
	}
	return make_error("no interface " + ifname + " in namespace " + (netns.empty() ? "(current)" : netns));
}

Status remove_tree(const std::string &path)
{
	DIR *d = opendir(path.c_str());
	if (!d) {
		if (errno == ENOENT)
			return ok_status();
		if (errno == ENOTDIR) {
			if (unlink(path.c_str()) < 0 && errno != ENOENT)
				return sys_error(errno, "unlink " + path);
			return ok_status();
		}
		return sys_error(errno, "open " + path);
	}
	std::vector<std::string> children;
	while (dirent *e = readdir(d)) {
		std::string n = e->d_name;
		if (n != "." && n != "..")
			children.push_back(path + "/" + n);
	}
	closedir(d);
	for (const auto &c : children) {
		struct stat st;
		if (lstat(c.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
			QN_TRY(remove_tree(c));
		else if (unlink(c.c_str()) < 0 && errno != ENOENT)
			return sys_error(errno, "unlink " + c);
	}
	if (rmdir(path.c_str()) < 0 && errno != ENOENT)
		return sys_error(errno, "rmdir " + path);
	return ok_status();
}

} // namespace qn
