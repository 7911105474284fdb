// engine.cc - the host engine: set-up, the control plane (QPs, messages) and the event loop
// (engine.h; the receive and transmit paths, cables, health and paths have files of their own).
#include "transport/shard.h"
#include "transport/resources.h"

#include <liburing.h>
#include <unistd.h>
#include <poll.h>
#include <sys/prctl.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>


namespace qn::tp {

NamedCounters host_counters_by_name(const HostCounters &c)
{
	NamedCounters v = {
		{"tx_frames", c.tx_frames},       {"tx_bytes", c.tx_bytes},
		{"rx_frames", c.rx_frames},       {"rx_bytes", c.rx_bytes},
		{"rx_data_bytes", c.rx_data_bytes}, {"ce_rx", c.ce_rx},
		{"tx_data", c.tx_data},           {"tx_ctrl", c.tx_ctrl},
		{"tx_ring_full", c.tx_ring_full}, {"tx_no_frame", c.tx_no_frame},
		{"pfc_rx", c.pfc_rx},             {"pfc_xoff", c.pfc_xoff},
		{"pfc_xon", c.pfc_xon},           {"cnp_rx", c.cnp_rx},
		{"cnp_tx", c.cnp_tx},             {"unknown_qp", c.unknown_qp},
		{"bts_rx", c.bts_rx},             {"postcard_rx", c.postcard_rx},
		{"signal_unknown_qp", c.signal_unknown_qp}, {"link_errors", c.link_errors},
		{"qp_paused_ns", c.qp_paused_ns},
		{"pfc_pauses", c.pfc_pauses},     {"pfc_last_pause_at_ns", c.pfc_last_pause_at_ns, CounterKind::Instant},
	};
	for (size_t p = 0; p < 8; p++)
		v.push_back({"paused_ns.prio" + std::to_string(p), c.paused_ns[p]});
	uint64_t bad = 0;
	for (size_t r = 1; r < c.bad.size(); r++) {
		v.push_back({"malformed." + to_string(ParseError(r)), c.bad[r]});
		bad += c.bad[r];
	}
	v.push_back({"malformed", bad});
	return v;
}

std::pair<uint64_t, uint64_t> default_rto_ns(const std::string &scheme)
{
	// The scheme's descriptor says (its loss mode); an unknown name fails later, in cc::make().
	auto s = cc::scheme(scheme);
	if (!s)
		return {100'000, 320'000};
	return {s->rto_low_ns, s->rto_high_ns};
}

Shard::Shard(const EngineDesc &desc, const Dilation &d, const EngineOptions &o, const ShardRole &role)
	: desc_(desc), dil_(d), opt_(o), clock_(d.milli()), role_(role)
{
	adj_.resize(desc_.nodes.size());
	for (size_t i = 0; i < desc_.links.size(); i++) {
		const FabricLink &l = desc_.links[i];
		if (l.a >= 0 && size_t(l.a) < adj_.size() && l.b >= 0 && size_t(l.b) < adj_.size()) {
			adj_[size_t(l.a)].push_back(int(i));
			adj_[size_t(l.b)].push_back(int(i));
		}
	}
	// Every host the engine serves (any shard): paths, base RTTs and connections span them.
	for (const HostDesc &hd : desc_.hosts)
		if (engine_serves(opt_, hd.name) && hd.node >= 0 && size_t(hd.node) < desc_.nodes.size())
			node_of_[hd.name] = hd.node;
}

Shard::~Shard()
{
	close_switch_monitors();
	if (ring_) {
		io_uring_queue_exit(static_cast<io_uring *>(ring_));
		delete static_cast<io_uring *>(ring_);
	}
}

Result<std::unique_ptr<Shard>> Shard::open(const EngineDesc &desc, const Dilation &d, const EngineOptions &o,
					   const ShardRole &role, const DilatedClock &clock0, PortPool *pool)
{
	std::unique_ptr<Shard> e(new Shard(desc, d, o, role));
	e->clock_ = clock0;
	QN_TRY(e->open_ports(pool));
	if (role.owner)
		QN_TRY(e->open_switch_monitors());
	QN_TRY(e->finish_open());
	return e;
}

Result<std::unique_ptr<Shard>> Shard::open_on(const EngineDesc &desc, const Dilation &d, const EngineOptions &o,
					      const ShardRole &role, const Clock &clock, PortPool *pool)
{
	std::unique_ptr<Shard> e(new Shard(desc, d, o, role));
	e->io_ = false;
	e->now_src_ = &clock;
	QN_TRY(e->open_ports(pool));
	QN_TRY(e->finish_open());
	return e;
}

Status Shard::start()
{
	if (io_)
		QN_TRY(start_io());
	return health_begin();
}

namespace {

// An SQE, submitting what is queued when the submission queue is full (a fabric may have more
// sockets than the queue has entries). Return: nullptr only when the kernel takes none.
io_uring_sqe *sqe_or_flush(io_uring *ring)
{
	io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe && io_uring_submit(ring) >= 0)
		sqe = io_uring_get_sqe(ring);
	return sqe;
}

} // namespace

