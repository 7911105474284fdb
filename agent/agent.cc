// agent.cc - the Soft-RoCE agent (agent.h).
#include "agent/agent.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/rdma_nl.h"
#include "qn_abi.h"
#include "transport/cc/cc.h"
#include "transport/wire.h"

namespace qn::agent {
namespace cc = tp::cc;

uint16_t rxe_sport(uint32_t qpn)
{
	// hash_32_generic(qpn, 14): the golden-ratio multiplicative hash, top 14 bits.
	const uint32_t h = (qpn * 0x61C88647u) >> (32 - 14);
	return uint16_t(0xC000u + (h & 0x3FFFu));
}

std::string refuse_reason(const std::string &name)
{
	auto s = cc::scheme(name);
	if (!s)
		return s.error().to_string();
	// CNPs and pacing from the agent, BTS pauses from the host programs (qn_rxe.bpf.c).
	const uint32_t unsupported = s->signals & ~(cc::kSigCnp | cc::kSigWindow | cc::kSigBts);
	if (unsupported)
		return "scheme " + name + " needs " + cc::signal_names(unsupported) +
		       " from the host stack; rxe QPs get CNPs, rate pacing and BTS pauses only (e.g. none, dcqcn, "
		       "dcqcn+w, dcqcn/sfc; docs/agent.md)";
	return "";
}

namespace {

uint64_t mono_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1'000'000'000ULL + uint64_t(ts.tv_nsec);
}

uint64_t real_ns()
{
	timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return uint64_t(ts.tv_sec) * 1'000'000'000ULL + uint64_t(ts.tv_nsec);
}

struct Fd {
	int fd = -1;
	Fd() = default;
	explicit Fd(int f) : fd(f) {}
	Fd(const Fd &) = delete;
	Fd &operator=(const Fd &) = delete;
	~Fd()
	{
		if (fd >= 0)
			close(fd);
	}
};

// An AF_PACKET socket bound to `ifname` inside namespace `netns` ("" = the agent's own).
Result<int> packet_socket(const std::string &netns, const std::string &ifname)
{
	Fd self(open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
	if (self.fd < 0)
		return sys_error(errno, "open /proc/self/ns/net");
	Fd target(netns.empty() ? dup(self.fd) : open(("/var/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC));
	if (target.fd < 0)
		return sys_error(errno, "open namespace " + netns);
	if (setns(target.fd, CLONE_NEWNET) != 0)
		return sys_error(errno, "enter namespace " + netns);
	int s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	int err = errno;
	unsigned idx = s >= 0 ? if_nametoindex(ifname.c_str()) : 0;
	if (s >= 0 && idx == 0)
		err = errno;
	if (setns(self.fd, CLONE_NEWNET) != 0) {
		if (s >= 0)
			close(s);
		return sys_error(errno, "return from namespace " + netns);
	}
	if (s < 0)
		return sys_error(err, "AF_PACKET socket in " + netns);
	if (idx == 0) {
		close(s);
		return sys_error(err, "no interface " + ifname + " in " + netns);
	}
	sockaddr_ll a{};
	a.sll_family = AF_PACKET;
	a.sll_ifindex = int(idx);
	a.sll_protocol = 0; // send only
	if (bind(s, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0) {
		err = errno;
		close(s);
		return sys_error(err, "bind the CNP socket to " + ifname);
	}
	return s;
}

struct Qp {
	size_t host = 0;
	uint32_t lqpn = 0, rqpn = 0;
	uint32_t peer_be = 0;                  // 0 until learned from the packets
	std::unique_ptr<cc::Controller> ctl;
	std::unique_ptr<cc::NotificationPoint> np;
	uint64_t rate = 0;                     // the controller's rate last applied
	uint64_t tx_bytes = 0;                 // qn_rxe_qps bytes at the last scan
	bool seen = true;
	uint64_t ce = 0, cnp_tx = 0, cnp_rx = 0, send_errors = 0, lowest = 0;
};

struct Host {
	HostDesc d;
	int qps = -1, rate = -1, pace = -1, cfg = -1, events = -1, stats = -1, pause = -1, sock = -1;
	uint32_t honor = 0; // qn_rxe_cfg.honor before the agent started
	std::string scheme_note;
	std::map<std::string, std::string> overrides;
};

struct Agent {
	const Options &o;
	std::vector<Host> hosts;
	std::map<std::pair<size_t, uint32_t>, Qp> qps; // (host, local QPN)
	ring_buffer *rb = nullptr;
	FILE *trace = nullptr;
	Summary sum;
	std::vector<std::pair<size_t, qn_rxe_event>> pending;

	explicit Agent(const Options &opt) : o(opt) {}
	~Agent()
	{
		for (auto &h : hosts) {
			if (h.cfg >= 0) { // the programs fall back to Not-ECT and no per-QP pacing
				uint32_t zero = 0;
				qn_rxe_cfg c{};
				if (bpf_map_lookup_elem(h.cfg, &zero, &c) == 0) {
					c.agent = 0;
					c.honor = h.honor;
					bpf_map_update_elem(h.cfg, &zero, &c, BPF_ANY);
				}
			}
		}
		for (auto &[k, q] : qps)
			forget_rate(q);
		if (rb)
			ring_buffer__free(rb);
		for (auto &h : hosts)
			for (int fd : {h.qps, h.rate, h.pace, h.cfg, h.events, h.stats, h.pause, h.sock})
				if (fd >= 0)
					close(fd);
		if (trace)
			fclose(trace);
	}

	void forget_rate(const Qp &q)
	{
		if (!q.peer_be || hosts[q.host].rate < 0)
			return;
		qn_rxe_qp_key k{q.peer_be, q.rqpn};
		bpf_map_delete_elem(hosts[q.host].rate, &k);
		if (hosts[q.host].pace >= 0)
			bpf_map_delete_elem(hosts[q.host].pace, &k);
	}

	Status open_host(const HostDesc &d)
	{
		Host h;
		h.d = d;
		auto get = [&](const char *map, int &fd) -> Status {
			fd = bpf_obj_get((d.pin_dir + "/" + map).c_str());
			if (fd < 0)
				return sys_error(errno, "host " + d.name + ": open " + d.pin_dir + "/" + map +
							       " (is it an rxe host of a topology that is up?)");
			return ok_status();
		};
		hosts.push_back(std::move(h));
		Host &x = hosts.back();
		QN_TRY(get("qn_rxe_qps", x.qps));
		QN_TRY(get("qn_rxe_rate", x.rate));
		QN_TRY(get("qn_rxe_pace", x.pace));
		QN_TRY(get("qn_rxe_cfg", x.cfg));
		QN_TRY(get("qn_rxe_events", x.events));
		QN_TRY(get("qn_rxe_stats", x.stats));
		QN_TRY(get("qn_rxe_pause", x.pause));
		auto s = packet_socket(d.netns, d.ifname);
		if (!s)
			return make_error("host " + d.name + ": " + s.error().to_string());
		x.sock = *s;
		// The scheme's parameters for this host's link.
		cc::Fabric f{d.link_bps, o.base_rtt_ns, d.mtu, o.base_rtt_ns, o.base_rtt_ns};
		if (o.derived) {
			auto dv = cc::derive(o.scheme, f, true);
			if (!dv)
				return make_error("host " + d.name + ": " + dv.error().to_string());
			if (!dv->refused.empty())
				return make_error("host " + d.name + ": " + dv->refused);
			x.overrides = dv->overrides;
			for (const auto &n : dv->notes)
				sum.notes.push_back(d.name + ": " + n);
		}
		for (const auto &[k, v] : o.overrides)
			x.overrides[k] = v;
		return ok_status();
	}

	static int on_event(void *ctx, void *data, size_t size)
	{
		auto *p = static_cast<std::pair<Agent *, size_t> *>(ctx);
		if (size < sizeof(qn_rxe_event))
			return 0;
		qn_rxe_event e;
		std::memcpy(&e, data, sizeof(e));
		p->first->pending.emplace_back(p->second, e);
		return 0;
	}

	void write_trace(const Qp &q, uint64_t now)
	{
		if (!trace)
			return;
		const uint64_t real = real_ns() - (mono_ns() - now);
		std::fprintf(trace, "%llu,%llu,%s,%u,%u,%llu\n", static_cast<unsigned long long>(now),
			     static_cast<unsigned long long>(real), hosts[q.host].d.name.c_str(), q.lqpn, q.rqpn,
			     static_cast<unsigned long long>(q.rate));
	}

	void apply(Qp &q, uint64_t now)
	{
		const uint64_t r = q.ctl->output().rate_bps;
		if (r == q.rate)
			return;
		if (r < q.rate)
			sum.rate_cuts++;
		q.rate = r;
		q.lowest = q.lowest ? std::min(q.lowest, r) : r;
		sum.lowest_rate_bps = sum.lowest_rate_bps ? std::min(sum.lowest_rate_bps, r) : r;
		write_rate(q);
		write_trace(q, now);
	}

	void write_rate(const Qp &q)
	{
		if (!o.pace || !q.peer_be)
			return;
		qn_rxe_qp_key k{q.peer_be, q.rqpn};
		uint64_t r = q.rate;
		if (bpf_map_update_elem(hosts[q.host].rate, &k, &r, BPF_ANY) == 0)
			sum.rate_writes++;
	}

	void send_cnp(Qp &q, const cc::CnpOut &c)
	{
		Host &h = hosts[q.host];
		if (!q.peer_be)
			return;
		tp::TxHeader t;
		t.src = tp::Endpoint{h.d.mac, h.d.ip};
		t.dst = tp::Endpoint{h.d.gw, ntohl(q.peer_be)};
		t.dscp = QN_DSCP_CONTROL;
		t.ecn = 0;
		t.sport = rxe_sport(q.lqpn);
		t.ip_id = uint16_t(sum.cnp_tx);
		t.dest_qp = q.rqpn;
		t.psn = c.psn;
		uint8_t buf[128];
		const size_t n = tp::encode_cnp(t, c.payload, true, buf, sizeof(buf));
		if (n && send(h.sock, buf, n, 0) == ssize_t(n)) {
			sum.cnp_tx++;
			q.cnp_tx++;
		} else {
			q.send_errors++;
			sum.send_errors++;
		}
	}

	// Find the peer of a QP in the packets its host sent: DestQP = the remote QPN (rxe's UDP
	// source port, a hash of the local QPN, decides between QPs of several peers).
	void learn_peer(Qp &q)
	{
		Host &h = hosts[q.host];
		qn_rxe_qp_key k{}, next{};
		bool first = true;
		uint32_t found = 0;
		int matches = 0;
		while (bpf_map_get_next_key(h.qps, first ? nullptr : &k, &next) == 0) {
			first = false;
			k = next;
			if (next.qpn != q.rqpn)
				continue;
			qn_rxe_qp v{};
			if (bpf_map_lookup_elem(h.qps, &next, &v) != 0)
				continue;
			matches++;
			if (matches == 1 || v.sport == rxe_sport(q.lqpn))
				found = next.peer_ip_be;
		}
		if (found) {
			q.peer_be = found;
			write_rate(q);
		}
	}

	Status scan(uint64_t now)
	{
		auto list = rdma_qps("qnr-");
		if (!list)
			return list.error();
		for (auto &[k, q] : qps)
			q.seen = false;
		for (const RdmaQp &r : *list) {
			if (r.type != 2 /* IB_QPT_RC */ || !r.has_rqpn || (r.state != 2 && r.state != 3)) // RTR, RTS
				continue;
			size_t hi = hosts.size();
			for (size_t i = 0; i < hosts.size(); i++)
				if (hosts[i].d.rdma_dev == r.dev)
					hi = i;
			if (hi == hosts.size())
				continue;
			auto key = std::make_pair(hi, r.lqpn);
			auto it = qps.find(key);
			if (it != qps.end() && it->second.rqpn != r.rqpn) {
				forget_rate(it->second);
				qps.erase(it);
				it = qps.end();
			}
			if (it == qps.end()) {
				const Host &h = hosts[hi];
				cc::Setup s;
				s.scheme = o.scheme;
				s.overrides = h.overrides;
				s.line_rate_bps = h.d.link_bps;
				s.bdp_bytes = uint64_t(double(h.d.link_bps) * double(o.base_rtt_ns) / 8e9);
				s.fabric = cc::Fabric{h.d.link_bps, o.base_rtt_ns, h.d.mtu, o.base_rtt_ns, o.base_rtt_ns};
				auto parts = cc::make(s);
				if (!parts)
					return make_error("host " + h.d.name + " QP " + std::to_string(r.lqpn) + ": " +
							  parts.error().to_string());
				Qp q;
				q.host = hi;
				q.lqpn = r.lqpn;
				q.rqpn = r.rqpn;
				q.ctl = std::move(parts->controller);
				q.np = std::move(parts->np);
				q.ctl->start(now);
				q.rate = 0;
				if (hosts[hi].scheme_note.empty()) {
					hosts[hi].scheme_note = parts->describe;
					sum.notes.push_back(h.d.name + ": " + parts->describe);
				}
				it = qps.emplace(key, std::move(q)).first;
				sum.qps++;
				apply(it->second, now);
			}
			Qp &q = it->second;
			q.seen = true;
			if (!q.peer_be)
				learn_peer(q);
			// RP3's byte counter: what the QP put on the wire since the last scan.
			if (q.peer_be) {
				qn_rxe_qp_key k{q.peer_be, q.rqpn};
				qn_rxe_qp v{};
				if (bpf_map_lookup_elem(hosts[hi].qps, &k, &v) == 0 && v.bytes > q.tx_bytes) {
					cc::TxPacket p;
					p.now_ns = now;
					p.wire_bytes = uint32_t(std::min<uint64_t>(v.bytes - q.tx_bytes, UINT32_MAX));
					p.payload_bytes = p.wire_bytes;
					if (q.tx_bytes)
						q.ctl->on_tx(p);
					q.tx_bytes = v.bytes;
					apply(q, now);
				}
			}
		}
		for (auto it = qps.begin(); it != qps.end();) {
			if (!it->second.seen) {
				report(it->second);
				forget_rate(it->second);
				it = qps.erase(it);
			} else {
				++it;
			}
		}
		return ok_status();
	}

	void handle(size_t hi, const qn_rxe_event &e, uint64_t now)
	{
		auto it = qps.find({hi, e.qpn});
		if (e.kind == QN_RXE_EV_CNP) {
			sum.cnp_rx++;
			if (it == qps.end())
				return;
			it->second.cnp_rx++;
			uint8_t none[cc::kCnpPayloadBytes] = {};
			it->second.ctl->on_cnp(cc::CnpEvent{now, e.psn, std::span<const uint8_t>(none, sizeof(none))});
			apply(it->second, now);
		} else if (e.kind == QN_RXE_EV_CE) {
			sum.ce_rx++;
			if (it == qps.end())
				return;
			Qp &q = it->second;
			q.ce++;
			if (!q.peer_be)
				q.peer_be = e.peer_ip_be; // the data's source is this QP's peer
			if (!q.np)
				return;
			cc::NpPacket p{now, e.psn, e.len, true}; // skb->len: Ethernet header to ICRC
			if (auto c = q.np->on_data(p))
				send_cnp(q, *c);
		}
	}

	uint64_t next_timer() const
	{
		uint64_t t = UINT64_MAX;
		for (const auto &[k, q] : qps) {
			t = std::min(t, q.ctl->next_timer());
			if (q.np)
				t = std::min(t, q.np->next_timer());
		}
		return t;
	}

	void timers(uint64_t now)
	{
		for (auto &[k, q] : qps) {
			if (q.ctl->next_timer() <= now) {
				q.ctl->on_timer(now);
				apply(q, now);
			}
			if (q.np && q.np->next_timer() <= now)
				if (auto c = q.np->on_timer(now))
					send_cnp(q, *c);
		}
	}

	void report(const Qp &q)
	{
		char peer[INET_ADDRSTRLEN] = "?";
		if (q.peer_be)
			inet_ntop(AF_INET, &q.peer_be, peer, sizeof(peer));
		// SFC: the BTS the host programs took for this QP and the time they held its data.
		qn_rxe_qp v{};
		if (q.peer_be) {
			qn_rxe_qp_key k{q.peer_be, q.rqpn};
			if (bpf_map_lookup_elem(hosts[q.host].qps, &k, &v) == 0) {
				sum.bts += v.bts;
				sum.bts_paused_ns += v.paused_ns;
			}
		}
		char b[480];
		std::snprintf(b, sizeof(b),
			      "%s QP %u -> %s QP %u: %llu CE, %llu CNPs sent (%llu send errors), %llu CNPs received, rate %llu "
			      "bit/s (lowest %llu), %llu BTS, paused %.3f ms",
			      hosts[q.host].d.name.c_str(), q.lqpn, peer, q.rqpn, static_cast<unsigned long long>(q.ce),
			      static_cast<unsigned long long>(q.cnp_tx), static_cast<unsigned long long>(q.send_errors),
			      static_cast<unsigned long long>(q.cnp_rx), static_cast<unsigned long long>(q.rate),
			      static_cast<unsigned long long>(q.lowest), static_cast<unsigned long long>(v.bts),
			      double(v.paused_ns) / 1e6);
		sum.per_qp.push_back(b);
	}

	// PFC: per host and priority that was paused, the frames and the paused time.
	void report_pfc()
	{
		for (const auto &h : hosts)
			for (uint32_t prio = 0; prio < QN_NUM_PRIOS; prio++) {
				qn_rxe_pause z{};
				if (bpf_map_lookup_elem(h.pause, &prio, &z) != 0 || (!z.xoff && !z.xon))
					continue;
				char b[200];
				std::snprintf(b, sizeof(b), "%s priority %u: %llu PAUSE (XOFF), %llu XON, paused %.3f ms",
					      h.d.name.c_str(), prio, static_cast<unsigned long long>(z.xoff),
					      static_cast<unsigned long long>(z.xon), double(z.paused_ns) / 1e6);
				sum.pfc.push_back(b);
			}
	}

	void read_stats()
	{
		const int ncpu = libbpf_num_possible_cpus();
		if (ncpu <= 0)
			return;
		std::vector<uint64_t> v(static_cast<size_t>(ncpu));
		sum.ect_set = sum.events_lost = 0;
		for (const auto &h : hosts)
			for (uint32_t idx : {uint32_t(QN_RXE_TX_ECT), uint32_t(QN_RXE_EV_LOST)})
				if (bpf_map_lookup_elem(h.stats, &idx, v.data()) == 0)
					for (uint64_t x : v)
						(idx == QN_RXE_TX_ECT ? sum.ect_set : sum.events_lost) += x;
	}
};

} // namespace

Result<Summary> run(const std::vector<HostDesc> &hosts, const Options &o, const std::atomic<bool> &stop)
{
	if (hosts.empty())
		return make_error("no rxe hosts (topology hosts with stack=rxe)");
	if (std::string why = refuse_reason(o.scheme); !why.empty())
		return make_error(why);
	Agent a(o);
	if (auto s = cc::scheme(o.scheme); s && (s->signals & cc::kSigWindow))
		a.sum.notes.push_back(o.scheme + ": its window is NOT enforced on rxe QPs (the agent paces the rate only; "
					   "rxe's own limit of unacknowledged packets bounds what is in flight; docs/agent.md)");
	for (const auto &d : hosts)
		QN_TRY(a.open_host(d));
	if (!o.trace_path.empty()) {
		a.trace = std::fopen(o.trace_path.c_str(), "w");
		if (!a.trace)
			return sys_error(errno, "open the trace " + o.trace_path);
		std::fprintf(a.trace, "t_mono_ns,t_real_ns,host,lqpn,rqpn,rate_bps\n");
	}
	std::vector<std::pair<Agent *, size_t>> ctx(a.hosts.size());
	for (size_t i = 0; i < a.hosts.size(); i++) {
		ctx[i] = {&a, i};
		if (!a.rb)
			a.rb = ring_buffer__new(a.hosts[i].events, Agent::on_event, &ctx[i], nullptr);
		else if (ring_buffer__add(a.rb, a.hosts[i].events, Agent::on_event, &ctx[i]) != 0)
			return sys_error(errno, "host " + a.hosts[i].d.name + ": add its ring buffer");
		if (!a.rb)
			return sys_error(errno, "host " + a.hosts[i].d.name + ": open its ring buffer");
	}
	// Switch the programs' agent half on: ECT(0) on data, per-QP pacing, CNPs and CE events.
	for (auto &h : a.hosts) {
		uint32_t zero = 0;
		qn_rxe_cfg c{};
		if (bpf_map_lookup_elem(h.cfg, &zero, &c) != 0)
			return sys_error(errno, "host " + h.d.name + ": read qn_rxe_cfg");
		c.agent = 1;
		h.honor = c.honor;
		if (!o.obey_pauses)
			c.honor = 0;
		if (bpf_map_update_elem(h.cfg, &zero, &c, BPF_ANY) != 0)
			return sys_error(errno, "host " + h.d.name + ": write qn_rxe_cfg");
	}
	const uint64_t t0 = mono_ns(), end = o.duration_ns ? t0 + o.duration_ns : UINT64_MAX;
	uint64_t next_scan = 0;
	const int epfd = ring_buffer__epoll_fd(a.rb);
	while (!stop.load(std::memory_order_relaxed)) {
		uint64_t now = mono_ns();
		if (now >= end)
			break;
		if (now >= next_scan) {
			QN_TRY(a.scan(now));
			next_scan = now + o.scan_ns;
		}
		a.timers(now);
		const uint64_t until = std::min({a.next_timer(), next_scan, end});
		const uint64_t wait = until > now ? std::min<uint64_t>(until - now, 10'000'000) : 0;
		pollfd p{epfd, POLLIN, 0};
		timespec ts{time_t(wait / 1'000'000'000ULL), long(wait % 1'000'000'000ULL)};
		if (ppoll(&p, 1, &ts, nullptr) > 0)
			ring_buffer__consume(a.rb);
		now = mono_ns();
		for (const auto &[hi, e] : a.pending)
			a.handle(hi, e, now);
		a.pending.clear();
	}
	a.read_stats();
	for (const auto &[k, q] : a.qps)
		a.report(q);
	a.report_pfc();
	return a.sum;
}

} // namespace qn::agent
