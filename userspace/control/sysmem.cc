// sysmem.cc - memory and descriptors from /proc (sysmem.h).
#include "control/sysmem.h"

#include <dirent.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <thread>

namespace qn {

double kernel_mib()
{
	std::ifstream f("/proc/meminfo");
	std::string k, unit;
	uint64_t v = 0, sum = 0;
	while (f >> k >> v >> unit)
		if (k == "SUnreclaim:" || k == "Percpu:" || k == "KernelStack:" || k == "PageTables:" || k == "VmallocUsed:")
			sum += v;
	return double(sum) / 1024.0;
}

double settled_kernel_mib()
{
	double prev = kernel_mib();
	for (int i = 0; i < 60; i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(500));
		const double now = kernel_mib();
		if (now - prev < 8 && prev - now < 8)
			return now;
		prev = now;
	}
	return prev;
}

double rss_mib(const std::string &pid)
{
	std::ifstream f("/proc/" + pid + "/status");
	for (std::string line; std::getline(f, line);)
		if (line.rfind("VmRSS:", 0) == 0)
			return std::stod(line.substr(6)) / 1024.0;
	return 0;
}

size_t count_fds(const std::string &pid)
{
	size_t n = 0;
	if (DIR *d = opendir(("/proc/" + pid + "/fd").c_str())) {
		while (dirent *e = readdir(d))
			n += e->d_name[0] != '.';
		closedir(d);
	}
	return n;
}

} // namespace qn
