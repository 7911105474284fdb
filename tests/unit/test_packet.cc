// The frame builder used by the BPF tables and raw senders.
#include <catch2/catch.hpp>

#include "common/abi.h"
#include "control/packet.h"

using namespace qn;

TEST_CASE("build_frame__roce_layout", "[packet]")
{
	FrameSpec f;
	f.saddr = 0x0b000101;
	f.daddr = 0x0b000201;
	f.tos = 0x6a; // DSCP 26, ECT(0)
	f.dest_qp = 0xD2;
	f.psn = 0x123456;
	f.payload_len = 100;
	Bytes b = build_frame(f);
	// Expect: Eth 14 + IPv4 20 + UDP 8 + BTH 12 + payload.
	REQUIRE(b.size() == QN_ROCE_HDR_LEN + 100);
	CHECK(b[12] == 0x08);
	CHECK(b[14] == 0x45);
	CHECK(b[15] == 0x6a);
	CHECK((b[36] << 8 | b[37]) == QN_ROCE_UDP_PORT);
	CHECK(b[42] == 0x04);                            // SEND_ONLY
	CHECK((b[47] << 16 | b[48] << 8 | b[49]) == 0xD2); // DestQP
	CHECK((b[51] << 16 | b[52] << 8 | b[53]) == 0x123456);
	// Expect: a valid IPv4 checksum.
	CHECK(ipv4_checksum(&b[14], 20) == 0);
}

TEST_CASE("build_frame__vlan_and_options", "[packet]")
{
	FrameSpec f;
	f.vlan_tcis = {0x6005};
	f.ip_options = {1, 1, 1, 0}; // NOP NOP NOP EOL
	Bytes b = build_frame(f);
	CHECK((b[12] << 8 | b[13]) == 0x8100);
	CHECK((b[16] << 8 | b[17]) == 0x0800);
	CHECK(b[18] == 0x46); // IHL 6
	CHECK(ipv4_checksum(&b[18], 24) == 0);
}
