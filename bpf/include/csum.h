/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* csum.h - incremental Internet checksum updates (RFC 1624). */
#ifndef QN_CSUM_H
#define QN_CSUM_H

/*
 * qn_ip_decrease_ttl - decrement the TTL and patch the header checksum in place, as the
 * kernel's ip_decrease_ttl() does: TTL is the high byte of a 16-bit word, so the checksum
 * grows by 0x0100 (network order) with end-around carry.
 */
static __always_inline void qn_ip_decrease_ttl(struct iphdr *ip)
{
	__u32 check = ip->check;

	check += bpf_htons(0x0100);
	ip->check = (__sum16)(check + (check >= 0xFFFF));
	ip->ttl--;
}

#endif /* QN_CSUM_H */
