// capacity.cc - the calibration's capacity measure (capacity.h).
#include "control/capacity.h"

#include <algorithm>
#include <set>

namespace qn {

std::vector<tp::FlowSpec> ring_flows(const std::vector<std::string> &hosts, const std::vector<std::string> &senders)
{
	std::vector<tp::FlowSpec> conc;
	if (hosts.empty())
		return conc;
	std::set<std::string> seen;
	for (const auto &s : senders) {
		if (!seen.insert(s).second)
			continue;
		const size_t at = size_t(std::find(hosts.begin(), hosts.end(), s) - hosts.begin());
		const std::string &dst = at < hosts.size() ? hosts[(at + 1) % hosts.size()] : hosts[0];
		conc.push_back(tp::FlowSpec{conc.size(), s, dst, 0, 0, 100});
	}
	for (auto &f : conc)
		f.size = std::max<uint64_t>(128'000, 16'000'000 / conc.size());
	return conc;
}

uint64_t capacity_timeout_ns(const std::vector<tp::FlowSpec> &flows)
{
	uint64_t bytes = 0;
	for (const auto &f : flows)
		bytes += f.size;
	return std::max<uint64_t>(4'000'000'000ULL, bytes * 8 * 1'000'000'000ULL / 20'000'000ULL);
}

tp::RunOptions capacity_run_options(const std::vector<tp::FlowSpec> &flows, std::function<bool()> stop)
{
	tp::RunOptions ro;
	ro.qp.cc.scheme = "none:lossless";
	ro.stop = std::move(stop);
	ro.timeout_ns = capacity_timeout_ns(flows);
	return ro;
}

Result<double> capacity_of(tp::Engine &e, const std::vector<tp::FlowSpec> &flows, const tp::RunOptions &ro)
{
	double best = 0;
	for (int i = 0; i < 3; i++) {
		auto rep = tp::run_flows(e, flows, ro);
		if (!rep)
			return rep.error();
		if (rep->interrupted)
			return make_error("interrupted by a signal");
		uint64_t first = UINT64_MAX, last = 0, bytes = 0;
		for (const auto &r : rep->flows) {
			if (!r.done || !r.fct_ns)
				return 0.0;
			first = std::min(first, r.post_ns);
			last = std::max(last, r.post_ns + r.fct_ns);
			bytes += r.spec.size;
		}
		if (last > first)
			best = std::max(best, double(bytes) * 8 / (double(last - first) / 1e9));
	}
	return best;
}

} // namespace qn
