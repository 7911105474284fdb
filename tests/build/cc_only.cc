// cc_only.cc - a program that links the CC library alone (quench_cc and the base library): builds
// every named scheme's controller, drives one through a CNP, and runs the reference model. Run
// by tests/build/test_cc_standalone.sh, which also checks that its link line names no kernel
// library (libbpf, libxdp, liburing): the agent and other host stacks link the CC library this way.
#include <cstdio>

#include "transport/cc/cc.h"
#include "transport/cc/model.h"

using namespace qn::tp::cc;

int main()
{
	// What an engine or the agent fills in: a 10G fabric whose longest base RTT (40 us) gives
	// PB-FS's history two slots (N = 2); on the 8 us one it refuses, which derive() reports as
	// a refusal with its reason, not as an error.
	const Fabric fabric{10'000'000'000ULL, 8'000, 2048, 8'000, 40'000};
	Fabric short_rtt = fabric;
	short_rtt.max_base_rtt_ns = 8'000;
	for (const auto &n : schemes()) {
		auto d = derive(n, short_rtt, false);
		if (!d) {
			std::fprintf(stderr, "%s: derive: %s\n", n.c_str(), d.error().to_string().c_str());
			return 1;
		}
		if (!d->refused.empty())
			std::printf("%s refuses an 8 us fabric: %s\n", n.c_str(), d->refused.c_str());
		Setup s;
		s.scheme = n;
		s.line_rate_bps = fabric.line_rate_bps;
		s.bdp_bytes = 10'000;
		s.fabric = fabric;
		auto p = make(s);
		if (!p) {
			std::fprintf(stderr, "%s: %s\n", n.c_str(), p.error().to_string().c_str());
			return 1;
		}
		p->controller->start(0);
		p->controller->on_cnp(CnpEvent{1'000, 0, {}});
		std::printf("%s: %s; rate after one CNP %llu bit/s\n", n.c_str(), p->describe.c_str(),
			    static_cast<unsigned long long>(p->controller->output().rate_bps));
	}
	ModelConfig c;
	c.senders = 2;
	c.setup.scheme = "dcqcn";
	c.flow_bytes = 100'000;
	c.duration_ns = 2'000'000;
	auto r = run_model(c);
	if (!r) {
		std::fprintf(stderr, "model: %s\n", r.error().to_string().c_str());
		return 1;
	}
	std::printf("model: %llu payload bytes delivered, peak queue %llu B\n",
		    static_cast<unsigned long long>(r->payload_rx_bytes), static_cast<unsigned long long>(r->peak_queue_bytes));
	return r->payload_rx_bytes == 2 * c.flow_bytes ? 0 : 1;
}
