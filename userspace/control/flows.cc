// flows.cc - one flow-list builder for `run` and `gen` (flows.h).
#include "control/flows.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace qn {

using tp::Cdf;
using tp::FlowSpec;
using tp::gen_incast;
using tp::gen_long;
using tp::gen_poisson;

uint64_t host_link_rate(const Topology &t)
{
	uint64_t rate = t.links.empty() ? t.defaults.rate_bps : t.links.front().rate_bps;
	for (const auto &l : t.links)
		if (t.nodes[size_t(l.a)].kind == NodeKind::Host || t.nodes[size_t(l.b)].kind == NodeKind::Host)
			rate = std::min(rate, l.rate_bps);
	return rate;
}

Result<std::vector<FlowSpec>> build_flows(const std::vector<Workload> &workloads, uint64_t seed_base,
					  const Topology &t, const std::string &source)
{
	std::vector<std::string> hosts;
	for (const auto &n : t.nodes)
		if (n.kind == NodeKind::Host)
			hosts.push_back(n.name);
	auto at = [&](const Workload &w, const std::string &field, const std::string &m) {
		return make_error(source + (w.line ? ":" + std::to_string(w.line) : std::string()) + ": field '" + field + "': " + m);
	};
	auto known = [&](const std::string &h) { return std::find(hosts.begin(), hosts.end(), h) != hosts.end(); };
	std::vector<FlowSpec> all;
	for (size_t wi = 0; wi < workloads.size(); wi++) {
		const Workload &w = workloads[wi];
		const uint64_t seed = seed_base * 1'000'003ULL + uint64_t(wi) * 7919ULL;
		std::vector<FlowSpec> v;
		std::vector<std::string> senders = w.senders;
		if (w.kind == Workload::Kind::Incast || w.kind == Workload::Kind::Long) {
			if (!known(w.dst))
				return at(w, "dst", "no host '" + w.dst + "' in topology " + t.source);
			for (const auto &s : senders) {
				if (!known(s))
					return at(w, "senders", "no host '" + s + "' in topology " + t.source);
				if (s == w.dst)
					return at(w, "senders", "'" + s + "' is also the destination");
			}
			if (w.nsenders > 0) {
				for (const auto &h : hosts)
					if (h != w.dst && int(senders.size()) < w.nsenders)
						senders.push_back(h);
				if (int(senders.size()) < w.nsenders)
					return at(w, "senders", std::to_string(w.nsenders) + " senders, but the topology has only " +
									std::to_string(hosts.size() - 1) + " other hosts");
			}
		}
		switch (w.kind) {
		case Workload::Kind::Incast:
			for (uint64_t r = 0; r < w.count; r++) {
				auto round = gen_incast(senders, w.dst, w.size, w.window_ns, seed + r, 0);
				for (auto &f : round)
					f.start_ns += w.start_ns + r * w.interval_ns;
				v.insert(v.end(), round.begin(), round.end());
			}
			break;
		case Workload::Kind::Long:
			// `count` rounds of one flow per sender; sender i of round r starts (r x senders + i)
			// intervals after `start`
			for (uint64_t r = 0; r < w.count; r++) {
				auto round = gen_long(senders, w.dst, w.size, 0);
				for (size_t i = 0; i < round.size(); i++)
					round[i].start_ns = w.start_ns + (r * round.size() + i) * w.interval_ns;
				v.insert(v.end(), round.begin(), round.end());
			}
			break;
		case Workload::Kind::Poisson: {
			auto cdf = Cdf::load(w.cdf);
			if (!cdf)
				return at(w, "cdf", cdf.error().to_string());
			v = gen_poisson(hosts, w.load, host_link_rate(t), *cdf, w.duration_ns, seed, 0);
			for (auto &f : v)
				f.start_ns += w.start_ns;
			break;
		}
		case Workload::Kind::Flows: {
			std::ifstream in(w.file);
			if (!in)
				return at(w, "file", "cannot open " + w.file);
			std::stringstream ss;
			ss << in.rdbuf();
			auto fl = parse_ns3_flows(ss.str(), w.file);
			if (!fl)
				return fl.error();
			uint64_t t0 = UINT64_MAX;
			for (const auto &f : *fl)
				t0 = std::min(t0, f.start_ns);
			for (const auto &f : *fl) {
				for (int id : {f.src, f.dst})
					if (id >= int(t.nodes.size()) || t.nodes[size_t(id)].kind != NodeKind::Host)
						return make_error(w.file + ":" + std::to_string(f.line) + ": field '" +
								  (id == f.src ? "src" : "dst") + "': node " + std::to_string(id) +
								  " is not a host of topology " + t.source);
				FlowSpec s;
				s.src = t.nodes[size_t(f.src)].name;
				s.dst = t.nodes[size_t(f.dst)].name;
				s.size = f.size;
				s.start_ns = w.start_ns + (f.start_ns - t0);
				s.dport = uint16_t(f.dport);
				v.push_back(s);
			}
			break;
		}
		}
		all.insert(all.end(), v.begin(), v.end());
	}
	std::stable_sort(all.begin(), all.end(), [](const FlowSpec &a, const FlowSpec &b) { return a.start_ns < b.start_ns; });
	for (size_t i = 0; i < all.size(); i++)
		all[i].id = i;
	if (all.empty())
		return make_error(source + ": the workloads produce no flow");
	return all;
}

} // namespace qn
