// qp.cc - RC queue pairs: sender (segmentation, retransmission, completions) and receiver
// (in-order delivery, ACK/NAK with SACK). See qp.h.
#include "transport/qp.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace qn::tp {

namespace {

uint64_t splitmix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ULL;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

// The pattern: word w of a message is a cheap mix of (per-message base + w). The base depends
// on the sender QPN and the msn, so misplaced, duplicated or stale data does not match.
uint64_t pattern_base(uint32_t qpn, uint64_t msn) { return splitmix64((uint64_t(qpn) << 40) ^ msn); }

inline uint64_t pattern_mix(uint64_t base, uint64_t word)
{
	uint64_t x = base + word * 0x9E3779B97F4A7C15ULL;
	x ^= x >> 29;
	x *= 0xBF58476D1CE4E5B9ULL;
	return x ^ (x >> 32);
}

uint64_t pattern_word(uint32_t qpn, uint64_t msn, uint64_t word)
{
	return pattern_mix(pattern_base(qpn, msn), word);
}

int64_t sext24(uint32_t v)
{
	v &= kPsnMask;
	return (v & 0x800000) ? int64_t(v) - 0x1000000 : int64_t(v);
}

} // namespace

std::string to_string(Reliability r)
{
	return r == Reliability::GoBackN ? "gbn" : "sr";
}

uint8_t pattern_byte(uint32_t qpn, uint64_t msn, uint64_t off)
{
	return uint8_t(pattern_word(qpn, msn, off / 8) >> (8 * (off % 8)));
}

void pattern_fill(uint32_t qpn, uint64_t msn, uint64_t off, uint8_t *dst, size_t len)
{
	const uint64_t base = pattern_base(qpn, msn);
	size_t i = 0;
	while (i < len && (off + i) % 8 != 0) {
		dst[i] = uint8_t(pattern_mix(base, (off + i) / 8) >> (8 * ((off + i) % 8)));
		i++;
	}
	for (; i + 8 <= len; i += 8) {
		uint64_t w = pattern_mix(base, (off + i) / 8);
		// The pattern is little-endian: byte k of a word is bits 8k..8k+7.
		if constexpr (std::endian::native != std::endian::little)
			w = __builtin_bswap64(w);
		std::memcpy(dst + i, &w, 8);
	}
	for (; i < len; i++)
		dst[i] = uint8_t(pattern_mix(base, (off + i) / 8) >> (8 * ((off + i) % 8)));
}

uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

// ---------------------------------------------------------------------------------------------
// Sender

uint64_t QpSender::post(Message m, uint64_t now_ns)
{
	if (m.data)
		m.size = m.data->size(); // the bytes given define the message
	queued_bytes_ += m.size;
	msgs_.push_back(Msg{std::move(m), now_ns, 0, UINT64_MAX});
	return msgs_base_ + msgs_.size() - 1;
}

bool QpSender::rtx_in_window(uint64_t seq) const
{
	// Packets una.. seq inclusive, counted at the full payload: the oldest always goes.
	return cfg_.window_bytes == 0 || seq <= una_ || (seq - una_ + 1) * cfg_.payload_mtu <= cfg_.window_bytes;
}

bool QpSender::can_send() const
{
	if (rtx_next_ < rtx_end_)
		return rtx_in_window(rtx_next_);
	if (cur_msn_ >= msgs_base_ + msgs_.size())
		return false;
	if (cfg_.window_bytes == 0 || inflight_bytes_ == 0)
		return true;
	const Msg &m = msgs_[size_t(cur_msn_ - msgs_base_)];
	uint64_t len = std::min<uint64_t>(cfg_.payload_mtu, m.m.size - cur_off_);
	return inflight_bytes_ + len <= cfg_.window_bytes;
}

TxSeg QpSender::to_tx(const Seg &s, bool ack_req) const
{
	TxSeg t;
	t.seq = s.seq;
	t.psn = psn_of(s.seq);
	t.opcode = s.opcode;
	t.ack_req = ack_req;
	t.retx = s.retx;
	t.msn = s.msn;
	t.offset = s.offset;
	t.len = s.len;
	return t;
}