size_t Shard::io_sockets() const
{
	return hosts_.size() + 2 * cables_.size();
}

Status Shard::start_io()
{
	// Sleeping waits: no timer slack on poll timeouts (notes/datapath.md); io_uring waits.
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	// Sized from the fabric (issue 45: a fixed 64 entries and one poll per socket crashed a
	// k=4 fat-tree with cables, 80 sockets): the submission queue holds one poll per socket,
	// the completion queue four completions per socket before the loop reaps them.
	const size_t socks = io_sockets();
	const unsigned sq = std::max(64u, std::bit_ceil(unsigned(socks)));
	io_uring_params p{};
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = std::max(256u, std::bit_ceil(unsigned(4 * (socks + 1))));
	auto *ring = new io_uring;
	if (int rc = io_uring_queue_init_params(sq, ring, &p); rc != 0) {
		delete ring;
		return make_error("io_uring_queue_init_params(" + std::to_string(sq) + " entries, CQ " +
				  std::to_string(p.cq_entries) + ") failed: " + std::strerror(-rc) +
				  " (the engine needs io_uring)");
	}
	ring_ = ring;
	ring_ok_ = true;
	// One multishot poll per socket: any received frame wakes the loop.
	for (size_t i = 0; i < socks; i++) {
		io_uring_sqe *sqe = sqe_or_flush(ring);
		if (!sqe)
			return make_error("io_uring: no submission entry for socket " + std::to_string(i) + " of " +
					  std::to_string(socks));
		io_uring_prep_poll_multishot(sqe, io_fd(i), POLLIN);
		io_uring_sqe_set_data64(sqe, i);
	}
	if (wake_fd_ >= 0) { // an inbox post wakes a sleeping loop
		io_uring_sqe *sqe = sqe_or_flush(ring);
		if (!sqe)
			return make_error("io_uring: no submission entry for the shard's wake-up descriptor");
		io_uring_prep_poll_multishot(sqe, wake_fd_, POLLIN);
		io_uring_sqe_set_data64(sqe, kWakeTag);
	}
	if (int rc = io_uring_submit(ring); rc < 0)
		return make_error(std::string("io_uring_submit of the socket polls: ") + std::strerror(-rc));
	return ok_status();
}

int Shard::io_fd(size_t tag) const
{
	if (tag == kWakeTag)
		return wake_fd_;
	return tag < hosts_.size() ? hosts_[tag]->port->fd()
				   : cables_[(tag - hosts_.size()) / 2]->end[(tag - hosts_.size()) % 2]->fd();
}

