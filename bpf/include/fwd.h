/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fwd.h - forwarding: the port stage (port lookup, counters, header pull, parse, what a port may
 * send), the forward stage (FIB lookup and ECMP) and the rewrite stage (TTL, CE, MACs). The next
 * hop lookup and the MAC rewrite are shared with the recirculation builder (recirc.h), which
 * routes the signals it makes like any packet.
 */
#ifndef QN_FWD_H
#define QN_FWD_H

#include "pipeline.h"
#include "csum.h"
#include "ecn.h"
#include "hash.h"
#include "pfc.h"

/*
 * qn_skb_linearize - make the headers the parser needs linear and writable.
 * Frames from AF_PACKET senders and GSO paths arrive non-linear; bpf_skb_pull_data() fails when
 * asked for more than skb->len, so ask for at most the frame. Top-level programs only (it
 * changes the packet's data).
 * Return: 0 on success, negative errno from the helper.
 */
static __always_inline int qn_skb_linearize(struct __sk_buff *skb)
{
	void *data = qn_skb_data(skb);
	void *data_end = qn_skb_data_end(skb);
	__u32 len = skb->len;

	if (len >= QN_PARSE_MAX_HDR) {
		if (data + QN_PARSE_MAX_HDR <= data_end)
			return 0;
		return bpf_skb_pull_data(skb, QN_PARSE_MAX_HDR);
	}
	/* len < QN_PARSE_MAX_HDR here: the verifier only accepts adding a bounded scalar to a
	 * packet pointer, and this branch is what bounds it. */
	if (data + len <= data_end)
		return 0;
	return bpf_skb_pull_data(skb, len);
}

/*
 * qn_fib_nexthop - the next hop toward `daddr_be`: longest-prefix match in qn_fib, then the ECMP
 * member chosen by the flow hash of `p` (hashed only when there is a choice); `p` NULL takes the
 * first path (the builder's signals).
 * Return: the next hop, or NULL when there is no route.
 */
static __always_inline struct qn_nexthop *qn_fib_nexthop(__u32 daddr_be, const struct qn_pkt *p)
{
	struct qn_fib_key key = { .prefixlen = 32, .addr_be = daddr_be };
	struct qn_fib_val *fib = bpf_map_lookup_elem(&qn_fib, &key);
	__u32 n, idx;

	if (!fib || fib->n_nexthops == 0)
		return 0;
	n = fib->n_nexthops;
	if (n > QN_MAX_NEXTHOPS)
		n = QN_MAX_NEXTHOPS;
	idx = n == 1 || !p ? 0 : qn_flow_hash(p, qn_cfg.ecmp_seed) % n;
	/* idx < n <= QN_MAX_NEXTHOPS, but clang knows that too and drops any range check, while
	 * the verifier cannot follow the modulo. Hide idx from the optimiser and mask it
	 * (QN_MAX_NEXTHOPS is a power of two, so the mask never changes a valid index). */
	asm volatile("" : "+r"(idx));
	idx &= QN_MAX_NEXTHOPS - 1;
	return &fib->nh[idx];
}

/* Write the next hop's MACs into an Ethernet header. */
static __always_inline void qn_rewrite_macs(struct ethhdr *eth, const struct qn_nexthop *nh)
{
	__builtin_memcpy(eth->h_dest, nh->dmac, 6);
	__builtin_memcpy(eth->h_source, nh->smac, 6);
}

/*
 * Port stage, part 1 (before the packet is parsed): the ingress port and its counters.
 * Return: 0, or QN_DROP_UNKNOWN_PORT (counted as an orphan drop: there is no port to count on).
 */
static __always_inline __u32 qn_stage_port(struct qn_ctx *c)
{
	c->in = bpf_map_lookup_elem(&qn_ports, &c->ifindex);
	if (!c->in)
		return QN_DROP_UNKNOWN_PORT;
	c->in_port = c->in->port_no;
	c->st = bpf_map_lookup_elem(&qn_port_stats, &c->in_port);
	if (!c->st)
		return QN_DROP_UNKNOWN_PORT;
	c->st->rx_pkts++;
	c->st->rx_bytes += c->len;
	return 0;
}

/*
 * Port stage, part 2 (after parsing): hosts cannot send switch signals or pause frames
 * (DESIGN.md §3); a PFC frame from a switch pauses or resumes this port's data class (pfc.h),
 * handed to the control thread when obeyed (pfc.obey).
 * Return: 0, QN_VERDICT_CONSUMED or the drop reason.
 */
static __always_inline __u32 qn_stage_port_filter(struct qn_ctx *c)
{
	const struct qn_swcfg *cfg;
	struct qn_qstate *qs;
	long q;

	if (c->p.cls == QN_CLASS_PFC)
		c->st->pfc_rx++;
	if (c->in->role == QN_ROLE_HOST) {
		if (c->p.cls == QN_CLASS_BTS)
			return QN_DROP_HOST_BTS;
		if (c->p.cls == QN_CLASS_POSTCARD)
			return QN_DROP_HOST_POSTCARD;
		if (c->p.cls == QN_CLASS_PFC)
			return QN_DROP_HOST_PFC;
	}
	if (c->p.cls != QN_CLASS_PFC)
		return 0;
	cfg = qn_swcfg_get();
	qs = bpf_map_lookup_elem(&qn_qstate, &c->in_port);
	if (!cfg || !qs)
		return QN_DROP_PFC_FRAME;
	q = qn_pfc_receive(cfg, c->in, c->in_port, qs, c->st, c->data, c->data_end, bpf_ktime_get_ns());
	if (!cfg->pfc.obey)
		return QN_DROP_PFC_FRAME;
	if (q >= 0)
		qn_pfc_post_ev(c->ifindex, c->in_port, 0, (__u32)q, QN_PFC_EV_RX);
	return QN_VERDICT_CONSUMED;
}

/* Forward stage: the next hop and the egress port's state. Return: 0 or QN_DROP_NO_ROUTE. */
static __always_inline __u32 qn_stage_forward(struct qn_ctx *c)
{
	c->nh = qn_fib_nexthop(c->p.daddr_be, &c->p);
	if (!c->nh)
		return QN_DROP_NO_ROUTE;
	c->eport = c->nh->port_no;
	c->est = bpf_map_lookup_elem(&qn_port_stats, &c->eport);
	c->qs = bpf_map_lookup_elem(&qn_qstate, &c->eport);
	return 0;
}

/* Rewrite stage: TTL, CE when a stage decided it, MACs. Return: 0 or the drop reason. */
static __always_inline __u32 qn_stage_rewrite(struct qn_ctx *c)
{
	struct ethhdr *eth = c->data;
	struct iphdr *ip;

	if ((void *)(eth + 1) > c->data_end)
		return QN_DROP_TRUNCATED;
	if (c->p.l3_off > QN_ETH_HLEN + 4 * QN_VLAN_MAX_DEPTH)
		return QN_DROP_TRUNCATED;
	ip = c->data + c->p.l3_off;
	if ((void *)(ip + 1) > c->data_end)
		return QN_DROP_TRUNCATED;
	if (ip->ttl <= 1)
		return QN_DROP_TTL;
	qn_ip_decrease_ttl(ip);
	if (c->mark_ce) {
		qn_ipv4_set_ce(ip);
		if (c->est)
			c->est->ecn_marked++;
	}
	qn_rewrite_macs(eth, c->nh);
	return 0;
}

#endif /* QN_FWD_H */
