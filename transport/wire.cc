// wire.cc - RoCEv2 frame encoding and parsing (wire.h).
#include "transport/wire.h"

#include <cstring>

namespace qn::tp {

namespace {

void put16(uint8_t *p, uint32_t v)
{
	p[0] = uint8_t(v >> 8);
	p[1] = uint8_t(v);
}
void put24(uint8_t *p, uint32_t v)
{
	p[0] = uint8_t(v >> 16);
	p[1] = uint8_t(v >> 8);
	p[2] = uint8_t(v);
}
void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}
uint32_t get16(const uint8_t *p) { return uint32_t(p[0]) << 8 | p[1]; }
uint32_t get24(const uint8_t *p) { return uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2]; }
uint32_t get32(const uint8_t *p) { return get16(p) << 16 | get16(p + 2); }

uint16_t ip_checksum(const uint8_t *h)
{
	uint32_t sum = 0;
	for (size_t i = 0; i < QN_IPV4_HLEN; i += 2)
		sum += get16(h + i);
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return uint16_t(~sum);
}

struct CrcTable {
	uint32_t t[256];
	constexpr CrcTable() : t{}
	{
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
			t[i] = c;
		}
	}
};
constexpr CrcTable kCrc;

bool known_opcode(uint8_t op)
{
	switch (op) {
	case QN_OP_RC_SEND_FIRST:
	case QN_OP_RC_SEND_MIDDLE:
	case QN_OP_RC_SEND_LAST:
	case QN_OP_RC_SEND_ONLY:
	case QN_OP_RC_ACK:
	case QN_OP_CNP:
		return true;
	default:
		return false;
	}
}

} // namespace

std::string to_string(Kind k)
{
	switch (k) {
	case Kind::Data: return "data";
	case Kind::Ack: return "ack";
	case Kind::Nak: return "nak";
	case Kind::Cnp: return "cnp";
	case Kind::Pfc: return "pfc";
	case Kind::Bts: return "bts";
	case Kind::Postcard: return "postcard";
	}
	return "?";
}

std::string to_string(ParseError e)
{
	switch (e) {
	case ParseError::None: return "none";
	case ParseError::TooShort: return "too_short";
	case ParseError::NotIpv4: return "not_ipv4";
	case ParseError::BadIpHeader: return "bad_ip_header";
	case ParseError::Fragment: return "fragment";
	case ParseError::NotRoce: return "not_roce";
	case ParseError::BadUdpLength: return "bad_udp_length";
	case ParseError::BadBth: return "bad_bth";
	case ParseError::BadAeth: return "bad_aeth";
	case ParseError::BadPad: return "bad_pad";
	case ParseError::BadIcrc: return "bad_icrc";
	case ParseError::BadPfc: return "bad_pfc";
	case ParseError::BadSignal: return "bad_signal";
	case ParseError::Count: break;
	}
	return "?";
}

