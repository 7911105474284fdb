/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ecn.h - RED/ECN marking at enqueue (common.md §3, DCQCN Eq. 5):
 *   p = 0 for q <= Kmin; Pmax (q - Kmin) / (Kmax - Kmin) for Kmin < q <= Kmax; 1 above Kmax.
 * Only ECT(0)/ECT(1) packets are marked (ECN := CE); Not-ECT is never marked. The DSCP bits
 * are kept and the IPv4 header checksum is patched incrementally (RFC 1624).
 */
#ifndef QN_ECN_H
#define QN_ECN_H

#include "bpf_common.h"
#include "qn_abi.h"

#define QN_ECN_MASK 0x3
#define QN_ECN_CE 0x3

/* Return: 1 when the RED profile marks a packet at queue depth q (bytes). */
static __always_inline int qn_red_decide(const struct qn_set_red *red, __u64 q)
{
	__u64 span, p_ppm;

	if (q <= red->kmin_bytes)
		return 0;
	if (q > red->kmax_bytes)
		return 1;
	span = red->kmax_bytes - red->kmin_bytes;
	if (!span)
		return 1;
	p_ppm = (q - red->kmin_bytes) * red->pmax_ppm / span;
	return bpf_get_prandom_u32() % 1000000 < p_ppm;
}

/* Replace the IPv4 header's first 16-bit word (version/IHL, TOS) m_old by m_new and patch the
 * header checksum: HC' = ~(~HC + ~m + m') (RFC 1624, eq. 3). The word is built from its bytes by
 * the callers (no type punning: clang may reorder a __u16 load around the byte store to tos). */
static __always_inline void qn_ipv4_patch_tos(struct iphdr *ip, __u32 m_old, __u32 m_new)
{
	__u32 hc = bpf_ntohs(ip->check), sum;

	((__u8 *)ip)[1] = (__u8)m_new;
	sum = (~hc & 0xFFFF) + (~m_old & 0xFFFF) + m_new;
	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	ip->check = bpf_htons((__u16)~sum);
}

/* Set CE in an ECT packet's TOS, keeping DSCP, and patch the header checksum. */
static __always_inline void qn_ipv4_set_ce(struct iphdr *ip)
{
	__u8 *b = (__u8 *)ip;
	__u32 m_old = ((__u32)b[0] << 8) | b[1];

	qn_ipv4_patch_tos(ip, m_old, m_old | QN_ECN_CE);
}

/* Set the ECN field to `ecn` (e.g. ECT(0) = 2), keeping DSCP, and patch the header checksum. */
static __always_inline void qn_ipv4_set_ecn(struct iphdr *ip, __u32 ecn)
{
	__u8 *b = (__u8 *)ip;
	__u32 m_old = ((__u32)b[0] << 8) | b[1];

	qn_ipv4_patch_tos(ip, m_old, (m_old & ~(__u32)QN_ECN_MASK) | (ecn & QN_ECN_MASK));
}

#endif /* QN_ECN_H */
