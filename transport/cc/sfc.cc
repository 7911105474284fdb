// sfc.cc - SFC's reaction point and its derived switch settings (sfc.h).
#include "transport/cc/sfc.h"

#include <cmath>
#include <cstdio>

namespace qn::tp::cc {

void SfcPause::on_bts(const BtsEvent &e)
{
	bts_++;
	// Replace, even with an earlier end (sfc.md §6.1); 0 ends any pause (§3.2's [D]).
	until_ns_ = e.pause_us ? e.now_ns + uint64_t(e.pause_us) * 1000 : e.now_ns;
}

Derived sfc_derive(const Fabric &f)
{
	Derived d;
	// The feedback loop's BDP over the network-wide RTT (the largest base RTT over host pairs),
	// as the paper derives it (sfc.md §4: "ToR-only ≈ network RTT"): a BTS from the farthest
	// sender's ToR must still find Q_Tg of queue left when its pause ends (§3.3).
	const uint64_t rtt = f.max_base_rtt_ns ? f.max_base_rtt_ns : f.base_rtt_ns;
	const double bdp = double(f.line_rate_bps) * double(rtt) / 8e9;
	const auto qtg = uint64_t(std::llround(bdp)), qth = 2 * qtg;
	const uint64_t tbf = rtt / 2;
	d.switch_settings = {{"sfc", "on"},
			     {"sfc_qth", std::to_string(qth)},
			     {"sfc_qtg", std::to_string(qtg)},
			     {"sfc_tbf", std::to_string(tbf) + "ns"},
			     {"sfc_est_tau", std::to_string(rtt) + "ns"}};
	char b[300];
	std::snprintf(b, sizeof(b),
		      "sfc: BDP = %.4g Gbit/s x network RTT %.4g us / 8 = %s B; Q_Th = 2 BDP = %s B, Q_Tg = BDP, "
		      "T_BF = RTT/2 = %.4g us, estimator tau = RTT (sfc.md §4, §3.4)",
		      double(f.line_rate_bps) / 1e9, double(rtt) / 1e3, std::to_string(qtg).c_str(),
		      std::to_string(qth).c_str(), double(tbf) / 1e3);
	d.notes.push_back(b);
	return d;
}

} // namespace qn::tp::cc
