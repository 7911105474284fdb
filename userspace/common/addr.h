// addr.h - MAC and IPv4 address types and their text forms (base library: no kernel library,
// no control plane; the wire codec and the topology both use them).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "common/result.h"

namespace qn {

using Mac = std::array<uint8_t, 6>;

// Host-order IPv4 address <-> dotted quad.
std::string ip_to_string(uint32_t ip);
Result<uint32_t> parse_ip(const std::string &s);
// aa:bb:cc:dd:ee:ff; a multicast MAC is rejected.
std::string mac_to_string(const Mac &m);
Result<Mac> parse_mac(const std::string &s);

} // namespace qn