uint32_t crc32(uint32_t crc, const uint8_t *p, size_t n)
{
	crc = ~crc;
	for (size_t i = 0; i < n; i++)
		crc = kCrc.t[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
	return ~crc;
}

uint32_t icrc(const uint8_t *ip, size_t ip_len)
{
	static constexpr uint8_t kLrh[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
	if (ip_len < QN_IPV4_HLEN + QN_UDP_HLEN + QN_BTH_LEN)
		return 0;
	uint8_t hdr[QN_IPV4_HLEN + QN_UDP_HLEN + QN_BTH_LEN];
	std::memcpy(hdr, ip, sizeof(hdr));
	hdr[1] = 0xFF;                 // TOS
	hdr[8] = 0xFF;                 // TTL
	hdr[10] = hdr[11] = 0xFF;      // header checksum
	hdr[26] = hdr[27] = 0xFF;      // UDP checksum
	hdr[28 + 4] = 0xFF;            // BTH byte 4: FECN/BECN/resv
	uint32_t c = crc32(0, kLrh, sizeof(kLrh));
	c = crc32(c, hdr, sizeof(hdr));
	return crc32(c, ip + sizeof(hdr), ip_len - sizeof(hdr));
}

size_t write_ip_udp(const TxHeader &h, uint16_t dport, size_t ip_len, uint8_t *out)
{
	uint8_t *eth = out;
	std::memcpy(eth, h.dst.mac.data(), 6);
	std::memcpy(eth + 6, h.src.mac.data(), 6);
	put16(eth + 12, QN_ETH_P_IPV4);
	uint8_t *ip = out + QN_ETH_HLEN;
	ip[0] = 0x45;
	ip[1] = uint8_t(h.dscp << 2 | (h.tos_bits & 0xFC) | (h.ecn & 3));
	put16(ip + 2, uint32_t(ip_len));
	put16(ip + 4, h.ip_id);
	put16(ip + 6, 0x4000); // DF
	ip[8] = 64;
	ip[9] = 17;
	put16(ip + 10, 0);
	put32(ip + 12, h.src.ip);
	put32(ip + 16, h.dst.ip);
	put16(ip + 10, ip_checksum(ip));
	uint8_t *udp = ip + QN_IPV4_HLEN;
	put16(udp, h.sport);
	put16(udp + 2, dport);
	put16(udp + 4, uint32_t(ip_len - QN_IPV4_HLEN));
	put16(udp + 6, 0); // RoCEv2 NICs send 0 (allowed for IPv4)
	return QN_ETH_HLEN + QN_IPV4_HLEN + QN_UDP_HLEN;
}

size_t write_headers(const TxHeader &h, size_t after_bth_len, uint8_t pad, bool icrc, uint8_t *out)
{
	const size_t ip_len = QN_IPV4_HLEN + QN_UDP_HLEN + QN_BTH_LEN + after_bth_len +
			      (icrc ? QN_ICRC_LEN : 0);
	uint8_t *bth = out + write_ip_udp(h, QN_ROCE_UDP_PORT, ip_len, out);
	bth[0] = h.opcode;
	bth[1] = uint8_t((pad & 3) << 4);
	put16(bth + 2, QN_ROCE_DEFAULT_PKEY);
	bth[4] = h.becn ? 0x40 : 0;
	put24(bth + 5, h.dest_qp & kPsnMask);
	bth[8] = h.ack_req ? 0x80 : 0;
	put24(bth + 9, h.psn & kPsnMask);
	return QN_ROCE_HDR_LEN;
}

void finish_frame(uint8_t *out, size_t len_without_icrc, bool with_icrc)
{
	if (!with_icrc)
		return;
	uint32_t c = icrc(out + QN_ETH_HLEN, len_without_icrc - QN_ETH_HLEN);
	uint8_t *p = out + len_without_icrc;
	// Least-significant byte first (common.md §1.4).
	p[0] = uint8_t(c);
	p[1] = uint8_t(c >> 8);
	p[2] = uint8_t(c >> 16);
	p[3] = uint8_t(c >> 24);
}

size_t encode_ack(const TxHeader &h, bool with_icrc, uint8_t *out, size_t cap)
{
	const size_t len = kAckFrameBytes;
	if (len + (with_icrc ? QN_ICRC_LEN : 0) > cap)
		return 0;
	TxHeader a = h;
	a.opcode = QN_OP_RC_ACK;
	size_t off = write_headers(a, QN_AETH_LEN + sizeof(qn_qack), 0, with_icrc, out);
	uint8_t *aeth = out + off;
	aeth[0] = h.syndrome;
	put24(aeth + 1, h.msn & kPsnMask);
	uint8_t *q = aeth + QN_AETH_LEN;
	std::memset(q, 0, sizeof(qn_qack));
	q[0] = h.qack_flags;
	put16(q + 2, h.ce_pkts);
	put32(q + 8, uint32_t(h.sack >> 32));
	put32(q + 12, uint32_t(h.sack));
	finish_frame(out, len, with_icrc);
	return len + (with_icrc ? QN_ICRC_LEN : 0);
}

size_t encode_cnp(const TxHeader &h, std::span<const uint8_t, QN_CNP_PAYLOAD_LEN> payload, bool with_icrc,
		  uint8_t *out, size_t cap)
{
	const size_t len = kCnpFrameBytes;
	if (len + (with_icrc ? QN_ICRC_LEN : 0) > cap)
		return 0;
	TxHeader c = h;
	c.opcode = QN_OP_CNP;
	c.becn = true;
	c.ack_req = false;
	size_t off = write_headers(c, QN_CNP_PAYLOAD_LEN, 0, with_icrc, out);
	std::memcpy(out + off, payload.data(), QN_CNP_PAYLOAD_LEN);
	finish_frame(out, len, with_icrc);
	return len + (with_icrc ? QN_ICRC_LEN : 0);
}

size_t encode_bts(const TxHeader &h, const BtsInfo &b, std::span<const uint8_t, kTrimmedBytes> trimmed,
		  uint8_t *out, size_t cap)
{
	if (kBtsFrameBytes > cap)
		return 0;
	TxHeader o = h;
	o.dscp = QN_DSCP_CONTROL;
	o.ecn = 0;
	o.tos_bits = 0;
	uint8_t *p = out + write_ip_udp(o, QN_BTS_UDP_PORT, QN_BTS_IP_LEN, out);
	p[0] = uint8_t((b.version & 0xF) << 4 | (b.origin & 0xF));
	p[1] = b.cacheable ? QN_BTS_CACHEABLE : 0;
	put16(p + 2, b.pause_us);
	put32(p + 4, b.reporter);
	std::memcpy(p + 8, trimmed.data(), kTrimmedBytes);
	return kBtsFrameBytes;
}

size_t encode_postcard(const TxHeader &h, const PostcardInfo &c, uint8_t *out, size_t cap)
{
	if (kPostcardFrameBytes > cap)
		return 0;
	TxHeader o = h;
	o.dscp = QN_DSCP_CONTROL;
	o.tos_bits = 0;
	uint8_t *p = out + write_ip_udp(o, QN_POSTCARD_UDP_PORT, QN_POSTCARD_IP_LEN, out);
	p[0] = c.version;
	put24(p + 1, c.psn & kPsnMask);
	put32(p + 4, uint32_t(c.switch_id >> 32));
	put32(p + 8, uint32_t(c.switch_id));
	put32(p + 12, c.flow_saddr);
	put32(p + 16, c.flow_daddr);
	put16(p + 20, c.flow_sport);
	put16(p + 22, c.flow_dport);
	put32(p + 24, c.dest_qp & kPsnMask);
	put32(p + 28, c.i_p);
	put32(p + 32, c.q1);
	put32(p + 36, c.rate_mbps);
	put32(p + 40, c.recent_bytes);
	put32(p + 44, c.recent_marked_bytes);
	put32(p + 48, uint32_t(c.t0_ns >> 32));
	put32(p + 52, uint32_t(c.t0_ns));
	return kPostcardFrameBytes;
}

namespace {

// The signal body after the UDP header: `body` has `n` bytes (the IP length says so).
ParseError parse_bts(const uint8_t *body, size_t n, Packet &o)
{
	if (n < sizeof(qn_bts))
		return ParseError::BadSignal;
	BtsInfo &b = o.bts;
	b.version = uint8_t(body[0] >> 4);
	b.origin = uint8_t(body[0] & 0xF);
	if (b.version != QN_BTS_VERSION)
		return ParseError::BadSignal;
	b.cacheable = body[1] & QN_BTS_CACHEABLE;
	b.pause_us = uint16_t(get16(body + 2));
	b.reporter = get32(body + 4);
	const uint8_t *ip = body + 8, *udp = ip + QN_IPV4_HLEN, *bth = udp + QN_UDP_HLEN;
	if ((ip[0] >> 4) != 4)
		return ParseError::BadSignal;
	b.orig_dscp = uint8_t(ip[1] >> 2);
	b.orig_src_ip = get32(ip + 12);
	b.orig_dst_ip = get32(ip + 16);
	b.orig_sport = uint16_t(get16(udp));
	b.orig_dest_qp = get24(bth + 5);
	b.orig_psn = get24(bth + 9);
	o.kind = Kind::Bts;
	o.payload = {body, n};
	return ParseError::None;
}

ParseError parse_postcard(const uint8_t *body, size_t n, Packet &o)
{
	if (n < sizeof(qn_postcard) || body[0] != QN_POSTCARD_VERSION)
		return ParseError::BadSignal;
	PostcardInfo &c = o.postcard;
	c.version = body[0];
	c.psn = get24(body + 1);
	c.switch_id = uint64_t(get32(body + 4)) << 32 | get32(body + 8);
	c.flow_saddr = get32(body + 12);
	c.flow_daddr = get32(body + 16);
	c.flow_sport = uint16_t(get16(body + 20));
	c.flow_dport = uint16_t(get16(body + 22));
	c.dest_qp = get32(body + 24) & kPsnMask;
	c.i_p = get32(body + 28);
	c.q1 = get32(body + 32);
	c.rate_mbps = get32(body + 36);
	c.recent_bytes = get32(body + 40);
	c.recent_marked_bytes = get32(body + 44);
	c.t0_ns = uint64_t(get32(body + 48)) << 32 | get32(body + 52);
	o.kind = Kind::Postcard;
	o.payload = {body, n};
	return ParseError::None;
}

} // namespace

ParseError parse(std::span<const uint8_t> f, bool with_icrc, Packet &o)
{
	o = Packet{};
	if (f.size() < QN_ETH_HLEN)
		return ParseError::TooShort;
	const uint8_t *p = f.data();
	size_t n = f.size();
	std::memcpy(o.dst.mac.data(), p, 6);
	std::memcpy(o.src.mac.data(), p + 6, 6);
	size_t off = 12;
	uint32_t proto = get16(p + off);
	for (int i = 0; i < QN_VLAN_MAX_DEPTH && (proto == QN_ETH_P_8021Q || proto == QN_ETH_P_8021AD); i++) {
		off += 4;
		if (off + 2 > n)
			return ParseError::TooShort;
		proto = get16(p + off);
	}
	off += 2;
	if (proto == QN_ETH_P_MAC_CONTROL) {
		if (off + 4 > n)
			return ParseError::TooShort;
		uint32_t opc = get16(p + off);
		if (opc == QN_PFC_OPCODE) {
			if (off + 4 + 16 > n)
				return ParseError::TooShort;
			o.kind = Kind::Pfc;
			o.pfc_enable = p[off + 3];
			for (size_t i = 0; i < 8; i++)
				o.pfc_quanta[i] = uint16_t(get16(p + off + 4 + 2 * i));
			return ParseError::None;
		}
		if (opc == QN_PAUSE_OPCODE) { // 802.3x: one time for every priority
			if (off + 4 > n)
				return ParseError::TooShort;
			o.kind = Kind::Pfc;
			o.pfc_enable = 0xFF;
			o.pfc_quanta.fill(uint16_t(get16(p + off + 2)));
			return ParseError::None;
		}
		return ParseError::BadPfc;
	}
	if (proto != QN_ETH_P_IPV4)
		return ParseError::NotIpv4;
	if (off + QN_IPV4_HLEN > n)
		return ParseError::TooShort;
	const uint8_t *ip = p + off;
	if (ip[0] != 0x45)
		return ParseError::BadIpHeader; // options are not sent by RoCE NICs
	const size_t ip_len = get16(ip + 2);
	if (ip_len < QN_IPV4_HLEN || off + ip_len > n)
		return ParseError::BadIpHeader;
	if (ip_checksum(ip) != 0)
		return ParseError::BadIpHeader;
	if ((get16(ip + 6) & 0x3FFF) != 0)
		return ParseError::Fragment;
	if (ip[9] != 17 || ip_len < QN_IPV4_HLEN + QN_UDP_HLEN)
		return ParseError::NotRoce;
	o.dscp = uint8_t(ip[1] >> 2);
	o.ecn = uint8_t(ip[1] & 3);
	o.src.ip = get32(ip + 12);
	o.dst.ip = get32(ip + 16);
	const uint8_t *udp = ip + QN_IPV4_HLEN;
	const uint32_t dport = get16(udp + 2);
	if (dport != QN_ROCE_UDP_PORT && dport != QN_BTS_UDP_PORT && dport != QN_POSTCARD_UDP_PORT)
		return ParseError::NotRoce;
	o.sport = uint16_t(get16(udp));
	if (get16(udp + 4) != ip_len - QN_IPV4_HLEN)
		return ParseError::BadUdpLength;
	if (dport == QN_BTS_UDP_PORT)
		return parse_bts(udp + QN_UDP_HLEN, ip_len - QN_IPV4_HLEN - QN_UDP_HLEN, o);
	if (dport == QN_POSTCARD_UDP_PORT)
		return parse_postcard(udp + QN_UDP_HLEN, ip_len - QN_IPV4_HLEN - QN_UDP_HLEN, o);
	size_t l4 = ip_len - QN_IPV4_HLEN - QN_UDP_HLEN; // BTH .. ICRC
	const size_t trailer = with_icrc ? QN_ICRC_LEN : 0;
	if (l4 < QN_BTH_LEN + trailer)
		return ParseError::TooShort;
	const uint8_t *bth = udp + QN_UDP_HLEN;
	o.opcode = bth[0];
	const uint8_t pad = uint8_t((bth[1] >> 4) & 3);
	if ((bth[1] & 0x0F) != 0 || get16(bth + 2) != QN_ROCE_DEFAULT_PKEY || !known_opcode(o.opcode))
		return ParseError::BadBth;
	o.becn = bth[4] & 0x40;
	o.dest_qp = get24(bth + 5);
	o.ack_req = bth[8] & 0x80;
	o.psn = get24(bth + 9);
	if (with_icrc) {
		const uint8_t *c = ip + ip_len - QN_ICRC_LEN;
		uint32_t want = uint32_t(c[0]) | uint32_t(c[1]) << 8 | uint32_t(c[2]) << 16 |
				uint32_t(c[3]) << 24;
		if (icrc(ip, ip_len - QN_ICRC_LEN) != want)
			return ParseError::BadIcrc;
	}
	const uint8_t *body = bth + QN_BTH_LEN;
	size_t body_len = l4 - QN_BTH_LEN - trailer;
	switch (o.opcode) {
	case QN_OP_CNP:
		o.kind = Kind::Cnp;
		o.payload = {body, body_len};
		return ParseError::None;
	case QN_OP_RC_ACK: {
		if (body_len < QN_AETH_LEN + sizeof(qn_qack))
			return ParseError::BadAeth;
		o.syndrome = body[0];
		o.msn = get24(body + 1);
		if (o.syndrome <= 0x1F)
			o.kind = Kind::Ack;
		else if (o.syndrome == QN_AETH_NAK_SEQ)
			o.kind = Kind::Nak;
		else
			return ParseError::BadAeth;
		const uint8_t *q = body + QN_AETH_LEN;
		o.qack_flags = q[0];
		o.ce_pkts = uint16_t(get16(q + 2));
		o.sack = uint64_t(get32(q + 8)) << 32 | get32(q + 12);
		return ParseError::None;
	}
	default:
		if (pad > body_len)
			return ParseError::BadPad;
		o.kind = Kind::Data;
		o.payload = {body, body_len - pad};
		return ParseError::None;
	}
}

} // namespace qn::tp
