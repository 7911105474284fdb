// cc.h - the congestion-control library's interface (DESIGN.md §4 and §8, docs/cc.md). No I/O
// and no clock reads: every event carries the fabric time, so unit tests replay a paper's
// equations on a fake clock.
//
// Per QP, a Controller composes three parts:
//   - a base algorithm (DCQCN; later LDCP, PCN): reacts to ACKs, CNPs and its timers, sets the
//     rate and (optionally) the window;
//   - a start policy (line-rate fast start; PB-FS, LDCP's fast start later): the rate a QP
//     starts at; it sees message starts, transmissions, ACKs, CNPs and CC-postcards after the
//     base algorithm and may set the base algorithm's rate (Algorithm::set_rate);
//   - flow control (none; SFC later): reacts to BTS, returns pause-until.
// On the receiving side a NotificationPoint sees every data packet (wire bytes, PSN, CE) and
// decides when a CNP leaves and what its 16 payload bytes say.
//
// Events in: message start (size), per-packet transmit (the parts choose the packet's ECN
// codepoint and TOS marker bits), ACK (acked bytes, ECN echo, RTT sample), CNP (causing PSN,
// payload), BTS, CC-postcard, PFC, timer. Out: rate, window, pause-until. Nothing here tests
// which scheme is running.
//
// Units: fabric ns, bit/s, bytes.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"

