// engine.cc - the host engine's event loop, NIC model, cables and health (engine.h).
#include "engine.h"

#include <bpf/bpf.h>
#include <liburing.h>
#include <unistd.h>
#include <poll.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "netns.h"
#include "bringup.h"
#include "switch_loader.h"

namespace qn::tp {

// ---------------------------------------------------------------------------------------------
// Histogram

size_t Histogram::bucket(uint64_t v)
{
	if (v < 1024)
		return size_t(v);
	int lg = 63 - __builtin_clzll(v); // >= 10
	size_t sub = size_t((v >> (lg - 4)) & 15);
	size_t b = 1024 + size_t(lg - 10) * 16 + sub;
	return std::min(b, size_t(1024 + 16 * 40 - 1));
}

uint64_t Histogram::upper(size_t b)
{
	if (b < 1024)
		return b;
	size_t lg = (b - 1024) / 16 + 10;
	uint64_t sub = (b - 1024) % 16;
	return ((16 + sub + 1) << (lg - 4)) - 1;
}

void Histogram::add(uint64_t v)
{
	b_[bucket(v)]++;
	n_++;
	max_ = std::max(max_, v);
}

uint64_t Histogram::quantile(double p) const
{
	if (n_ == 0)
		return 0;
	uint64_t want = uint64_t(std::ceil(p * double(n_)));
	want = std::max<uint64_t>(want, 1);
	uint64_t acc = 0;
	for (size_t i = 0; i < b_.size(); i++) {
		acc += b_[i];
		if (acc >= want)
			return std::min(upper(i), max_);
	}
	return max_;
}

std::string Health::to_text() const
{
	std::ostringstream o;
	o << "validity: " << (valid ? "VALID" : "INVALID") << "\n";
	for (const auto &r : reasons)
		o << "  reason: " << r << "\n";
	o << "  dilation " << double(d_milli) / 1000.0 << ", base RTT " << base_rtt_ns << " ns (fabric)\n"
	  << "  pacer lateness p99 " << late_p99_ns << " ns, max " << late_max_ns << " ns (fabric, "
	  << late_count << " sends), link efficiency " << link_efficiency << "\n"
	  << "  stalls " << stalls << " (threshold " << stall_threshold_wall_ns << " ns wall, max "
	  << stall_max_wall_ns << " ns)\n"
	  << "  xsk drops " << xsk_drops << ", tx held " << tx_held << ", tx frames exhausted " << tx_no_frame
	  << ", softnet drops " << softnet_drops
	  << ", time_squeeze " << time_squeeze << ", veth drops " << veth_drops << "\n"
	  << "  loop iterations " << loop_iters << ", sleeps " << sleeps << "\n";
	return o.str();
}

Result<std::pair<uint64_t, uint64_t>> read_softnet()
{
	std::ifstream f("/proc/net/softnet_stat");
	if (!f)
		return sys_error(errno, "open /proc/net/softnet_stat");
	std::string line;
	uint64_t drops = 0, squeeze = 0;
	while (std::getline(f, line)) {
		std::istringstream ss(line);
		std::string processed, dropped, sq;
		if (!(ss >> processed >> dropped >> sq))
			continue;
		drops += std::stoull(dropped, nullptr, 16);
		squeeze += std::stoull(sq, nullptr, 16);
	}
	return std::make_pair(drops, squeeze);
}

std::pair<uint64_t, uint64_t> default_rto_ns(const std::string &scheme)
{
	if (cc::wants_pfc(scheme))
		return {67'108'864, 67'108'864}; // 4.096 us x 2^14
	return {100'000, 320'000};
}

// ---------------------------------------------------------------------------------------------
// Set-up

Engine::Engine(const Topology &t, const Dilation &d, const EngineOptions &o)
	: topo_(t), dil_(d), opt_(o), clock_(d.milli())
{
}

Engine::~Engine()
{
	for (auto &p : qprobes_)
		if (p.fd >= 0)
			close(p.fd);
	if (ring_) {
		io_uring_queue_exit(static_cast<io_uring *>(ring_));
		delete static_cast<io_uring *>(ring_);
	}
}

Result<std::unique_ptr<Engine>> Engine::open(const Topology &t, const Dilation &d, const EngineOptions &o)
{
	std::unique_ptr<Engine> e(new Engine(t, d, o));
	QN_TRY(e->open_ports());
	// Sleeping waits: no timer slack on poll timeouts (notes/datapath.md); io_uring waits.
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	auto *ring = new io_uring;
	if (io_uring_queue_init(64, ring, 0) == 0) {
		e->ring_ = ring;
		e->ring_ok_ = true;
		// One multishot poll per socket: any received frame wakes the loop.
		auto arm = [&](int fd, uint64_t tag) {
			io_uring_sqe *sqe = io_uring_get_sqe(ring);
			io_uring_prep_poll_multishot(sqe, fd, POLLIN);
			io_uring_sqe_set_data64(sqe, tag);
		};
		for (size_t i = 0; i < e->hosts_.size(); i++)
			arm(e->hosts_[i]->port.fd(), i);
		for (size_t i = 0; i < e->cables_.size(); i++)
			for (int k = 0; k < 2; k++)
				arm(e->cables_[i]->end[k].fd(), 1000000 + i * 2 + size_t(k));
		io_uring_submit(ring);
	} else {
		delete ring;
		return make_error("io_uring_queue_init failed: the engine needs io_uring");
	}
	e->opt_.base_rtt_ns = o.base_rtt_ns ? o.base_rtt_ns : e->derive_base_rtt();
	// A stall: the loop ran later than planned by more than half a base RTT (in wall time).
	e->stall_thr_wall_ = std::max<uint64_t>(e->clock_.wall_duration(e->opt_.base_rtt_ns / 2), 20'000);
	QN_TRY(e->health_begin());
	return e;
}

Status Engine::open_ports()
{
	for (const Node &n : topo_.nodes) {
		if (n.kind != NodeKind::Host)
			continue;
		if (!opt_.only_hosts.empty() &&
		    std::find(opt_.only_hosts.begin(), opt_.only_hosts.end(), n.name) == opt_.only_hosts.end())
			continue;
		auto h = std::make_unique<Host>();
		// A random first IP ID per run, as hosts do: a switch's dequeue-time mark is keyed
		// by the packet's addresses, IP ID and UDP source port (bpf/include/dqmark.h), and
		// an entry left by an earlier run (its packet lost on the way) must not match this
		// run's frame of the same number.
		h->ip_id = uint16_t(std::random_device{}());
		const Port &p = topo_.ports[size_t(topo_.ports_of(n.id)[0])];
		const Link &l = topo_.links[size_t(p.link)];
		h->node = n.id;
		h->name = n.name;
		h->netns = topo_.netns(n.id);
		h->ifname = p.ifname;
		h->ep = Endpoint{n.mac, n.ip};
		h->gw = topo_.ports[size_t(p.peer_port)].mac;
		h->link_bps = l.rate_bps;
		h->delay_ns = l.delay_ns;
		h->error_rate = l.error_rate;
		h->pacer = LinkPacer(l.rate_bps, opt_.tx_horizon_wall_ns * 1000 / dil_.milli());
		std::string pin = std::string(kPinRoot) + "/" + topo_.name + "/" + n.name + "/qn_xsks";
		QN_TRY(h->port.open(h->netns, h->ifname, pin, opt_.frames_per_port));
		host_by_name_[n.name] = hosts_.size();
		hosts_.push_back(std::move(h));
	}
	for (const CableSpec &c : cable_specs(topo_)) {
		auto cb = std::make_unique<Cable>();
		cb->name = c.name;
		cb->delay_ns = c.delay_ns;
		cb->error_rate = c.error_rate;
		for (int k = 0; k < 2; k++)
			QN_TRY(cb->end[k].open(c.netns, c.ifname[k], c.xskmap_pin[k], opt_.frames_per_port));
		cables_.push_back(std::move(cb));
	}
	if (hosts_.empty() && cables_.empty())
		return make_error("topology " + topo_.name + ": no host to serve");
	return ok_status();
}

Engine::PathInfo Engine::path_from(int src_node, int dst_node) const
{
	// common.md §4: base RTT = 2 x the propagation delays of the path + one full data frame's
	// serialization per hop; the bottleneck is the slowest link. Paths are shortest in hops (as
	// the switches route); among equal ones the smallest RTT.
	const size_t n = topo_.nodes.size();
	std::vector<int> hops(n, -1);
	std::vector<uint64_t> cost(n, 0), bottleneck(n, UINT64_MAX);
	std::vector<uint32_t> mtu(n, UINT32_MAX);
	std::deque<int> bfs{src_node};
	hops[size_t(src_node)] = 0;
	while (!bfs.empty()) {
		int u = bfs.front();
		bfs.pop_front();
		if (u != src_node && topo_.nodes[size_t(u)].kind == NodeKind::Host)
			continue; // hosts do not forward
		for (int pi : topo_.ports_of(u)) {
			const Port &p = topo_.ports[size_t(pi)];
			const Link &l = topo_.links[size_t(p.link)];
			int v = p.peer_node;
			uint64_t c = cost[size_t(u)] + 2 * l.delay_ns +
				     serialization_ns(wire_bytes(l.mtu + QN_ETH_HLEN), l.rate_bps);
			uint64_t bn = std::min(bottleneck[size_t(u)], l.rate_bps);
			uint32_t m = std::min(mtu[size_t(u)], l.mtu);
			if (hops[size_t(v)] < 0) {
				hops[size_t(v)] = hops[size_t(u)] + 1;
				cost[size_t(v)] = c;
				bottleneck[size_t(v)] = bn;
				mtu[size_t(v)] = m;
				bfs.push_back(v);
			} else if (hops[size_t(v)] == hops[size_t(u)] + 1 && c < cost[size_t(v)]) {
				cost[size_t(v)] = c;
				bottleneck[size_t(v)] = bn;
				mtu[size_t(v)] = m;
			}
		}
	}
	PathInfo r;
	if (hops[size_t(dst_node)] > 0) {
		r.ok = true;
		r.base_rtt_ns = cost[size_t(dst_node)];
		r.bottleneck_bps = bottleneck[size_t(dst_node)];
		r.mtu = mtu[size_t(dst_node)];
	}
	return r;
}

Engine::PathInfo Engine::path(const std::string &a, const std::string &b) const
{
	auto ia = host_by_name_.find(a), ib = host_by_name_.find(b);
	if (ia == host_by_name_.end() || ib == host_by_name_.end())
		return PathInfo{};
	return path_from(hosts_[ia->second]->node, hosts_[ib->second]->node);
}

uint64_t Engine::derive_base_rtt() const
{
	// The smallest base RTT over served host pairs is the base the thresholds scale with.
	uint64_t best = UINT64_MAX;
	for (const auto &src : hosts_)
		for (const auto &dst : hosts_)
			if (dst != src) {
				PathInfo p = path_from(src->node, dst->node);
				if (p.ok)
					best = std::min(best, p.base_rtt_ns);
			}
	return best == UINT64_MAX ? 10'000 : std::max<uint64_t>(best, 1000);
}

// ---------------------------------------------------------------------------------------------
// Control plane

Result<QpHandle> Engine::connect(const std::string &a, const std::string &b, const QpOptions &o)
{
	auto ia = host_by_name_.find(a), ib = host_by_name_.find(b);
	if (ia == host_by_name_.end())
		return make_error("connect: host '" + a + "' is not served by this engine");
	if (ib == host_by_name_.end())
		return make_error("connect: host '" + b + "' is not served by this engine");
	if (a == b)
		return make_error("connect: a QP needs two different hosts (" + a + ")");
	// Segments fit the smallest MTU of the path (the hosts' veths carry their link's MTU).
	const PathInfo pi = path(a, b);
	if (!pi.ok)
		return make_error("connect: no path from " + a + " to " + b);
	if (pi.mtu + QN_ETH_HLEN > kChunkBytes)
		return make_error("connect: the path MTU " + std::to_string(pi.mtu) + " from " + a + " to " + b +
				  " does not fit the engine's " + std::to_string(kChunkBytes) + "-byte frames (MTU <= " +
				  std::to_string(kChunkBytes - QN_ETH_HLEN) + ")");
	const size_t payload = payload_mtu(pi.mtu);
	const auto [def_low, def_high] = default_rto_ns(o.cc.scheme);
	const uint64_t rto_low = o.rto_low_ns ? o.rto_low_ns : def_low;
	const uint64_t rto_high = o.rto_high_ns ? o.rto_high_ns : def_high;
	auto make = [&](size_t host, uint32_t qpn, uint32_t peer_qpn, const Endpoint &dst) -> Result<QpHandle> {
		QpConfig c;
		c.qpn = qpn;
		c.peer_qpn = peer_qpn;
		c.payload_mtu = uint32_t(payload);
		c.mode = o.mode;
		c.ack_every = o.ack_every;
		c.rto_low_ns = rto_low;
		c.rto_high_ns = rto_high;
		c.window_bytes = o.window_bytes;
		auto q = std::make_unique<Qp>(c, o.keep_data, o.verify_pattern, o.hash_payload);
		q->id = QpHandle(qps_.size());
		q->host = host;
		q->dst = dst;
		q->limit_bps = o.rate_bps;
		q->mtu = pi.mtu;
		cc::Setup cs = o.cc;
		cs.line_rate_bps = hosts_[host]->link_bps;
		if (cs.bdp_bytes == 0)
			cs.bdp_bytes = hosts_[host]->link_bps / 8 * opt_.base_rtt_ns / 1'000'000'000ULL;
		auto parts = cc::make(cs);
		if (!parts)
			return make_error("connect: " + parts.error().message);
		q->ctl = std::move(parts->controller);
		q->np = std::move(parts->np);
		q->cc_describe = q->ctl->name() + ": " + parts->describe;
		q->trace = o.trace;
		q->ctl->start(clock_.now_ns());
		by_qpn_[qpn] = q.get();
		qps_.push_back(std::move(q));
		apply_cc(*qps_.back(), clock_.now_ns());
		return qps_.back()->id;
	};
	uint32_t qa = next_qpn_++, qb = next_qpn_++;
	if (next_qpn_ > 0x3FFF)
		return make_error("connect: out of QP numbers (16K per engine: the UDP source port carries 14 bits)");
	min_rto_ns_ = std::min(min_rto_ns_, std::max<uint64_t>(1000, std::min(rto_low, rto_high)));
	auto ra = make(ia->second, qa, qb, hosts_[ib->second]->ep);
	if (!ra)
		return ra.error();
	auto rb = make(ib->second, qb, qa, hosts_[ia->second]->ep);
	if (!rb)
		return rb.error();
	QpHandle ha = *ra, hb = *rb;
	qps_[ha]->peer = hb;
	qps_[hb]->peer = ha;
	return ha;
}

QpHandle Engine::peer(QpHandle h) const { return qps_[h]->peer; }
uint32_t Engine::qpn(QpHandle h) const { return qps_[h]->snd.config().qpn; }

uint64_t Engine::post(QpHandle h, Message m)
{
	Qp &q = *qps_[h];
	uint64_t now = clock_.now_ns();
	uint64_t msn = q.snd.post(std::move(m), now);
	schedule(q, now);
	return msn;
}

void Engine::set_rate(QpHandle h, uint64_t bps)
{
	qps_[h]->limit_bps = bps;
	apply_cc(*qps_[h], clock_.now_ns());
}
void Engine::set_window(QpHandle h, uint64_t bytes)
{
	qps_[h]->snd.set_window(bytes);
	schedule(*qps_[h], clock_.now_ns());
}

const HostCounters &Engine::host_counters(const std::string &host)
{
	Host &h = *hosts_[host_by_name_.at(host)];
	for (int i = 0; i < 8; i++)
		settle_pause(h, i, clock_.now_ns());
	return h.c;
}

std::vector<std::string> Engine::host_names() const
{
	std::vector<std::string> v;
	for (const auto &h : hosts_)
		v.push_back(h->name);
	return v;
}

const SenderStats &Engine::sender_stats(QpHandle h) const { return qps_[h]->snd.stats(); }
const ReceiverStats &Engine::receiver_stats(QpHandle h) const { return qps_[h]->rcv.stats(); }
Endpoint Engine::endpoint(const std::string &host) const { return hosts_[host_by_name_.at(host)]->ep; }

Status Engine::sample_queue(const std::string &sw, const std::string &port, uint64_t interval_ns)
{
	int id = topo_.find(sw);
	if (id < 0 || topo_.nodes[size_t(id)].kind != NodeKind::Switch)
		return make_error("queue sampling: no switch '" + sw + "' in topology " + topo_.name);
	const Port *pp = nullptr;
	for (int pi : topo_.ports_of(id))
		if (topo_.ports[size_t(pi)].ifname == port)
			pp = &topo_.ports[size_t(pi)];
	if (!pp)
		return make_error("queue sampling: switch " + sw + " has no port '" + port + "'");
	if (interval_ns == 0)
		return make_error("queue sampling: the interval must be positive");
	std::string pin = std::string(kPinRoot) + "/" + topo_.name + "/" + sw + "/qn_qstate";
	int fd = bpf_obj_get(pin.c_str());
	if (fd < 0)
		return sys_error(errno, "open " + pin);
	qprobes_.push_back(QueueProbe{fd, uint32_t(pp->port_no)});
	qseries_.push_back(QueueSeries{sw + "/" + port, {}});
	qsample_ns_ = qsample_ns_ ? std::min(qsample_ns_, interval_ns) : interval_ns;
	return ok_status();
}

Status Engine::sample_all_queues(uint64_t interval_ns)
{
	for (const Node &n : topo_.nodes)
		if (n.kind == NodeKind::Switch)
			for (int pi : topo_.ports_of(n.id))
				QN_TRY(sample_queue(n.name, topo_.ports[size_t(pi)].ifname, interval_ns));
	return ok_status();
}

void Engine::sample_queues(uint64_t now)
{
	for (size_t i = 0; i < qprobes_.size(); i++) {
		qn_qstate q{};
		uint32_t key = qprobes_[i].port_no;
		if (bpf_map_lookup_elem(qprobes_[i].fd, &key, &q) != 0)
			continue;
		qseries_[i].samples.emplace_back(now, q.acct_bytes > 0 ? uint64_t(q.acct_bytes) : 0);
	}
	uint64_t rx = 0;
	for (const auto &h : hosts_)
		rx += h->c.rx_data_bytes;
	rx_series_.emplace_back(now, rx);
	// A late sample is taken late, never doubled up.
	next_qsample_ = std::max(next_qsample_ + qsample_ns_, now + qsample_ns_ / 2);
}

// ---------------------------------------------------------------------------------------------
// Data path

bool Engine::paused(const Host &h, int prio, uint64_t now) const { return h.paused_until[prio] > now; }

void Engine::schedule(Qp &q, uint64_t now)
{
	if (q.scheduled || !q.snd.can_send())
		return;
	q.scheduled = true;
	hosts_[q.host]->sched.add(&q, q.next_ok_ns, now);
}

TxHeader Engine::control_header(Host &h, const Qp &q)
{
	// ACKs and CNPs go from QP q to its peer QP, in the control class (DSCP 48, priority 6).
	TxHeader t;
	t.src = h.ep;
	t.dst = Endpoint{h.gw, q.dst.ip};
	t.dscp = QN_DSCP_CONTROL;
	t.sport = qpn_to_sport(q.snd.config().qpn);
	t.ip_id = h.ip_id++;
	t.dest_qp = q.snd.config().peer_qpn;
	return t;
}

void Engine::queue_ack(Host &h, Qp &q, const AckOut &a)
{
	TxHeader t = control_header(h, q);
	t.psn = a.psn;
	t.syndrome = a.nak ? QN_AETH_NAK_SEQ : QN_AETH_ACK;
	t.msn = a.msn;
	t.sack = a.sack;
	t.ce_pkts = a.ce_pkts;
	t.qack_flags = a.ece ? QN_QACK_ECE : 0;
	CtrlFrame f;
	f.len = uint16_t(encode_ack(t, opt_.icrc, f.b.data(), f.b.size()));
	h.ctrl.push_back(f);
}

void Engine::queue_cnp(Host &h, Qp &q)
{
	// To the data sender's QP (its QPN is this QP's peer).
	TxHeader t = control_header(h, q);
	CtrlFrame f;
	f.len = uint16_t(encode_cnp(t, opt_.icrc, f.b.data(), f.b.size()));
	h.ctrl.push_back(f);
	h.c.cnp_tx++;
}

void Engine::apply_cc(Qp &q, uint64_t now)
{
	const cc::Output o = q.ctl->output();
	const bool changed = o.rate_bps != q.out.rate_bps || o.window_bytes != q.out.window_bytes;
	q.out = o;
	// A rate at or above the link is the link's (no limiter of its own).
	const uint64_t link = hosts_[q.host]->link_bps;
	const uint64_t rate = q.limit_bps ? std::min(q.limit_bps, o.rate_bps) : o.rate_bps;
	q.rate_bps = rate >= link ? 0 : rate;
	if (o.window_bytes != q.snd.config().window_bytes) {
		q.snd.set_window(o.window_bytes);
		schedule(q, now);
	}
	if (q.trace && (changed || q.trace_points.empty() ||
			(q.acked_bytes != q.trace_points.back().acked_bytes &&
			 now >= q.trace_points.back().t_ns + opt_.trace_interval_ns)))
		q.trace_points.push_back(RatePoint{now, o.rate_bps, o.window_bytes, q.acked_bytes});
}

void Engine::settle_pause(Host &h, int prio, uint64_t now)
{
	// Account paused time up to min(now, end of pause); pause_start follows.
	uint64_t &start = h.pause_start[prio];
	uint64_t end = std::min(now, h.paused_until[prio]);
	if (end > start) {
		h.c.paused_ns[prio] += end - start;
		start = end;
	}
}

void Engine::process(Host &h, const uint8_t *fr, uint32_t len, uint64_t now)
{
	Packet p;
	ParseError e = parse({fr, len}, opt_.icrc, p);
	h.c.rx_frames++;
	h.c.rx_bytes += len;
	if (e != ParseError::None) {
		h.c.bad[size_t(e)]++;
		return;
	}
	if (p.kind == Kind::Pfc) {
		h.c.pfc_rx++;
		for (int i = 0; i < 8; i++) {
			if (!(p.pfc_enable >> i & 1))
				continue;
			settle_pause(h, i, now);
			uint64_t q = p.pfc_quanta[size_t(i)];
			if (q == 0) {
				if (h.paused_until[i] > now)
					h.paused_until[i] = now; // XON ends the pause early
				h.c.pfc_xon++;
			} else {
				// Quanta are 512 bit times of the link: fabric time at the fabric rate.
				if (h.paused_until[i] <= now)
					h.pause_start[i] = now;
				h.paused_until[i] = now + serialization_ns(q * 64, h.link_bps);
				h.c.pfc_xoff++;
			}
			settle_pause(h, i, now);
			// The host's controllers see the pause (PCN and others react to it).
			for (auto &qp : qps_) {
				if (hosts_[qp->host].get() != &h)
					continue;
				qp->ctl->on_pfc(cc::PfcEvent{now, i, q == 0 ? 0 : h.paused_until[i]});
				apply_cc(*qp, now);
			}
		}
		return;
	}
	auto it = by_qpn_.find(p.dest_qp);
	Qp *q = it == by_qpn_.end() ? nullptr : it->second;
	// A connected QP takes packets only from its peer host.
	if (!q || hosts_[q->host].get() != &h || p.src.ip != q->dst.ip) {
		h.c.unknown_qp++;
		return;
	}
	switch (p.kind) {
	case Kind::Data: {
		h.c.rx_data_bytes += len;
		if (p.ecn == 3)
			h.c.ce_rx++;
		auto a = q->rcv.on_data(p, now);
		if (a)
			queue_ack(h, *q, *a);
		// The notification point sees every data packet; CE-marked ones may make a CNP.
		if (q->np && q->np->on_data(now, p.ecn == 3))
			queue_cnp(h, *q);
		for (auto &d : q->rcv.take_deliveries())
			if (on_deliver)
				on_deliver(q->id, d);
		break;
	}
	case Kind::Ack:
	case Kind::Nak: {
		AckEvent ev = q->snd.on_ack(p, now);
		if (!ev.stale) {
			q->acked_bytes += ev.acked_bytes;
			q->ctl->on_ack(cc::AckSample{now, ev.acked_bytes, ev.ce_pkts, ev.ece, ev.rtt_ns, ev.nak});
			apply_cc(*q, now);
		}
		for (auto &c : q->snd.take_completions())
			if (on_complete)
				on_complete(q->id, c);
		schedule(*q, now);
		break;
	}
	case Kind::Cnp:
		h.c.cnp_rx++;
		q->ctl->on_cnp(cc::CnpEvent{now, p.payload});
		apply_cc(*q, now);
		break;
	case Kind::Pfc:
		break;
	}
}

uint64_t Engine::arrival(const XskPort &p, uint64_t addr, uint64_t now) const
{
	// The XDP stamp, when present and sane (not in the future, not before the clock began).
	uint64_t st = p.rx_stamp(addr);
	if (st == 0)
		return now;
	uint64_t f = clock_.to_fabric(st);
	return f <= now && f > 0 ? f : now;
}

void Engine::rx_host(Host &h, uint64_t now)
{
	uint64_t addr[64];
	uint32_t len[64];
	const uint64_t rx_delay = h.delay_ns + opt_.nic_rx_delay_ns + opt_.switch_delay_ns;
	for (;;) {
		uint32_t n = h.port.rx_peek(64, addr, len);
		for (uint32_t i = 0; i < n; i++) {
			if (lose(h.error_rate)) { // the switch-to-host direction of the link
				h.c.link_errors++;
				h.port.rx_recycle(addr[i]);
				continue;
			}
			if (rx_delay == 0) {
				process(h, h.port.frame(addr[i]), len[i], now);
				h.port.rx_recycle(addr[i]);
			} else {
				h.rxline.push_back(Held{arrival(h.port, addr[i], now) + rx_delay, addr[i], len[i]});
			}
		}
		if (n < 64)
			break;
	}
	while (!h.rxline.empty() && h.rxline.front().release_ns <= now) {
		Held r = h.rxline.front();
		h.rxline.pop_front();
		process(h, h.port.frame(r.addr), r.len, now);
		h.port.rx_recycle(r.addr);
	}
	h.port.refill();
}

void Engine::rx_cable(Cable &c, uint64_t now)
{
	uint64_t addr[64];
	uint32_t len[64];
	for (int k = 0; k < 2; k++) {
		for (;;) {
			uint32_t n = c.end[k].rx_peek(64, addr, len);
			for (uint32_t i = 0; i < n; i++) {
				if (lose(c.error_rate)) {
					c.dropped++;
					c.end[k].rx_recycle(addr[i]);
					continue;
				}
				c.line[k].push_back(Held{arrival(c.end[k], addr[i], now) + c.delay_ns + opt_.switch_delay_ns,
							 addr[i], len[i]});
			}
			if (n < 64)
				break;
		}
	}
	for (int k = 0; k < 2; k++) {
		XskPort &in = c.end[k], &out = c.end[1 - k];
		while (!c.line[k].empty() && c.line[k].front().release_ns <= now) {
			Held r = c.line[k].front();
			uint64_t a = out.tx_alloc();
			if (a == UINT64_MAX)
				break; // retry next iteration; order is kept
			std::memcpy(out.frame(a), in.frame(r.addr), r.len);
			if (!out.tx_push(a, r.len)) {
				out.tx_free(a);
				break;
			}
			c.line[k].pop_front();
			in.rx_recycle(r.addr);
			c.frames++;
		}
		in.refill();
		out.flush();
	}
}

void Engine::emit(Host &h, uint64_t addr, uint32_t len, uint64_t start)
{
	const uint64_t tx_delay = h.delay_ns + opt_.nic_tx_delay_ns;
	h.c.tx_frames++;
	h.c.tx_bytes += len;
	if (lose(h.error_rate)) { // the host-to-switch direction of the link (after the pacer)
		h.c.link_errors++;
		h.port.tx_free(addr);
		return;
	}
	if (tx_delay == 0 && h.txline.empty()) {
		if (h.port.tx_push(addr, len))
			return;
		// TX ring full: keep the frame, in order, for the next iteration (never drop it).
		h.c.tx_ring_full++;
	}
	h.txline.push_back(Held{start + tx_delay, addr, len});
}

void Engine::pump(Host &h, uint64_t now)
{
	h.sched.advance(now);
	while (h.pacer.ready(now)) {
		const bool ctrl_ok = !h.ctrl.empty() && !paused(h, QN_PRIO_CONTROL, now);
		const bool data_ok = h.sched.has_ready() && !paused(h, QN_PRIO_DATA, now);
		if (!ctrl_ok && !data_ok)
			break;
		uint64_t addr = h.port.tx_alloc();
		if (addr == UINT64_MAX) {
			h.c.tx_no_frame++;
			break;
		}
		uint8_t *buf = h.port.frame(addr);
		uint32_t len = 0;
		if (ctrl_ok) {
			const CtrlFrame &f = h.ctrl.front();
			std::memcpy(buf, f.b.data(), f.len);
			len = f.len;
			h.ctrl.pop_front();
			h.c.tx_ctrl++;
		} else {
			Qp *q = h.sched.pop();
			auto seg = q->snd.next(now);
			if (!seg) {
				q->scheduled = false;
				h.port.tx_free(addr);
				continue;
			}
			TxHeader t;
			t.src = h.ep;
			t.dst = Endpoint{h.gw, q->dst.ip};
			t.sport = qpn_to_sport(q->snd.config().qpn);
			t.ip_id = h.ip_id++;
			t.opcode = seg->opcode;
			t.dest_qp = q->snd.config().peer_qpn;
			t.psn = seg->psn;
			t.ack_req = seg->ack_req;
			len = uint32_t(encode_data(t, seg->len, opt_.icrc, buf, kChunkBytes,
						   [&](uint8_t *d) { q->snd.fill(*seg, d); }));
			h.c.tx_data++;
			q->ctl->on_tx(now, len); // DCQCN's byte counter counts what goes on the wire
			apply_cc(*q, now);
			// The QP's own rate limiter: its next packet waits one serialization time
			// at the QP rate (from now: no catching up either).
			q->scheduled = false;
			q->next_ok_ns = TxScheduler<Qp *>::next_ok(std::min(q->next_ok_ns, now), now, wire_bytes(len),
								   q->rate_bps, h.link_bps,
								   wire_bytes(q->mtu + QN_ETH_HLEN));
			schedule(*q, now);
		}
		uint64_t wb = wire_bytes(len);
		uint64_t start = now;
		uint64_t late = h.pacer.send(now, wb, h.backlogged, &start);
		if (h.backlogged) {
			late_.add(late);
			h.late_ns += late;
			h.ser_ns += serialization_ns(wb, h.link_bps);
		}
		emit(h, addr, len, start);
		h.backlogged = true;
	}
	// Still backlogged only if something could go when the link frees up.
	h.backlogged = !h.pacer.ready(now) &&
		       ((!h.ctrl.empty() && !paused(h, QN_PRIO_CONTROL, now)) ||
			(h.sched.has_ready() && !paused(h, QN_PRIO_DATA, now)));
	while (!h.txline.empty() && h.txline.front().release_ns <= now) {
		Held r = h.txline.front();
		if (!h.port.tx_push(r.addr, r.len))
			break;
		h.txline.pop_front();
	}
	h.port.flush();
}

uint64_t Engine::next_deadline(uint64_t now)
{
	uint64_t d = next_timer_scan_;
	for (const auto &hp : hosts_) {
		const Host &h = *hp;
		bool has_ctrl = !h.ctrl.empty(), has_data = h.sched.has_ready();
		if (has_ctrl || has_data) {
			uint64_t t = h.pacer.ready_at();
			for (int prio : {QN_PRIO_CONTROL, QN_PRIO_DATA}) {
				bool want = prio == QN_PRIO_CONTROL ? has_ctrl : has_data;
				if (want)
					d = std::min(d, std::max(t, h.paused_until[prio]));
			}
		}
		if (h.sched.waiting())
			d = std::min(d, h.sched.next_due());
		if (!h.txline.empty())
			d = std::min(d, h.txline.front().release_ns);
		if (!h.rxline.empty())
			d = std::min(d, h.rxline.front().release_ns);
		if (h.port.tx_pending())
			d = std::min(d, now + 1000);
	}
	for (const auto &c : cables_)
		for (int k = 0; k < 2; k++)
			if (!c->line[k].empty())
				d = std::min(d, c->line[k].front().release_ns);
	return d;
}

void Engine::sleep_until_wall(uint64_t wall_deadline)
{
	auto *ring = static_cast<io_uring *>(ring_);
	uint64_t now = mono_wall_ns();
	if (wall_deadline <= now)
		return;
	uint64_t dt = wall_deadline - now;
	__kernel_timespec ts{};
	ts.tv_sec = int64_t(dt / 1'000'000'000ULL);
	ts.tv_nsec = int64_t(dt % 1'000'000'000ULL);
	io_uring_cqe *cqe = nullptr;
	sleeps_++;
	io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	// Reap every completion; re-arm a multishot poll the kernel ended.
	unsigned head;
	unsigned n = 0;
	std::vector<uint64_t> rearm;
	io_uring_for_each_cqe(ring, head, cqe)
	{
		if (!(cqe->flags & IORING_CQE_F_MORE))
			rearm.push_back(io_uring_cqe_get_data64(cqe));
		n++;
	}
	io_uring_cq_advance(ring, n);
	for (uint64_t tag : rearm) {
		int fd = tag < 1000000 ? hosts_[size_t(tag)]->port.fd()
				       : cables_[size_t((tag - 1000000) / 2)]->end[(tag - 1000000) % 2].fd();
		io_uring_sqe *sqe = io_uring_get_sqe(ring);
		if (!sqe)
			break;
		io_uring_prep_poll_multishot(sqe, fd, POLLIN);
		io_uring_sqe_set_data64(sqe, tag);
	}
	if (!rearm.empty())
		io_uring_submit(ring);
}

void Engine::run(const std::function<bool()> &done, uint64_t until_ns,
		 const std::function<uint64_t(uint64_t)> &tick)
{
	const uint64_t timer_scan_ns = 1000; // RTO resolution (fabric)
	expect_wall_ = 0;
	for (;;) {
		uint64_t wall = mono_wall_ns();
		if (expect_wall_ && wall > expect_wall_ + stall_thr_wall_) {
			stalls_++;
			stall_max_ = std::max(stall_max_, wall - expect_wall_);
		}
		uint64_t now = clock_.to_fabric(wall);
		iters_++;
		if (now >= until_ns || (done && done()))
			break;
		// A topology taken down under a running engine leaves it with dead sockets: stop.
		if (wall >= next_alive_check_) {
			next_alive_check_ = wall + 100'000'000;
			if (access((std::string(kStateDir) + "/" + topo_.name + ".topo").c_str(), F_OK) != 0) {
				topology_gone_ = true;
				break;
			}
		}
		for (auto &h : hosts_)
			rx_host(*h, now);
		for (auto &c : cables_)
			rx_cable(*c, now);
		uint64_t app_next = UINT64_MAX;
		if (tick)
			app_next = tick(now);
		if (now >= next_timer_scan_) {
			// Fire due RTOs; the next scan is at the earliest armed deadline, or one
			// minimum RTO from now (a timer armed meanwhile cannot be due earlier).
			uint64_t next = now + min_rto_ns_;
			for (auto &q : qps_) {
				if (q->snd.on_timer(now))
					schedule(*q, now);
				if (q->ctl->next_timer() <= now) {
					q->ctl->on_timer(now);
					apply_cc(*q, now);
				}
				if (q->np && q->np->next_timer() <= now && q->np->on_timer(now))
					queue_cnp(*hosts_[q->host], *q);
				next = std::min({next, q->snd.deadline(), q->ctl->next_timer(),
						 q->np ? q->np->next_timer() : UINT64_MAX});
			}
			next_timer_scan_ = std::max(next, now + timer_scan_ns);
		}
		for (auto &h : hosts_)
			pump(*h, now);
		if (qsample_ns_ && now >= next_qsample_)
			sample_queues(now);
		uint64_t d = std::min({next_deadline(now), app_next, until_ns,
				       qsample_ns_ ? next_qsample_ : UINT64_MAX});
		uint64_t dw = clock_.to_wall(d);
		uint64_t w2 = mono_wall_ns();
		if (!opt_.busy_poll && dw > w2 + opt_.spin_wall_ns) {
			// Sleep in short slices, waking a spin margin before the deadline.
			uint64_t target = std::min(dw - opt_.spin_wall_ns, w2 + opt_.max_sleep_wall_ns);
			sleep_until_wall(target);
			expect_wall_ = target;
		} else {
			expect_wall_ = mono_wall_ns();
		}
	}
}

// ---------------------------------------------------------------------------------------------
// Health

Result<Engine::Totals> Engine::totals()
{
	auto sn = read_softnet();
	if (!sn)
		return sn.error();
	Totals t;
	t.softnet_drops = sn->first;
	t.squeeze = sn->second;
	for (const auto &h : hosts_) {
		if (auto c = if_counters(h->netns, h->ifname))
			t.veth_drops += c->rx_dropped + c->tx_dropped;
		if (auto x = h->port.stats())
			t.xsk_drops += x->drops();
		t.tx_held += h->port.tx_held();
		t.tx_no_frame += h->c.tx_no_frame;
	}
	for (const auto &c : cables_)
		for (int k = 0; k < 2; k++) {
			if (auto x = c->end[k].stats())
				t.xsk_drops += x->drops();
			t.tx_held += c->end[k].tx_held();
		}
	return t;
}

Status Engine::health_begin()
{
	auto t = totals();
	if (!t)
		return t.error();
	base_ = *t;
	late_ = Histogram();
	stalls_ = stall_max_ = iters_ = sleeps_ = 0;
	for (auto &h : hosts_)
		h->ser_ns = h->late_ns = 0;
	return ok_status();
}

Health Engine::health()
{
	Health r;
	r.d_milli = clock_.d_milli();
	r.base_rtt_ns = opt_.base_rtt_ns;
	r.late_p99_ns = late_.quantile(0.99);
	r.late_max_ns = late_.max();
	r.late_count = late_.count();
	for (const auto &h : hosts_) {
		// Only hosts backlogged for at least 100 frames' worth of time are judged.
		if (h->ser_ns > 100 * serialization_ns(2100, h->link_bps)) {
			double eff = double(h->ser_ns) / double(h->ser_ns + h->late_ns);
			r.link_efficiency = std::min(r.link_efficiency, eff);
		}
	}
	r.stalls = stalls_;
	r.stall_max_wall_ns = stall_max_;
	r.stall_threshold_wall_ns = stall_thr_wall_;
	r.loop_iters = iters_;
	r.sleeps = sleeps_;
	if (auto t = totals()) {
		auto delta = [](uint64_t now, uint64_t base) { return now - std::min(now, base); };
		r.softnet_drops = delta(t->softnet_drops, base_.softnet_drops);
		r.time_squeeze = delta(t->squeeze, base_.squeeze);
		r.veth_drops = delta(t->veth_drops, base_.veth_drops);
		r.xsk_drops = delta(t->xsk_drops, base_.xsk_drops);
		r.tx_held = delta(t->tx_held, base_.tx_held);
		r.tx_no_frame = delta(t->tx_no_frame, base_.tx_no_frame);
	}
	auto fail = [&](std::string why) {
		r.valid = false;
		r.reasons.push_back(std::move(why));
	};
	const uint64_t late_thr = uint64_t(opt_.late_p99_frac * double(opt_.base_rtt_ns));
	if (r.late_count >= 100 && r.late_p99_ns > late_thr)
		fail("pacer lateness p99 " + std::to_string(r.late_p99_ns) + " ns > " + std::to_string(late_thr) +
		     " ns (" + std::to_string(int(opt_.late_p99_frac * 100)) + "% of the base RTT)");
	if (r.link_efficiency < opt_.min_link_efficiency) {
		char b[160];
		std::snprintf(b, sizeof(b), "backlogged hosts reached %.1f%% of their link rate (< %.0f%%)",
			      100 * r.link_efficiency, 100 * opt_.min_link_efficiency);
		fail(b);
	}
	if (r.stalls)
		fail(std::to_string(r.stalls) + " event-loop stalls (max " + std::to_string(r.stall_max_wall_ns / 1000) +
		     " us wall > " + std::to_string(stall_thr_wall_ / 1000) + " us)");
	if (r.xsk_drops)
		fail(std::to_string(r.xsk_drops) + " AF_XDP ring drops");
	if (r.tx_no_frame)
		fail("every AF_XDP TX frame was in flight downstream " + std::to_string(r.tx_no_frame) +
		     " times (a hidden queue in the sender; raise frames_per_port)");
	if (r.tx_held)
		fail("the kernel held back AF_XDP TX frames after " + std::to_string(r.tx_held) +
		     " kicks (a hidden queue in the sender)");
	if (r.softnet_drops)
		fail(std::to_string(r.softnet_drops) + " softnet backlog drops");
	if (r.time_squeeze)
		fail(std::to_string(r.time_squeeze) + " softnet time_squeeze events");
	if (r.veth_drops)
		fail(std::to_string(r.veth_drops) + " host veth drops");
	return r;
}

} // namespace qn::tp
