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
	const double bdp = double(f.line_rate_bps) * double(f.base_rtt_ns) / 8e9;
	const auto qtg = uint64_t(std::llround(bdp)), qth = 2 * qtg;
	const uint64_t tbf = f.base_rtt_ns / 2;
	d.switch_settings = {{"sfc", "on"},
			     {"sfc_qth", std::to_string(qth)},
			     {"sfc_qtg", std::to_string(qtg)},
			     {"sfc_tbf", std::to_string(tbf) + "ns"},
			     {"sfc_est_tau", std::to_string(f.base_rtt_ns) + "ns"}};
	char b[300];
	std::snprintf(b, sizeof(b),
		      "sfc: BDP = %.4g Gbit/s x base RTT %.4g us / 8 = %s B; Q_Th = 2 BDP = %s B, Q_Tg = BDP, "
		      "T_BF = RTT/2 = %.4g us, estimator tau = RTT (sfc.md §4, §3.4)",
		      double(f.line_rate_bps) / 1e9, double(f.base_rtt_ns) / 1e3, std::to_string(qtg).c_str(),
		      std::to_string(qth).c_str(), double(tbf) / 1e3);
	d.notes.push_back(b);
	return d;
}

} // namespace qn::tp::cc
