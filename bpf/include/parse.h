/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * parse.h - Ethernet / VLAN / IPv4 / UDP / BTH parser shared by the tc switch and the XDP host
 * steering program. It works on a [data, data_end) window, so tc callers must first make the
 * headers linear with bpf_skb_pull_data() (frames from AF_PACKET and GSO paths are non-linear;
 * see qn_skb_linearize in switch.h).
 *
 * Defined verdicts (docs/switch.md "Parser verdicts"):
 *   < 14 B, truncated VLAN tag, truncated IPv4 header  -> QN_DROP_TRUNCATED
 *   more than QN_VLAN_MAX_DEPTH VLAN tags               -> QN_DROP_VLAN_DEPTH
 *   PFC / PAUSE (0x8808)                                -> QN_CLASS_PFC
 *   other non-IPv4 (ARP, IPv6, ...)                     -> QN_DROP_NOT_IPV4
 *   IPv4 version != 4, IHL < 5, total length < IHL*4 or longer than the frame -> QN_DROP_BAD_IP
 *   IPv4 options                                        -> parsed past (IHL), forwarded
 *   non-first fragments                                 -> QN_CLASS_OTHER, no L4 ports
 *   UDP 4791 with fewer than 12 bytes of BTH            -> QN_DROP_MALFORMED_ROCE
 */
#ifndef QN_PARSE_H
#define QN_PARSE_H

#include "qn_abi.h"

/* Header bytes any verdict needs: Eth + 2 VLAN tags + IPv4 with max options + UDP + BTH + AETH. */
#define QN_PARSE_MAX_HDR (QN_ETH_HLEN + 4 * QN_VLAN_MAX_DEPTH + 60 + QN_UDP_HLEN + QN_BTH_LEN + 4)

struct qn_pkt {
	__u32 drop;        /* enum qn_drop_reason, 0 when the frame is acceptable */
	__u32 cls;         /* enum qn_pkt_class */
	__u16 l3_off;      /* offset of the IPv4 header */
	__u16 l4_off;      /* offset of the UDP header (0 when none) */
	__u16 eth_proto;   /* innermost EtherType, host order */
	__u16 ip_tot_len;  /* IPv4 total length, host order */
	__u32 saddr_be;
	__u32 daddr_be;
	__u16 sport;       /* host order, 0 when not parsed */
	__u16 dport;
	__u8 proto;
	__u8 tos;
	__u8 ttl;
	__u8 opcode;       /* BTH opcode when cls is DATA/CONTROL */
	__u8 vlan_depth;
	__u8 is_frag;      /* 1 for any fragment (MF set or offset != 0) */
	__u8 pad[2];
};

struct qn_vlan_hdr {
	__be16 tci;
	__be16 proto;
};

/* Classify a RoCEv2 BTH opcode. Return: QN_CLASS_CONTROL for ACK/NAK/CNP/LDCP-ACK, else DATA. */
static __always_inline __u32 qn_classify_opcode(__u8 op)
{
	switch (op) {
	case QN_OP_RC_ACK:
	case QN_OP_RC_ATOMIC_ACK:
	case QN_OP_CNP:
	case QN_OP_LDCP_ACK:
		return QN_CLASS_CONTROL;
	default:
		return QN_CLASS_DATA;
	}
}

/*
 * qn_parse - parse the frame whose first bytes are in [data, data_end) into *p.
 * @frame_len: the whole frame's length (skb->len for tc, where only the headers may be linear).
 * Return: 0 when *p describes an acceptable frame, else the drop reason (also in p->drop).
 */
