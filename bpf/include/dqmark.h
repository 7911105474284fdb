/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * dqmark.h - RED/ECN decided at dequeue (common.md §3: "dequeue marking gives fresher signals"),
 * without a writable dequeue hook. The switch's tp_btf/qdisc_dequeue program sees each departing
 * packet and the port's backlog after its removal (the queue behind it), draws RED on that and,
 * to mark, records the packet's identity in qn_dqmarks. The next program that can write the
 * packet, the downstream switch's tc ingress or the host's XDP steering, takes the entry and
 * sets CE. Between the two there is only the veth (and, on a delayed switch link, the cable,
 * after which the downstream switch applies the mark), so the receiver sees the mark as if the
 * egress port had set it when the packet left.
 *
 * Identity: IPv4 source, destination, IP ID and UDP source port (the sender's QPN). The engine
 * gives every frame of a host a new IP ID, so a key is unique among the frames in flight.
 * Entries of packets lost in between (a veth drop) age out of the LRU.
 */
#ifndef QN_DQMARK_H
#define QN_DQMARK_H

#include "bpf_common.h"
#include "qn_abi.h"
#include "ecn.h"
#include "parse.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, QN_DQMARK_ENTRIES);
	__type(key, struct qn_dqkey);
	__type(value, __u32);
} qn_dqmarks SEC(".maps");

/* The next hop's half: if an upstream switch decided at dequeue to mark this parsed packet,
 * take the entry and set CE in the packet (DSCP kept, checksum patched). Only what the dequeue
 * hook can mark is looked up: unfragmented IPv4/UDP, ECT and not yet CE. `data`, `data_end`:
 * the packet window `p` was parsed from. Return: 1 when the packet was marked. */
static __always_inline int qn_dqmark_apply(void *data, void *data_end, const struct qn_pkt *p)
{
	struct qn_dqkey k = {};
	struct iphdr *ip;

	if (p->eth_proto != QN_ETH_P_IPV4 || p->proto != IPPROTO_UDP_NUM || p->is_frag ||
	    !(p->tos & QN_ECN_MASK) || (p->tos & QN_ECN_MASK) == QN_ECN_CE ||
	    p->l3_off > QN_ETH_HLEN + 4 * QN_VLAN_MAX_DEPTH)
		return 0;
	ip = data + p->l3_off;
	if ((void *)(ip + 1) > data_end)
		return 0;
	k.saddr_be = ip->saddr;
	k.daddr_be = ip->daddr;
	k.ip_id_be = ip->id;
	k.sport_be = bpf_htons(p->sport);
	if (!bpf_map_lookup_elem(&qn_dqmarks, &k))
		return 0;
	bpf_map_delete_elem(&qn_dqmarks, &k);
	qn_ipv4_set_ce(ip);
	return 1;
}

#endif /* QN_DQMARK_H */
