// The engine's pure defaults (transport/engine.h): the retransmission timeouts a QP gets from
// its scheme when none are given.
#include <catch2/catch.hpp>

#include "cc.h"
#include "engine.h"

using namespace qn::tp;

TEST_CASE("engine__default_rto_follows_the_scheme", "[engine]")
{
	// Lossy: IRN's RTO_low / RTO_high (common.md §6).
	CHECK(default_rto_ns("none") == std::pair<uint64_t, uint64_t>{100'000, 320'000});
	// Lossless (the switch runs PFC): a RoCE NIC's QP timeout, 4.096 us x 2^14.
	for (const char *s : {"pfc", "dcqcn", "dcqcn+w"}) {
		CAPTURE(s);
		REQUIRE(cc::wants_pfc(s));
		CHECK(default_rto_ns(s) == std::pair<uint64_t, uint64_t>{67'108'864, 67'108'864});
	}
	// Every scheme that exists gets one of the two.
	for (const auto &s : cc::schemes()) {
		auto r = default_rto_ns(s);
		CHECK((r.first == 100'000 || r.first == 67'108'864));
	}
}
