// stats.cc - reading and formatting switch counters.
#include "control/stats.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "control/bringup.h"
#include "control/gauges.h"
#include "control/rawsock.h"
#include "control/swcfg.h"
#include "control/switch_loader.h"

namespace qn {
namespace {

struct Fd {
	int fd = -1;
	~Fd()
	{
		if (fd >= 0)
			close(fd);
	}
};

std::string human(double v)
{
	char buf[32];
	if (v >= 1e9)
		std::snprintf(buf, sizeof(buf), "%.2fG", v / 1e9);
	else if (v >= 1e6)
		std::snprintf(buf, sizeof(buf), "%.2fM", v / 1e6);
	else if (v >= 1e4)
		std::snprintf(buf, sizeof(buf), "%.1fK", v / 1e3);
	else
		std::snprintf(buf, sizeof(buf), "%.0f", v);
	return buf;
}

} // namespace

Result<SwitchCounters> read_switch_counters(const Topology &t, int sw)
{
	SwitchCounters c;
	c.topology = t.name;
	c.sw = t.nodes[size_t(sw)].name;
	std::string dir = switch_pin_dir(t, sw);
	Fd ports, stats, orphans, qstate, buffer, pfc;
	for (auto [fd, name] : {std::pair{&ports, "qn_ports"}, std::pair{&stats, "qn_port_stats"},
				std::pair{&orphans, "qn_orphan_drops"}, std::pair{&qstate, "qn_qstate"},
				std::pair{&buffer, "qn_buffer"}, std::pair{&pfc, "qn_pfc_acct"}}) {
		fd->fd = bpf_obj_get((dir + "/" + name).c_str());
		if (fd->fd < 0)
			return sys_error(errno, "open " + dir + "/" + name);
	}
	{
		uint32_t zero = 0;
		if (bpf_map_lookup_elem(buffer.fd, &zero, &c.buffer_used))
			return sys_error(errno, "read qn_buffer");
		auto cfg = read_swcfg(dir);
		if (!cfg)
			return cfg.error();
		c.cfg = *cfg;
	}
	c.gauges = read_gauges(dir);
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		return sys_error(ncpu, "count possible CPUs");
	std::vector<qn_port_stats> percpu(static_cast<size_t>(ncpu));
	for (int pi : t.ports_of(sw)) {
		const Port &p = t.ports[size_t(pi)];
		PortCounters pc;
		pc.ifname = p.ifname;
		pc.ifindex = p.ifindex;
		qn_port pv{};
		uint32_t key = p.ifindex;
		if (bpf_map_lookup_elem(ports.fd, &key, &pv))
			return sys_error(errno, "qn_ports has no entry for " + p.ifname);
		pc.port_no = pv.port_no;
		pc.role = pv.role;
		pc.hdrm_bytes = pv.hdrm_bytes;
		uint32_t idx = pv.port_no;
		if (bpf_map_lookup_elem(stats.fd, &idx, percpu.data()))
			return sys_error(errno, "read qn_port_stats[" + std::to_string(idx) + "]");
		for (const auto &s : percpu)
			accumulate(pc.s, s);
		if (bpf_map_lookup_elem(qstate.fd, &idx, &pc.q))
			return sys_error(errno, "read qn_qstate[" + std::to_string(idx) + "]");
		pc.read_ns = mono_ns();
		for (uint32_t prio = 0; prio < QN_NUM_PRIOS; prio++) {
			uint32_t k = idx * QN_NUM_PRIOS + prio;
			qn_pfc_acct a{};
			if (bpf_map_lookup_elem(pfc.fd, &k, &a))
				return sys_error(errno, "read qn_pfc_acct[" + std::to_string(k) + "]");
			pc.pfc_hdrm_peak = std::max<uint64_t>(pc.pfc_hdrm_peak, a.hdrm_peak);
			pc.pfc_pause_rx_max = std::max<uint64_t>(pc.pfc_pause_rx_max, a.pause_rx_max);
		}
		c.ports.push_back(pc);
	}
	std::vector<uint64_t> vals(static_cast<size_t>(ncpu));
	for (uint32_t r = 0; r < QN_DROP_MAX; r++) {
		if (bpf_map_lookup_elem(orphans.fd, &r, vals.data()))
			return sys_error(errno, "read qn_orphan_drops");
		for (uint64_t v : vals)
			c.orphan_drops[r] += v;
	}
	return c;
}

NamedCounters counters_by_name(const PortCounters &p)
{
	NamedCounters v;
	const auto level = CounterKind::Level;
	for (const auto &c : port_counter_info())
		v.push_back({c.name, port_counter(p.s, c)});
	v.push_back({"queue_peak_bytes", p.q.peak_bytes, level});
	// The real queue at the latest enqueue or departure; the accounts beside it (acct.h: a
	// departure the dequeue hook missed stays charged until the queue empties).
	v.push_back({"queue_bytes", p.q.last_bytes, level});
	v.push_back({"queue_pkts", p.q.last_pkts, level});
	v.push_back({"charged_bytes", p.q.acct_bytes > 0 ? uint64_t(p.q.acct_bytes) : 0, level});
	// PFC: what this port's neighbour paused (pfc.h; an open pause counted to its end or now)
	// and what this ingress port's accounts took while they paused their neighbour.
	uint64_t paused = p.q.paused_rx_ns;
	if (p.q.pause_start_ns) {
		uint64_t end = std::min<uint64_t>(p.q.pause_until_ns, p.read_ns);
		if (end > p.q.pause_start_ns)
			paused += end - p.q.pause_start_ns;
	}
	v.push_back({"pfc_pauses_rx", p.q.pauses});
	v.push_back({"pfc_paused_rx_ns", paused});
	v.push_back({"pfc_slip_max_bytes", std::max<uint64_t>(p.q.slip_max_bytes, p.q.pause_start_ns ? p.q.ep_slip_bytes : 0), level});
	v.push_back({"pfc_quiet_max_ns", p.q.quiet_max_ns, level});
	v.push_back({"pfc_resume_max_ns", p.q.resume_max_ns, level});
	v.push_back({"pfc_resume_mean_ns", p.q.resume_cnt ? p.q.resume_sum_ns / p.q.resume_cnt : 0, level});
	v.push_back({"pfc_resumes", p.q.resume_cnt});
	v.push_back({"pfc_resume_ns", p.q.resume_sum_ns});
	v.push_back({"pfc_hdrm_peak_bytes", p.pfc_hdrm_peak, level});
	v.push_back({"pfc_pause_rx_max_bytes", p.pfc_pause_rx_max, level});
	uint64_t drops = 0;
	for (unsigned r = 0; r < QN_DROP_MAX; r++) {
		v.push_back({"drops." + drop_reason_name(r), p.s.drops[r]});
		drops += p.s.drops[r];
	}
	v.push_back({"drops", drops});
	return v;
}

std::string counters_json(const std::vector<SwitchCounters> &cs)
{
	nlohmann::ordered_json doc;
	doc["switches"] = nlohmann::ordered_json::array();
	for (const SwitchCounters &c : cs) {
		nlohmann::ordered_json j;
		j["topology"] = c.topology;
		j["switch"] = c.sw;
		j["buffer_used"] = c.buffer_used;
		j["settings"] = describe_swcfg(c.cfg);
		nlohmann::ordered_json gj = nlohmann::ordered_json::object();
		for (const auto &[k, v] : c.gauges)
			gj[k] = v;
		j["gauges"] = std::move(gj);
		j["ports"] = nlohmann::ordered_json::array();
		for (const PortCounters &p : c.ports) {
			nlohmann::ordered_json pj;
			pj["port"] = p.port_no;
			pj["ifname"] = p.ifname;
			pj["role"] = p.role == QN_ROLE_HOST ? "host" : "switch";
			pj["pfc_hdrm_bytes"] = p.hdrm_bytes; // as sized at load; the pfc_hdrm setting overrides it
			nlohmann::ordered_json cj = nlohmann::ordered_json::object();
			for (const auto &[k, v, kind] : counters_by_name(p))
				cj[k] = v;
			pj["counters"] = std::move(cj);
			j["ports"].push_back(std::move(pj));
		}
		doc["switches"].push_back(std::move(j));
	}
	return doc.dump(1, '\t') + "\n";
}

std::string format_counters(const SwitchCounters &c, const SwitchCounters *prev, double dt_s)
{
	std::ostringstream o;
	char cell[64];
	o << "switch " << c.topology << "/" << c.sw << "\n";
	// One table: the port, its queue, every counter with a column (QN_PORT_COUNTERS), drops.
	std::vector<const PortCounterInfo *> cols;
	for (const auto &ci : port_counter_info())
		if (ci.column[0])
			cols.push_back(&ci);
	std::snprintf(cell, sizeof(cell), "%-4s %-12s %-6s %9s %9s", "port", "ifname", "role", "depth_B", "peak_B");
	o << cell;
	for (const auto *ci : cols) {
		std::snprintf(cell, sizeof(cell), " %9s", ci->column);
		o << cell;
	}
	o << "     drops" << (prev ? "   rx_rate   tx_rate" : "") << "\n";
	for (size_t i = 0; i < c.ports.size(); i++) {
		const PortCounters &p = c.ports[i];
		uint64_t drops = 0;
		for (int r = 0; r < QN_DROP_MAX; r++)
			drops += p.s.drops[r];
		std::snprintf(cell, sizeof(cell), "%-4u %-12s %-6s %9s %9s", p.port_no, p.ifname.c_str(),
			      p.role == QN_ROLE_HOST ? "host" : "switch", human(double(p.q.last_bytes)).c_str(),
			      human(double(p.q.peak_bytes)).c_str());
		o << cell;
		for (const auto *ci : cols) {
			std::snprintf(cell, sizeof(cell), " %9s", human(double(port_counter(p.s, *ci))).c_str());
			o << cell;
		}
		std::snprintf(cell, sizeof(cell), " %9s", human(double(drops)).c_str());
		o << cell;
		if (prev && dt_s > 0 && i < prev->ports.size()) {
			double rx = double(p.s.rx_bytes - prev->ports[i].s.rx_bytes) * 8 / dt_s;
			double tx = double(p.s.tx_bytes - prev->ports[i].s.tx_bytes) * 8 / dt_s;
			o << "  " << human(rx) << "bit/s  " << human(tx) << "bit/s";
		}
		o << "\n";
	}
	o << "  buffer in use " << c.buffer_used << " B; " << describe_swcfg(c.cfg) << "\n";
	{
		std::string g;
		for (const auto &[k, v] : c.gauges)
			if (v)
				g += " " + k + "=" + std::to_string(v);
		if (!g.empty())
			o << "  gauges:" << g << "\n";
	}
	// Per port, exact: the drop reasons that occurred and the non-zero counters without a column.
	for (const auto &p : c.ports) {
		std::string more;
		for (int r = 1; r < QN_DROP_MAX; r++)
			if (p.s.drops[r])
				more += " " + drop_reason_name(unsigned(r)) + "=" + std::to_string(p.s.drops[r]);
		for (const auto &ci : port_counter_info())
			if (!ci.column[0] && port_counter(p.s, ci))
				more += " " + std::string(ci.name) + "=" + std::to_string(port_counter(p.s, ci));
		if (p.s.ecn_ect || p.s.ecn_marked)
			more += " ecn_ect=" + std::to_string(p.s.ecn_ect) + " ecn_marked=" + std::to_string(p.s.ecn_marked);
		if (p.q.pauses || p.pfc_hdrm_peak)
			for (const auto &[k, val, kind] : counters_by_name(p))
				if (k.rfind("pfc_", 0) == 0 && val &&
				    std::none_of(port_counter_info().begin(), port_counter_info().end(),
						 [&](const PortCounterInfo &ci) { return k == ci.name; }))
					more += " " + k + "=" + std::to_string(val);
		if (!more.empty())
			o << "  " << p.ifname << ":" << more << "\n";
	}
	std::string orphan;
	for (int r = 1; r < QN_DROP_MAX; r++)
		if (c.orphan_drops[r])
			orphan += " " + drop_reason_name(unsigned(r)) + "=" + std::to_string(c.orphan_drops[r]);
	if (!orphan.empty())
		o << "  frames from unknown ports:" << orphan << "\n";
	return o.str();
}

std::vector<std::pair<std::string, uint64_t>> switch_peak_gauges(const Topology &t)
{
	std::vector<std::pair<std::string, uint64_t>> out;
	for (const Node &n : t.nodes) {
		if (n.kind != NodeKind::Switch)
			continue;
		for (const auto &[k, v] : read_gauges(switch_pin_dir(t, n.id))) {
			if (!is_peak_gauge(k))
				continue;
			auto it = std::find_if(out.begin(), out.end(), [&](const auto &p) { return p.first == k; });
			if (it == out.end())
				out.emplace_back(k, v);
			else
				it->second = std::max(it->second, v);
		}
	}
	return out;
}

Status zero_switch_peak_gauges(const Topology &t)
{
	for (const Node &n : t.nodes)
		if (n.kind == NodeKind::Switch)
			QN_TRY(zero_peak_gauges(switch_pin_dir(t, n.id)));
	return ok_status();
}

Result<std::vector<std::pair<Topology, int>>> resolve_switches(const std::string &spec)
{
	std::vector<std::pair<Topology, int>> out;
	std::string want_topo, want_sw = spec;
	if (auto slash = spec.find('/'); slash != std::string::npos) {
		want_topo = spec.substr(0, slash);
		want_sw = spec.substr(slash + 1);
	}
	auto names = running_topologies();
	if (names.empty())
		return make_error("no topology is up (quench topo up FILE)");
	for (const auto &n : names) {
		if (!want_topo.empty() && n != want_topo)
			continue;
		auto t = load_running(n);
		if (!t)
			return t.error();
		for (const auto &node : t->nodes)
			if (node.kind == NodeKind::Switch && (want_sw.empty() || node.name == want_sw))
				out.emplace_back(*t, node.id);
	}
	if (out.empty())
		return make_error("no running switch matches '" + spec + "'");
	return out;
}

} // namespace qn
