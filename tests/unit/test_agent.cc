// test_agent.cc - the Soft-RoCE agent's scheme check ([agent]): what a scheme needs from the
// host stack is a property of its parts (Scheme::signals), and the agent refuses what it cannot
// give (docs/agent.md), by that property, never by name.
#include <catch2/catch.hpp>

#include "agent/agent.h"
#include "transport/cc/cc.h"

using namespace qn;
namespace cc = qn::tp::cc;

TEST_CASE("agent__runs_cnp_schemes_and_refuses_the_rest_by_their_signals", "[agent]")
{
	// CNPs and pacing from the agent, BTS pauses from the host programs (issue 23)
	for (const char *ok : {"none", "pfc", "dcqcn", "dcqcn+w", "dcqcn:lossy", "dcqcn+w:lossy", "dcqcn/sfc",
			       "dcqcn+w/sfc:lossy", "none/sfc"})
		CHECK(agent::refuse_reason(ok).empty());
	CHECK_THAT(agent::refuse_reason("ldcp"), Catch::Contains("needs ack"));
	CHECK_THAT(agent::refuse_reason("dcqcn/pbfs"), Catch::Contains("postcard"));
	CHECK_THAT(agent::refuse_reason("dcqcn/pbfs"), Catch::Contains("message"));
	CHECK_THAT(agent::refuse_reason("nosuch"), Catch::Contains("nosuch"));
	// PCN's CNP carries the receiving rate over every data packet; rxe's host program reports
	// only CE-marked ones, so PCN on rxe would never cut or raise (issue 44)
	CHECK_THAT(agent::refuse_reason("pcn"), Catch::Contains("rx-rate"));
	// the signals compose over the parts
	auto s = cc::scheme("dcqcn+w/sfc:lossy");
	REQUIRE(s.ok());
	CHECK(s->signals == (cc::kSigCnp | cc::kSigWindow | cc::kSigBts));
	CHECK(cc::signal_names(s->signals) == "cnp, window, bts");
	auto n = cc::scheme("none");
	REQUIRE(n.ok());
	CHECK(n->signals == 0);
}
