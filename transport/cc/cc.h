// cc.h - the congestion-control library's interface (DESIGN.md §4, docs/cc.md). No I/O and
// no clock reads: every event carries the fabric time, so unit tests replay a paper's equations
// on a fake clock.
//
// Per QP, a Controller composes three parts:
//   - a base algorithm (DCQCN; later LDCP, PCN): reacts to ACKs, CNPs and its timers, sets the
//     rate and (optionally) the window;
//   - a start policy (line-rate fast start now; PB-FS later): the rate a QP starts at;
//   - flow control (none now; SFC later): reacts to BTS, returns pause-until.
// Events in: ACK (acked bytes, ECN echo, RTT sample), CNP (with its payload), BTS, CC-postcard,
// PFC, transmitted bytes, timer. Out: rate, window, pause-until.
//
// Units: fabric ns, bit/s, bytes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "result.h"

namespace qn::tp::cc {

struct AckSample {
	uint64_t now_ns = 0;
	uint64_t acked_bytes = 0;      // newly acknowledged cumulatively
	uint16_t ce_pkts = 0;          // CE-marked data packets the receiver saw since its last ACK
	bool ece = false;
	std::optional<uint64_t> rtt_ns;
	bool nak = false;
};

struct CnpEvent {
	uint64_t now_ns = 0;
	std::span<const uint8_t> payload; // the 16 bytes after the BTH (DCQCN uses none of it)
};

// A back-to-sender signal (SFC) or CC-postcard (PB-FS): the raw signal payload.
struct SignalEvent {
	uint64_t now_ns = 0;
	std::span<const uint8_t> payload;
};

struct PfcEvent {
	uint64_t now_ns = 0;
	int prio = 0;
	uint64_t pause_until_ns = 0;   // 0 = XON
};

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
	virtual void on_ack(const AckSample &) {}
	virtual void on_cnp(const CnpEvent &) {}
	virtual void on_tx(uint64_t /*now_ns*/, uint64_t /*bytes*/) {}
	virtual void on_pfc(const PfcEvent &) {}
	virtual void on_postcard(const SignalEvent &) {}
	// Fire every timer due at or before now (missed periods one by one).
	virtual void on_timer(uint64_t /*now_ns*/) {}
	// Return: the next timer deadline (UINT64_MAX: none).
	virtual uint64_t next_timer() const { return UINT64_MAX; }
	virtual uint64_t rate_bps() const = 0;
	virtual uint64_t window_bytes() const { return 0; }
};

// Where a QP's rate starts.
class StartPolicy {
public:
	virtual ~StartPolicy() = default;
	virtual std::string name() const = 0;
	virtual uint64_t initial_rate(uint64_t line_rate_bps) const = 0;
};

// Flow control layered on the rate (SFC's pause). Default: never pauses.
class FlowControl {
public:
	virtual ~FlowControl() = default;
	virtual std::string name() const = 0;
	virtual void on_bts(const SignalEvent &) {}
	virtual uint64_t pause_until_ns() const { return 0; }
};

// Line-rate fast start (RoCE NICs: no slow start).
class LineRateStart final : public StartPolicy {
public:
	std::string name() const override { return "line-rate"; }
	uint64_t initial_rate(uint64_t line_rate_bps) const override { return line_rate_bps; }
};

class NoFlowControl final : public FlowControl {
public:
	std::string name() const override { return "none"; }
};

// No congestion control: always the line rate (the baseline "none" and "pfc").
class LineRate final : public Algorithm {
public:
	std::string name() const override { return "none"; }
	void start(uint64_t, uint64_t rate_bps) override { rate_ = rate_bps; }
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
	void on_ack(const AckSample &e) { algo_->on_ack(e); }
	void on_cnp(const CnpEvent &e) { algo_->on_cnp(e); }
	void on_tx(uint64_t now_ns, uint64_t bytes) { algo_->on_tx(now_ns, bytes); }
	void on_pfc(const PfcEvent &e) { algo_->on_pfc(e); }
	void on_bts(const SignalEvent &e) { fc_->on_bts(e); }
	void on_postcard(const SignalEvent &e) { algo_->on_postcard(e); }
	void on_timer(uint64_t now_ns) { algo_->on_timer(now_ns); }
	uint64_t next_timer() const { return algo_->next_timer(); }
	Output output() const { return Output{algo_->rate_bps(), algo_->window_bytes(), fc_->pause_until_ns()}; }
	std::string name() const { return algo_->name() + "/" + start_->name() + "/" + fc_->name(); }
	Algorithm &algorithm() { return *algo_; }
	uint64_t line_rate_bps() const { return line_rate_; }

private:
	std::unique_ptr<Algorithm> algo_;
	std::unique_ptr<StartPolicy> start_;
	std::unique_ptr<FlowControl> fc_;
	uint64_t line_rate_;
};

// The receiver side (notification point) of a scheme: decides when to send a CNP.
class NotificationPoint {
public:
	virtual ~NotificationPoint() = default;
	// A data packet arrived (ce: it was CE-marked). Return: true to send a CNP now.
	virtual bool on_data(uint64_t now_ns, bool ce) = 0;
	// Return: true to send a CNP at this timer.
	virtual bool on_timer(uint64_t now_ns) = 0;
	virtual uint64_t next_timer() const = 0;
};

// Everything a scheme needs to build its parts for one QP.
struct Setup {
	std::string scheme = "none";          // none, pfc, dcqcn, dcqcn+w (schemes())
	std::string params = "";              // named parameter set ("" = the scheme's default)
	std::map<std::string, std::string> overrides; // single parameters, by name
	uint64_t line_rate_bps = 0;
	uint64_t bdp_bytes = 0;               // for window variants
	bool np = true;                       // notification point on (negative control: off)
};

struct Parts {
	std::unique_ptr<Controller> controller;
	std::unique_ptr<NotificationPoint> np; // null when the scheme sends no CNPs (or np = false)
	std::string describe;                  // the parameters in effect, one line
};

// The fabric a scheme's parameters are derived for (calibration, DESIGN.md §5): the host line
// rate, the base RTT and the path MTU, in fabric units.
struct Fabric {
	uint64_t line_rate_bps = 0;
	uint64_t base_rtt_ns = 0;
	uint32_t mtu = 0;
};

// A scheme's parameters derived from its spec's rules for a fabric: overrides for make()
// (by parameter name), the switch settings it needs (swcfg keys: pfc, ecn, kmin, kmax, pmax) and
// one line per derived value saying where it comes from.
struct Derived {
	std::map<std::string, std::string> overrides;
	std::vector<std::pair<std::string, std::string>> switch_settings;
	std::vector<std::string> notes;
};

// Return: the names of the schemes that exist.
std::vector<std::string> schemes();
// Build a QP's controller and notification point. Errors name the scheme or parameter.
Result<Parts> make(const Setup &s);
// Derive a scheme's parameters for `f`. With `scale` false the paper's values are kept (a
// fabric equal to the paper's); with true, common.md §7 rescales them to this fabric.
Result<Derived> derive(const std::string &scheme, const Fabric &f, bool scale);
// Whether the scheme wants switch PFC on (for the tools that configure the switch).
bool wants_pfc(const std::string &scheme);

} // namespace qn::tp::cc
