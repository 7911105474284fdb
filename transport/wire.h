// wire.h - the RoCEv2 codec of the engine: Eth / IPv4 (DSCP, ECN) / UDP 4791 / BTH /
// [AETH / qn_qack] / payload / pad / [ICRC], CNPs (BTH opcode 0x81, causing PSN, 16-byte
// payload), the switches' signals back to senders (SFC BTS on UDP 4793, PB-FS CC-postcards on
// UDP 4792) and 802.1Qbb PFC frames in.
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

#include "common/abi.h"
#include "common/addr.h"

namespace qn::tp {

// Bytes of headers before the payload of a data packet (Eth+IPv4+UDP+BTH).
inline constexpr size_t kDataHdrBytes = QN_ROCE_HDR_LEN;
// Bytes of an ACK/NAK frame without ICRC: headers + AETH + qn_qack.
inline constexpr size_t kAckFrameBytes = QN_ROCE_HDR_LEN + QN_AETH_LEN + sizeof(qn_qack);
// Bytes of a CNP frame without ICRC.
inline constexpr size_t kCnpFrameBytes = QN_ROCE_HDR_LEN + QN_CNP_PAYLOAD_LEN;
// Bytes of a BTS and of a CC-postcard frame (no ICRC: not RoCE packets).
inline constexpr size_t kBtsFrameBytes = QN_ETH_HLEN + QN_BTS_IP_LEN;
inline constexpr size_t kPostcardFrameBytes = QN_ETH_HLEN + QN_POSTCARD_IP_LEN;
// The trimmed original headers a BTS carries: IPv4 + UDP + BTH.
inline constexpr size_t kTrimmedBytes = QN_IPV4_HLEN + QN_UDP_HLEN + QN_BTH_LEN;
inline constexpr uint32_t kPsnMask = 0xFFFFFF;

// Return: the largest payload per packet for an IP MTU (IPv4+UDP+BTH+ICRC fit in the MTU;
// rounded down to 4 bytes so only a message's last packet carries pad).
constexpr uint32_t payload_mtu(uint32_t ip_mtu)
{
	return (ip_mtu - QN_IPV4_HLEN - QN_UDP_HLEN - QN_BTH_LEN - QN_ICRC_LEN) & ~3u;
}

// Return: the frame bytes of a data packet with `payload` bytes (pad to 4, ICRC when `icrc`).
constexpr size_t data_frame_bytes(size_t payload, bool icrc)
{
	return kDataHdrBytes + payload + ((4 - (payload & 3)) & 3) + (icrc ? QN_ICRC_LEN : 0);
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

enum class Kind : uint8_t { Data, Ack, Nak, Cnp, Pfc, Bts, Postcard };
std::string to_string(Kind k);

// Why a frame was not accepted. Each has a counter in the engine.
enum class ParseError : uint8_t {
	None = 0,
	TooShort,       // shorter than the headers it announces
	NotIpv4,        // EtherType (after up to two VLAN tags) is not IPv4 or MAC control
	BadIpHeader,    // version/IHL, total length or header checksum wrong
	Fragment,       // IPv4 fragment
	NotRoce,        // not UDP to port 4791 (RoCE), 4792 (postcard) or 4793 (BTS)
	BadUdpLength,   // UDP length disagrees with the IP length
	BadBth,         // TVer != 0, unknown opcode, P_Key not 0xFFFF
	BadAeth,        // ACK/NAK without room for AETH + qn_qack, or an unknown syndrome
	BadPad,         // PadCnt larger than the payload
	BadIcrc,        // ICRC enabled and wrong
	BadPfc,         // MAC control frame that is not a PFC/PAUSE frame
	BadSignal,      // BTS or CC-postcard shorter than its layout or of an unknown version
	Count
};
std::string to_string(ParseError e);

// A BTS's fields (qn_abi.h struct qn_bts, sfc.md §5).
struct BtsInfo {
	uint8_t version = 0, origin = 0;
	bool cacheable = false;
	uint16_t pause_us = 0;
	uint32_t reporter = 0;
	// from the trimmed original headers
	uint32_t orig_src_ip = 0, orig_dst_ip = 0; // host order
	uint8_t orig_dscp = 0;
	uint16_t orig_sport = 0;
	uint32_t orig_dest_qp = 0, orig_psn = 0;
};

// A CC-postcard's fields (qn_abi.h struct qn_postcard, pbfs.md §5).
struct PostcardInfo {
	uint8_t version = 0;
	uint32_t psn = 0;
	uint64_t switch_id = 0;
	uint32_t flow_saddr = 0, flow_daddr = 0; // host order
	uint16_t flow_sport = 0, flow_dport = 0;
	uint32_t dest_qp = 0;
	uint32_t i_p = 0, q1 = 0, rate_mbps = 0, recent_bytes = 0, recent_marked_bytes = 0;
	uint64_t t0_ns = 0;
};

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
	// BTS / CC-postcard (kind Bts / Postcard)
	BtsInfo bts;
	PostcardInfo postcard;
	std::span<const uint8_t> payload;
};

// What to write. Headers are built from these fields; the payload is copied in.
struct TxHeader {
	Endpoint src, dst;
	uint8_t dscp = QN_DSCP_DATA;
	uint8_t ecn = 2;           // ECT(0) unless the controller chose otherwise (cc::TxMarks)
	uint8_t tos_bits = 0;      // ORed into the TOS byte above the ECN bits (marker bits, QN_TOS_PBT)
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
// Write a CNP (opcode 0x81, BECN set, DSCP 48 ECT(0)): BTH PSN = h.psn (the CE-marked packet
// that caused it), then the notification point's 16 payload bytes (zero for DCQCN).
// Return: length or 0.
size_t encode_cnp(const TxHeader &h, std::span<const uint8_t, QN_CNP_PAYLOAD_LEN> payload, bool icrc,
		  uint8_t *out, size_t cap);
// Write a BTS from `h` (outer addresses, sport, ip_id; DSCP 48 and Not-ECT are forced), the BTS
// fields of `b` (version, origin, cacheable, pause_us, reporter) and `trimmed`, the original
// packet's IPv4 + UDP + BTH headers as the switch saw them. Return: length or 0. (The switches
// build BTS in BPF; this is the reference for tests and tools.)
size_t encode_bts(const TxHeader &h, const BtsInfo &b, std::span<const uint8_t, kTrimmedBytes> trimmed,
		  uint8_t *out, size_t cap);
// Write a CC-postcard from `h` (outer addresses, sport, ip_id; DSCP 48) and `c`. Return: length or 0.
size_t encode_postcard(const TxHeader &h, const PostcardInfo &c, uint8_t *out, size_t cap);

// Parse a received frame. With `icrc` the last 4 bytes must be the ICRC.
// Return: ParseError::None and `out` filled, or the first problem found.
ParseError parse(std::span<const uint8_t> frame, bool icrc, Packet &out);

// Standard CRC-32 (reflected 0xEDB88320, init and final XOR 0xFFFFFFFF) continued from `crc`
// (pass 0 to start).
uint32_t crc32(uint32_t crc, const uint8_t *p, size_t n);
// Return: the RoCEv2 ICRC over an IPv4 packet starting at the IP header (`ip`, `ip_len` bytes
// up to but not including the ICRC), variant fields masked (common.md §1.4).
uint32_t icrc(const uint8_t *ip, size_t ip_len);

// Internal: Ethernet, IPv4 and UDP (to `dport`) with `ip_len` bytes of IP; returns the offset
// after the UDP header.
size_t write_ip_udp(const TxHeader &h, uint16_t dport, size_t ip_len, uint8_t *out);
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
