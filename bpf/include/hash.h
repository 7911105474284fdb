/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* hash.h - ECMP flow hash over the 5-tuple (3-tuple for fragments). */
#ifndef QN_HASH_H
#define QN_HASH_H

#include "parse.h"

/* murmur3 32-bit finaliser: full avalanche, so sequential ports spread evenly. */
static __always_inline __u32 qn_fmix32(__u32 h)
{
	h ^= h >> 16;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	return h;
}

/*
 * qn_flow_hash - hash of (saddr, daddr, proto, sport, dport) mixed with a per-switch seed.
 * Fragments hash on addresses and protocol only so every fragment of a datagram takes the same
 * path. Return: the 32-bit hash.
 */
static __always_inline __u32 qn_flow_hash(const struct qn_pkt *p, __u32 seed)
{
	__u32 h = seed;

	h = qn_fmix32(h ^ p->saddr_be);
	h = qn_fmix32(h ^ p->daddr_be);
	h = qn_fmix32(h ^ p->proto);
	if (!p->is_frag)
		h = qn_fmix32(h ^ (((__u32)p->sport << 16) | p->dport));
	return h;
}

#endif /* QN_HASH_H */
