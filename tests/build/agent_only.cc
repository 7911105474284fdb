// agent_only.cc - a program that links the Soft-RoCE agent's library alone (quench_agent: the CC
// library, the wire codec, the base, libbpf). Run by tests/build/test_layering.sh, which checks
// its link line names neither the engine (quench_transport) nor the control plane.
#include <cstdio>

#include "agent/agent.h"

int main()
{
	const std::string why = qn::agent::refuse_reason("ldcp");
	std::printf("agent: dcqcn %s; ldcp refused: %s\n", qn::agent::refuse_reason("dcqcn").empty() ? "runs" : "refused",
		    why.c_str());
	return qn::agent::refuse_reason("dcqcn").empty() && !why.empty() ? 0 : 1;
}
