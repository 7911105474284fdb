// pbfs.cc - PB-FS's sender: marking, Algorithm 1, parameters (pbfs.h).
#include "transport/cc/pbfs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/abi.h"

namespace qn::tp::cc {

const ParamTable<PbfsParams> &pbfs_table()
{
	using P = PbfsParams;
	using K = ParamKind;
	static const ParamTable<P> t(
		"pbfs",
		{
			{"dc_rtt", K::Time, &P::dc_rtt_ns, 0, 1e9, {}, "DC_RTT, the fabric's largest base RTT (0 = calibrated)", "auto"},
			{"delta", K::Count, &P::delta, 0, 1e6, {}, "marking distance Δ in packets (0 = the smallest covering a slot)", "auto"},
			{"tau", K::Time, &P::tau_ns, 0, 1e9, {}, "minimum transmit time τ of a PB-FS flow (0 = DC_RTT / 2)", "auto"},
			{"i_min", K::Size, &P::i_min_bytes, 0, 1e10, {}, "floor I_min of the available bytes (0 = 0.2 x max BDP)", "auto"},
			{"mu", K::Number, &P::mu, 0.01, 1, {}, "target utilisation μ"},
			{"safety", K::Time, &P::safety_ns, 0, 1e9, {}, "the PBT interval ends this long after a message starts (0 = 2 DC_RTT)", "auto"},
		});
	return t;
}

Status pbfs_override(PbfsParams &p, const std::string &k, const std::string &v) { return pbfs_table().apply(p, k, v); }

std::string pbfs_describe(const PbfsParams &p) { return pbfs_table().describe(p); }

Result<PbfsDerived> pbfs_rules(const Fabric &f)
{
	PbfsDerived d;
	d.dc_rtt_ns = f.max_base_rtt_ns ? f.max_base_rtt_ns : f.base_rtt_ns;
	if (d.dc_rtt_ns == 0 || f.line_rate_bps == 0 || f.mtu == 0)
		return make_error("pbfs needs the fabric's base RTT, line rate and MTU");
	d.pkt_ns = (double(f.mtu) + QN_ETH_HLEN + 24) * 8e9 / double(f.line_rate_bps);
	d.n = uint32_t(std::floor(double(d.dc_rtt_ns) / (9.0 * d.pkt_ns)));
	if (d.n < 2) {
		char b[256];
		std::snprintf(b, sizeof(b),
			      "pbfs: N = floor(DC_RTT %.3g us / (9 packet times of %.3g us)) = %u < 2: a history slot "
			      "(DC_RTT / 2N) would be shorter than about 4.5 frames (pbfs.md §4); use a fabric with a "
			      "longer RTT or a faster host link",
			      double(d.dc_rtt_ns) / 1e3, d.pkt_ns / 1e3, d.n);
		return make_error(b);
	}
	d.slot_ns = d.dc_rtt_ns / (2 * d.n);
	d.delta = uint32_t(std::ceil(double(d.slot_ns) / d.pkt_ns));
	d.t_delta_ns = uint64_t(std::llround(d.delta * d.pkt_ns));
	d.tau_ns = d.dc_rtt_ns / 2;
	d.min_bytes = uint64_t(double(f.line_rate_bps) * double(d.tau_ns) / 8e9);
	d.i_min_bytes = uint64_t(std::llround(0.2 * double(f.line_rate_bps) * double(d.dc_rtt_ns) / 8e9));
	return d;
}

Result<Derived> pbfs_derive(const Fabric &f)
{
	Derived d;
	auto r = pbfs_rules(f);
	if (!r) {
		d.refused = r.error().to_string(); // a fabric PB-FS cannot work on (N < 2)
		return d;
	}
	d.switch_settings = {{"pbfs", "on"},
			     {"pbfs_n", std::to_string(r->n)},
			     {"pbfs_slot", std::to_string(r->slot_ns) + "ns"},
			     {"pbfs_tdelta", std::to_string(r->t_delta_ns) + "ns"},
			     {"pbfs_dc_rtt", std::to_string(r->dc_rtt_ns) + "ns"}};
	char b[512];
	std::snprintf(b, sizeof(b),
		      "pbfs: DC_RTT = the largest base RTT = %.4g us; packet time %.4g ns; N = floor(DC_RTT / 9 packet "
		      "times) = %u, slot = DC_RTT / 2N = %llu ns; Δ = ceil(slot / packet time) = %u, T_Δ = %llu ns "
		      "(pbfs.md §4; the paper: N 8, Δ 6)",
		      double(r->dc_rtt_ns) / 1e3, r->pkt_ns, r->n, static_cast<unsigned long long>(r->slot_ns), r->delta,
		      static_cast<unsigned long long>(r->t_delta_ns));
	d.notes.push_back(b);
	std::snprintf(b, sizeof(b),
		      "pbfs: τ = DC_RTT / 2 = %llu ns: messages of at least %llu B mark; I_min = 0.2 max BDP = %llu B; "
		      "μ 0.95",
		      static_cast<unsigned long long>(r->tau_ns), static_cast<unsigned long long>(r->min_bytes),
		      static_cast<unsigned long long>(r->i_min_bytes));
	d.notes.push_back(b);
	return d;
}

double pbfs_c(const PostcardEvent &p, uint32_t delta, uint64_t dc_rtt_ns, uint64_t i_min_bytes, double mu)
{
	const double ip = p.ip_bytes;
	// Δ x marked / recent estimates the share of I_p sent by PB-FS flows (each marked packet
	// stands for Δ - 1 unmarked ones); capped at I_p (corner case 3)
	const double share = p.recent_bytes ? double(delta) * double(p.recent_marked_bytes) / double(p.recent_bytes) : 1.0;
	const double i_pbt = std::min(ip, share * ip);
	const double i_non = ip - i_pbt;
	const double bdp = double(p.rate_mbps) * 1e6 * double(dc_rtt_ns) / 8e9;
	const double avail = std::max(bdp - double(p.q1_bytes) - i_non, double(i_min_bytes));
	if (avail <= 0)
		return 0;
	return i_pbt / (mu * avail);
}

Pbfs::Pbfs(const PbfsParams &p, uint64_t line_rate_bps)
	: p_(p), max_rate_(line_rate_bps), min_bytes_(uint64_t(double(line_rate_bps) * double(p.tau_ns) / 8e9)),
	  cur_rate_(line_rate_bps)
{
}

void Pbfs::on_message(const MessageStart &m, Algorithm &)
{
	// M0: a new flow; its size decides whether it takes part
	msn_ = m.msn;
	pkt_idx_ = 0;
	st_.flows++;
	pbfs_ = m.size_bytes >= min_bytes_;
	marking_ = pbfs_;
	ignore_ = !pbfs_;
	l_.clear();
	id_.reset();
	cur_rate_ = max_rate_;
	safety_at_ = pbfs_ ? m.now_ns + p_.safety_ns : UINT64_MAX;
	if (pbfs_)
		st_.eligible++;
}

void Pbfs::on_tx(const TxPacket &p, TxMarks &m, Algorithm &)
{
	if (p.retx || p.msn != msn_)
		return; // retransmissions never mark, nor count (M1 counts new data packets)
	pkt_idx_++;
	if (marking_ && pkt_idx_ % p_.delta == 0) {
		m.tos_bits |= QN_TOS_PBT;
		st_.marked++;
	}
}

void Pbfs::on_ack(const AckSample &, bool changed, Algorithm &)
{
	marking_ = false; // M2
	if (changed)
		end_interval(); // H3: the ACK that changed the rate ends the PBT interval
}

void Pbfs::on_cnp(const CnpEvent &, bool changed, Algorithm &)
{
	if (changed)
		end_interval(); // DCQCN's rate update is the first CNP (§3.4)
}

void Pbfs::on_postcard(const PostcardEvent &e, Algorithm &a)
{
	st_.postcards++;
	if (ignore_ || !pbfs_) {
		st_.ignored++;
		return;
	}
	marking_ = false; // M2
	const double c = pbfs_c(e, p_.delta, p_.dc_rtt_ns, p_.i_min_bytes, p_.mu);
	l_[e.switch_id] = c;
	if (c <= 1)
		return; // corner case 4: c <= 1 never restores the rate
	// H2: the most restrictive switch wins; the switch that set the rate may revise it
	if (!id_ || *id_ == e.switch_id || c > l_[*id_]) {
		id_ = e.switch_id;
		cur_rate_ = std::max<uint64_t>(1, uint64_t(double(max_rate_) / c));
		a.set_rate(e.now_ns, cur_rate_);
		st_.rate_updates++;
	}
}

void Pbfs::on_timer(uint64_t now_ns, Algorithm &)
{
	if (now_ns >= safety_at_) {
		end_interval();
		st_.safety_ends++;
	}
}

uint64_t Pbfs::next_timer() const { return safety_at_; }

void Pbfs::counters(CounterList &out) const
{
	out.emplace_back("pbfs.flows", st_.flows);
	out.emplace_back("pbfs.eligible", st_.eligible);
	out.emplace_back("pbfs.marked", st_.marked);
	out.emplace_back("pbfs.postcards", st_.postcards);
	out.emplace_back("pbfs.ignored", st_.ignored);
	out.emplace_back("pbfs.rate_updates", st_.rate_updates);
	out.emplace_back("pbfs.safety_ends", st_.safety_ends);
}

} // namespace qn::tp::cc
