// bench_rxe.cc - `quench bench rxe` (bench_rxe.h).
#include "bench/bench_rxe.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench/testrun.h"
#include "control/packet.h"
#include "qn_abi.h"
#include "qn_rxe.skel.h"

namespace qn {

Result<std::string> bench_rxe(uint32_t rounds)
{
	qn_rxe *skel = qn_rxe__open_and_load();
	if (!skel)
		return sys_error(errno, "load qn_rxe");
	struct Guard {
		qn_rxe *s;
		~Guard() { qn_rxe__destroy(s); }
	} guard{skel};
	const int cfg = bpf_map__fd(skel->maps.qn_rxe_cfg), rate = bpf_map__fd(skel->maps.qn_rxe_rate);
	FrameSpec f;
	f.saddr = 0x0b000101;
	f.daddr = 0x0b000201;
	f.opcode = QN_OP_RC_WRITE_ONLY;
	f.dest_qp = 0x11;
	f.payload_len = 1024;
	const Bytes data = build_frame(f);
	FrameSpec g = f;
	std::swap(g.saddr, g.daddr);
	g.tos = 2; // ECT(0), not CE: counted, not posted
	const Bytes in_data = build_frame(g);
	auto set = [&](uint32_t agent, bool with_rate) -> Status {
		qn_rxe_cfg c{};
		c.agent = agent;
		c.link_bps = 100'000'000'000ULL; // 100 Gbit/s: departure times stay near now
		uint32_t zero = 0;
		if (bpf_map_update_elem(cfg, &zero, &c, BPF_ANY) != 0)
			return sys_error(errno, "write qn_rxe_cfg");
		qn_rxe_qp_key k{htonl(f.daddr), f.dest_qp};
		uint64_t r = 100'000'000'000ULL;
		if (with_rate ? bpf_map_update_elem(rate, &k, &r, BPF_ANY) != 0
			      : (bpf_map_delete_elem(rate, &k) != 0 && errno != ENOENT))
			return sys_error(errno, "write qn_rxe_rate");
		return ok_status();
	};
	struct Conf {
		const char *name;
		int prog;
		uint32_t agent;
		bool rate;
		const Bytes *frame;
		std::vector<double> ns;
	};
	std::vector<Conf> cs = {
		{"egress, agent off (parse, QP learning, link EDT)", bpf_program__fd(skel->progs.qn_rxe_egress), 0, false, &data, {}},
		{"egress, agent on, no QP rate (+ ECT(0), rate lookup)", bpf_program__fd(skel->progs.qn_rxe_egress), 1, false, &data, {}},
		{"egress, agent on, QP rate (+ per-QP EDT)", bpf_program__fd(skel->progs.qn_rxe_egress), 1, true, &data, {}},
		{"ingress, unmarked data (parse, dequeue-mark lookup)", bpf_program__fd(skel->progs.qn_rxe_ingress), 1, false, &in_data, {}},
	};
	constexpr uint32_t kRepeat = 200'000;
	for (uint32_t r = 0; r < rounds; r++)
		for (auto &c : cs) {
			QN_TRY(set(c.agent, c.rate));
			auto o = test_run_tc(c.prog, *c.frame, 1, 1, kRepeat);
			if (!o)
				return o.error();
			c.ns.push_back(double(o->duration_ns));
		}
	auto median = [](std::vector<double> v) {
		std::sort(v.begin(), v.end());
		return v[v.size() / 2];
	};
	const double base = median(cs[0].ns);
	std::string out = bpf_stats_warning();
	char line[256];
	std::snprintf(line, sizeof(line), "qn_rxe per packet (BPF_PROG_TEST_RUN, %u runs x %u rounds, median):\n",
		      kRepeat, rounds);
	out += line;
	for (const auto &c : cs) {
		const double m = median(c.ns);
		std::snprintf(line, sizeof(line), "  %-56s %6.1f ns  %5.2fx the agent-off egress\n", c.name, m,
			      base > 0 ? m / base : 0.0);
		out += line;
	}
	return out;
}

} // namespace qn
