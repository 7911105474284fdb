// qp.h - reliable-connection queue pairs: segmentation at the path MTU, 24-bit PSNs, ACK
// coalescing, go-back-N (RoCEv2 NICs) or selective repeat (IRN: NACK + SACK bitmap, RTO
// low/high, BDP window cap), exactly-once in-order delivery of messages, completions with
// timestamps. No I/O and no clock reads: the engine (or a test's fake link) passes packets and
// the fabric time in. Rules: ../shared/specs/common.md §1.2 and §6; docs/transport.md.
//
// Units: fabric ns, bytes. Sequence numbers are 64-bit inside (seq 0 = the first packet) and
// 24-bit PSNs on the wire (psn = (init_psn + seq) mod 2^24).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport/wire.h"

namespace qn::tp {

enum class Reliability : uint8_t { GoBackN, SelectiveRepeat };
std::string to_string(Reliability r);

struct QpConfig {
	uint32_t qpn = 0;                 // this QP's number (24 bits)
	uint32_t peer_qpn = 0;            // the remote QP's number
	uint32_t payload_mtu = tp::payload_mtu(QN_DEFAULT_MTU); // payload bytes per packet
	Reliability mode = Reliability::GoBackN;
	uint32_t ack_every = 1;           // receiver ACKs every N in-order packets (1 = per packet)
	bool ack_on_ce = false;           // ... and at once on a CE-marked one (Scheme::ack_on_ce)
	uint64_t rto_low_ns = 100'000;    // RTO with <= rto_low_pkts in flight (IRN RTO_low)
	uint64_t rto_high_ns = 320'000;   // RTO otherwise (IRN RTO_high)
	uint32_t rto_low_pkts = 3;        // IRN's N
	uint64_t window_bytes = 0;        // max bytes in flight (BDP cap / CC window); 0 = none
	uint32_t init_psn = 0;            // PSN of seq 0 (both sides must agree)
	uint32_t max_ooo_pkts = 8192;     // SR receiver: out-of-order packets held at most
};

// The pattern every generated payload follows: byte `off` of message `msn` sent by QP `qpn`.
// Lets a receiver verify content without a copy of what was sent.
uint8_t pattern_byte(uint32_t qpn, uint64_t msn, uint64_t off);
void pattern_fill(uint32_t qpn, uint64_t msn, uint64_t off, uint8_t *dst, size_t len);
// 64-bit FNV-1a, continued from h (start with kFnvInit).
inline constexpr uint64_t kFnvInit = 0xcbf29ce484222325ULL;
uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n);

// A message to send. Without `data` the payload is the pattern (pattern_byte); with `data`,
// its bytes are the message and `size` is taken from them.
struct Message {
	uint64_t id = 0;                  // caller's tag, returned in the completion
	uint64_t size = 0;                // bytes (0 is allowed: one empty SEND_ONLY)
	std::shared_ptr<const std::vector<uint8_t>> data;
};

// One packet the sender wants on the wire now.
struct TxSeg {
	uint64_t seq = 0;
	uint32_t psn = 0;                 // wire PSN
	uint8_t opcode = 0;
	bool ack_req = false;
	bool retx = false;
	uint64_t msn = 0;                 // message index on this QP
	uint64_t offset = 0;              // of the payload within the message
	uint32_t len = 0;                 // payload bytes
};

struct Completion {
	uint64_t id = 0;
	uint64_t msn = 0;
	uint64_t size = 0;
	uint64_t post_ns = 0;             // when posted
	uint64_t first_tx_ns = 0;         // first packet on the wire
	uint64_t done_ns = 0;             // last byte acknowledged (FCT = done - post)
};

// What an ACK/NAK told the sender (the congestion controller's ACK event).
struct AckEvent {
	uint64_t acked_bytes = 0;         // newly acknowledged cumulatively
	uint32_t acked_pkts = 0;          // ... in packets
	uint16_t ce_pkts = 0;             // ECN echo
	bool ece = false;
	bool nak = false;
	std::optional<uint64_t> rtt_ns;   // from a never-retransmitted packet (Karn)
	bool stale = false;               // ignored: outside [snd_una, snd_nxt]
};