Status Shard::finish_open()
{
	const auto [lo, hi] = rtt_range();
	min_rtt_ns_ = lo;
	max_rtt_ns_ = hi;
	opt_.base_rtt_ns = opt_.base_rtt_ns ? opt_.base_rtt_ns : lo;
	// A stall: the loop ran later than planned by more than half a base RTT (in wall time).
	stall_thr_wall_ = std::max<uint64_t>(clock_.wall_duration(opt_.base_rtt_ns / 2), 20'000);
	late_bound_ns_ = uint64_t(opt_.late_p99_frac * double(opt_.base_rtt_ns));
	return ok_status();
}

Status Shard::open_ports(PortPool *pool)
{
	pool_ = pool;
	Status opened = open_hosts_and_cables();
	pool_ = nullptr;
	return opened;
}

Status Shard::open_hosts_and_cables()
{
	// Fitted to the machine by the engine before any shard opens (Engine::fit_ports).
	auto serves = [&](size_t i) {
		return engine_serves(opt_, desc_.hosts[i].name) && (role_.hosts.empty() || role_.hosts[i]);
	};
	for (size_t hi = 0; hi < desc_.hosts.size(); hi++) {
		const HostDesc &hd = desc_.hosts[hi];
		if (!serves(hi))
			continue;
		if (hd.node < 0 || size_t(hd.node) >= desc_.nodes.size())
			return make_error(desc_.name + ": host " + hd.name + " names no node of the fabric");
		if (!hd.open)
			return make_error(desc_.name + ": host " + hd.name + " has no port to open");
		auto h = std::make_unique<Host>();
		// A random first IP ID per run, as hosts do: a switch's dequeue-time mark is keyed
		// by the packet's addresses, IP ID and UDP source port (bpf/include/dqmark.h), and
		// an entry left by an earlier run (its packet lost on the way) must not match this
		// run's frame of the same number.
		h->ip_id = uint16_t(std::random_device{}());
		h->node = hd.node;
		h->name = hd.name;
		h->ep = hd.ep;
		h->gw = hd.gw;
		h->link_bps = hd.link_bps;
		h->delay_ns = hd.delay_ns;
		h->error_rate = hd.error_rate;
		h->port_drops = hd.port_drops;
		h->pacer = LinkPacer(hd.link_bps, opt_.tx_horizon_wall_ns * 1000 / dil_.milli(),
				     uint64_t(opt_.link_credit_frames *
					      double(serialization_ns(wire_bytes(hd.mtu + QN_ETH_HLEN), hd.link_bps))));
		auto port = take_port("host/" + hd.name, hd.open);
		if (!port)
			return port.error();
		h->port = std::move(*port);
		host_by_name_[hd.name] = hosts_.size();
		hosts_.push_back(std::move(h));
	}
	for (size_t ci = 0; ci < desc_.cables.size(); ci++) {
		const CableDesc &c = desc_.cables[ci];
		if (!role_.cables.empty() && !role_.cables[ci])
			continue;
		auto cb = std::make_unique<Cable>();
		cb->name = c.name;
		cb->delay_ns = c.delay_ns;
		cb->rate_bps = c.rate_bps;
		cb->error_rate = c.error_rate;
		for (int k = 0; k < 2; k++) {
			if (!c.open[k])
				return make_error(desc_.name + ": cable " + c.name + " has no port to open");
			auto port = take_port("cable/" + c.name + "/" + std::to_string(k), c.open[k]);
			if (!port)
				return port.error();
			cb->end[k] = std::move(*port);
		}
		cables_.push_back(std::move(cb));
	}
	if (hosts_.empty() && cables_.empty())
		return make_error("fabric " + desc_.name + ": no host to serve");
	return ok_status();
}

Result<std::unique_ptr<FramePort>> Shard::take_port(const std::string &key, const PortOpen &open)
{
	if (pool_ && pool_->frames_per_port == opt_.frames_per_port) {
		auto it = pool_->ports.find(key);
		if (it != pool_->ports.end()) {
			std::unique_ptr<FramePort> p = std::move(it->second);
			pool_->ports.erase(it);
			// What arrived since the last engine stopped (its run's stragglers) is not this
			// one's: recycled unread (bounded by the ring: 64 frames a call).
			uint64_t addr[64];
			uint32_t len[64];
			for (int round = 0; round < 1024; round++) {
				const uint32_t n = p->rx_peek(64, addr, len);
				for (uint32_t i = 0; i < n; i++)
					p->rx_recycle(addr[i]);
				if (n == 0)
					break;
			}
			p->refill();
			pool_->reused++;
			return p;
		}
	}
	return open(opt_.frames_per_port);
}

void Shard::release_ports(PortPool &pool)
{
	for (auto &h : hosts_) {
		if (!h->port)
			continue;
		for (const Held &r : h->rxline)
			h->port->rx_recycle(r.addr);
		for (const Held &r : h->txline)
			h->port->tx_free(r.addr);
		h->rxline.clear();
		h->txline.clear();
		h->port->flush(); // what sits in its TX ring leaves now, not in the next engine's run
		pool.ports["host/" + h->name] = std::move(h->port);
	}
	for (auto &c : cables_)
		for (int k = 0; k < 2; k++) {
			if (!c->end[k])
				continue;
			for (const Held &r : c->line[k])
				c->end[k]->rx_recycle(r.addr);
			c->line[k].clear();
			c->end[k]->flush();
			pool.ports["cable/" + c->name + "/" + std::to_string(k)] = std::move(c->end[k]);
		}
	pool.frames_per_port = opt_.frames_per_port;
}

Result<std::pair<QpHandle, QpHandle>> Shard::connect(const std::string &a, const std::string &b,
							      const QpOptions &o, uint32_t qa, uint32_t qb)
{
	if (!node_of_.count(a))
		return make_error("connect: host '" + a + "' is not served by this engine");
	if (!node_of_.count(b))
		return make_error("connect: host '" + b + "' is not served by this engine");
	auto ia = host_by_name_.find(a), ib = host_by_name_.find(b);
	if (ia == host_by_name_.end() && ib == host_by_name_.end())
		return make_error("connect: neither " + a + " nor " + b + " is served by this shard");
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
	const auto desc = cc::scheme(o.cc.scheme);
	const bool ack_on_ce = desc && desc->ack_on_ce;
	const uint64_t rto_low = o.rto_low_ns ? o.rto_low_ns : def_low;
	const uint64_t rto_high = o.rto_high_ns ? o.rto_high_ns : def_high;
	auto make = [&](size_t host, uint32_t qpn, uint32_t peer_qpn, const Endpoint &dst) -> Result<QpHandle> {
		QpConfig c;
		c.qpn = qpn;
		c.peer_qpn = peer_qpn;
		c.payload_mtu = uint32_t(payload);
		c.mode = o.mode;
		c.ack_every = o.ack_every;
		c.ack_on_ce = ack_on_ce;
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
		cs.fabric = cc::Fabric{hosts_[host]->link_bps, opt_.base_rtt_ns, pi.mtu, min_rtt_ns_, max_rtt_ns_};
		auto parts = o.cc_make ? o.cc_make(cs) : cc::make(cs);
		if (!parts)
			return make_error("connect: " + parts.error().message);
		q->ctl = std::move(parts->controller);
		q->np = std::move(parts->np);
		q->cc_describe = q->ctl->name() + ": " + parts->describe;
		q->trace = o.trace;
		q->hold_rto = o.hold_rto_in_pause;
		const uint64_t now = now_src_->now_ns();
		q->ctl->start(now);
		by_qpn_[qpn] = q.get();
		by_peer_qpn_[peer_qpn] = q.get();
		qps_.push_back(std::move(q));
		apply_cc(*qps_.back(), now);
		rearm_timers(*qps_.back());
		return qps_.back()->id;
	};
	auto ep = [&](const std::string &name) {
		for (const HostDesc &hd : desc_.hosts)
			if (hd.name == name)
				return hd.ep;
		return Endpoint{};
	};
	std::pair<QpHandle, QpHandle> made{kNoQp, kNoQp};
	if (ia != host_by_name_.end()) {
		auto ra = make(ia->second, qa, qb, ep(b));
		if (!ra)
			return ra.error();
		made.first = *ra;
	}
	if (ib != host_by_name_.end()) {
		auto rb = make(ib->second, qb, qa, ep(a));
		if (!rb)
			return rb.error();
		made.second = *rb;
	}
	if (made.first != kNoQp && made.second != kNoQp) {
		qps_[made.first]->peer = made.second;
		qps_[made.second]->peer = made.first;
	}
	return made;
}

uint32_t Shard::qpn(QpHandle h) const { return qps_[h]->snd.config().qpn; }

uint64_t Shard::post(QpHandle h, Message m)
{
	Qp &q = *qps_[h];
	uint64_t now = now_src_->now_ns();
	uint64_t msn = q.snd.post(std::move(m), now);
	schedule(q, now);
	return msn;
}

void Shard::set_rate(QpHandle h, uint64_t bps)
{
	qps_[h]->limit_bps = bps;
	apply_cc(*qps_[h], now_src_->now_ns());
}

void Shard::set_window(QpHandle h, uint64_t bytes)
{
	qps_[h]->snd.set_window(bytes);
	schedule(*qps_[h], now_src_->now_ns());
}

const HostCounters &Shard::host_counters(const std::string &host)
{
	Host &h = *hosts_[host_by_name_.at(host)];
	for (int i = 0; i < 8; i++)
		settle_pause(h, i, now_src_->now_ns());
	return h.c;
}

const SenderStats &Shard::sender_stats(QpHandle h) const { return qps_[h]->snd.stats(); }
cc::CounterList Shard::cc_counters(QpHandle h) const { return qps_[h]->ctl->counters(); }
const ReceiverStats &Shard::receiver_stats(QpHandle h) const { return qps_[h]->rcv.stats(); }

uint64_t Shard::next_deadline(uint64_t now)
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
		if (h.port->tx_needs_service())
			d = std::min(d, now + 1000);
	}
	for (const auto &c : cables_)
		for (int k = 0; k < 2; k++)
			if (!c->line[k].empty())
				d = std::min(d, c->line[k].front().release_ns);
	return d;
}

