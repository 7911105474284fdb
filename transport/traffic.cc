// traffic.cc - workload generators and the flow runner (traffic.h).
#include "transport/traffic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

namespace qn::tp {

Result<Cdf> Cdf::parse(const std::string &text, const std::string &source)
{
	Cdf c;
	std::istringstream in(text);
	std::string line;
	int lineno = 0;
	while (std::getline(in, line)) {
		lineno++;
		auto hash = line.find('#');
		if (hash != std::string::npos)
			line.resize(hash);
		std::istringstream ls(line);
		std::string a, b, extra;
		if (!(ls >> a))
			continue;
		auto where = source + ":" + std::to_string(lineno) + ": ";
		if (!(ls >> b))
			return make_error(where + "expected 'size percentile', got '" + line + "'");
		if (ls >> extra)
			return make_error(where + "unexpected field '" + extra + "'");
		char *end = nullptr;
		double size = std::strtod(a.c_str(), &end);
		if (*end || !std::isfinite(size) || size < 0)
			return make_error(where + "size: '" + a + "' is not a non-negative number");
		double pct = std::strtod(b.c_str(), &end);
		if (*end || !std::isfinite(pct) || pct < 0 || pct > 100)
			return make_error(where + "percentile: '" + b + "' is not in [0, 100]");
		if (!c.pts_.empty() && (size < c.pts_.back().first || pct < c.pts_.back().second))
			return make_error(where + "not monotonic: (" + a + ", " + b + ") after (" +
					  std::to_string(c.pts_.back().first) + ", " + std::to_string(c.pts_.back().second) + ")");
		c.pts_.emplace_back(size, pct);
	}
	if (c.pts_.size() < 2)
		return make_error(source + ": a CDF needs at least two points");
	if (c.pts_.back().second != 100)
		return make_error(source + ": the last percentile must be 100, got " + std::to_string(c.pts_.back().second));
	return c;
}

Result<Cdf> Cdf::load(const std::string &path)
{
	std::ifstream f(path);
	if (!f)
		return sys_error(errno, "open " + path);
	std::stringstream ss;
	ss << f.rdbuf();
	return parse(ss.str(), path);
}

uint64_t Cdf::sample(double u) const
{
	double pct = u * 100.0;
	for (size_t i = 1; i < pts_.size(); i++) {
		if (pct <= pts_[i].second) {
			const auto &[s0, p0] = pts_[i - 1];
			const auto &[s1, p1] = pts_[i];
			if (p1 == p0)
				return uint64_t(std::llround(s1));
			return uint64_t(std::llround(s0 + (s1 - s0) * (pct - p0) / (p1 - p0)));
		}
	}
	return uint64_t(std::llround(pts_.back().first));
}

double Cdf::mean() const
{
	double m = 0;
	for (size_t i = 1; i < pts_.size(); i++)
		m += (pts_[i].second - pts_[i - 1].second) / 100.0 * (pts_[i].first + pts_[i - 1].first) / 2;
	return m;
}

std::vector<FlowSpec> gen_incast(const std::vector<std::string> &senders, const std::string &dst, uint64_t size,
				 uint64_t window_ns, uint64_t seed, uint64_t first_id)
{
	std::mt19937_64 rng(seed);
	std::vector<FlowSpec> v;
	for (const auto &s : senders) {
		FlowSpec f;
		f.id = first_id + v.size();
		f.src = s;
		f.dst = dst;
		f.size = size;
		f.start_ns = window_ns ? rng() % window_ns : 0;
		f.dport = 200;
		v.push_back(f);
	}
	return v;
}

std::vector<FlowSpec> gen_long(const std::vector<std::string> &senders, const std::string &dst, uint64_t size,
			       uint64_t first_id)
{
	std::vector<FlowSpec> v;
	for (const auto &s : senders)
		v.push_back(FlowSpec{first_id + v.size(), s, dst, size, 0, 100});
	return v;
}

std::vector<FlowSpec> gen_poisson(const std::vector<std::string> &hosts, double load, uint64_t link_bps,
				  const Cdf &cdf, uint64_t duration_ns, uint64_t seed, uint64_t first_id)
{
	std::mt19937_64 rng(seed);
	std::uniform_real_distribution<double> u(0, 1);
	std::vector<FlowSpec> v;
	if (hosts.size() < 2 || load <= 0)
		return v;
	const double mean_gap_ns = cdf.mean() * 8.0 * 1e9 / (double(link_bps) * load);
	for (size_t h = 0; h < hosts.size(); h++) {
		double t = 0;
		for (;;) {
			t += -std::log(1.0 - u(rng)) * mean_gap_ns;
			if (t >= double(duration_ns))
				break;
			size_t d = size_t(rng() % (hosts.size() - 1));
			if (d >= h)
				d++;
			v.push_back(FlowSpec{0, hosts[h], hosts[d], std::max<uint64_t>(1, cdf.sample(u(rng))),
					     uint64_t(t), 100});
		}
	}
	std::stable_sort(v.begin(), v.end(), [](const FlowSpec &a, const FlowSpec &b) { return a.start_ns < b.start_ns; });
	for (size_t i = 0; i < v.size(); i++)
		v[i].id = first_id + i;
	return v;
}

std::string ns3_fct_line(const FlowResult &f)
{
	char b[160];
	std::snprintf(b, sizeof(b), "%08x %08x %u %u %lu %lu %lu %lu", f.sip, f.dip, unsigned(f.sport),
		      unsigned(f.spec.dport), static_cast<unsigned long>(f.spec.size),
		      static_cast<unsigned long>(f.post_ns), static_cast<unsigned long>(f.fct_ns),
		      static_cast<unsigned long>(f.standalone_ns));
	return b;
}

uint64_t flow_list_hash(const std::vector<FlowSpec> &flows)
{
	uint64_t h = kFnvInit;
	for (const auto &f : flows) {
		std::string s = std::to_string(f.id) + " " + f.src + " " + f.dst + " " + std::to_string(f.size) + " " +
				std::to_string(f.start_ns) + " " + std::to_string(f.dport) + "\n";
		h = fnv1a(h, reinterpret_cast<const uint8_t *>(s.data()), s.size());
	}
	return h;
}

Result<RunReport> run_flows(Engine &e, const std::vector<FlowSpec> &flows, const RunOptions &o)
{
	RunReport rep;
	rep.flows.resize(flows.size());
	std::map<std::pair<std::string, std::string>, QpHandle> qp;
	std::map<std::pair<std::string, std::string>, size_t> pair_flows;
	std::vector<size_t> order(flows.size());
	std::vector<QpHandle> flow_qp(flows.size());
	for (size_t i = 0; i < flows.size(); i++) {
		order[i] = i;
		rep.flows[i].spec = flows[i];
		auto key = std::make_pair(flows[i].src, flows[i].dst);
		if (o.qp_per_flow && !o.serial_per_pair) {
			// Every flow its own QP, as in the ns-3 RDMA simulator: no head-of-line wait
			// behind an earlier message of the same pair, a fresh controller per flow.
			QpOptions qo = o.qp;
			const bool by_id = std::find(o.trace_flows.begin(), o.trace_flows.end(), flows[i].id) != o.trace_flows.end();
			const bool first_n = rep.traced.size() < o.trace_pairs; // the first N flows' QPs
			qo.trace = by_id || first_n;
			auto h = e.connect(flows[i].src, flows[i].dst, qo);
			if (!h)
				return make_error("flow " + std::to_string(flows[i].id) + ": " + h.error().to_string());
			const size_t kth = ++pair_flows[key]; // this flow's rank among its pair's
			qp[key] = *h;
			if (by_id)
				rep.traced.emplace_back("flow " + std::to_string(flows[i].id) + " " + flows[i].src + "->" +
							flows[i].dst, *h);
			else if (first_n) // labelled by pair, as with shared QPs; "#k" for a pair's k-th flow
				rep.traced.emplace_back(flows[i].src + "->" + flows[i].dst +
								(kth > 1 ? "#" + std::to_string(kth) : std::string()),
							*h);
			if (rep.cc_describe.empty())
				rep.cc_describe = e.cc_describe(*h);
		} else if (!qp.count(key)) {
			QpOptions qo = o.qp;
			qo.trace = rep.traced.size() < o.trace_pairs;
			auto h = e.connect(flows[i].src, flows[i].dst, qo);
			if (!h)
				return make_error("flow " + std::to_string(flows[i].id) + ": " + h.error().to_string());
			qp[key] = *h;
			if (qo.trace)
				rep.traced.emplace_back(flows[i].src + "->" + flows[i].dst, *h);
			if (rep.cc_describe.empty())
				rep.cc_describe = e.cc_describe(*h);
		}
		// Addresses, source port and the standalone FCT of the flow's path (common.md §4):
		// every packet's wire bytes (payload + headers + 24 B of FCS, preamble and gap).
		FlowResult &r = rep.flows[i];
		QpHandle h = qp[key];
		flow_qp[i] = h;
		r.sip = e.endpoint(flows[i].src).ip;
		r.dip = e.endpoint(flows[i].dst).ip;
		r.sport = qpn_to_sport(e.qpn(h));
		auto path = e.path(flows[i].src, flows[i].dst);
		if (path.ok) {
			const uint64_t mtu = payload_mtu(path.mtu);
			const uint64_t pkts = std::max<uint64_t>(1, (flows[i].size + mtu - 1) / mtu);
			const uint64_t per_pkt = kDataHdrBytes + QN_WIRE_OVERHEAD + (e.icrc() ? QN_ICRC_LEN : 0);
			r.standalone_ns = path.base_rtt_ns + serialization_ns(flows[i].size + pkts * per_pkt, path.bottleneck_bps);
		}
	}
	std::stable_sort(order.begin(), order.end(),
			 [&](size_t a, size_t b) { return flows[a].start_ns < flows[b].start_ns; });
	// (sender handle, msn) -> flow index
	std::map<std::pair<QpHandle, uint64_t>, size_t> by_msg;
	std::map<QpHandle, std::deque<size_t>> waiting; // serial mode: flows queued behind a busy pair
	std::map<QpHandle, bool> busy;
	size_t done = 0, next = 0;
	uint64_t last_start = flows.empty() ? 0 : flows[order.back()].start_ns;
	QN_TRY(e.health_begin());
	e.clear_queue_series();
	const uint64_t t0 = e.now_ns();
	rep.t0_ns = t0;

	auto post = [&](size_t fi, uint64_t now) {
		QpHandle h = flow_qp[fi];
		if (o.serial_per_pair && busy[h]) {
			waiting[h].push_back(fi);
			return;
		}
		busy[h] = true;
		rep.flows[fi].post_ns = now - t0;
		uint64_t msn = e.post(h, Message{fi, flows[fi].size, nullptr});
		by_msg[{h, msn}] = fi;
	};
	e.on_complete = [&](QpHandle h, const Completion &c) {
		size_t fi = size_t(c.id);
		if (fi >= rep.flows.size() || rep.flows[fi].done)
			return;
		rep.flows[fi].done = true;
		rep.flows[fi].fct_ns = c.done_ns - c.post_ns;
		rep.flows[fi].paused_ns = e.paused_ns(h); // its QP's (the flow's own with qp_per_flow)
		done++;
		busy[h] = false;
		if (o.serial_per_pair && !waiting[h].empty()) {
			size_t nf = waiting[h].front();
			waiting[h].pop_front();
			post(nf, c.done_ns);
		}
	};
	e.on_deliver = [&](QpHandle h, const Delivery &d) {
		auto it = by_msg.find({e.peer(h), d.msn});
		if (it == by_msg.end())
			return;
		FlowResult &r = rep.flows[it->second];
		r.content_ok = d.pattern_ok && d.size == r.spec.size;
		rep.delivered_bytes += d.size;
	};
	auto tick = [&](uint64_t now) -> uint64_t {
		while (next < order.size() && t0 + flows[order[next]].start_ns <= now)
			post(order[next++], now);
		return next < order.size() ? t0 + flows[order[next]].start_ns : UINT64_MAX;
	};
	uint64_t iters = 0;
	e.run(
		[&] {
			++iters;
			if (o.progress && (iters & 4095) == 0)
				o.progress(done, flows.size(), e.now_ns() - t0);
			// every 256 iterations: at most ~26 ms of wall time (a sleep is at most 100 us)
			if (o.stop && (iters & 255) == 0 && o.stop()) {
				rep.interrupted = true;
				return true;
			}
			return done == flows.size();
		},
		t0 + last_start + o.timeout_ns, tick);
	if (e.topology_gone())
		return make_error("the topology was taken down during the run");
	rep.elapsed_ns = e.now_ns() - t0;
	rep.health = e.health();
	// Which flows an affected period touched (a flow not done is alive to the run's end).
	std::vector<FlowSpan> spans;
	spans.reserve(rep.flows.size());
	for (const auto &f : rep.flows)
		spans.push_back(FlowSpan{f.spec.src, f.spec.dst, t0 + f.post_ns,
					 t0 + (f.done ? f.post_ns + f.fct_ns : rep.elapsed_ns), f.spec.size});
	rep.fidelity = tag_flows(spans, e.affected(), t0, t0 + rep.elapsed_ns);
	for (size_t i = 0; i < rep.flows.size(); i++) {
		rep.flows[i].tagged = rep.fidelity.tagged[i];
		rep.flows[i].touched = rep.fidelity.touched[i];
		rep.flows[i].affected_frac = rep.fidelity.affected_frac[i];
	}
	if (std::string why = fidelity_verdict(rep.fidelity); !why.empty()) {
		rep.health.valid = false;
		rep.health.reasons.push_back(why);
	}
	std::vector<QpHandle> used(flow_qp.begin(), flow_qp.end());
	std::sort(used.begin(), used.end());
	used.erase(std::unique(used.begin(), used.end()), used.end());
	for (QpHandle h : used) {
		const auto &s = e.sender_stats(h);
		rep.retx_pkts += s.retx_pkts;
		rep.tx_pkts += s.tx_pkts;
		rep.timeouts += s.timeouts;
		for (const auto &[k, v] : e.cc_counters(h))
			rep.cc[k] += v;
		const auto &r = e.receiver_stats(e.peer(h));
		rep.corrupt_msgs += r.corrupt_msgs;
		rep.dup_pkts += r.dup_pkts;
	}
	e.on_complete = nullptr;
	e.on_deliver = nullptr;
	return rep;
}

} // namespace qn::tp
