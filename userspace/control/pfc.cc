// pfc.cc - 802.1Qbb frames.
#include "control/pfc.h"

#include "common/abi.h"

namespace qn {

Bytes build_pfc_frame(const Mac &src, uint8_t prio_mask, const std::array<uint16_t, 8> &quanta)
{
	Bytes b;
	b.reserve(kPfcFrameLen);
	for (uint8_t x : {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01})
		b.push_back(x);
	for (uint8_t x : src)
		b.push_back(x);
	b.push_back(uint8_t(QN_ETH_P_MAC_CONTROL >> 8));
	b.push_back(uint8_t(QN_ETH_P_MAC_CONTROL & 0xFF));
	b.push_back(uint8_t(QN_PFC_OPCODE >> 8));
	b.push_back(uint8_t(QN_PFC_OPCODE & 0xFF));
	b.push_back(0);
	b.push_back(prio_mask);
	for (int i = 0; i < 8; i++) {
		uint16_t q = (prio_mask >> i) & 1 ? quanta[size_t(i)] : 0;
		b.push_back(uint8_t(q >> 8));
		b.push_back(uint8_t(q));
	}
	b.resize(kPfcFrameLen, 0);
	return b;
}

Bytes pfc_frame_for(const Mac &src, uint32_t prio, uint16_t quanta)
{
	std::array<uint16_t, 8> q{};
	q[prio & 7] = quanta;
	return build_pfc_frame(src, uint8_t(1u << (prio & 7)), q);
}

Bytes pfc_frame_kick(const Mac &src) { return build_pfc_frame(src, 0, {}); }

std::optional<PfcFrame> parse_pfc_frame(const Bytes &f)
{
	if (f.size() < 34)
		return std::nullopt;
	if ((f[12] << 8 | f[13]) != QN_ETH_P_MAC_CONTROL || (f[14] << 8 | f[15]) != QN_PFC_OPCODE)
		return std::nullopt;
	PfcFrame p;
	p.prio_mask = f[17];
	for (size_t i = 0; i < 8; i++)
		p.quanta[i] = uint16_t(f[18 + 2 * i] << 8 | f[19 + 2 * i]);
	return p;
}

uint64_t pfc_quanta_ns(uint32_t quanta, uint64_t wall_rate_bps)
{
	if (!wall_rate_bps)
		return 0;
	return uint64_t(static_cast<unsigned __int128>(quanta) * 512 * 1'000'000'000ULL / wall_rate_bps);
}

} // namespace qn
