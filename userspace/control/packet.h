// packet.h - build test and benchmark frames: Ethernet [+ VLAN tags] / IPv4 [+ options] /
// UDP [/ BTH [/ payload]], with a valid IPv4 header checksum. Used by the BPF_PROG_TEST_RUN
// tables, the raw senders of the integration tests and `quench bench switch`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "control/topology.h"

namespace qn {

using Bytes = std::vector<uint8_t>;

struct FrameSpec {
	Mac dst{}, src{};
	std::vector<uint16_t> vlan_tcis;  // one 802.1Q tag per entry, outermost first
	uint16_t ethertype = 0x0800;      // used when not IPv4 (ARP, IPv6, 0x8808)
	bool ipv4 = true;
	uint32_t saddr = 0, daddr = 0;    // host order
	uint8_t tos = 0;
	uint8_t ttl = 64;
	uint8_t proto = 17;
	uint16_t frag_off = 0x4000;       // host order: DF set, offset 0
	std::vector<uint8_t> ip_options;  // multiple of 4 bytes
	uint16_t sport = 0xC000, dport = 4791;
	bool bth = true;                  // add a 12-byte BTH after UDP
	uint8_t opcode = 0x04;            // RC SEND_ONLY
	uint32_t dest_qp = 1;
	uint32_t psn = 0;
	size_t payload_len = 0;           // bytes after BTH (or after UDP without BTH)
	uint8_t payload_fill = 0xA5;
};

// Return: the frame (no FCS).
Bytes build_frame(const FrameSpec &s);

// IPv4 header checksum over hdr_len bytes (the checksum field included as stored).
// Return: 0 when the header's checksum is valid.
uint16_t ipv4_checksum(const uint8_t *hdr, size_t hdr_len);

// Hex dump for failure messages.
std::string hex(const Bytes &b, size_t max = 96);

} // namespace qn
