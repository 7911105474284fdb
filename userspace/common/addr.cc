// addr.cc - MAC and IPv4 text forms (addr.h).
#include "common/addr.h"

#include <arpa/inet.h>
#include <cstdio>

namespace qn {

std::string ip_to_string(uint32_t ip)
{
	char buf[INET_ADDRSTRLEN];
	uint32_t be = htonl(ip);
	inet_ntop(AF_INET, &be, buf, sizeof(buf));
	return buf;
}

Result<uint32_t> parse_ip(const std::string &s)
{
	in_addr a{};
	if (inet_pton(AF_INET, s.c_str(), &a) != 1)
		return make_error("'" + s + "' is not an IPv4 address");
	return ntohl(a.s_addr);
}

std::string mac_to_string(const Mac &m)
{
	char buf[18];
	std::snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
	return buf;
}

Result<Mac> parse_mac(const std::string &s)
{
	Mac m{};
	unsigned v[6];
	char extra;
	if (std::sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
			&extra) != 6)
		return make_error("'" + s + "' is not a MAC address (aa:bb:cc:dd:ee:ff)");
	for (int i = 0; i < 6; i++)
		m[size_t(i)] = uint8_t(v[i]);
	if (m[0] & 1)
		return make_error("'" + s + "' is a multicast MAC address");
	return m;
}

} // namespace qn