namespace qn::tp::cc {

// A message (for LDCP and PB-FS, a flow) the QP starts sending: its first packet is next.
struct MessageStart {
	uint64_t now_ns = 0;
	uint64_t msn = 0;              // message index on this QP
	uint64_t size_bytes = 0;       // payload bytes of the whole message
};

// One data packet about to leave (fresh or retransmitted).
struct TxPacket {
	uint64_t now_ns = 0;
	uint32_t psn = 0;              // 24-bit wire PSN
	uint32_t wire_bytes = 0;       // the frame, Ethernet header to ICRC (what a byte counter counts)
	uint32_t payload_bytes = 0;
	bool retx = false;
	uint64_t msn = 0;
	uint64_t offset = 0;           // of the payload within its message
	uint64_t msg_bytes = 0;        // the message's size
};

// What a data packet carries, chosen per packet by the controller's parts (base algorithm,
// then start policy, then flow control; each sees the choice so far).
struct TxMarks {
	uint8_t ecn = 2;               // IP ECN codepoint: 0 Not-ECT, 2 ECT(0), 1 ECT(1) (never 3)
	uint8_t tos_bits = 0;          // bits ORed into the TOS byte above ECN (e.g. PB-FS's PBT bit,
				       // qn_abi.h QN_TOS_PBT); the ECN bits (1..0) are ignored here
};

struct AckSample {
	uint64_t now_ns = 0;
	uint64_t acked_bytes = 0;      // newly acknowledged cumulatively
	uint16_t ce_pkts = 0;          // CE-marked data packets the receiver saw since its last ACK
	bool ece = false;
	std::optional<uint64_t> rtt_ns;
	bool nak = false;
	uint32_t acked_pkts = 0;       // packets newly acknowledged cumulatively (LDCP's n)
};

inline constexpr size_t kCnpPayloadBytes = 16; // the CNP's bytes after the BTH (common.md §1.3)

struct CnpEvent {
	uint64_t now_ns = 0;
	uint32_t psn = 0;                 // PSN of the CE-marked packet that caused it
	std::span<const uint8_t> payload; // the 16 bytes after the BTH (DCQCN uses none of it)
};

// A back-to-sender signal (SFC, sfc.md §5), parsed.
struct BtsEvent {
	uint64_t now_ns = 0;
	uint32_t pause_us = 0;         // pause time, fabric µs (0: near the threshold, no pause)
	bool cacheable = false;
	uint8_t origin = 0;            // 0 congestion point, 1 cache hit, 2 estimator
	uint32_t reporter = 0;         // switch id / egress queue (diagnostics)
	uint32_t psn = 0;              // PSN of the data packet that triggered it (trimmed BTH)
};

// A CC-postcard (PB-FS, pbfs.md §5), parsed.
struct PostcardEvent {
	uint64_t now_ns = 0;
	uint64_t switch_id = 0;
	uint32_t psn = 0;              // PSN of the marked packet that triggered it
	uint32_t ip_bytes = 0;         // I_p
	uint32_t q1_bytes = 0;         // Q1
	uint32_t rate_mbps = 0;        // T, the port's rate
	uint32_t recent_bytes = 0;
	uint32_t recent_marked_bytes = 0;
	uint64_t t0_ns = 0;            // switch timestamp (diagnostics)
};

struct PfcEvent {
	uint64_t now_ns = 0;
	int prio = 0;
	uint64_t pause_until_ns = 0;   // 0 = XON
};

// A part's counters by name ("pbfs.postcards"), summed over QPs into the run's report as
// "cc.<name>" (docs/cc.md "Counters").
using CounterList = std::vector<std::pair<std::string, uint64_t>>;

// The controller's decisions. rate 0 never happens (R_min floors it).
struct Output {
	uint64_t rate_bps = 0;
	uint64_t window_bytes = 0;     // 0 = no window
	uint64_t pause_until_ns = 0;   // 0 = not paused
};

// A base algorithm. Default handlers ignore the event.
class Algorithm {
public:
	virtual ~Algorithm() = default;
	virtual std::string name() const = 0;
	// Called once before any event: the start policy's first rate.
	virtual void start(uint64_t now_ns, uint64_t rate_bps) = 0;
	// Set the current rate from outside (a start policy's correction, e.g. PB-FS): DCQCN sets
	// Rc and Rt. Every algorithm decides what the rate means for its state.
	virtual void set_rate(uint64_t now_ns, uint64_t rate_bps) = 0;
	virtual void on_message(const MessageStart &) {}
	// A data packet leaves; the algorithm may choose its marks.
	virtual void on_tx(const TxPacket &, TxMarks &) {}
	virtual void on_ack(const AckSample &) {}
	virtual void on_cnp(const CnpEvent &) {}
	virtual void on_pfc(const PfcEvent &) {}
	// The QP's retransmission timeout fired (it resends from the oldest unacknowledged packet).
	virtual void on_timeout(uint64_t /*now_ns*/) {}
	// Fire every timer due at or before now (missed periods one by one).
	virtual void on_timer(uint64_t /*now_ns*/) {}
	// Return: the next timer deadline (UINT64_MAX: none).
	virtual uint64_t next_timer() const { return UINT64_MAX; }
	virtual uint64_t rate_bps() const = 0;
	virtual uint64_t window_bytes() const { return 0; }
	virtual void counters(CounterList &) const {}
};

// Where a QP's rate starts, and what corrects it early (PB-FS's postcards, LDCP's fast start).
// Its handlers run after the base algorithm's and may call algo.set_rate(); `changed` says whether
// the base algorithm changed its rate or window on this ACK or CNP (PB-FS's interval ends then).
class StartPolicy {
public:
	virtual ~StartPolicy() = default;
	virtual std::string name() const = 0;
	virtual uint64_t initial_rate(uint64_t line_rate_bps) const = 0;
	virtual void on_message(const MessageStart &, Algorithm &) {}
	virtual void on_tx(const TxPacket &, TxMarks &, Algorithm &) {}
	virtual void on_ack(const AckSample &, bool /*changed*/, Algorithm &) {}
	virtual void on_cnp(const CnpEvent &, bool /*changed*/, Algorithm &) {}
	virtual void on_postcard(const PostcardEvent &, Algorithm &) {}
	virtual void on_timer(uint64_t /*now_ns*/, Algorithm &) {}
	virtual uint64_t next_timer() const { return UINT64_MAX; }
	virtual void counters(CounterList &) const {}
	// Return: its parameters in effect, one line ("" = none), for the run's cc.txt.
	virtual std::string describe() const { return ""; }
};

// Flow control layered on the rate (SFC's pause). Default: never pauses.
class FlowControl {
public:
	virtual ~FlowControl() = default;
	virtual std::string name() const = 0;
	virtual void on_tx(const TxPacket &, TxMarks &) {}
	virtual void on_bts(const BtsEvent &) {}
	// Return: the fabric time the QP may send again (0 or a past time: not paused).
	virtual uint64_t pause_until_ns() const { return 0; }
	virtual void counters(CounterList &) const {}
};

// Line-rate fast start (RoCE NICs: no slow start).
class LineRateStart final : public StartPolicy {
public:
	std::string name() const override { return "line-rate"; }
	uint64_t initial_rate(uint64_t line_rate_bps) const override { return line_rate_bps; }
};

class NoFlowControl final : public FlowControl {
public:
	std::string name() const override { return "no-pause"; }
};

// No congestion control: always the line rate (the baseline "none" and "pfc").
class LineRate final : public Algorithm {
public:
	std::string name() const override { return "none"; }
	void start(uint64_t, uint64_t rate_bps) override { rate_ = rate_bps; }
	void set_rate(uint64_t, uint64_t rate_bps) override { rate_ = rate_bps; }
	uint64_t rate_bps() const override { return rate_; }

private:
	uint64_t rate_ = 0;
};

// One QP's controller: the composition. Events go to the parts; output() reads them.
class Controller {
public:
	Controller(std::unique_ptr<Algorithm> a, std::unique_ptr<StartPolicy> s, std::unique_ptr<FlowControl> f,
		   uint64_t line_rate_bps)
		: algo_(std::move(a)), start_(std::move(s)), fc_(std::move(f)), line_rate_(line_rate_bps) {}

