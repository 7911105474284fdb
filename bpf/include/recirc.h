/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * recirc.h - the recirculation builder, on the ingress of the switch's recirculation device.
 * The ingress pipeline sends it one bpf_clone_redirect(..., BPF_F_INGRESS) copy per signal a
 * stage requested (signals.h), marked QN_SIG_MARK(type, ingress port, seq). The builder takes the
 * request's values from qn_sig_ring, reads the original's IPv4, UDP and BTH headers wherever
 * they sit (VLAN tags, IP options), and writes a new frame over the copy: untagged Ethernet, a
 * 20-byte IPv4 header (control class, Not-ECT, TTL 64), UDP (the original's source port, which
 * carries the sender's QPN; checksum 0) and the signal's body:
 *   echo      QN_ECHO_UDP_PORT, the original BTH                  src = original dst
 *   BTS       QN_BTS_UDP_PORT, struct qn_bts (sfc.md §5)          src = original dst (the
 *                                                                 congested receiver, SFC's cache key)
 *   postcard  QN_POSTCARD_UDP_PORT, struct qn_postcard (pbfs.md §5) src = this switch (qn_cfg.addr_be)
 * all addressed to the original's source and routed like any packet (fwd.h's next hop, first
 * ECMP path, MAC rewrite), straight to the egress port: a signal bypasses this switch's own
 * ingress and is not charged to its queues. Counters on the original's ingress port: sig_echo,
 * sig_bts, sig_postcard, and sig_lost for a request that could not be built.
 *
 * SFC-P: because a signal bypasses this switch's ingress, the builder itself replaces a BTS
 * whose next hop is one of this switch's hosts by a PAUSE when sfc_p is on (sfc.h
 * qn_sfcp_post), counted as sig_bts (the signal was made) and sfcp_pause (the host port).
 */
#ifndef QN_RECIRC_H
#define QN_RECIRC_H

#include "pipeline.h"
#include "csum.h"
#include "fwd.h"
#include "sfc.h"

struct qn_sig_hdrs {
	__u8 pad[2];            /* puts the IPv4 header on a 4-byte boundary */
	struct ethhdr eth;
	struct iphdr ip;
	struct udphdr udp;
};

union qn_sig_body {
	__u8 bth[QN_BTH_LEN];
	struct qn_bts bts;
	struct qn_postcard postcard;
};

#define QN_SIG_HDRS_LEN (QN_ETH_HLEN + QN_IPV4_HLEN + QN_UDP_HLEN)

static __always_inline __u32 qn_be24(const __u8 *b)
{
	return ((__u32)b[0] << 16) | ((__u32)b[1] << 8) | b[2];
}

/* Build the body of `type` from the request `e` and the original's headers. Return: the body's
 * length, 0 for an unknown type. Sets the UDP destination port and the IPv4 source. */
static __always_inline __u32 qn_sig_body(__u32 type, const struct qn_sig_entry *e, const struct iphdr *oip,
					 const struct udphdr *oudp, const struct qn_bth *obth, struct qn_sig_hdrs *h,
					 union qn_sig_body *b)
{
	if (type == QN_SIG_ECHO) {
		__builtin_memcpy(b->bth, obth, QN_BTH_LEN);
		h->udp.dest = bpf_htons(QN_ECHO_UDP_PORT);
		h->ip.saddr = oip->daddr;
		return QN_BTH_LEN;
	}
	if (type == QN_SIG_BTS) {
		__u32 us = e->v.bts.pause_us;

		b->bts.ver_origin = (QN_BTS_VERSION << 4) | (e->v.bts.origin & 0xF);
		b->bts.flags = e->v.bts.cacheable ? QN_BTS_CACHEABLE : 0;
		b->bts.pause_us = bpf_htons(us > 0xFFFF ? 0xFFFF : us);
		b->bts.reporter = bpf_htonl((qn_cfg.switch_id << 8) | (e->eport & 0xFF));
		__builtin_memcpy(b->bts.orig_ip, oip, QN_IPV4_HLEN);
		__builtin_memcpy(b->bts.orig_udp, oudp, QN_UDP_HLEN);
		__builtin_memcpy(&b->bts.orig_bth, obth, QN_BTH_LEN);
		h->udp.dest = bpf_htons(QN_BTS_UDP_PORT);
		h->ip.saddr = oip->daddr;
		return sizeof(struct qn_bts);
	}
	if (type == QN_SIG_POSTCARD) {
		__u32 eif = e->eifindex;
		struct qn_port *ep = bpf_map_lookup_elem(&qn_ports, &eif);
		__u8 mac[6] = {};

		if (ep)
			__builtin_memcpy(mac, ep->mac, 6);
		b->postcard.version = QN_POSTCARD_VERSION;
		__builtin_memcpy(b->postcard.psn, obth->psn, 3);
		/* sID: the switch id in the top 16 bits, the congested port's MAC in the low 48 */
		b->postcard.sid_hi = bpf_htonl(((qn_cfg.switch_id & 0xFFFF) << 16) | ((__u32)mac[0] << 8) | mac[1]);
		b->postcard.sid_lo = bpf_htonl(((__u32)mac[2] << 24) | ((__u32)mac[3] << 16) | ((__u32)mac[4] << 8) | mac[5]);
		b->postcard.flow_saddr = oip->saddr;
		b->postcard.flow_daddr = oip->daddr;
		b->postcard.flow_sport = oudp->source;
		b->postcard.flow_dport = oudp->dest;
		b->postcard.dest_qp = bpf_htonl(qn_be24(obth->dest_qp));
		b->postcard.i_p = bpf_htonl(e->v.postcard.i_p);
		b->postcard.q1 = bpf_htonl(e->v.postcard.q1);
		b->postcard.rate_mbps = bpf_htonl(e->v.postcard.rate_mbps);
		b->postcard.recent_bytes = bpf_htonl(e->v.postcard.recent_bytes);
		b->postcard.recent_marked_bytes = bpf_htonl(e->v.postcard.recent_marked_bytes);
		b->postcard.t0_ns = bpf_cpu_to_be64(e->v.postcard.t0_ns);
		h->udp.dest = bpf_htons(QN_POSTCARD_UDP_PORT);
		h->ip.saddr = qn_cfg.addr_be;
		return sizeof(struct qn_postcard);
	}
	return 0;
}

