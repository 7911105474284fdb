// transport_only.cc - a program that links the transport alone (quench_transport, the CC library
// and the base library; no control plane): it describes a fabric by hand (two hosts on one
// switch, no topology file, no namespace, no pin), opens an engine on FakePorts, plays the
// switch itself (every frame a host sends reaches the other host), and checks that a 1 MB
// message is delivered whole and verified by content, once. Run by tests/build/test_layering.sh,
// which also checks its link line names no control-plane library.
#include <cstdio>
#include <memory>

#include "transport/clock.h"
#include "transport/engine.h"
#include "transport/engine_desc.h"
#include "transport/fake_port.h"

using namespace qn;
using namespace qn::tp;

int main()
{
	EngineDesc d;
	d.name = "by-hand";
	d.nodes = {{"h1", true}, {"h2", true}, {"sw", false}};
	d.links = {{0, 2, 10'000'000'000ULL, 1'000, 2048}, {1, 2, 10'000'000'000ULL, 1'000, 2048}};
	FakePort *port[2] = {};
	for (int k = 0; k < 2; k++) {
		HostDesc h;
		h.name = k == 0 ? "h1" : "h2";
		h.node = k;
		h.ep = Endpoint{Mac{{0x02, 0, 0, 0, 0, uint8_t(k + 1)}}, 0x0a000001u + uint32_t(k)};
		h.gw = Mac{{0x02, 0, 0, 0, 1, uint8_t(k + 1)}};
		h.link_bps = 10'000'000'000ULL;
		h.delay_ns = 1'000;
		h.mtu = 2048;
		h.open = [&port, k](uint32_t) -> Result<std::unique_ptr<FramePort>> {
			auto p = std::make_unique<FakePort>(1024);
			port[k] = p.get();
			return std::unique_ptr<FramePort>(std::move(p));
		};
		d.hosts.push_back(std::move(h));
	}
	FakeClock clock;
	EngineOptions o;
	o.tx_horizon_wall_ns = 0;
	auto e = Engine::open_on(d, Dilation(), o, clock);
	if (!e) {
		std::fprintf(stderr, "open: %s\n", e.error().to_string().c_str());
		return 1;
	}
	QpOptions qo;
	auto qp = (*e)->connect("h1", "h2", qo);
	if (!qp) {
		std::fprintf(stderr, "connect: %s\n", qp.error().to_string().c_str());
		return 1;
	}
	int completions = 0, deliveries = 0;
	uint64_t delivered = 0;
	bool intact = true;
	(*e)->on_complete = [&](QpHandle, const Completion &) { completions++; };
	(*e)->on_deliver = [&](QpHandle, const Delivery &dv) {
		deliveries++;
		delivered += dv.size;
		intact = intact && dv.pattern_ok;
	};
	(*e)->post(*qp, Message{1, 1'000'000, nullptr});
	uint64_t t = 0;
	for (int i = 0; i < 2'000'000 && completions == 0; i++) {
		clock.set(t);
		const uint64_t next = (*e)->step(t);
		for (int k = 0; k < 2; k++) // the switch: one wire between the two hosts
			for (auto &f : port[k]->take_tx())
				port[1 - k]->inject(f);
		t = std::max(t + 100, std::min(next, t + 10'000));
	}
	std::printf("delivered %llu bytes in %d message(s), verified %s, completions %d, fabric time %llu ns\n",
		    static_cast<unsigned long long>(delivered), deliveries, intact ? "yes" : "no", completions,
		    static_cast<unsigned long long>(t));
	return completions == 1 && deliveries == 1 && delivered == 1'000'000 && intact ? 0 : 1;
}