struct SenderStats {
	uint64_t tx_pkts = 0, tx_bytes = 0;   // every transmission, payload bytes
	uint64_t retx_pkts = 0;
	uint64_t timeouts = 0, naks = 0, stale_acks = 0;
	uint64_t completed_msgs = 0, completed_bytes = 0;
};

class QpSender {
public:
	explicit QpSender(const QpConfig &cfg) : cfg_(cfg) {}

	// Queue a message. Return: its msn.
	uint64_t post(Message m, uint64_t now_ns);
	// Return: true when next() would return a packet (retransmission or new data, in the window:
	// a retransmission of seq s when the packets from the oldest unacknowledged one through s
	// fit it).
	bool can_send() const;
	// Take the next packet to transmit (retransmissions first) and account it as sent now.
	std::optional<TxSeg> next(uint64_t now_ns);
	// Write a segment's payload (seg.len bytes) to dst.
	void fill(const TxSeg &seg, uint8_t *dst) const;
	// Process an ACK or NAK addressed to this QP.
	AckEvent on_ack(const Packet &ack, uint64_t now_ns);
	// Fire the retransmission timer if it is due. Return: true when it fired.
	bool on_timer(uint64_t now_ns);
	// Return: when on_timer must run next (UINT64_MAX when no timer is armed).
	uint64_t deadline() const { return rto_at_; }
	// Flow control holds the QP until `until_ns` (fabric; a past time: not held): it sends
	// nothing meanwhile (the engine sees to that) and its retransmission deadline moves by the
	// change in the held time still ahead, so a pause never makes the timer fire behind it.
	// A timer armed while held counts from the end of the hold.
	void hold(uint64_t now_ns, uint64_t until_ns);
	// Return: the size of message `msn` while it is not completed (0 otherwise).
	uint64_t msg_size(uint64_t msn) const
	{
		return msn >= msgs_base_ && msn - msgs_base_ < msgs_.size() ? msgs_[size_t(msn - msgs_base_)].m.size : 0;
	}

	std::vector<Completion> take_completions() { return std::exchange(done_, {}); }
	const SenderStats &stats() const { return st_; }
	const QpConfig &config() const { return cfg_; }
	uint64_t inflight_bytes() const { return inflight_bytes_; }
	uint64_t queued_bytes() const { return queued_bytes_; }
	bool idle() const { return segs_.empty() && cur_msn_ == msgs_base_ + msgs_.size(); }
	// CC hook: bytes allowed in flight (0 = no limit).
	void set_window(uint64_t bytes) { cfg_.window_bytes = bytes; }
	bool in_recovery() const { return recovery_; }

private:
	struct Seg {
		uint64_t seq;
		uint64_t msn;
		uint64_t offset;
		uint32_t len;
		uint8_t opcode;
		bool sacked = false;
		bool retx = false;
		uint64_t sent_ns = 0;
	};
	struct Msg {
		Message m;
		uint64_t post_ns = 0;
		uint64_t first_tx_ns = 0;
		uint64_t last_seq = UINT64_MAX; // set once fully segmented
	};

	Seg *seg(uint64_t seq) { return seq >= una_ && seq < nxt_ ? &segs_[size_t(seq - una_)] : nullptr; }
	uint32_t psn_of(uint64_t seq) const { return uint32_t((cfg_.init_psn + seq) & kPsnMask); }
	// Return: the 64-bit seq nearest `ref` whose PSN is `psn`, or -1 when it would be negative.
	int64_t unwrap(uint64_t ref, uint32_t psn) const;
	void arm(uint64_t now_ns);
	// Return: true when retransmitting `seq` keeps the packets from una_ through it in the window.
	bool rtx_in_window(uint64_t seq) const;
	void start_retransmit(uint64_t from, uint64_t to);
	void advance_una(uint64_t cum, uint64_t now_ns, AckEvent &ev);
	TxSeg to_tx(const Seg &s, bool ack_req) const;

