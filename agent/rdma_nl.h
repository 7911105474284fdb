// rdma_nl.h - the QPs of rdma devices, read over rdma netlink (NETLINK_RDMA, the nldev
// resource dump `rdma res show qp` uses). The records carry QP numbers and states, no addresses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace qn::agent {

struct RdmaQp {
	std::string dev;      // rdma device name
	uint32_t dev_index = 0;
	uint32_t lqpn = 0;    // local QPN
	uint32_t rqpn = 0;    // remote QPN (0 until the QP is connected)
	uint8_t type = 0;     // IB_QPT_* (2 = RC)
	uint8_t state = 0;    // IB_QPS_* (3 = RTR, 4 = RTS)
	bool has_rqpn = false;
};

// Return: every QP of the devices whose name starts with `prefix` ("" = all), or an error
// naming the netlink step that failed.
Result<std::vector<RdmaQp>> rdma_qps(const std::string &prefix);

} // namespace qn::agent