std::optional<TxSeg> QpSender::next(uint64_t now_ns)
{
	// Retransmissions first; SR skips what the receiver holds.
	while (rtx_next_ < rtx_end_) {
		Seg *s = seg(rtx_next_);
		if (!s || s->sacked) {
			rtx_next_++;
			continue;
		}
		// The window holds retransmissions too (a QP whose window shrank on the loss resends
		// as fast as ACKs open it, not all at once).
		if (!rtx_in_window(rtx_next_))
			return std::nullopt;
		rtx_next_++;
		s->retx = true;
		s->sent_ns = now_ns;
		st_.tx_pkts++;
		st_.retx_pkts++;
		st_.tx_bytes += s->len;
		arm(now_ns);
		return to_tx(*s, true);
	}
	if (!can_send())
		return std::nullopt;
	Msg &m = msgs_[size_t(cur_msn_ - msgs_base_)];
	const uint64_t len = std::min<uint64_t>(cfg_.payload_mtu, m.m.size - cur_off_);
	const bool first = cur_off_ == 0;
	const bool last = cur_off_ + len == m.m.size;
	uint8_t op = first && last ? QN_OP_RC_SEND_ONLY
		     : first       ? QN_OP_RC_SEND_FIRST
		     : last        ? QN_OP_RC_SEND_LAST
				   : QN_OP_RC_SEND_MIDDLE;
	Seg s{nxt_, cur_msn_, cur_off_, uint32_t(len), op, false, false, now_ns};
	if (first)
		m.first_tx_ns = now_ns;
	segs_.push_back(s);
	nxt_++;
	inflight_bytes_ += len;
	queued_bytes_ -= len;
	if (last) {
		m.last_seq = s.seq;
		cur_msn_++;
		cur_off_ = 0;
	} else {
		cur_off_ += len;
	}
	st_.tx_pkts++;
	st_.tx_bytes += len;
	// Ask for an ACK at a message end and when the window closes (coalescing receivers would
	// otherwise wait for more packets that cannot come).
	bool ack_req = last || (cfg_.window_bytes && inflight_bytes_ + cfg_.payload_mtu > cfg_.window_bytes);
	arm(now_ns);
	return to_tx(s, ack_req);
}

void QpSender::fill(const TxSeg &t, uint8_t *dst) const
{
	if (t.msn < msgs_base_ || t.msn >= msgs_base_ + msgs_.size())
		return; // completed meanwhile: cannot happen for a segment taken from next()
	const Msg &m = msgs_[size_t(t.msn - msgs_base_)];
	if (m.m.data)
		std::memcpy(dst, m.m.data->data() + t.offset, t.len);
	else
		pattern_fill(cfg_.qpn, t.msn, t.offset, dst, t.len);
}

int64_t QpSender::unwrap(uint64_t ref, uint32_t psn) const
{
	uint32_t rel = (psn - cfg_.init_psn) & kPsnMask;
	int64_t d = sext24(rel - uint32_t(ref & kPsnMask));
	int64_t r = int64_t(ref) + d;
	return r < 0 ? -1 : r;
}

void QpSender::arm(uint64_t now_ns)
{
	if (segs_.empty()) {
		rto_at_ = UINT64_MAX;
		return;
	}
	if (rto_at_ != UINT64_MAX)
		return;
	uint64_t pkts = nxt_ - una_;
	rto_at_ = std::max(now_ns, hold_until_) + (pkts <= cfg_.rto_low_pkts ? cfg_.rto_low_ns : cfg_.rto_high_ns);
}

void QpSender::hold(uint64_t now_ns, uint64_t until_ns)
{
	const uint64_t old_end = std::max(now_ns, hold_until_), new_end = std::max(now_ns, until_ns);
	hold_until_ = until_ns;
	if (rto_at_ == UINT64_MAX)
		return;
	if (new_end >= old_end)
		rto_at_ += new_end - old_end;
	else // a shorter pause replaced a longer one: give back what the longer one added
		rto_at_ -= std::min(rto_at_ - std::min(rto_at_, now_ns), old_end - new_end);
}

void QpSender::start_retransmit(uint64_t from, uint64_t to)
{
	rtx_next_ = std::max(from, una_);
	rtx_end_ = std::min(to, nxt_);
}