static __always_inline int qn_parse(void *data, void *data_end, __u32 frame_len, struct qn_pkt *p)
{
	struct ethhdr *eth = data;
	struct iphdr *ip;
	__u16 proto;
	__u32 off;
	int i;

	__builtin_memset(p, 0, sizeof(*p));
	if ((void *)(eth + 1) > data_end)
		return p->drop = QN_DROP_TRUNCATED;
	proto = bpf_ntohs(eth->h_proto);
	off = QN_ETH_HLEN;

#pragma unroll
	for (i = 0; i < QN_VLAN_MAX_DEPTH; i++) {
		struct qn_vlan_hdr *vh;

		if (proto != QN_ETH_P_8021Q && proto != QN_ETH_P_8021AD)
			break;
		vh = data + off;
		if ((void *)(vh + 1) > data_end)
			return p->drop = QN_DROP_TRUNCATED;
		proto = bpf_ntohs(vh->proto);
		off += sizeof(*vh);
		p->vlan_depth++;
	}
	if (proto == QN_ETH_P_8021Q || proto == QN_ETH_P_8021AD)
		return p->drop = QN_DROP_VLAN_DEPTH;
	p->eth_proto = proto;

	if (proto == QN_ETH_P_MAC_CONTROL) {
		p->cls = QN_CLASS_PFC;
		return 0;
	}
	if (proto != QN_ETH_P_IPV4)
		return p->drop = QN_DROP_NOT_IPV4;

	/* off <= 22 here; the constant bound lets the verifier track ip's range. */
	if (off > QN_ETH_HLEN + 4 * QN_VLAN_MAX_DEPTH)
		return p->drop = QN_DROP_TRUNCATED;
	ip = data + off;
	if ((void *)(ip + 1) > data_end)
		return p->drop = QN_DROP_TRUNCATED;
	if (ip->version != 4 || ip->ihl < 5)
		return p->drop = QN_DROP_BAD_IP;
	p->l3_off = off;
	p->ip_tot_len = bpf_ntohs(ip->tot_len);
	if (p->ip_tot_len < ip->ihl * 4)
		return p->drop = QN_DROP_BAD_IP;
	if (off + p->ip_tot_len > frame_len)
		return p->drop = QN_DROP_TRUNCATED; /* total length promises more than the frame */
	p->saddr_be = ip->saddr;
	p->daddr_be = ip->daddr;
	p->proto = ip->protocol;
	p->tos = ip->tos;
	p->ttl = ip->ttl;
	/* frag_off: MF bit 0x2000 or a non-zero offset (low 13 bits) means a fragment */
	if (ip->frag_off & bpf_htons(0x3FFF)) {
		p->is_frag = 1;
		if (ip->frag_off & bpf_htons(0x1FFF))
			return 0; /* non-first fragment: no L4 header */
	}
	if (ip->protocol != IPPROTO_UDP)
		return 0;

	off += ip->ihl * 4;
	if (off > QN_ETH_HLEN + 4 * QN_VLAN_MAX_DEPTH + 60)
		return p->drop = QN_DROP_BAD_IP;
	{
		struct udphdr *udp = data + off;
		__u8 *bth;

		if ((void *)(udp + 1) > data_end)
			return p->drop = QN_DROP_TRUNCATED;
		p->l4_off = off;
		p->sport = bpf_ntohs(udp->source);
		p->dport = bpf_ntohs(udp->dest);
		if (p->is_frag)
			return 0; /* first fragment of a UDP datagram: ports only, never RoCE */
		if (p->dport == QN_BTS_UDP_PORT) {
			p->cls = QN_CLASS_BTS;
			return 0;
		}
		if (p->dport == QN_POSTCARD_UDP_PORT) {
			p->cls = QN_CLASS_POSTCARD;
			return 0;
		}
		if (p->dport != QN_ROCE_UDP_PORT)
			return 0;
		bth = (void *)(udp + 1);
		if ((void *)(bth + QN_BTH_LEN) > data_end)
			return p->drop = QN_DROP_MALFORMED_ROCE;
		p->opcode = bth[0];
		p->cls = qn_classify_opcode(bth[0]);
	}
	return 0;
}

#endif /* QN_PARSE_H */
