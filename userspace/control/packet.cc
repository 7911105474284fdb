// packet.cc - frame builder.
#include "control/packet.h"

#include <cstdio>

namespace qn {
namespace {
void put16(Bytes &b, uint16_t v)
{
	b.push_back(uint8_t(v >> 8));
	b.push_back(uint8_t(v));
}
void put32(Bytes &b, uint32_t v)
{
	put16(b, uint16_t(v >> 16));
	put16(b, uint16_t(v));
}
} // namespace

uint16_t ipv4_checksum(const uint8_t *hdr, size_t hdr_len)
{
	uint32_t sum = 0;
	for (size_t i = 0; i + 1 < hdr_len; i += 2)
		sum += uint32_t(hdr[i] << 8 | hdr[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return uint16_t(~sum);
}

Bytes build_frame(const FrameSpec &s)
{
	Bytes b;
	b.insert(b.end(), s.dst.begin(), s.dst.end());
	b.insert(b.end(), s.src.begin(), s.src.end());
	for (uint16_t tci : s.vlan_tcis) {
		put16(b, 0x8100);
		put16(b, tci);
	}
	if (!s.ipv4) {
		put16(b, s.ethertype);
		for (size_t i = 0; i < s.payload_len; i++)
			b.push_back(s.payload_fill);
		return b;
	}
	put16(b, 0x0800);
	size_t ip_off = b.size();
	size_t ihl = 20 + s.ip_options.size();
	size_t l4 = 0;
	if (s.proto == 17)
		l4 = 8 + (s.bth ? 12 : 0);
	size_t tot = ihl + l4 + s.payload_len;
	b.push_back(uint8_t(0x40 | (ihl / 4)));
	b.push_back(s.tos);
	put16(b, uint16_t(tot));
	put16(b, 0x1234); // id
	put16(b, s.frag_off);
	b.push_back(s.ttl);
	b.push_back(s.proto);
	put16(b, 0); // checksum, filled below
	put32(b, s.saddr);
	put32(b, s.daddr);
	b.insert(b.end(), s.ip_options.begin(), s.ip_options.end());
	uint16_t c = ipv4_checksum(&b[ip_off], ihl);
	b[ip_off + 10] = uint8_t(c >> 8);
	b[ip_off + 11] = uint8_t(c);
	if (s.proto == 17) {
		put16(b, s.sport);
		put16(b, s.dport);
		put16(b, uint16_t(l4 + s.payload_len));
		put16(b, 0); // UDP checksum 0: allowed for IPv4, what RoCE NICs send
		if (s.bth) {
			b.push_back(s.opcode);
			b.push_back(0);               // SE/M/PadCnt/TVer
			put16(b, 0xFFFF);             // P_Key
			put32(b, s.dest_qp & 0xFFFFFF); // Resv8a = 0, DestQP
			put32(b, s.psn & 0xFFFFFF);   // A = 0, PSN
		}
	}
	for (size_t i = 0; i < s.payload_len; i++)
		b.push_back(s.payload_fill);
	return b;
}

std::string hex(const Bytes &b, size_t max)
{
	std::string s;
	char buf[4];
	for (size_t i = 0; i < b.size() && i < max; i++) {
		std::snprintf(buf, sizeof(buf), "%02x", b[i]);
		s += buf;
		if (i % 4 == 3)
			s += ' ';
	}
	if (b.size() > max)
		s += "...";
	return s;
}

} // namespace qn