void QpSender::advance_una(uint64_t cum, uint64_t now_ns, AckEvent &ev)
{
	if (cum <= una_)
		return;
	const Seg &lastacked = segs_[size_t(cum - 1 - una_)];
	if (!lastacked.retx)
		ev.rtt_ns = now_ns - lastacked.sent_ns;
	while (una_ < cum) {
		const Seg &s = segs_.front();
		inflight_bytes_ -= s.len;
		ev.acked_bytes += s.len;
		ev.acked_pkts++;
		segs_.pop_front();
		una_++;
	}
	rtx_next_ = std::max(rtx_next_, una_);
	// Complete every message whose last packet is acknowledged.
	while (!msgs_.empty() && msgs_.front().last_seq < una_) {
		Msg &m = msgs_.front();
		done_.push_back(Completion{m.m.id, msgs_base_, m.m.size, m.post_ns, m.first_tx_ns, now_ns});
		st_.completed_msgs++;
		st_.completed_bytes += m.m.size;
		msgs_.pop_front();
		msgs_base_++;
	}
}

AckEvent QpSender::on_ack(const Packet &a, uint64_t now_ns)
{
	AckEvent ev;
	ev.ce_pkts = a.ce_pkts;
	ev.ece = a.qack_flags & QN_QACK_ECE;
	ev.nak = a.kind == Kind::Nak;
	// ACK carries the last in-order PSN, NAK the expected one: both give cum = expected.
	int64_t s = unwrap(una_, a.psn);
	int64_t cum = ev.nak ? s : s + 1;
	if (s < 0 || cum < int64_t(una_) || cum > int64_t(nxt_)) {
		ev.stale = true;
		st_.stale_acks++;
		return ev;
	}
	advance_una(uint64_t(cum), now_ns, ev);
	if (cfg_.mode == Reliability::SelectiveRepeat) {
		for (int i = 0; i < 64; i++) {
			if (!(a.sack >> i & 1))
				continue;
			uint64_t q = una_ + 1 + uint64_t(i);
			if (Seg *sg = seg(q)) {
				sg->sacked = true;
				high_sacked_ = std::max(high_sacked_, q + 1);
			}
		}
		if (recovery_ && una_ >= recovery_seq_)
			recovery_ = false;
	}
	if (ev.nak) {
		st_.naks++;
		if (cfg_.mode == Reliability::GoBackN) {
			// One go-back per hole: a second NAK for the same PSN while its retransmission
			// is young is the echo of packets already in flight.
			bool repeat = una_ == last_nak_seq_ && now_ns - last_nak_ns_ < cfg_.rto_low_ns;
			if (!repeat) {
				start_retransmit(una_, nxt_);
				last_nak_seq_ = una_;
				last_nak_ns_ = now_ns;
			}
		} else if (!recovery_) {
			recovery_ = true;
			recovery_seq_ = nxt_;
			start_retransmit(una_, high_sacked_);
		} else {
			rtx_end_ = std::max(rtx_end_, std::min(high_sacked_, nxt_));
		}
	}
	// Restart the timer on every ACK/NAK while data is outstanding.
	rto_at_ = UINT64_MAX;
	arm(now_ns);
	return ev;
}

bool QpSender::on_timer(uint64_t now_ns)
{
	if (rto_at_ == UINT64_MAX || now_ns < rto_at_)
		return false;
	st_.timeouts++;
	rto_at_ = UINT64_MAX;
	if (segs_.empty())
		return false;
	if (cfg_.mode == Reliability::SelectiveRepeat) {
		recovery_ = true;
		recovery_seq_ = nxt_;
	}
	start_retransmit(una_, nxt_);
	last_nak_seq_ = una_;
	last_nak_ns_ = now_ns;
	arm(now_ns);
	return true;
}

// ---------------------------------------------------------------------------------------------
// Receiver