void Shard::end_long_streak()
{
	if (!long_streak_)
		return;
	if (long_streak_ <= 2) { // a stop inside a pass (and the pass that caught up after it)
		pass_stops_++;
		stalled_.add(clock_.to_fabric(streak_from_), clock_.to_fabric(streak_to_));
	} else {
		overload_passes_ += long_streak_;
	}
	long_streak_ = 0;
}

void Shard::sleep_until_wall(uint64_t wall_deadline)
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
	// Reap every completion; re-arm a multishot poll the kernel ended (one the kernel would
	// not take stays in rearm_ for the next wait: a socket is never dropped).
	unsigned head;
	unsigned n = 0;
	io_uring_for_each_cqe(ring, head, cqe)
	{
		if (!(cqe->flags & IORING_CQE_F_MORE))
			rearm_.push_back(io_uring_cqe_get_data64(cqe));
		n++;
	}
	io_uring_cq_advance(ring, n);
	if (rearm_.empty())
		return;
	size_t kept = 0;
	for (uint64_t tag : rearm_) {
		io_uring_sqe *sqe = sqe_or_flush(ring);
		if (!sqe) {
			rearm_[kept++] = tag;
			continue;
		}
		io_uring_prep_poll_multishot(sqe, io_fd(size_t(tag)), POLLIN);
		io_uring_sqe_set_data64(sqe, tag);
	}
	rearm_failed_ += kept;
	rearm_.resize(kept);
	io_uring_submit(ring);
}

