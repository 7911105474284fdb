// engine_tx.cc - the transmit path: the link pacer, control frames ahead of data, per-QP rate
// limiters and pauses, the TX delay line; the controller's output applied to a QP.
#include "common/abi.h"
#include "transport/shard.h"

#include <algorithm>
#include <cstring>

namespace qn::tp {

bool Shard::paused(const Host &h, int prio, uint64_t now) const { return h.paused_until[prio] > now; }

void Shard::schedule(Qp &q, uint64_t now)
{
	if (q.scheduled || !q.snd.can_send())
		return;
	q.scheduled = true;
	// A paused QP waits in the wheel until its pause ends (flow control, e.g. SFC's BTS).
	hosts_[q.host]->sched.add(SchedRef{&q, q.sched_gen}, std::max(q.next_ok_ns, q.pause_until), now);
}

bool Shard::data_ready(Host &h, uint64_t now)
{
	// Entries left behind by a reschedule are dropped; a QP paused while it was ready goes to
	// the wheel until its pause ends.
	while (h.sched.has_ready()) {
		const SchedRef r = h.sched.peek();
		if (r.gen != r.q->sched_gen) {
			h.sched.pop();
			continue;
		}
		if (r.q->pause_until > now) {
			h.sched.pop();
			r.q->scheduled = false;
			schedule(*r.q, now);
			continue;
		}
		return true;
	}
	return false;
}

TxHeader Shard::control_header(Host &h, const Qp &q)
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

void Shard::queue_ack(Host &h, Qp &q, const AckOut &a)
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

void Shard::queue_cnp(Host &h, Qp &q, const cc::CnpOut &c)
{
	// To the data sender's QP (its QPN is this QP's peer), naming the PSN that caused it.
	static_assert(cc::kCnpPayloadBytes == QN_CNP_PAYLOAD_LEN, "the CNP payload is the wire's 16 bytes");
	TxHeader t = control_header(h, q);
	t.psn = c.psn;
	CtrlFrame f;
	f.len = uint16_t(encode_cnp(t, c.payload, opt_.icrc, f.b.data(), f.b.size()));
	h.ctrl.push_back(f);
	h.c.cnp_tx++;
}

void Shard::apply_cc(Qp &q, uint64_t now)
{
	const cc::Output o = q.ctl->output();
	const bool changed = o.rate_bps != q.out.rate_bps || o.window_bytes != q.out.window_bytes;
	q.out = o;
	// A rate at or above the link is the link's (no limiter of its own).
	const uint64_t link = hosts_[q.host]->link_bps;
	const uint64_t rate = q.limit_bps ? std::min(q.limit_bps, o.rate_bps) : o.rate_bps;
	const uint64_t old_rate = q.rate_bps;
	q.rate_bps = rate >= link ? 0 : rate;
	// The gap a packet leaves behind it at a rate (0: the link's own, its serialization). A QP
	// at the line rate has no limiter: its next_ok_ns is its last departure, and its next
	// packet may go one serialization at the link rate later.
	const auto gap = [&](uint64_t r) { return serialization_ns(q.last_wire, r ? r : link); };
	// (0 when the rate did not change: nothing to move, and no division per packet)
	uint64_t old_next = 0;
	if (q.rate_bps != old_rate && q.last_wire)
		old_next = old_rate ? q.next_ok_ns : q.next_ok_ns + gap(0);
	if (old_next > now) {
		// A packet waiting for the gap the last one left at the old rate waits the gap at the
		// new rate instead: the next send time moves by the difference, as a NIC's rate
		// limiter does (and the ns-3 RDMA simulator's RdmaHw::ChangeRate). Without it a QP
		// whose last packet left at R_min waits that gap (16.7 ms for 2 KB at 1 Mbit/s)
		// however soon its rate recovers (docs/cc.md "Model against emulator"). A cut from
		// the line rate counts the same way from the last departure: without it the next
		// packet left at the line rate, one packet late for every sender's first cut (the
		// 10 Gbit/s incast's peak queue 6-21% above the reference model's).
		const uint64_t old_gap = gap(old_rate), new_gap = gap(q.rate_bps);
		q.next_ok_ns = old_next + new_gap > old_gap ? old_next + new_gap - old_gap : 0;
		if (q.scheduled) {
			q.sched_gen++;
			q.scheduled = false;
		}
		schedule(q, now);
	}
	if (o.window_bytes != q.snd.config().window_bytes) {
		q.snd.set_window(o.window_bytes);
		schedule(q, now);
	}
	if (o.pause_until_ns != q.pause_until) {
		// Flow control paused, extended, shortened or ended the QP's pause: the RTO deadline
		// moves with it and the QP's scheduler entry is replaced (an entry in the wheel
		// at the old end would hold it too long or too short).
		if (q.hold_rto)
			q.snd.hold(now, o.pause_until_ns);
		// Paused time: a pause counts to its planned end when set; a replaced pause gives
		// back what it had not yet run.
		Host &ph = *hosts_[q.host];
		if (q.pause_until > now) {
			q.paused_ns -= q.pause_until - now;
			ph.c.qp_paused_ns -= q.pause_until - now;
		}
		if (o.pause_until_ns > now) {
			q.paused_ns += o.pause_until_ns - now;
			ph.c.qp_paused_ns += o.pause_until_ns - now;
		}
		q.pause_until = o.pause_until_ns;
		if (q.scheduled) {
			q.sched_gen++;
			q.scheduled = false;
		}
		schedule(q, now);
	}
	// a traced QP's point: when the output changed, at least every trace interval while ACKs
	// arrive, and when the last posted byte is acked (so a trace ends with every byte acked)
	if (q.trace && (changed || q.trace_points.empty() ||
			(q.acked_bytes != q.trace_points.back().acked_bytes &&
			 (now >= q.trace_points.back().t_ns + opt_.trace_interval_ns || q.snd.idle()))))
		q.trace_points.push_back(RatePoint{now, o.rate_bps, o.window_bytes, q.acked_bytes});
}

void Shard::push_frame(Host &h, const Held &f)
{
	if (h.kick_backlogged < 0)
		h.kick_backlogged = f.backlogged;
	h.pushed++;
}

void Shard::emit(Host &h, uint64_t addr, uint32_t len, uint64_t start, bool backlogged)
{
	// Store and forward (common.md §4: a full frame's serialization per hop): the switch sees the
	// frame when its last bit arrives, one serialization at the link rate after the pacer
	// started it, plus the propagation delay.
	const uint64_t tx_delay = (opt_.store_and_forward ? serialization_ns(wire_bytes(len), h.link_bps) : 0) + h.delay_ns +
				  opt_.nic_tx_delay_ns;
	h.c.tx_frames++;
	frames_sent_++;
	h.c.tx_bytes += len;
	if (lose(h.error_rate)) { // the host-to-switch direction of the link (after the pacer)
		h.c.link_errors++;
		h.port->tx_free(addr);
		return;
	}
	const Held f{start + tx_delay, addr, len, backlogged};
	if (tx_delay == 0 && h.txline.empty()) {
		if (h.port->tx_push(addr, len)) {
			push_frame(h, f);
			return;
		}
		// TX ring full: keep the frame, in order, for the next iteration (never drop it).
		h.c.tx_ring_full++;
	}
	h.txline.push_back(f);
}

void Shard::pump(Host &h, uint64_t now)
{
	h.pushed = 0;
	h.kick_backlogged = -1;
	h.sched.advance(now);
	while (h.pacer.ready(now)) {
		const bool ctrl_ok = !h.ctrl.empty() && !paused(h, QN_PRIO_CONTROL, now);
		const bool data_ok = !paused(h, QN_PRIO_DATA, now) && data_ready(h, now);
		if (!ctrl_ok && !data_ok)
			break;
		uint64_t addr = h.port->tx_alloc();
		if (addr == UINT64_MAX) {
			h.c.tx_no_frame++;
			break;
		}
		uint8_t *buf = h.port->frame(addr);
		uint32_t len = 0;
		if (ctrl_ok) {
			const CtrlFrame &f = h.ctrl.front();
			std::memcpy(buf, f.b.data(), f.len);
			len = f.len;
			h.ctrl.pop_front();
			h.c.tx_ctrl++;
		} else {
			Qp *q = h.sched.pop().q; // data_ready: current and not paused
			auto seg = q->snd.next(now);
			if (!seg) {
				q->scheduled = false;
				h.port->tx_free(addr);
				continue;
			}
			const uint64_t msg_bytes = q->snd.msg_size(seg->msn);
			if (!seg->retx && seg->offset == 0 && seg->msn != q->cur_msn) {
				// The first packet of a message: the controller learns its size.
				q->cur_msn = seg->msn;
				q->ctl->on_message(cc::MessageStart{now, seg->msn, msg_bytes});
			}
			// The per-packet decision: ECN codepoint and marker bits (and DCQCN's byte
			// counter, which counts what goes on the wire).
			const cc::TxMarks m = q->ctl->on_tx(cc::TxPacket{now, seg->psn,
				uint32_t(data_frame_bytes(seg->len, opt_.icrc)), seg->len, seg->retx, seg->msn,
				seg->offset, msg_bytes});
			TxHeader t;
			t.ecn = m.ecn == 3 ? 2 : m.ecn; // CE is the switches' to set
			t.tos_bits = m.tos_bits;
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
			if (!q->sent)
				q->sent = std::make_unique<std::array<SentStamp, kSentRing>>();
			(*q->sent)[seg->psn % kSentRing] = SentStamp{seg->psn, now};
			apply_cc(*q, now);
			rearm_timers(*q);
			// The QP's own rate limiter: its next packet waits one serialization time
			// at the QP rate (from now: no catching up either). An entry apply_cc made
			// for a pause that began with this packet is replaced by this one.
			q->sched_gen++;
			q->scheduled = false;
			q->next_ok_ns = TxScheduler<SchedRef>::next_ok(std::min(q->next_ok_ns, now), now, wire_bytes(len),
								   q->rate_bps, h.link_bps,
								   wire_bytes(q->mtu + QN_ETH_HLEN));
			q->last_wire = uint32_t(wire_bytes(len));
			schedule(*q, now);
		}
		uint64_t wb = wire_bytes(len);
		uint64_t start = now, lost = 0;
		uint64_t late = h.pacer.send(now, wb, h.backlogged, &start, &lost);
		if (h.backlogged) {
			late_.add(late);
			h.lost_ns += lost;
			h.ser_ns += serialization_ns(wb, h.link_bps);
			if (late > late_bound_ns_ && !h.fid) // else the switch measures it (arrivals)
				h.affected.add(now - late, now);
		}
		emit(h, addr, len, start, h.backlogged);
		h.backlogged = true;
	}
	// Still backlogged only if something could go when the link frees up.
	h.backlogged = !h.pacer.ready(now) &&
		       ((!h.ctrl.empty() && !paused(h, QN_PRIO_CONTROL, now)) ||
			(!paused(h, QN_PRIO_DATA, now) && data_ready(h, now)));
	while (!h.txline.empty() && h.txline.front().release_ns <= now) {
		Held r = h.txline.front();
		if (!h.port->tx_push(r.addr, r.len))
			break;
		push_frame(h, r);
		h.txline.pop_front();
	}
	// The switch's arrival monitor learns whether this kick's frames were due back to back
	// (a copy-mode kick runs their switch path inside the send call, on this CPU).
	if (h.fid && h.kick_backlogged >= 0)
		__atomic_store_n(&h.fid->engine_backlogged, uint32_t(h.kick_backlogged), __ATOMIC_RELAXED);
	if (h.pushed && io_) {
		const uint64_t t0 = mono_wall_ns();
		h.port->flush();
		kick_wall_.add(mono_wall_ns() - t0);
	} else {
		h.port->flush();
	}
}

} // namespace qn::tp