bool QpReceiver::accept(uint8_t op, bool ce, const uint8_t *p, size_t n, uint64_t now_ns)
{
	const bool starts = op == QN_OP_RC_SEND_FIRST || op == QN_OP_RC_SEND_ONLY;
	const bool ends = op == QN_OP_RC_SEND_LAST || op == QN_OP_RC_SEND_ONLY;
	if (starts == in_msg_) {
		st_.proto_errors++;
		return false;
	}
	if (starts) {
		cur_ = Delivery{};
		cur_.msn = st_.msgs;
		cur_.first_ns = now_ns;
		in_msg_ = true;
	}
	if (verify_ && cur_.pattern_ok && n > 0) {
		scratch_.resize(n);
		pattern_fill(cfg_.peer_qpn, cur_.msn, cur_.size, scratch_.data(), n);
		if (std::memcmp(scratch_.data(), p, n) != 0)
			cur_.pattern_ok = false;
	}
	if (hash_)
		cur_.hash = fnv1a(cur_.hash, p, n);
	if (keep_)
		cur_.data.insert(cur_.data.end(), p, p + n);
	cur_.size += n;
	st_.rx_pkts++;
	st_.rx_bytes += n;
	if (ce) {
		st_.ce_pkts++;
		if (ce_since_ack_ < UINT16_MAX)
			ce_since_ack_++;
	}
	expected_++;
	if (ends) {
		cur_.done_ns = now_ns;
		in_msg_ = false;
		st_.msgs++;
		st_.bytes += cur_.size;
		if (!cur_.pattern_ok)
			st_.corrupt_msgs++;
		out_.push_back(std::move(cur_));
		cur_ = Delivery{};
	}
	return true;
}

AckOut QpReceiver::make_ack(bool nak)
{
	AckOut a;
	a.nak = nak;
	a.psn = nak ? psn_of(expected_) : psn_of(expected_ - 1);
	a.msn = uint32_t(st_.msgs & kPsnMask);
	a.ce_pkts = ce_since_ack_;
	a.ece = ce_since_ack_ > 0;
	for (auto it = ooo_.upper_bound(expected_); it != ooo_.end(); ++it) {
		uint64_t bit = it->first - expected_ - 1;
		if (bit >= 64)
			break;
		a.sack |= 1ULL << bit;
	}
	ce_since_ack_ = 0;
	since_ack_ = 0;
	if (nak)
		st_.naks++;
	else
		st_.acks++;
	return a;
}

std::optional<AckOut> QpReceiver::on_data(const Packet &p, uint64_t now_ns)
{
	uint32_t rel = (p.psn - cfg_.init_psn) & kPsnMask;
	int64_t d = sext24(rel - uint32_t(expected_ & kPsnMask));
	const bool ce = p.ecn == 3;
	if (d < 0) {
		// Duplicate (a retransmission of something delivered): re-ACK so the sender moves on.
		st_.dup_pkts++;
		if (expected_ == 0)
			return std::nullopt;
		return make_ack(!ooo_.empty() && cfg_.mode == Reliability::SelectiveRepeat);
	}
	if (d > 0) {
		st_.ooo_pkts++;
		if (cfg_.mode == Reliability::GoBackN) {
			if (nak_sent_)
				return std::nullopt;
			nak_sent_ = true;
			return make_ack(true);
		}
		uint64_t seq = expected_ + uint64_t(d);
		if (ooo_.count(seq)) {
			st_.dup_pkts++;
		} else if (ooo_.size() >= cfg_.max_ooo_pkts) {
			st_.ooo_dropped++;
			return std::nullopt;
		} else {
			ooo_.emplace(seq, Held{p.opcode, ce,
					       std::vector<uint8_t>(p.payload.begin(), p.payload.end())});
		}
		return make_ack(true);
	}
	if (!accept(p.opcode, ce, p.payload.data(), p.payload.size(), now_ns))
		return std::nullopt;
	nak_sent_ = false;
	since_ack_++;
	bool want = p.ack_req || (ce && cfg_.ack_on_ce);
	// SR: drain what was held behind the hole.
	while (!ooo_.empty() && ooo_.begin()->first == expected_) {
		Held h = std::move(ooo_.begin()->second);
		ooo_.erase(ooo_.begin());
		if (!accept(h.opcode, h.ce, h.payload.data(), h.payload.size(), now_ns))
			break;
		since_ack_++;
		want = true;
	}
	while (!ooo_.empty() && ooo_.begin()->first < expected_)
		ooo_.erase(ooo_.begin());
	if (!ooo_.empty())
		return make_ack(true); // a hole remains: NACK with the SACK bitmap
	if (want || since_ack_ >= cfg_.ack_every)
		return make_ack(false);
	return std::nullopt;
}

} // namespace qn::tp
