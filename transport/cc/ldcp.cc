// ldcp.cc - LDCP's sender (ldcp.h, ../shared/specs/ldcp.md).
#include "transport/cc/ldcp.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/abi.h"

namespace qn::tp::cc {

const ParamTable<LdcpParams> &ldcp_table()
{
	using P = LdcpParams;
	using K = ParamKind;
	constexpr double kMaxSize = 1e10;
	static const ParamTable<P> t(
		"ldcp",
		{
			{"alpha", K::Number, &P::alpha, 1e-6, 16, {}, "additive step: +alpha/cw per unmarked packet (packets per RTT)"},
			{"beta", K::Number, &P::beta, 0, 16, {}, "decrement per marked packet (packets)"},
			{"gamma", K::Number, &P::gamma, 1e-6, 1, {}, "below one packet: +gamma per unmarked ACK; the minimum window"},
			{"eta", K::Number, &P::eta, 0, 1, {}, "below one packet: cw = max(gamma, eta cw) per marked ACK"},
			{"cw_min", K::Number, &P::cw_min, 0, 1e6, {}, "window floor in packets (0 = gamma; 1 = no sub-packet windows)"},
			{"iw", K::Size, &P::iw_bytes, 0, kMaxSize, {}, "fast start's initial window (0 = the BDP)"},
			{"cwnd_max", K::Size, &P::cwnd_max_bytes, 0, kMaxSize, {}, "window cap (0 = 2 BDP)"},
			{"fast_start", K::Flag, &P::fast_start, 0, 0, {}, "fast start (off: flows start stable at cw = IW)"},
		});
	return t;
}

Status ldcp_override(LdcpParams &p, const std::string &k, const std::string &v) { return ldcp_table().apply(p, k, v); }

std::string ldcp_describe(const LdcpParams &p) { return ldcp_table().describe(p); }

double ldcp_qstar(double alpha, double beta, uint64_t line_rate_bps, uint64_t base_rtt_ns, double frame_wire_bytes,
		  int flows, double kmin, double kmax, double pmax)
{
	const double c_bytes_ns = double(line_rate_bps) / 8e9;
	// f(q) = p(q) - alpha / (alpha + beta W*(q)): increasing in q (p rises, W* rises).
	auto f = [&](double q) {
		const double p = q <= kmin ? 0 : q >= kmax ? pmax : pmax * (q - kmin) / (kmax - kmin);
		const double w = c_bytes_ns * (double(base_rtt_ns) + q / c_bytes_ns) / (double(flows) * frame_wire_bytes);
		return p - alpha / (alpha + beta * w);
	};
	if (f(kmax) < 0)
		return kmax;
	double lo = kmin, hi = kmax;
	for (int i = 0; i < 100; i++) {
		const double mid = (lo + hi) / 2;
		(f(mid) < 0 ? lo : hi) = mid;
	}
	return (lo + hi) / 2;
}

Derived ldcp_derive(const Fabric &f, bool)
{
	// The draft gives no values for the switch profile (§4): ours, from the BDP, at least 2 MTU.
	// With `scale` false the same rules apply: they are already in units of the fabric's BDP.
	Derived d;
	const double bdp = double(f.line_rate_bps) * double(f.base_rtt_ns) / 8e9;
	const double mtu2 = 2.0 * f.mtu;
	const auto kmin = uint64_t(std::llround(std::max(mtu2, 0.2 * bdp)));
	const auto kmax = std::max(kmin + f.mtu, uint64_t(std::llround(std::max(mtu2, bdp))));
	const auto iw = uint64_t(std::llround(bdp)), cmax = 2 * iw;
	d.overrides["iw"] = std::to_string(iw);
	d.overrides["cwnd_max"] = std::to_string(cmax);
	d.switch_settings = {{"ecn", "on"}, {"ecn_at", "dequeue"}, {"kmin", std::to_string(kmin)},
			     {"kmax", std::to_string(kmax)}, {"pmax", "1"}, {"ldcp", "on"},
			     {"ldcp_k", std::to_string(kmin)}};
	char b[512];
	std::snprintf(b, sizeof(b),
		      "ldcp: BDP = %.4g Gbit/s x base RTT %.4g us = %.0f B; IW = BDP = %llu B, cwnd_max = 2 BDP = %llu B "
		      "(ldcp.md §4)",
		      double(f.line_rate_bps) / 1e9, double(f.base_rtt_ns) / 1e3, bdp, static_cast<unsigned long long>(iw),
		      static_cast<unsigned long long>(cmax));
	d.notes.push_back(b);
	std::snprintf(b, sizeof(b),
		      "ldcp: switch RED/ECN on the instantaneous queue Kmin = max(2 MTU, 0.2 BDP) = %llu B, Kmax = max(2 MTU, "
		      "BDP) = %llu B, Pmax 1, at dequeue; Not-ECT (fast-start) packets dropped at K = Kmin = %llu B",
		      static_cast<unsigned long long>(kmin), static_cast<unsigned long long>(kmax), static_cast<unsigned long long>(kmin));
	d.notes.push_back(b);
	const LdcpParams p;
	const double wire = double(f.mtu) + QN_ETH_HLEN + 24;
	std::string qs;
	for (int n : {1, 2, 4, 8, 16, 32, 64}) {
		std::snprintf(b, sizeof(b), "%sN=%d %.0f B", qs.empty() ? "" : ", ", n,
			      ldcp_qstar(p.alpha, p.beta, f.line_rate_bps, f.base_rtt_ns, wire, n, double(kmin), double(kmax), 1.0));
		qs += b;
	}
	d.notes.push_back("ldcp: fluid-model fixed point q* (alpha 1, beta 0.5; ldcp.md §3.3): " + qs);
	return d;
}

Ldcp::Ldcp(const LdcpParams &p, uint64_t line_rate_bps, uint32_t payload_bytes, uint32_t frame_wire_bytes,
	   uint64_t bdp_bytes, uint64_t base_rtt_ns)
	: p_(p), line_(line_rate_bps), payload_(std::max<uint32_t>(1, payload_bytes)),
	  frame_wire_(std::max<uint32_t>(1, frame_wire_bytes)), rtt_(std::max<uint64_t>(1, base_rtt_ns))
{
	const uint64_t iw = p_.iw_bytes ? p_.iw_bytes : bdp_bytes;
	const uint64_t cmax = p_.cwnd_max_bytes ? p_.cwnd_max_bytes : 2 * bdp_bytes;
	iw_ = std::max(1.0, std::ceil(double(iw) / payload_));
	cw_max_ = std::max(iw_, std::floor(double(cmax) / payload_));
	floor_ = p_.cw_min > 0 ? p_.cw_min : p_.gamma;
	cw_ = iw_;
}

void Ldcp::start(uint64_t, uint64_t) { cw_ = iw_; }

void Ldcp::set_rate(uint64_t, uint64_t rate_bps)
{
	// A rate from outside (a start policy) as a window: rate x RTT in packets.
	cw_ = double(rate_bps) * double(rtt_) / 8e9 / frame_wire_;
	clamp();
}

void Ldcp::clamp() { cw_ = std::min(std::max(cw_, floor_), cw_max_); }

void Ldcp::on_message(const MessageStart &)
{
	// A flow is a message that finds the QP idle (every packet acknowledged): it starts in fast
	// start. A message queued behind unacknowledged data continues the window it finds.
	if (!p_.fast_start || outstanding_ != 0)
		return;
	fs_ = fs_sending_ = true;
	fs_sent_ = fs_acked_ = 0;
	cw_ = iw_;
	st_.fs_entered++;
}

void Ldcp::on_tx(const TxPacket &p, TxMarks &m)
{
	m.ecn = 2; // ECT(0): stable-stage packets and every retransmission (T1)
	if (p.retx)
		return;
	outstanding_++;
	if (!fs_sending_)
		return;
	// A fast-start packet: Not-ECT except the last one, the IW-th or the message's last (T1).
	fs_sent_++;
	const bool msg_last = p.offset + p.payload_bytes >= p.msg_bytes;
	if (double(fs_sent_) >= iw_) {
		fs_sending_ = false; // IW sent: what follows is ECT
	} else if (!msg_last) {
		m.ecn = 0;
		st_.fs_not_ect++;
	}
}

void Ldcp::on_ack(const AckSample &a)
{
	const uint64_t n = a.acked_pkts;
	const uint64_t m = std::min<uint64_t>(n, a.ce_pkts ? a.ce_pkts : (a.ece ? n : 0));
	outstanding_ -= std::min(outstanding_, n);
	if (a.rtt_ns && *a.rtt_ns)
		rtt_ = *a.rtt_ns;
	fs_sending_ = false; // the first RTT is over: new packets are ECT (T2)
	if (fs_) {
		// Only the exits set cw; marks on the way are ignored (T3, §6 item 3).
		fs_acked_ += n;
		if (a.nak) {
			cw_ = double(fs_acked_);
			fs_ = false;
			st_.fs_exit_loss++;
			last_loss_ns_ = a.now_ns;
			lost_once_ = true;
		} else if (fs_acked_ >= fs_sent_) {
			cw_ = iw_;
			fs_ = false;
			st_.fs_exit_acked++;
		}
		clamp();
		return;
	}
	if (a.nak) {
		// A loss in the stable stage (buffer overflow): -beta once per loss event, one per RTT
		// (the QP goes back N; its NAKs for one hole arrive within an RTT) (T6).
		if (!lost_once_ || a.now_ns - last_loss_ns_ >= rtt_) {
			cw_ -= p_.beta;
			st_.loss_events++;
			last_loss_ns_ = a.now_ns;
			lost_once_ = true;
		}
	}
	if (n > 0) {
		if (cw_ >= 1) {
			cw_ += double(n - m) * p_.alpha / cw_; // Eq. (1) per unmarked packet
			cw_ -= double(m) * p_.beta;            // Eq. (2)
		} else {
			st_.below_one++;
			cw_ = m ? std::max(p_.gamma, p_.eta * cw_) : cw_ + p_.gamma; // T4, cw < 1
		}
	}
	clamp();
}

void Ldcp::on_timeout(uint64_t now_ns)
{
	// T7: the QP resends from its oldest unacknowledged packet (ECT). In fast start the timeout
	// is a tail loss: the exit on loss (T3a); otherwise cw halves.
	fs_sending_ = false;
	if (fs_) {
		cw_ = double(fs_acked_);
		fs_ = false;
		st_.fs_exit_loss++;
	} else {
		cw_ = cw_ / 2;
	}
	st_.loss_events++;
	last_loss_ns_ = now_ns;
	lost_once_ = true;
	clamp();
}

uint64_t Ldcp::rate_bps() const
{
	if (cw_ >= 1)
		return line_;
	// One packet per RTT / cw (T5): the QP's rate limiter spaces full frames that far apart.
	const double r = cw_ * frame_wire_ * 8e9 / double(rtt_);
	return std::max<uint64_t>(1, std::min<uint64_t>(line_, uint64_t(r)));
}

uint64_t Ldcp::window_bytes() const
{
	// Packets in flight at most floor(cw) (T1), one below one packet (the limiter paces it).
	return uint64_t(std::max(1.0, std::floor(cw_))) * payload_;
}

} // namespace qn::tp::cc