/* Return: TC_ACT_REDIRECT with the signal on its way, or TC_ACT_SHOT (counted). */
static __always_inline int qn_recirc_build(struct __sk_buff *skb)
{
	struct qn_sig_entry e, *ring;
	struct qn_port_stats *st;
	struct qn_nexthop *nh;
	struct qn_sig_hdrs h = {};
	union qn_sig_body body = {};
	struct qn_bth obth = {};
	struct udphdr oudp;
	struct iphdr oip;
	struct qn_pkt p;
	__u32 mark = skb->mark, type, slot, port, blen;

	if ((mark & QN_MARK_MAGIC_MASK) != QN_MARK_RECIRC)
		return TC_ACT_SHOT; /* not a copy of ours: the device carries nothing else */
	type = QN_SIG_TYPE(mark);
	port = QN_SIG_PORT(mark);
	st = bpf_map_lookup_elem(&qn_port_stats, &port);
	if (!st)
		return TC_ACT_SHOT;
	slot = mark & (QN_SIG_RING - 1);
	ring = bpf_map_lookup_elem(&qn_sig_ring, &slot);
	if (!ring)
		goto lost;
	__builtin_memcpy(&e, ring, sizeof(e));
	/* The entry is this request's only if it still carries its mark after the copy: a newer
	 * request may have taken the slot meanwhile (QN_SIG_RING requests later). */
	if (e.mark != mark || ring->mark != mark)
		goto lost;
	ring->mark = 0;

	if (qn_skb_linearize(skb) < 0)
		goto lost;
	if (qn_parse(qn_skb_data(skb), qn_skb_data_end(skb), skb->len, &p) || !p.l4_off || p.is_frag ||
	    p.eth_proto != QN_ETH_P_IPV4)
		goto lost;
	if (bpf_skb_load_bytes(skb, p.l3_off, &oip, sizeof(oip)) ||
	    bpf_skb_load_bytes(skb, p.l4_off, &oudp, sizeof(oudp)))
		goto lost;
	/* The BTH, when the frame has one (an echo of a non-RoCE packet carries zeros). */
	if (bpf_skb_load_bytes(skb, p.l4_off + QN_UDP_HLEN, &obth, sizeof(obth)))
		__builtin_memset(&obth, 0, sizeof(obth));

	blen = qn_sig_body(type, &e, &oip, &oudp, &obth, &h, &body);
	if (!blen || blen > sizeof(body))
		goto lost;
	h.ip.version = 4;
	h.ip.ihl = 5;
	h.ip.tos = QN_DSCP_CONTROL << 2; /* Not-ECT, control class */
	h.ip.tot_len = bpf_htons(QN_IPV4_HLEN + QN_UDP_HLEN + blen);
	h.ip.id = oip.id;
	h.ip.frag_off = bpf_htons(0x4000);
	h.ip.ttl = 64;
	h.ip.protocol = IPPROTO_UDP_NUM;
	h.ip.daddr = oip.saddr;
	h.ip.check = qn_ipv4_csum(&h.ip);
	h.udp.source = oudp.source;
	h.udp.len = bpf_htons(QN_UDP_HLEN + blen);
	h.udp.check = 0;
	h.eth.h_proto = bpf_htons(QN_ETH_P_IPV4);
	nh = qn_fib_nexthop(h.ip.daddr, 0); /* signals take the first equal-cost path */
	if (!nh)
		goto lost;
	if (type == QN_SIG_BTS) {
		const struct qn_swcfg *cfg = qn_swcfg_get();
		__u32 nif = nh->ifindex;
		struct qn_port *hp;

		if (cfg && cfg->sfc.on && cfg->sfc.sfcp && (hp = bpf_map_lookup_elem(&qn_ports, &nif)) &&
		    hp->role == QN_ROLE_HOST) {
			qn_sfcp_post(hp, nif, oip.tos >> 5, e.v.bts.pause_us > 0xFFFF ? 0xFFFF : e.v.bts.pause_us);
			st->sig_bts++;
			return TC_ACT_SHOT; /* the copy: consumed, the PAUSE is on its way */
		}
	}
	qn_rewrite_macs(&h.eth, nh);

	/* Write the new frame over the copy: drop an offloaded VLAN tag, set the length, then the
	 * bytes (in-band tags and IP options of the original are overwritten). */
	if (skb->vlan_present && bpf_skb_vlan_pop(skb))
		goto lost;
	if (bpf_skb_change_tail(skb, QN_SIG_HDRS_LEN + blen, 0))
		goto lost;
	if (bpf_skb_store_bytes(skb, 0, &h.eth, QN_SIG_HDRS_LEN, 0) ||
	    bpf_skb_store_bytes(skb, QN_SIG_HDRS_LEN, &body, blen, 0))
		goto lost;
	skb->mark = 0; /* not charged: the dequeue hook ignores it */
	if (type == QN_SIG_ECHO)
		st->sig_echo++;
	else if (type == QN_SIG_BTS)
		st->sig_bts++;
	else
		st->sig_postcard++;
	return bpf_redirect(nh->ifindex, 0);
lost:
	st->sig_lost++;
	return TC_ACT_SHOT;
}

#endif /* QN_RECIRC_H */
