// wire.h - the RoCEv2 codec of the engine: Eth / IPv4 (DSCP, ECN) / UDP 4791 / BTH /
// [AETH / qn_qack] / payload / pad / [ICRC], CNPs (BTH opcode 0x81) and 802.1Qbb PFC frames in.
// Layouts come from bpf/include/qn_abi.h (the contract shared with the switch programs);
// rules from ../shared/specs/common.md §1-2. See docs/wire.md.
//
// Units: sizes in bytes; PSNs and QPNs are the 24-bit wire values.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "abi.h"
#include "topology.h"

namespace qn::tp {

// Bytes of headers before the payload of a data packet (Eth+IPv4+UDP+BTH).
inline constexpr size_t kDataHdrBytes = QN_ROCE_HDR_LEN;
// Bytes of an ACK/NAK frame without ICRC: headers + AETH + qn_qack.
inline constexpr size_t kAckFrameBytes = QN_ROCE_HDR_LEN + QN_AETH_LEN + sizeof(qn_qack);
// Bytes of a CNP frame without ICRC.
inline constexpr size_t kCnpFrameBytes = QN_ROCE_HDR_LEN + QN_CNP_PAYLOAD_LEN;
inline constexpr uint32_t kPsnMask = 0xFFFFFF;

// Return: the largest payload per packet for an IP MTU (IPv4+UDP+BTH+ICRC fit in the MTU;
// rounded down to 4 bytes so only a message's last packet carries pad).
constexpr uint32_t payload_mtu(uint32_t ip_mtu)
{
	return (ip_mtu - QN_IPV4_HLEN - QN_UDP_HLEN - QN_BTH_LEN - QN_ICRC_LEN) & ~3u;
}

// The UDP source port that carries a sender QPN (qn_abi.h QN_ROCE_SPORT_BASE).
constexpr uint16_t qpn_to_sport(uint32_t qpn)
{
	return uint16_t(QN_ROCE_SPORT_BASE | (qpn & 0x3FFF));
}

// The addresses of one side of a conversation.
struct Endpoint {
	Mac mac{};
	uint32_t ip = 0; // host order
};

enum class Kind : uint8_t { Data, Ack, Nak, Cnp, Pfc };
std::string to_string(Kind k);

// Why a frame was not accepted. Each has a counter in the engine.
enum class ParseError : uint8_t {
	None = 0,
	TooShort,       // shorter than the headers it announces
	NotIpv4,        // EtherType (after up to two VLAN tags) is not IPv4 or MAC control
	BadIpHeader,    // version/IHL, total length or header checksum wrong
	Fragment,       // IPv4 fragment
	NotRoce,        // not UDP to port 4791
	BadUdpLength,   // UDP length disagrees with the IP length
	BadBth,         // TVer != 0, unknown opcode, P_Key not 0xFFFF
	BadAeth,        // ACK/NAK without room for AETH + qn_qack, or an unknown syndrome
	BadPad,         // PadCnt larger than the payload
	BadIcrc,        // ICRC enabled and wrong
	BadPfc,         // MAC control frame that is not a PFC/PAUSE frame
	Count
};
std::string to_string(ParseError e);

// Everything the engine reads from a received frame. Payload points into the frame.
struct Packet {
	Kind kind = Kind::Data;
	Endpoint src, dst;
	uint8_t dscp = 0;
	uint8_t ecn = 0;           // 0 Not-ECT, 2 ECT(0), 1 ECT(1), 3 CE
	uint16_t sport = 0;
	uint8_t opcode = 0;
	uint32_t dest_qp = 0;
	uint32_t psn = 0;
	bool ack_req = false;
	bool becn = false;
	// ACK/NAK
	uint8_t syndrome = 0;
	uint32_t msn = 0;
	uint8_t qack_flags = 0;
	uint16_t ce_pkts = 0;
	uint64_t sack = 0;
	// PFC: quanta per priority and the enable vector (bit i = Time[i] valid).
	uint8_t pfc_enable = 0;
	std::array<uint16_t, 8> pfc_quanta{};
	std::span<const uint8_t> payload;
};

// What to write. Headers are built from these fields; the payload is copied in.
struct TxHeader {
	Endpoint src, dst;
	uint8_t dscp = QN_DSCP_DATA;
	uint8_t ecn = 2;           // ECT(0): every RoCE packet is ECN-capable
	uint16_t sport = 0;
	uint16_t ip_id = 0;
	uint8_t opcode = QN_OP_RC_SEND_ONLY;
	uint32_t dest_qp = 0;
	uint32_t psn = 0;
	bool ack_req = false;
	bool becn = false;
	// ACK/NAK only
	uint8_t syndrome = QN_AETH_ACK;
	uint32_t msn = 0;
	uint8_t qack_flags = 0;
	uint16_t ce_pkts = 0;
	uint64_t sack = 0;
};

// Write a data packet (opcode SEND_*) with `payload_len` bytes produced by `fill` (called
// with the destination pointer). Adds pad to 4 bytes and the ICRC when `icrc`.
// Return: the frame length, or 0 when it does not fit in `cap`.
template <typename Fill>
size_t encode_data(const TxHeader &h, size_t payload_len, bool icrc, uint8_t *out, size_t cap,
		   Fill &&fill);
// Write an ACK or NAK (opcode ACKNOWLEDGE, AETH + qn_qack). Return: length or 0.
size_t encode_ack(const TxHeader &h, bool icrc, uint8_t *out, size_t cap);
// Write a CNP (opcode 0x81, BECN set, 16 zero bytes, DSCP 48 ECT(0)). Return: length or 0.
size_t encode_cnp(const TxHeader &h, bool icrc, uint8_t *out, size_t cap);

// Parse a received frame. With `icrc` the last 4 bytes must be the ICRC.
// Return: ParseError::None and `out` filled, or the first problem found.
ParseError parse(std::span<const uint8_t> frame, bool icrc, Packet &out);

// Standard CRC-32 (reflected 0xEDB88320, init and final XOR 0xFFFFFFFF) continued from `crc`
// (pass 0 to start).
uint32_t crc32(uint32_t crc, const uint8_t *p, size_t n);
// Return: the RoCEv2 ICRC over an IPv4 packet starting at the IP header (`ip`, `ip_len` bytes
// up to but not including the ICRC), variant fields masked (common.md §1.4).
uint32_t icrc(const uint8_t *ip, size_t ip_len);

// Internal: headers common to all RoCE frames; returns the offset after the BTH.
size_t write_headers(const TxHeader &h, size_t after_bth_len, uint8_t pad, bool icrc, uint8_t *out);
void finish_frame(uint8_t *out, size_t len_without_icrc, bool icrc);

template <typename Fill>
size_t encode_data(const TxHeader &h, size_t payload_len, bool icrc, uint8_t *out, size_t cap,
		   Fill &&fill)
{
	const uint8_t pad = uint8_t((4 - (payload_len & 3)) & 3);
	const size_t len = kDataHdrBytes + payload_len + pad;
	if (len + (icrc ? QN_ICRC_LEN : 0) > cap)
		return 0;
	size_t off = write_headers(h, payload_len + pad, pad, icrc, out);
	fill(out + off);
	for (size_t i = 0; i < pad; i++)
		out[off + payload_len + i] = 0;
	finish_frame(out, len, icrc);
	return len + (icrc ? QN_ICRC_LEN : 0);
}

} // namespace qn::tp