void Shard::rearm_timers(const Qp &q)
{
	next_timer_scan_ = std::min({next_timer_scan_, q.snd.deadline(), q.ctl->next_timer(),
				     q.np ? q.np->next_timer() : UINT64_MAX});
}

void Shard::fire_timers(uint64_t now)
{
	// next_timer_scan_ is the earliest deadline of any QP's RTO, controller or notification
	// point: every event that can move one calls rearm_timers, so a timer armed from an event
	// handler (DCQCN Mellanox's decrease check, armed in on_cnp) fires on time.
	if (now < next_timer_scan_)
		return;
	uint64_t next = UINT64_MAX;
	for (auto &q : qps_) {
		if (q->snd.on_timer(now)) {
			q->ctl->on_timeout(now);
			apply_cc(*q, now);
			schedule(*q, now);
		}
		if (q->ctl->next_timer() <= now) {
			q->ctl->on_timer(now);
			apply_cc(*q, now);
		}
		if (q->np && q->np->next_timer() <= now)
			if (auto c = q->np->on_timer(now))
				queue_cnp(*hosts_[q->host], *q, *c);
		next = std::min({next, q->snd.deadline(), q->ctl->next_timer(), q->np ? q->np->next_timer() : UINT64_MAX});
	}
	// A part that left a timer in the past would make every pass fire it: one ns on.
	next_timer_scan_ = std::max(next, now + 1);
}

