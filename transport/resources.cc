#include "transport/resources.h"

#include <sys/resource.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

#include "transport/port.h"

namespace qn::tp {

EngineNeeds engine_needs(uint64_t hosts, uint64_t cables, uint32_t frames_per_port)
{
	EngineNeeds n;
	n.sockets = hosts + 2 * cables;
	n.fds = n.sockets + kFdMargin;
	n.umem_bytes = n.sockets * uint64_t(frames_per_port) * kChunkBytes;
	return n;
}

uint32_t frames_to_fit(uint64_t sockets, uint32_t wanted, const MachineLimits &m)
{
	const uint64_t room = m.mem_available_bytes / 4 * 3;
	auto fits = [&](uint64_t f) { return sockets * f * kChunkBytes <= room; };
	if (m.mem_available_bytes == 0 || fits(wanted))
		return wanted;
	uint64_t f = 1;
	while (f * 2 < wanted)
		f *= 2; // the largest power of two below `wanted`
	for (; f >= kMinFramesPerPort; f /= 2)
		if (fits(f))
			return uint32_t(f);
	return 0;
}

FittedNeeds fit_engine_needs(uint64_t hosts, uint64_t cables, uint32_t wanted, const MachineLimits &m)
{
	const uint32_t fit = frames_to_fit(hosts + 2 * cables, wanted, m);
	FittedNeeds f;
	f.frames_per_port = fit ? fit : kMinFramesPerPort;
	f.need = engine_needs(hosts, cables, f.frames_per_port);
	return f;
}

namespace {
std::string gib(uint64_t bytes)
{
	std::ostringstream o;
	o.precision(3);
	o << double(bytes) / double(1ULL << 30) << " GiB";
	return o.str();
}
} // namespace

Status check_engine_needs(const std::string &fabric, const EngineNeeds &n, const MachineLimits &m)
{
	if (n.fds > m.nofile_hard)
		return make_error(fabric + ": the engine needs " + std::to_string(n.fds) + " file descriptors (" +
				  std::to_string(n.sockets) + " AF_XDP sockets + " + std::to_string(kFdMargin) +
				  "), above this process's open-files hard limit " + std::to_string(m.nofile_hard) +
				  " (raise it: ulimit -Hn, or LimitNOFILE= in a systemd unit)");
	if (m.mem_available_bytes > 0 && n.umem_bytes > m.mem_available_bytes / 4 * 3)
		return make_error(fabric + ": the engine's UMEM would take " + gib(n.umem_bytes) + " (" +
				  std::to_string(n.sockets) + " AF_XDP sockets x " +
				  std::to_string(n.sockets ? n.umem_bytes / n.sockets / kChunkBytes : 0) +
				  " chunks of " + std::to_string(kChunkBytes) + " B), above 3/4 of the " +
				  gib(m.mem_available_bytes) + " this machine has available");
	return ok_status();
}

MachineLimits machine_limits()
{
	MachineLimits m;
	rlimit r{};
	if (getrlimit(RLIMIT_NOFILE, &r) == 0)
		m.nofile_hard = r.rlim_max == RLIM_INFINITY ? UINT64_MAX : uint64_t(r.rlim_max);
	std::ifstream f("/proc/meminfo");
	std::string key;
	uint64_t kib = 0;
	std::string unit;
	while (f >> key >> kib) {
		std::getline(f, unit);
		if (key == "MemAvailable:") {
			m.mem_available_bytes = kib * 1024;
			break;
		}
	}
	return m;
}

Status raise_nofile(uint64_t need)
{
	rlimit r{};
	if (getrlimit(RLIMIT_NOFILE, &r) != 0)
		return sys_error(errno, "getrlimit(RLIMIT_NOFILE)");
	if (r.rlim_cur == RLIM_INFINITY || uint64_t(r.rlim_cur) >= need)
		return ok_status();
	r.rlim_cur = (r.rlim_max != RLIM_INFINITY && uint64_t(r.rlim_max) < need) ? r.rlim_max : rlim_t(need);
	if (setrlimit(RLIMIT_NOFILE, &r) != 0)
		return sys_error(errno, "setrlimit(RLIMIT_NOFILE, " + std::to_string(need) + ")");
	return ok_status();
}

} // namespace qn::tp
