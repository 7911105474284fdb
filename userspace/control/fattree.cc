// fattree.cc - k-ary fat-tree topology files (fattree.h).
#include "control/fattree.h"

#include <sstream>

namespace qn {

Result<std::string> fattree_text(const FatTreeSpec &s)
{
	const int k = s.k;
	if (k < 4 || k > 16 || k % 2)
		return make_error("fattree: k = " + std::to_string(k) +
				  ": k must be even, 4..16 (an edge switch's k/2 uplinks are its ECMP next hops, at most 8)");
	const std::string name = s.name.empty() ? "ft" + std::to_string(k) : s.name;
	const int half = k / 2, hosts = k * k * k / 4;
	std::ostringstream o;
	o << "# k=" << k << " fat-tree (Al-Fares et al.): " << k << " pods of " << half << " edge and " << half
	  << " aggregation switches, " << half * half << " core switches, " << hosts << " hosts, "
	  << hosts + 2 * k * half * half << " links; written by `quench topo fattree --k " << k << "`.\n"
	  << "# Edge e<pod>x<i>, aggregation a<pod>x<j>, core c<m>; hosts first: h<n> is node id n-1.\n"
	  << "# Switch links with FABRIC_DELAY > 0 are cables (the engine's delay lines).\n"
	  << "name " << name << "\n"
	  << "param RATE=" << s.rate << " FABRIC=" << (s.fabric_rate.empty() ? s.rate : s.fabric_rate)
	  << " DELAY=" << s.delay << " FABRIC_DELAY=" << s.fabric_delay << "\n"
	  << "defaults rate=$RATE mtu=" << s.mtu << " delay=$DELAY buffer=" << s.buffer << "\n\n"
	  << "host h[1.." << hosts << "]\n"
	  << "switch c[1.." << half * half << "]\n";
	for (int p = 1; p <= k; p++)
		for (int i = 1; i <= half; i++)
			o << "switch e" << p << "x" << i << "\nswitch a" << p << "x" << i << "\n";
	o << "\n";
	for (int p = 1; p <= k; p++)
		for (int i = 1; i <= half; i++) {
			const int first = (p - 1) * half * half + (i - 1) * half + 1;
			o << "link h[" << first << ".." << first + half - 1 << "] e" << p << "x" << i << "\n";
		}
	for (int p = 1; p <= k; p++)
		for (int i = 1; i <= half; i++)
			for (int j = 1; j <= half; j++)
				o << "link e" << p << "x" << i << " a" << p << "x" << j << " rate=$FABRIC delay=$FABRIC_DELAY\n";
	for (int p = 1; p <= k; p++)
		for (int j = 1; j <= half; j++)
			o << "link a" << p << "x" << j << " c[" << (j - 1) * half + 1 << ".." << j * half
			  << "] rate=$FABRIC delay=$FABRIC_DELAY\n";
	return o.str();
}

std::string ns3_fat320_text()
{
	constexpr int kHosts = 320, kTors = 20, kPerTor = 16, kAggs = 20, kCores = 16, kPodTors = 4;
	constexpr int tor0 = kHosts, agg0 = tor0 + kTors, core0 = agg0 + kAggs, nodes = core0 + kCores;
	std::ostringstream o;
	o << nodes << " " << kTors + kAggs + kCores << " " << kHosts + kTors * kPodTors + kAggs * kPodTors << "\n";
	for (int s = tor0; s < nodes; s++)
		o << s << (s + 1 < nodes ? " " : "\n");
	for (int h = 0; h < kHosts; h++)
		o << h << " " << tor0 + h / kPerTor << " 100Gbps 1000ns 0.000000\n";
	for (int t = 0; t < kTors; t++)
		for (int j = 0; j < kPodTors; j++)
			o << tor0 + t << " " << agg0 + (t / kPodTors) * kPodTors + j << " 400Gbps 1000ns 0.000000\n";
	for (int a = 0; a < kAggs; a++)
		for (int m = 0; m < 4; m++)
			o << agg0 + a << " " << core0 + (a % kPodTors) * 4 + m << " 400Gbps 1000ns 0.000000\n";
	return o.str();
}

} // namespace qn
