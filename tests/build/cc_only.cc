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
	for (const auto &n : schemes()) {
		Setup s;
		s.scheme = n;
		s.line_rate_bps = 10'000'000'000ULL;
		s.bdp_bytes = 10'000;
		s.fabric = Fabric{s.line_rate_bps, 8'000, 2048, 8'000, 8'000}; // what an engine or the agent fills in
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