uint64_t Shard::step(uint64_t now, const std::function<uint64_t(uint64_t)> &tick)
{
	for (auto &h : hosts_)
		rx_host(*h, now);
	for (auto &c : cables_)
		rx_cable(*c, now);
	const uint64_t app_next = tick ? tick(now) : UINT64_MAX;
	fire_timers(now);
	for (auto &h : hosts_)
		pump(*h, now);
	if (qsample_ns_ && now >= next_qsample_)
		sample_queues(now);
	return std::min({next_deadline(now), app_next, qsample_ns_ ? next_qsample_ : UINT64_MAX});
}

void Shard::run(const std::function<bool()> &done, uint64_t until_ns,
		 const std::function<uint64_t(uint64_t)> &tick)
{
	expect_wall_ = 0;
	for (;;) {
		uint64_t wall = mono_wall_ns();
		if (expect_wall_ && wall > expect_wall_ + stall_thr_wall_) {
			stalls_++;
			stall_max_ = std::max(stall_max_, wall - expect_wall_);
			stalled_.add(clock_.to_fabric(expect_wall_), clock_.to_fabric(wall));
		}
		uint64_t now = io_ ? clock_.to_fabric(wall) : now_src_->now_ns();
		iters_++;
		if (now >= until_ns || (done && done()))
			break;
		// A fabric taken down under a running engine leaves it with dead sockets: stop.
		if (io_ && wall >= next_alive_check_) {
			next_alive_check_ = wall + 100'000'000;
			if (desc_.alive && !desc_.alive()) {
				topology_gone_ = true;
				break;
			}
		}
		if (!swmons_.empty() && wall >= next_fid_poll_) { // lost periods the switches posted
			next_fid_poll_ = wall + 5'000'000;
			poll_switch_monitors();
		}
		const uint64_t sent0 = frames_sent_, rcvd0 = frames_rcvd_;
		const uint64_t d = std::min(step(now, tick), until_ns);
		if (!io_)
			break; // a fake clock does not move by itself: the caller steps it
		const uint64_t w2 = mono_wall_ns();
		const uint64_t pass = w2 - wall;
		if (frames_sent_ != sent0 || frames_rcvd_ != rcvd0) {
			busy_wall_ns_ += pass;
			moved_passes_++;
			if (frames_sent_ != sent0)
				pass_wall_.add(pass);
		}
		// This iteration from when it should have begun (a sleep that woke late, or the end of
		// the last pass) to the end of its pass: longer than a frame time, the engine's CPU
		// did not serve the links for that long.
		const uint64_t began = expect_wall_ && expect_wall_ < wall ? expect_wall_ : wall;
		if (long_pass_wall_ns_ && w2 - began > long_pass_wall_ns_) {
			if (!long_streak_)
				streak_from_ = began;
			long_streak_++;
			streak_to_ = w2;
		} else {
			end_long_streak();
		}
		uint64_t dw = clock_.to_wall(d);
		if (!opt_.busy_poll && dw > w2 + opt_.spin_wall_ns) {
			// Sleep in short slices, waking a spin margin before the deadline.
			uint64_t target = std::min(dw - opt_.spin_wall_ns, w2 + opt_.max_sleep_wall_ns);
			sleep_until_wall(target);
			expect_wall_ = target;
		} else {
			expect_wall_ = mono_wall_ns();
		}
	}
	end_long_streak();
}

} // namespace qn::tp
