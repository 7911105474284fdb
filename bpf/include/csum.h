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

/* qn_ipv4_csum - the header checksum of a 20-byte IPv4 header (its check field zeroed first). */
static __always_inline __u16 qn_ipv4_csum(struct iphdr *ip)
{
	__u16 *w = (__u16 *)ip;
	__u32 sum = 0;
	int i;

	ip->check = 0;
#pragma unroll
	for (i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	return (__u16)~sum;
}

#endif /* QN_CSUM_H */
