// engine_rx.cc - the receive path: frames from each host's port through its RX delay line,
// parsed and handed to one handler per frame kind (data, ACK/NAK, CNP, PFC, BTS, CC-postcard).
#include "transport/shard.h"

#include <algorithm>

namespace qn::tp {

std::string to_string(Signal s)
{
	switch (s) {
	case Signal::Cnp: return "cnp";
	case Signal::Bts: return "bts";
	case Signal::Postcard: return "postcard";
	case Signal::Count: break;
	}
	return "?";
}

void Shard::settle_pause(Host &h, int prio, uint64_t now)
{
	// Account paused time up to min(now, end of pause); pause_start follows.
	uint64_t &start = h.pause_start[prio];
	uint64_t end = std::min(now, h.paused_until[prio]);
	if (end > start) {
		h.c.paused_ns[prio] += end - start;
		start = end;
	}
}

void Shard::process(Host &h, const uint8_t *fr, uint32_t len, uint64_t now)
{
	Packet p;
	ParseError e = parse({fr, len}, opt_.icrc, p);
	h.c.rx_frames++;
	frames_rcvd_++;
	h.c.rx_bytes += len;
	if (e != ParseError::None) {
		h.c.bad[size_t(e)]++;
		return;
	}
	switch (p.kind) {
	case Kind::Pfc:
		return on_pfc(h, p, now);
	case Kind::Bts:
		return on_bts(h, p, now);
	case Kind::Postcard:
		return on_postcard(h, p, now);
	default:
		break;
	}
	auto it = by_qpn_.find(p.dest_qp);
	Qp *q = it == by_qpn_.end() ? nullptr : it->second;
	// A connected QP takes packets only from its peer host.
	if (!q || hosts_[q->host].get() != &h || p.src.ip != q->dst.ip) {
		h.c.unknown_qp++;
		return;
	}
	switch (p.kind) {
	case Kind::Data:
		return on_data(h, *q, p, len, now);
	case Kind::Ack:
	case Kind::Nak:
		return on_ack(*q, p, now);
	case Kind::Cnp:
		return on_cnp(h, *q, p, now);
	default:
		return;
	}
}

void Shard::on_data(Host &h, Qp &q, const Packet &p, uint32_t len, uint64_t now)
{
	h.c.rx_data_bytes += len;
	rx_data_total_.store(rx_data_total_.load(std::memory_order_relaxed) + len, std::memory_order_relaxed);
	if (p.ecn == 3)
		h.c.ce_rx++;
	auto a = q.rcv.on_data(p, now);
	if (a)
		queue_ack(h, q, *a);
	// The notification point sees every data packet (wire bytes, PSN, CE); it may answer with
	// a CNP naming the CE-marked PSN behind it.
	if (q.np) {
		if (auto c = q.np->on_data(cc::NpPacket{now, p.psn, len, p.ecn == 3}))
			queue_cnp(h, q, *c);
		rearm_timers(q);
	}
	for (auto &d : q.rcv.take_deliveries())
		if (on_deliver)
			on_deliver(q.id, d);
}

void Shard::on_ack(Qp &q, const Packet &p, uint64_t now)
{
	AckEvent ev = q.snd.on_ack(p, now);
	if (!ev.stale) {
		q.acked_bytes += ev.acked_bytes;
		q.ctl->on_ack(cc::AckSample{now, ev.acked_bytes, ev.ce_pkts, ev.ece, ev.rtt_ns, ev.nak, ev.acked_pkts});
		apply_cc(q, now);
	}
	rearm_timers(q);
	for (auto &c : q.snd.take_completions())
		if (on_complete)
			on_complete(q.id, c);
	schedule(q, now);
}

void Shard::on_cnp(Host &h, Qp &q, const Packet &p, uint64_t now)
{
	h.c.cnp_rx++;
	loop_sample(Signal::Cnp, q, p.psn, now);
	q.ctl->on_cnp(cc::CnpEvent{now, p.psn, p.payload});
	apply_cc(q, now);
	rearm_timers(q);
}

void Shard::on_pfc(Host &h, const Packet &p, uint64_t now)
{
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
			if (h.paused_until[i] <= now) {
				h.pause_start[i] = now;
				h.c.pfc_pauses++;
				h.c.pfc_last_pause_at_ns = now;
			}
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
			rearm_timers(*qp);
		}
	}
}