	void start(uint64_t now_ns) { algo_->start(now_ns, start_->initial_rate(line_rate_)); }
	void on_message(const MessageStart &m)
	{
		algo_->on_message(m);
		start_->on_message(m, *algo_);
	}
	// Return: the marks the packet carries.
	TxMarks on_tx(const TxPacket &p)
	{
		TxMarks m;
		algo_->on_tx(p, m);
		start_->on_tx(p, m, *algo_);
		fc_->on_tx(p, m);
		return m;
	}
	void on_ack(const AckSample &e)
	{
		const uint64_t r = algo_->rate_bps(), w = algo_->window_bytes();
		algo_->on_ack(e);
		start_->on_ack(e, r != algo_->rate_bps() || w != algo_->window_bytes(), *algo_);
	}
	void on_cnp(const CnpEvent &e)
	{
		const uint64_t r = algo_->rate_bps(), w = algo_->window_bytes();
		algo_->on_cnp(e);
		start_->on_cnp(e, r != algo_->rate_bps() || w != algo_->window_bytes(), *algo_);
	}
	void on_pfc(const PfcEvent &e) { algo_->on_pfc(e); }
	void on_timeout(uint64_t now_ns) { algo_->on_timeout(now_ns); }
	void on_bts(const BtsEvent &e) { fc_->on_bts(e); }
	void on_postcard(const PostcardEvent &e) { start_->on_postcard(e, *algo_); }
	// Fire the parts' timers due at or before now.
	void on_timer(uint64_t now_ns)
	{
		if (algo_->next_timer() <= now_ns)
			algo_->on_timer(now_ns);
		if (start_->next_timer() <= now_ns)
			start_->on_timer(now_ns, *algo_);
	}
	uint64_t next_timer() const { return std::min(algo_->next_timer(), start_->next_timer()); }
	Output output() const { return Output{algo_->rate_bps(), algo_->window_bytes(), fc_->pause_until_ns()}; }
	std::string name() const { return algo_->name() + "/" + start_->name() + "/" + fc_->name(); }
	// Return: every part's counters.
	CounterList counters() const
	{
		CounterList c;
		algo_->counters(c);
		start_->counters(c);
		fc_->counters(c);
		return c;
	}
	Algorithm &algorithm() { return *algo_; }
	StartPolicy &start_policy() { return *start_; }
	uint64_t line_rate_bps() const { return line_rate_; }

private:
	std::unique_ptr<Algorithm> algo_;
	std::unique_ptr<StartPolicy> start_;
	std::unique_ptr<FlowControl> fc_;
	uint64_t line_rate_;
};

// A data packet as the notification point sees it.
struct NpPacket {
	uint64_t now_ns = 0;
	uint32_t psn = 0;
	uint32_t wire_bytes = 0;       // the frame as received, Ethernet header to ICRC
	bool ce = false;
};

// A CNP to send: the PSN it names (the CE-marked packet that caused it) and its payload.
struct CnpOut {
	uint32_t psn = 0;
	std::array<uint8_t, kCnpPayloadBytes> payload{};
};

// The receiver side (notification point) of a scheme: decides when a CNP leaves and what it
// carries.
class NotificationPoint {
public:
	virtual ~NotificationPoint() = default;
	// A data packet arrived. Return: a CNP to send now, if any.
	virtual std::optional<CnpOut> on_data(const NpPacket &p) = 0;
	// Return: a CNP to send at this timer, if any.
	virtual std::optional<CnpOut> on_timer(uint64_t now_ns) = 0;
	virtual uint64_t next_timer() const = 0;
};

// The fabric a scheme's parameters are derived for (calibration, DESIGN.md §5): the host line
// rate, the base RTTs and the path MTU, in fabric units.
struct Fabric {
	uint64_t line_rate_bps = 0;
	uint64_t base_rtt_ns = 0;      // the RTT the scheme's parameters scale with
	uint32_t mtu = 0;
	uint64_t min_base_rtt_ns = 0;  // over every host pair of the fabric (0 = unknown: base_rtt_ns)
	uint64_t max_base_rtt_ns = 0;  // over every host pair: the network-wide RTT (0 = unknown: base_rtt_ns)
};

// Whether the fabric is lossless for a scheme (switch PFC on) or lossy (PFC off; losses are
// recovered by retransmission).
enum class Loss : uint8_t { Lossy, Lossless };
const char *loss_name(Loss l);

// What a part's reactions need from the host stack that runs it (Scheme::signals). The engine
// gives all of them; the Soft-RoCE agent only CNPs (docs/agent.md).
inline constexpr uint32_t kSigCnp = 1u << 0;      // CNPs from the receiver's notification point
inline constexpr uint32_t kSigAck = 1u << 1;      // per-ACK samples (acked bytes, ECE, RTT)
inline constexpr uint32_t kSigWindow = 1u << 2;   // a window on bytes in flight
inline constexpr uint32_t kSigMessage = 1u << 3;  // message starts and per-packet marks
inline constexpr uint32_t kSigBts = 1u << 4;      // back-to-sender pauses (SFC)
inline constexpr uint32_t kSigPostcard = 1u << 5; // CC-postcards (PB-FS)
inline constexpr uint32_t kSigRxRate = 1u << 6;   // the notification point sees every data packet
						  // (its CNP carries a receiving rate: PCN)
// Return: the kSig* names in `bits`, comma-separated ("cnp, window").
std::string signal_names(uint32_t bits);

// A scheme: a composition of named parts from the registry (docs/cc.md "Schemes"), with the
// typed properties the rest of quench reads instead of testing names. Grammar:
//   NAME   := ALIAS | BASE ("/" PART)* [":" ("lossy" | "lossless")]
// where BASE names a base algorithm (with its notification point), each PART a start policy or
// a flow control (at most one of each), and the suffix the loss mode where the base allows
// both (its default otherwise). ALIASes are registered compositions ("pfc" = "none:lossless").
struct Scheme {
	std::string name;                     // as written
	std::string base, start, flow;        // part names
	Loss loss = Loss::Lossy;
	bool ecn = false;                     // its data packets are ECT: the switches mark them
	uint32_t signals = 0;                 // kSig* bits: what its parts' reactions need from a
					      // host stack (the Soft-RoCE agent refuses what it cannot give)
	bool ack_on_ce = false;               // a receiver coalescing ACKs acknowledges a CE-marked
					      // packet at once (LDCP: the sender reacts per marked packet)
	uint64_t rto_low_ns = 0, rto_high_ns = 0; // retransmission timeout defaults (fabric)
	bool lossless() const { return loss == Loss::Lossless; }
	// Return: base[/start][/flow]:loss, every part spelled out.
	std::string canonical() const;
};
// Return: the scheme `name` describes. Errors say what is wrong with the name.
Result<Scheme> scheme(const std::string &name);

// One registered part, for listings (`quench schemes`).
struct PartInfo {
	std::string kind;                     // "base", "start", "flow"
	std::string name;
	std::string doc;
	std::string params = "";              // its parameter table's usage, one line each
};
std::vector<PartInfo> parts();
// Return: the registered aliases with their canonical compositions.
std::vector<std::pair<std::string, std::string>> aliases();

// Everything a scheme needs to build its parts for one QP.
struct Setup {
	std::string scheme = "none";          // a scheme name (scheme()): e.g. dcqcn, dcqcn+w:lossy
	std::string params = "";              // named parameter set ("" = the scheme's default)
	std::map<std::string, std::string> overrides; // single parameters, by name
	uint64_t line_rate_bps = 0;
	uint64_t bdp_bytes = 0;               // for window variants
	bool np = true;                       // notification point on (negative control: off)
	Fabric fabric;                        // the fabric the QP runs on (filled by the engine)
};

struct Parts {
	std::unique_ptr<Controller> controller;
	std::unique_ptr<NotificationPoint> np; // null when the scheme sends no CNPs (or np = false)
	std::string describe;                  // the parameters in effect, one line
};

// A scheme's parameters derived from its spec's rules for a fabric: overrides for make()
// (by parameter name), the switch settings it needs (swcfg keys: pfc, ecn, kmin, kmax, pmax) and
// one line per derived value saying where it comes from.
struct Derived {
	std::map<std::string, std::string> overrides;
	std::vector<std::pair<std::string, std::string>> switch_settings;
	std::vector<std::string> notes;
	// Non-empty: the scheme refuses this fabric, for this reason (e.g. PB-FS where N < 2). Not
	// an error: `quench run` skips the scheme with the reason; gen and model stop with it.
	std::string refused;
};

// A summary-table column a scheme's parts ask for: a title and the counter it shows (by its
// report name, e.g. "switch.drops.ldcp_not_ect"; "A/B" shows counter A over counter B, e.g.
// per flow; the runner's "loop.<signal>.p50_ns" are the signal loop delays). Declared in the
// part's registration.
struct SummaryColumn {
	std::string title, counter;
};
// Return: the columns of the scheme's parts (base, start policy, flow control), in that order;
// none for a name that is not a scheme.
std::vector<SummaryColumn> summary_columns(const std::string &scheme);

// Return: the named schemes `schemes all` runs (an experiment's default comparison).
std::vector<std::string> schemes();
// Check one parameter of a scheme (its base algorithm's table) without building anything: for
// files and command lines, so a bad key or value is reported where it was written.
Status check_param(const std::string &scheme, const std::string &key, const std::string &value);
// Build a QP's controller and notification point from its parts. Errors name the scheme or
// parameter.
Result<Parts> make(const Setup &s);
// Derive a scheme's parameters for `f`: its base algorithm's rules, and switch PFC from its
// loss mode. With `scale` false the paper's values are kept (a fabric equal to the paper's);
// with true, common.md §7 rescales them to this fabric.
Result<Derived> derive(const std::string &scheme, const Fabric &f, bool scale);
// Only the switch sides of the scheme's start policy and flow control (part of derive()): their
// settings for `f` when they are the scheme's, their off settings otherwise. For runs that set
// the base algorithm's switch profile by hand (quench gen, quench model without --derived).
Result<Derived> derive_stages(const std::string &scheme, const Fabric &f);

} // namespace qn::tp::cc