	QpConfig cfg_;
	std::deque<Msg> msgs_;          // messages not yet completed, msn msgs_base_ first
	uint64_t msgs_base_ = 0;
	uint64_t cur_msn_ = 0;          // message being segmented
	uint64_t cur_off_ = 0;
	std::deque<Seg> segs_;          // sent, not cumulatively acknowledged: seq una_.. nxt_-1
	uint64_t una_ = 0, nxt_ = 0;
	uint64_t inflight_bytes_ = 0, queued_bytes_ = 0;
	uint64_t rtx_next_ = 0, rtx_end_ = 0; // retransmission cursor [rtx_next_, rtx_end_)
	uint64_t last_nak_seq_ = UINT64_MAX, last_nak_ns_ = 0;
	bool recovery_ = false;         // SR
	uint64_t recovery_seq_ = 0;
	uint64_t high_sacked_ = 0;      // one past the highest SACKed seq
	uint64_t rto_at_ = UINT64_MAX;
	uint64_t hold_until_ = 0;       // flow control's pause end (hold())
	std::vector<Completion> done_;
	SenderStats st_;
};

// A delivered message at the receiver.
struct Delivery {
	uint64_t msn = 0;
	uint64_t size = 0;
	uint64_t hash = kFnvInit;         // FNV-1a of the payload (when the receiver hashes)
	uint64_t first_ns = 0, done_ns = 0;
	bool pattern_ok = true;           // payload matched pattern_byte (when verifying)
	std::vector<uint8_t> data;        // when keep_data
};

// The ACK/NAK the receiver wants to send.
struct AckOut {
	bool nak = false;
	uint32_t psn = 0;                 // ACK: last in-order PSN; NAK: the expected PSN
	uint32_t msn = 0;
	uint64_t sack = 0;
	uint16_t ce_pkts = 0;
	bool ece = false;
};

struct ReceiverStats {
	uint64_t rx_pkts = 0, rx_bytes = 0;   // accepted in order (incl. drained from the SR buffer)
	uint64_t dup_pkts = 0, ooo_pkts = 0, ooo_dropped = 0, proto_errors = 0;
	uint64_t ce_pkts = 0, acks = 0, naks = 0;
	uint64_t msgs = 0, bytes = 0, corrupt_msgs = 0;
};

class QpReceiver {
public:
	// keep_data: deliver the bytes; verify_pattern: check payload against pattern_byte;
	// hash: compute Delivery::hash (FNV-1a, byte-serial: costly at line rate).
	QpReceiver(const QpConfig &cfg, bool keep_data, bool verify_pattern, bool hash = true)
		: cfg_(cfg), keep_(keep_data), verify_(verify_pattern), hash_(hash) {}

	// Process a data packet addressed to this QP. Return: the ACK/NAK to send, if any.
	std::optional<AckOut> on_data(const Packet &p, uint64_t now_ns);
	std::vector<Delivery> take_deliveries() { return std::exchange(out_, {}); }
	const ReceiverStats &stats() const { return st_; }
	const QpConfig &config() const { return cfg_; }

private:
	struct Held {
		uint8_t opcode;
		bool ce;
		std::vector<uint8_t> payload;
	};
	// Accept the in-order packet. Return: false on an opcode sequence violation.
	bool accept(uint8_t opcode, bool ce, const uint8_t *p, size_t n, uint64_t now_ns);
	AckOut make_ack(bool nak);
	uint32_t psn_of(uint64_t seq) const { return uint32_t((cfg_.init_psn + seq) & kPsnMask); }

	QpConfig cfg_;
	bool keep_, verify_, hash_;
	std::vector<uint8_t> scratch_;    // expected pattern bytes of one packet
	uint64_t expected_ = 0;           // next in-order seq
	bool in_msg_ = false;
	Delivery cur_;
	bool nak_sent_ = false;           // GBN: one NAK per hole
	uint32_t since_ack_ = 0;
	uint16_t ce_since_ack_ = 0;
	std::map<uint64_t, Held> ooo_;    // SR: held out-of-order packets by seq
	std::vector<Delivery> out_;
	ReceiverStats st_;
};

} // namespace qn::tp
