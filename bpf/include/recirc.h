/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * recirc.h - the recirculation builder, on the ingress of the switch's recirculation device.
 * The ingress pipeline sends it a bpf_clone_redirect(..., BPF_F_INGRESS) copy marked
 * QN_MARK_RECIRC; the builder trims the copy to its headers, rewrites it into a signal addressed
 * to the original sender and routes it like any packet (FIB, ECMP, MAC rewrite, redirect),
 * while the original continues untouched. The format made here is the test echo
 * (QN_ECHO_UDP_PORT: Eth + IPv4 + UDP + the original BTH); SFC's BTS and PB-FS's postcards
 * plug their layouts in at qn_recirc_build.
 */
#ifndef QN_RECIRC_H
#define QN_RECIRC_H

#include "bpf_common.h"
#include "maps.h"

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

static __always_inline int qn_recirc_build(struct __sk_buff *skb)
{
	struct qn_fib_key key;
	struct qn_fib_val *fib;
	struct qn_nexthop *nh;
	struct ethhdr *eth;
	struct iphdr *ip;
	struct udphdr *udp;
	void *data, *data_end;
	__u32 addr, idx;

	if ((skb->mark & QN_MARK_MAGIC_MASK) != QN_MARK_RECIRC)
		return TC_ACT_SHOT;
	if (skb->len < QN_ECHO_LEN)
		return TC_ACT_SHOT;
	/* Trim to Eth + IPv4 + UDP + BTH (untagged frames without IP options only). */
	if (bpf_skb_change_tail(skb, QN_ECHO_LEN, 0))
		return TC_ACT_SHOT;
	if (bpf_skb_pull_data(skb, QN_ECHO_LEN))
		return TC_ACT_SHOT;
	data = qn_skb_data(skb);
	data_end = qn_skb_data_end(skb);
	if (data + QN_ECHO_LEN > data_end)
		return TC_ACT_SHOT;
	eth = data;
	ip = data + QN_ETH_HLEN;
	udp = data + QN_ETH_HLEN + QN_IPV4_HLEN;
	if (eth->h_proto != bpf_htons(QN_ETH_P_IPV4) || ip->ihl != 5 || ip->protocol != IPPROTO_UDP_NUM)
		return TC_ACT_SHOT;

	/* To the sender: swap addresses; the UDP source port stays the sender's (its QPN). */
	addr = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = addr;
	ip->tos = QN_DSCP_CONTROL << 2; /* Not-ECT, control class */
	ip->ttl = 64;
	ip->frag_off = bpf_htons(0x4000);
	ip->tot_len = bpf_htons(QN_ECHO_LEN - QN_ETH_HLEN);
	ip->check = qn_ipv4_csum(ip);
	udp->dest = bpf_htons(QN_ECHO_UDP_PORT); /* source port stays: the sender's QPN */
	udp->len = bpf_htons(QN_UDP_HLEN + QN_BTH_LEN);
	udp->check = 0;

	key.prefixlen = 32;
	key.addr_be = ip->daddr;
	fib = bpf_map_lookup_elem(&qn_fib, &key);
	if (!fib || !fib->n_nexthops)
		return TC_ACT_SHOT;
	idx = 0; /* signals take the first equal-cost path */
	nh = &fib->nh[idx];
	__builtin_memcpy(eth->h_dest, nh->dmac, 6);
	__builtin_memcpy(eth->h_source, nh->smac, 6);
	skb->mark = 0; /* not charged: the dequeue hook ignores it */
	return bpf_redirect(nh->ifindex, 0);
}

#endif /* QN_RECIRC_H */
