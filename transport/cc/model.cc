// model.cc - the reference bottleneck model (model.h). A discrete-event simulation with exact
// times: senders pace at their controller's rate on their own links, one FIFO egress port
// serves them at the line rate, the receiver's notification points send CNPs back over two hops
// (control class: never queued behind data), ACKs likewise (one per data packet, for windows).
// The schemes' switch stages (model_stage.h) see every data packet at the ingress; their
// signals (BTS, CC-postcards) go back over the sender's own link.
#include "transport/cc/model.h"
#include "transport/cc/model_stage.h"

#include "common/abi.h"
#include "common/units.h"
#include "transport/pacer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <memory>
#include <queue>
#include <random>

namespace qn::tp::cc {

namespace {

enum class Kind { Tx, Timer, Arrive, Depart, Receive, NpTimer, Cnp, Ack, Bts, Postcard, Sample };

struct Event {
	uint64_t t;
	uint64_t seq;
	Kind kind;
	int who;          // sender index (or -1)
	bool ce = false;  // Receive: the packet's mark; Ack: the echo
	uint32_t payload = 0; // Bts: the pause (us); Postcard: its index in postcards_
	uint64_t pseq = 0; // Receive: the packet's sequence number; Ack/Nak: the receiver's next expected
	bool nak = false;
	bool operator>(const Event &o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct Packet {
	int who;
	uint32_t frame;
	uint32_t payload;
	bool ce;
	uint64_t seq = 0;
	bool ect = true;
	bool pbt = false; // PB-FS's PBT bit (QN_TOS_PBT)
};

struct Sender {
	Parts parts;
	uint64_t start_ns = 0;
	uint64_t next_ok = 0;        // pacing
	uint64_t link_free = 0;      // own link
	uint64_t sent = 0, acked = 0, received = 0, pkts = 0; // bytes (sent: the next packet's offset)
	uint64_t next_seq = 0, acked_seq = 0, max_seq = 0;    // go-back-N: next, cumulative, highest + 1
	uint64_t rx_expected = 0;                             // the receiver's next in-order packet
	bool rx_nak_sent = false;                             // one NAK per hole
	uint64_t timer_at = UINT64_MAX;   // the Timer event in the queue
	uint64_t np_timer_at = UINT64_MAX;
	bool tx_pending = false, done_sending = false;
	uint64_t tx_at = 0;           // the pending Tx event's time (others in the queue are stale)
	uint64_t paced_rate = 0;      // the rate the last packet's gap was computed at
	uint32_t last_wire = 0;       // the last packet's bytes on the wire
	uint64_t last_rate = 0;
	uint64_t paused_until = 0;    // the controller's pause end, as last seen
};

class Model {
public:
	explicit Model(const ModelConfig &c) : c_(c), rng_(c.seed) {}

	Result<ModelResult> run()
	{
		if (c_.senders < 1 || c_.senders > 1024)
			return make_error("model: senders must be 1..1024");
		if (c_.line_rate_bps == 0 || c_.frame_bytes == 0 || c_.payload_bytes == 0 ||
		    c_.payload_bytes > c_.frame_bytes)
			return make_error("model: line rate, frame and payload sizes must be positive, payload <= frame");
		if (c_.window_ns == 0 || c_.queue_interval_ns == 0 || c_.duration_ns == 0)
			return make_error("model: duration, window and queue interval must be positive");
		if (c_.kmax_bytes < c_.kmin_bytes)
			return make_error("model: kmax below kmin");
		s_.resize(size_t(c_.senders));
		for (int i = 0; i < c_.senders; i++) {
			Setup st = c_.setup;
			st.line_rate_bps = c_.line_rate_bps;
			if (st.bdp_bytes == 0)
				st.bdp_bytes = model_base_rtt_ns(c_) * c_.line_rate_bps / 8'000'000'000ULL;
			// One path: its base RTT is the smallest and the largest (the frame less its
			// 14-byte Ethernet header is the IP MTU).
			const uint64_t rtt = model_base_rtt_ns(c_);
			st.fabric = Fabric{c_.line_rate_bps, rtt, c_.frame_bytes - 14, rtt, rtt};
			auto p = make(st);
			if (!p)
				return p.error();
			Sender &x = s_[size_t(i)];
			x.parts = std::move(*p);
			x.start_ns = uint64_t(i) * c_.stagger_ns;
			if (c_.jitter_ns)
				x.start_ns += std::uniform_int_distribution<uint64_t>(0, c_.jitter_ns - 1)(rng_);
			x.next_ok = x.link_free = x.start_ns;
			x.parts.controller->start(x.start_ns);
			// one message per sender: the flow (without a size, one that never ends)
			x.parts.controller->on_message(MessageStart{x.start_ns, 0, c_.flow_bytes ? c_.flow_bytes : UINT64_MAX});
			push(x.start_ns, Kind::Tx, i);
			x.tx_pending = true;
			x.tx_at = x.start_ns;
		}
		r_.describe = s_[0].parts.describe;
		stages_ = make_model_stages();
		for (const auto &[k, v] : c_.stage_settings) {
			bool taken = false;
			for (auto &st : stages_) {
				auto r = st->set(k, v);
				if (!r.ok())
					return r.error();
				if (*r) {
					taken = true;
					break;
				}
			}
			if (!taken)
				return make_error("model: no stage has the setting '" + k + "'");
		}
		for (auto &st : stages_)
			st->start(c_, rng_);
		r_.done_ns.assign(size_t(c_.senders), 0);
		r_.fct_ns.assign(size_t(c_.senders), 0);
		r_.windows.resize(size_t((c_.duration_ns + c_.window_ns - 1) / c_.window_ns));
		for (size_t w = 0; w < r_.windows.size(); w++)
			r_.windows[w].start_ns = w * c_.window_ns;
		push(0, Kind::Sample, -1);
		while (!q_.empty()) {
			Event e = q_.top();
			q_.pop();
			if (e.t > c_.duration_ns)
				break;
			handle(e);
		}
		for (auto &w : r_.windows)
			w.goodput_bps *= 8e9 / double(c_.window_ns);
		for (const auto &st : stages_) {
			st->counters(r_.stage_counters);
			r_.stage_reports.push_back(st->report());
		}
		return std::move(r_);
	}

private:
	void push(uint64_t t, Kind k, int who, bool ce = false, uint32_t payload = 0, uint64_t pseq = 0, bool nak = false)
	{
		q_.push(Event{t, seq_++, k, who, ce, payload, pseq, nak});
	}

	Controller &ctl(int i) { return *s_[size_t(i)].parts.controller; }

	void trace(int i, uint64_t now)
	{
		Sender &x = s_[size_t(i)];
		uint64_t r = ctl(i).output().rate_bps;
		if (i < c_.trace_senders && (r != x.last_rate || now == x.start_ns))
			r_.trace.push_back(ModelRatePoint{i, now, r});
		x.last_rate = r;
	}

	// After an event for sender i: keep one Timer event at the controller's next deadline.
	void arm_timer(int i)
	{
		Sender &x = s_[size_t(i)];
		uint64_t n = ctl(i).next_timer();
		if (n != UINT64_MAX && n < x.timer_at) {
			x.timer_at = n;
			push(n, Kind::Timer, i);
		}
	}

	void arm_np(int i, uint64_t now)
	{
		Sender &x = s_[size_t(i)];
		if (!x.parts.np)
			return;
		uint64_t n = x.parts.np->next_timer();
		if (n != UINT64_MAX && n < x.np_timer_at) {
			x.np_timer_at = std::max(n, now);
			push(x.np_timer_at, Kind::NpTimer, i);
		}
	}

	bool want_more(const Sender &x) const { return c_.flow_bytes == 0 || x.sent < c_.flow_bytes; }

	void schedule_tx(int i, uint64_t now)
	{
		Sender &x = s_[size_t(i)];
		if (x.tx_pending || !want_more(x))
			return;
		uint64_t w = ctl(i).output().window_bytes;
		if (w && x.sent - x.acked + c_.payload_bytes > w)
			return; // an ACK reschedules
		x.tx_pending = true;
		x.tx_at = std::max({now, x.next_ok, x.link_free, x.paused_until});
		push(x.tx_at, Kind::Tx, i);
	}

	// The gap a packet of `wire` bytes leaves behind it at `rate` (at or above the line rate:
	// its serialization on the own link).
	uint64_t gap_ns(uint32_t wire, uint64_t rate) const
	{
		return serialization_ns(wire, std::min(rate, c_.line_rate_bps));
	}

	// After the controller changed sender i's rate: a packet waiting for the gap the last one
	// left at the old rate waits the gap at the new rate instead (the next send time moves by
	// the difference), as a NIC's rate limiter does and as the ns-3 RDMA simulator's
	// RdmaHw::ChangeRate does. Without it, a sender whose last packet left at R_min waits that
	// packet's gap (16.7 ms for a 2 KB frame at 1 Mbit/s) however soon its rate recovers.
	void repace(int i, uint64_t now)
	{
		Sender &x = s_[size_t(i)];
		const uint64_t rate = ctl(i).output().rate_bps;
		if (rate == x.paced_rate || !x.last_wire)
			return;
		const uint64_t old_gap = gap_ns(x.last_wire, x.paced_rate), new_gap = gap_ns(x.last_wire, rate);
		x.paced_rate = rate;
		x.next_ok = x.next_ok + new_gap > old_gap ? x.next_ok + new_gap - old_gap : 0;
		retime(i, now);
	}

	// Move sender i's pending transmission to when pacing, its link and its pause allow.
	void retime(int i, uint64_t now)
	{
		Sender &x = s_[size_t(i)];
		if (!x.tx_pending)
			return;
		const uint64_t at = std::max({now, x.next_ok, x.link_free, x.paused_until});
		if (at != x.tx_at) {
			x.tx_at = at;
			push(at, Kind::Tx, i);
		}
	}

	// A data packet at the port's ingress, with qbytes_ queued ahead of it: every stage in
	// order; their signals go back over the sender's link (serialization + one hop). Return:
	// true when a stage dropped it.
	bool ingress(const Packet &p, uint64_t now)
	{
		const ModelArrival a{p.who, p.seq, p.frame, p.ect, p.pbt, now, qbytes_};
		bool drop = false;
		for (auto &st : stages_) {
			signals_.clear();
			drop = st->ingress(a, signals_);
			for (const ModelSignal &sg : signals_) {
				const uint64_t at = now + serialization_ns(sg.frame_bytes + c_.wire_overhead, c_.line_rate_bps) +
						    c_.hop_delay_ns;
				if (sg.kind == ModelSignal::Kind::Bts)
					push(at, Kind::Bts, sg.who, false, sg.bts_us);
				else {
					postcards_.push_back(sg.postcard);
					push(at, Kind::Postcard, sg.who, false, uint32_t(postcards_.size() - 1));
				}
			}
			if (drop)
				break;
		}
		return drop;
	}

	void send(int i, uint64_t now)
	{
		Sender &x = s_[size_t(i)];
		x.tx_pending = false;
		if (!want_more(x))
			return;
		if (x.paused_until > now) { // paused after this transmission was scheduled
			x.tx_pending = true;
			x.tx_at = x.paused_until;
			push(x.tx_at, Kind::Tx, i);
			return;
		}
		uint64_t w = ctl(i).output().window_bytes;
		if (w && x.sent - x.acked + c_.payload_bytes > w)
			return;
		uint32_t payload = c_.payload_bytes;
		if (c_.flow_bytes && x.sent + payload > c_.flow_bytes)
			payload = uint32_t(c_.flow_bytes - x.sent);
		const uint64_t seq = x.next_seq++;
		const bool retx = seq < x.max_seq;
		x.max_seq = std::max(x.max_seq, seq + 1);
		uint32_t frame = c_.frame_bytes - (c_.payload_bytes - payload);
		uint64_t start = std::max(now, x.link_free);
		uint64_t ser = serialization_ns(frame + c_.wire_overhead, c_.line_rate_bps);
		x.link_free = start + ser;
		TxPacket tp{now, uint32_t(seq & 0xFFFFFF), frame, payload, retx, 0, x.sent, c_.flow_bytes ? c_.flow_bytes : UINT64_MAX};
		x.pkts++;
		x.sent += payload;
		const TxMarks m = ctl(i).on_tx(tp);
		if (retx)
			r_.retransmitted++;
		if (m.ecn == 0)
			r_.not_ect++;
		uint64_t rate = ctl(i).output().rate_bps;
		x.next_ok = rate >= c_.line_rate_bps ? x.link_free : now + serialization_ns(frame + c_.wire_overhead, rate);
		x.paced_rate = rate;
		x.last_wire = frame + c_.wire_overhead;
		r_.data_packets++;
		pending_.push_back(Packet{i, frame, payload, false, seq, m.ecn != 0, (m.tos_bits & QN_TOS_PBT) != 0});
		push(start + ser + c_.hop_delay_ns, Kind::Arrive, i);
		trace(i, now);
		arm_timer(i);
		schedule_tx(i, now);
	}

	bool red(uint64_t q)
	{
		if (!c_.ecn || q <= c_.kmin_bytes)
			return false;
		double p = q > c_.kmax_bytes ? 1.0
					     : c_.pmax * double(q - c_.kmin_bytes) /
						       double(std::max<uint64_t>(1, c_.kmax_bytes - c_.kmin_bytes));
		return std::uniform_real_distribution<double>(0, 1)(rng_) < p;
	}

	void serve(uint64_t now)
	{
		if (busy_ || fifo_.empty())
			return;
		Packet p = fifo_.front();
		fifo_.pop_front();
		qbytes_ -= p.frame;
		if (c_.mark_at_dequeue && p.ect && !p.ce && red(qbytes_)) {
			p.ce = true;
			r_.marked++;
		}
		busy_ = true;
		uint64_t end = now + serialization_ns(p.frame + c_.wire_overhead, c_.line_rate_bps);
		in_service_ = p;
		push(end, Kind::Depart, p.who);
	}

	// The receiver of sender i's data, go-back-N (transport/qp.cc): an in-order packet is
	// accepted and ACKed with its mark echoed; the first packet past a hole is NAKed (once per
	// hole); a duplicate is re-ACKed. ACK and NAK carry the next expected packet.
	void receive(const Event &e)
	{
		Sender &x = s_[size_t(e.who)];
		const uint64_t back = 2 * c_.hop_delay_ns + 2 * serialization_ns(c_.cnp_frame_bytes + c_.wire_overhead, c_.line_rate_bps);
		if (e.pseq > x.rx_expected) {
			if (!x.rx_nak_sent) {
				x.rx_nak_sent = true;
				r_.naks++;
				push(e.t + back, Kind::Ack, e.who, false, 0, x.rx_expected, true);
			}
			return;
		}
		if (e.pseq < x.rx_expected) {
			push(e.t + back, Kind::Ack, e.who, false, 0, x.rx_expected, false);
			return;
		}
		x.rx_expected++;
		x.rx_nak_sent = false;
		x.received += e.payload;
		if (e.ce && r_.first_ce_rx_ns == 0)
			r_.first_ce_rx_ns = e.t;
		r_.payload_rx_bytes += e.payload;
		size_t w = size_t(e.t / c_.window_ns);
		if (w < r_.windows.size())
			r_.windows[w].goodput_bps += e.payload;
		if (c_.flow_bytes && x.received >= c_.flow_bytes && !r_.done_ns[size_t(e.who)])
			r_.done_ns[size_t(e.who)] = e.t;
		if (x.parts.np) {
			if (auto c = x.parts.np->on_data(NpPacket{e.t, 0, e.payload + c_.frame_bytes - c_.payload_bytes, e.ce})) {
				r_.cnps++;
				push(e.t + back, Kind::Cnp, e.who, false, keep_cnp(*c));
			}
		}
		arm_np(e.who, e.t);
		push(e.t + back, Kind::Ack, e.who, e.ce, 0, x.rx_expected, false);
	}

	// An ACK or NAK for sender i naming the receiver's next expected packet.
	void ack(const Event &e)
	{
		Sender &x = s_[size_t(e.who)];
		uint32_t n = 0;
		uint64_t bytes = 0;
		if (e.pseq > x.acked_seq) {
			n = uint32_t(e.pseq - x.acked_seq);
			const uint64_t to = c_.flow_bytes ? std::min(c_.flow_bytes, e.pseq * c_.payload_bytes) : e.pseq * c_.payload_bytes;
			bytes = to - x.acked;
			x.acked = to;
			x.acked_seq = e.pseq;
		}
		if (x.next_seq < x.acked_seq) { // acknowledged beyond what goes out next (cannot happen)
			x.next_seq = x.acked_seq;
			x.sent = x.acked;
		}
		if (e.nak) {
			// go back N: resend from the hole
			x.next_seq = x.acked_seq;
			x.sent = x.acked;
		}
		if (c_.flow_bytes && x.acked >= c_.flow_bytes && !r_.fct_ns[size_t(e.who)])
			r_.fct_ns[size_t(e.who)] = e.t - x.start_ns;
		ctl(e.who).on_ack(AckSample{e.t, bytes, uint16_t(e.ce ? 1 : 0), e.ce, std::nullopt, e.nak, n});
		arm_timer(e.who);
		repace(e.who, e.t);
		schedule_tx(e.who, e.t);
	}

	void handle(const Event &e)
	{
		switch (e.kind) {
		case Kind::Tx:
			if (!s_[size_t(e.who)].tx_pending || e.t != s_[size_t(e.who)].tx_at)
				break; // superseded by repace()
			send(e.who, e.t);
			break;
		case Kind::Timer: {
			Sender &x = s_[size_t(e.who)];
			if (e.t != x.timer_at)
				break; // superseded
			x.timer_at = UINT64_MAX;
			ctl(e.who).on_timer(e.t);
			trace(e.who, e.t);
			arm_timer(e.who);
			repace(e.who, e.t);
			schedule_tx(e.who, e.t);
			break;
		}
		case Kind::Arrive: {
			// Packets reach the switch in the order they were sent on each link; the FIFO
			// of in-flight packets keeps them per sender.
			auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Packet &p) { return p.who == e.who; });
			if (it == pending_.end())
				break; // cannot happen: every Arrive event has its packet on the link
			Packet p = *it;
			pending_.erase(it);
			if (ingress(p, e.t)) {
				r_.stage_drops++;
				break;
			}
			if (!c_.mark_at_dequeue && p.ect && red(qbytes_)) {
				p.ce = true;
				r_.marked++;
			}
			fifo_.push_back(p);
			qbytes_ += p.frame;
			r_.peak_queue_bytes = std::max(r_.peak_queue_bytes, qbytes_);
			serve(e.t);
			break;
		}
		case Kind::Depart:
			busy_ = false;
			push(e.t + c_.hop_delay_ns, Kind::Receive, in_service_.who, in_service_.ce, in_service_.payload,
			     in_service_.seq);
			serve(e.t);
			break;
		case Kind::Receive:
			receive(e);
			break;
		case Kind::NpTimer: {
			Sender &x = s_[size_t(e.who)];
			if (e.t != x.np_timer_at)
				break;
			x.np_timer_at = UINT64_MAX;
			if (x.parts.np->next_timer() <= e.t)
				if (auto c = x.parts.np->on_timer(e.t)) {
					r_.cnps++;
					push(e.t + 2 * c_.hop_delay_ns +
						     2 * serialization_ns(c_.cnp_frame_bytes + c_.wire_overhead, c_.line_rate_bps),
					     Kind::Cnp, e.who, false, keep_cnp(*c));
				}
			arm_np(e.who, e.t);
			break;
		}
		case Kind::Cnp: {
			// the payload the notification point wrote (PCN's receiving rate; DCQCN's zeros)
			const auto payload = take_cnp(e.payload);
			ctl(e.who).on_cnp(CnpEvent{e.t, 0, std::span<const uint8_t>(payload)});
			trace(e.who, e.t);
			arm_timer(e.who);
			repace(e.who, e.t);
			schedule_tx(e.who, e.t);
			break;
		}
		case Kind::Bts: {
			Sender &x = s_[size_t(e.who)];
			r_.bts_rx++;
			ctl(e.who).on_bts(BtsEvent{e.t, e.payload, false, 0, 0, 0});
			const uint64_t until = ctl(e.who).output().pause_until_ns;
			// paused time as the engine counts it: to the planned end, a replaced pause gives
			// back what it did not use
			if (x.paused_until > e.t)
				r_.paused_ns -= x.paused_until - e.t;
			if (until > e.t)
				r_.paused_ns += until - e.t;
			x.paused_until = until;
			retime(e.who, e.t);
			break;
		}
		case Kind::Postcard: {
			PostcardEvent pc = postcards_[e.payload];
			pc.now_ns = e.t;
			r_.postcards_rx++;
			ctl(e.who).on_postcard(pc);
			trace(e.who, e.t);
			arm_timer(e.who);
			repace(e.who, e.t);
			schedule_tx(e.who, e.t);
			break;
		}
		case Kind::Ack:
			ack(e);
			break;
		case Kind::Sample:
			r_.queue_samples.push_back(qbytes_);
			push(e.t + c_.queue_interval_ns, Kind::Sample, -1);
			break;
		}
	}