Shard::Qp *Shard::signal_qp(Host &h, uint16_t sport, uint32_t dest_qp, uint32_t dst_ip)
{
	// The UDP source port carries the sender's QPN (sfc.md §5; connect() keeps QPNs below
	// 0x4000, so the port names it exactly).
	if ((sport & 0xC000) == QN_ROCE_SPORT_BASE) {
		auto it = by_qpn_.find(sport & 0x3FFFu);
		if (it != by_qpn_.end() && hosts_[it->second->host].get() == &h)
			return it->second;
	}
	// Fallback: the receiver's QPN (the data's DestQP) and address the signal carries; the
	// sender is the QP whose peer it is, on this host, sending to that address (the receiver
	// may be another shard's).
	auto it = by_peer_qpn_.find(dest_qp);
	if (it == by_peer_qpn_.end())
		return nullptr;
	Qp *s = it->second;
	return hosts_[s->host].get() == &h && s->dst.ip == dst_ip ? s : nullptr;
}

void Shard::loop_sample(Signal s, const Qp &q, uint32_t psn, uint64_t now)
{
	if (!q.sent)
		return;
	const SentStamp &e = (*q.sent)[psn % kSentRing];
	if (e.psn == psn && now >= e.ns)
		loop_delay_[size_t(s)].add(now - e.ns);
}

Shard::Qp *Shard::signal_target(Host &h, Signal s, uint16_t sport, uint32_t dest_qp, uint32_t dst_ip, uint32_t psn,
				  uint64_t now)
{
	Qp *q = signal_qp(h, sport, dest_qp, dst_ip);
	if (!q) {
		h.c.signal_unknown_qp++;
		return nullptr;
	}
	(s == Signal::Bts ? h.c.bts_rx : h.c.postcard_rx)++;
	loop_sample(s, *q, psn, now);
	return q;
}

void Shard::on_bts(Host &h, const Packet &p, uint64_t now)
{
	const BtsInfo &b = p.bts;
	Qp *q = signal_target(h, Signal::Bts, p.sport, b.orig_dest_qp, b.orig_dst_ip, b.orig_psn, now);
	if (!q)
		return;
	if (q->sent) {
		const SentStamp &e = (*q->sent)[b.orig_psn % kSentRing];
		if (e.psn == b.orig_psn && now >= e.ns)
			bts_loop_origin_[std::min<size_t>(b.origin, kBtsOrigins - 1)].add(now - e.ns);
	}
	q->ctl->on_bts(cc::BtsEvent{now, b.pause_us, b.cacheable, b.origin, b.reporter, b.orig_psn});
	apply_cc(*q, now);
	rearm_timers(*q);
}

void Shard::on_postcard(Host &h, const Packet &p, uint64_t now)
{
	const PostcardInfo &c = p.postcard;
	Qp *q = signal_target(h, Signal::Postcard, p.sport, c.dest_qp, c.flow_daddr, c.psn, now);
	if (!q)
		return;
	q->ctl->on_postcard(cc::PostcardEvent{now, c.switch_id, c.psn, c.i_p, c.q1, c.rate_mbps, c.recent_bytes,
					      c.recent_marked_bytes, c.t0_ns});
	apply_cc(*q, now);
	rearm_timers(*q);
}

uint64_t Shard::arrival(const FramePort &p, uint64_t addr, uint64_t now) const
{
	// The XDP stamp, when present and sane (not in the future, not before the clock began).
	uint64_t st = p.rx_stamp(addr);
	if (st == 0)
		return now;
	uint64_t f = clock_.to_fabric(st);
	return f <= now && f > 0 ? f : now;
}

void Shard::rx_host(Host &h, uint64_t now)
{
	uint64_t addr[64];
	uint32_t len[64];
	const uint64_t rx_delay = h.delay_ns + opt_.nic_rx_delay_ns + opt_.switch_delay_ns;
	for (;;) {
		uint32_t n = h.port->rx_peek(64, addr, len);
		for (uint32_t i = 0; i < n; i++) {
			if (lose(h.error_rate)) { // the switch-to-host direction of the link
				h.c.link_errors++;
				h.port->rx_recycle(addr[i]);
				continue;
			}
			if (rx_delay == 0 && !opt_.store_and_forward) {
				process(h, h.port->frame(addr[i]), len[i], now);
				h.port->rx_recycle(addr[i]);
			} else {
				// store and forward: the switch's HTB released the frame at its first bit; it
				// is here one serialization at the link rate later, plus the delays
				h.rxline.push_back(Held{arrival(*h.port, addr[i], now) + (opt_.store_and_forward ? serialization_ns(wire_bytes(len[i]), h.link_bps) : 0) + rx_delay,
							addr[i], len[i]});
			}
		}
		if (n < 64)
			break;
	}
	while (!h.rxline.empty() && h.rxline.front().release_ns <= now) {
		Held r = h.rxline.front();
		h.rxline.pop_front();
		process(h, h.port->frame(r.addr), r.len, now);
		h.port->rx_recycle(r.addr);
	}
	h.port->refill();
}

} // namespace qn::tp