	ModelConfig c_;
	std::mt19937_64 rng_;
	std::vector<Sender> s_;
	std::priority_queue<Event, std::vector<Event>, std::greater<Event>> q_;
	uint64_t seq_ = 0;
	std::deque<Packet> pending_;   // on the host links
	std::deque<Packet> fifo_;      // the egress queue (not the packet in service)
	uint64_t qbytes_ = 0;
	std::vector<std::unique_ptr<ModelStage>> stages_; // the schemes' switch stages, in order
	std::vector<ModelSignal> signals_;                // a packet's signals (reused)
	std::vector<PostcardEvent> postcards_; // built, by index (Event::payload)
	std::vector<std::array<uint8_t, kCnpPayloadBytes>> cnp_payloads_; // CNPs in flight, by index (Event::payload)
	std::vector<uint32_t> cnp_free_;                                     // their slots free again
	// Return: the index a CNP's payload is kept under until it arrives (take_cnp frees it).
	uint32_t keep_cnp(const CnpOut &c)
	{
		if (cnp_free_.empty()) {
			cnp_payloads_.push_back(c.payload);
			return uint32_t(cnp_payloads_.size() - 1);
		}
		const uint32_t i = cnp_free_.back();
		cnp_free_.pop_back();
		cnp_payloads_[i] = c.payload;
		return i;
	}
	std::array<uint8_t, kCnpPayloadBytes> take_cnp(uint32_t i)
	{
		cnp_free_.push_back(i);
		return cnp_payloads_[i];
	}
	bool busy_ = false;
	Packet in_service_{};
	ModelResult r_;
};

} // namespace

Result<ModelResult> run_model(const ModelConfig &c) { return Model(c).run(); }

Result<bool> model_switch_set(ModelConfig &c, const std::string &key, const std::string &value)
{
	auto bad = [&](const char *what) { return make_error("switch setting " + key + "=" + value + ": " + what); };
	if (key == "ecn")
		return model_assign(c.ecn, model_parse_onoff(key, value));
	if (key == "ecn_at") {
		if (value != "enqueue" && value != "dequeue")
			return bad("expected enqueue or dequeue");
		c.mark_at_dequeue = value == "dequeue";
		return true;
	}
	if (key == "kmin")
		return model_assign(c.kmin_bytes, model_parse_bytes(key, value));
	if (key == "kmax")
		return model_assign(c.kmax_bytes, model_parse_bytes(key, value));
	if (key == "pmax") {
		char *end = nullptr;
		const double p = std::strtod(value.c_str(), &end);
		if (value.empty() || *end || !(p >= 0 && p <= 1))
			return bad("expected a probability in [0, 1]");
		c.pmax = p;
		return true;
	}
	// a stage's key: checked on a fresh stage, kept for run_model
	for (auto &st : make_model_stages()) {
		auto r = st->set(key, value);
		if (!r.ok())
			return r.error();
		if (*r) {
			c.stage_settings.emplace_back(key, value);
			return true;
		}
	}
	return false;
}

std::string model_switch_keys()
{
	std::string s = "ecn, ecn_at, kmin, kmax, pmax";
	for (const auto &st : make_model_stages())
		for (const auto &k : st->keys())
			s += ", " + k;
	return s;
}

uint64_t model_base_rtt_ns(const ModelConfig &c)
{
	return 4 * c.hop_delay_ns + 2 * serialization_ns(c.frame_bytes + c.wire_overhead, c.line_rate_bps) +
	       2 * serialization_ns(c.cnp_frame_bytes + c.wire_overhead, c.line_rate_bps);
}

double model_mean_goodput(const ModelResult &r, uint64_t window_ns, uint64_t from_ns, uint64_t to_ns, double *lowest)
{
	double s = 0, lo = 0;
	int n = 0;
	for (const auto &w : r.windows) {
		if (w.start_ns < from_ns || (to_ns && w.start_ns + window_ns > to_ns))
			continue;
		s += w.goodput_bps;
		lo = n == 0 ? w.goodput_bps : std::min(lo, w.goodput_bps);
		n++;
	}
	if (lowest)
		*lowest = lo;
	return n ? s / n : 0;
}

} // namespace qn::tp::cc
