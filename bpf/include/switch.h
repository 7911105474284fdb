/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * switch.h - the switch's forwarding pipeline (tc clsact ingress) and egress classification
 * (tc clsact egress). Pipeline for this stage: parse -> port checks -> forwarding decision ->
 * TTL -> MAC rewrite -> bpf_redirect to the egress port, whose HTB root qdisc is the queue.
 */
#ifndef QN_SWITCH_H
#define QN_SWITCH_H

#include "bpf_common.h"
#include "qn_abi.h"
#include "parse.h"
#include "csum.h"
#include "hash.h"
#include "maps.h"
#include "queue.h"
#include "dqmark.h"
#include "ecn.h"
#include "fidmon.h"

const volatile struct qn_cfg qn_cfg = {};

/*
 * qn_skb_linearize - make the headers the parser needs linear and writable.
 * Frames from AF_PACKET senders and GSO paths arrive non-linear; bpf_skb_pull_data() fails when
 * asked for more than skb->len, so ask for at most the frame.
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

static __always_inline void qn_count_drop(struct qn_port_stats *st, __u32 reason)
{
	if (reason < QN_DROP_MAX)
		__sync_fetch_and_add(&st->drops[reason], 1);
}

static __always_inline void qn_orphan_drop(__u32 reason)
{
	__u64 *c = bpf_map_lookup_elem(&qn_orphan_drops, &reason);

	if (c)
		(*c)++;
}

/* Post an XOFF/XON request for the control thread. Return: 0 on success. */
static __always_inline int qn_pfc_post(__u32 ifindex, __u32 port_no, __u32 prio, __u32 quanta)
{
	struct qn_pfc_event *ev = bpf_ringbuf_reserve(&qn_pfc_events, sizeof(*ev), 0);

	if (!ev)
		return -1;
	ev->ifindex = ifindex;
	ev->port_no = port_no;
	ev->prio = prio;
	ev->quanta = quanta;
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

static __always_inline int qn_is_ctrl(const struct qn_pkt *p)
{
	return p->cls == QN_CLASS_CONTROL || p->cls == QN_CLASS_BTS || p->cls == QN_CLASS_POSTCARD;
}

/*
 * qn_ingress_pipeline - run the forwarding pipeline on one frame entering a switch port:
 * parse -> port checks -> forwarding decision -> egress queue depth -> admission (dynamic
 * threshold) -> TTL, ECN/RED, MAC rewrite -> PFC accounting -> mark for the dequeue hook ->
 * recirculation copy (when configured) -> bpf_redirect.
 * Return: TC_ACT_REDIRECT (forwarded) or TC_ACT_SHOT (dropped and counted).
 */
static __always_inline int qn_ingress_pipeline(struct __sk_buff *skb)
{
	struct qn_port_stats *st, *est;
	struct qn_fib_key key;
	struct qn_fib_val *fib;
	struct qn_nexthop *nh;
	struct qn_port *port;
	struct qn_swcfg *cfg;
	struct qn_qstate *qs;
	struct qn_pkt p;
	void *data, *data_end;
	__u32 ifindex = skb->ingress_ifindex;
	__u32 idx, n, eport, in_port, prio, len = skb->len;
	__u64 now, depth_b = 0, depth_p = 0;
	__s64 tokens = 0;
	int qsrc = -1, mark_ce = 0;
	long ret;

	port = bpf_map_lookup_elem(&qn_ports, &ifindex);
	if (!port) {
		qn_orphan_drop(QN_DROP_UNKNOWN_PORT);
		return TC_ACT_SHOT;
	}
	in_port = port->port_no;
	st = bpf_map_lookup_elem(&qn_port_stats, &in_port);
	if (!st)
		return TC_ACT_SHOT;
	st->rx_pkts++;
	st->rx_bytes += len;

	if (qn_skb_data(skb) + 14 + 20 > qn_skb_data_end(skb) && len >= 14 + 20)
		st->rx_nonlinear++;
	if (qn_skb_linearize(skb) < 0) {
		qn_count_drop(st, QN_DROP_TRUNCATED);
		return TC_ACT_SHOT;
	}
	data = qn_skb_data(skb);
	data_end = qn_skb_data_end(skb);
	if (qn_parse(data, data_end, len, &p)) {
		qn_count_drop(st, p.drop);
		return TC_ACT_SHOT;
	}
	if (p.cls == QN_CLASS_PFC)
		st->pfc_rx++;

	/* Hosts cannot send switch signals or pause frames (DESIGN.md §3). */
	if (port->role == QN_ROLE_HOST) {
		__u32 reason = 0;

		if (p.cls == QN_CLASS_BTS)
			reason = QN_DROP_HOST_BTS;
		else if (p.cls == QN_CLASS_POSTCARD)
			reason = QN_DROP_HOST_POSTCARD;
		else if (p.cls == QN_CLASS_PFC)
			reason = QN_DROP_HOST_PFC;
		if (reason) {
			qn_count_drop(st, reason);
			return TC_ACT_SHOT;
		}
	}
	if (p.cls == QN_CLASS_PFC) {
		qn_count_drop(st, QN_DROP_PFC_FRAME);
		return TC_ACT_SHOT;
	}
	now = bpf_ktime_get_ns();
	if (port->role == QN_ROLE_HOST)
		qn_fid_arrival(in_port, len, now);

	/* A mark the upstream switch decided at dequeue (dqmark.h): the packet is CE from here.
	 * Only a switch can have marked it: frames from a host port are not looked up. */
	if (port->role != QN_ROLE_HOST && qn_dqmark_apply(data, data_end, &p))
		p.tos |= QN_ECN_CE;

	key.prefixlen = 32;
	key.addr_be = p.daddr_be;
	fib = bpf_map_lookup_elem(&qn_fib, &key);
	if (!fib || fib->n_nexthops == 0) {
		qn_count_drop(st, QN_DROP_NO_ROUTE);
		return TC_ACT_SHOT;
	}
	n = fib->n_nexthops;
	if (n > QN_MAX_NEXTHOPS)
		n = QN_MAX_NEXTHOPS;
	idx = n == 1 ? 0 : qn_flow_hash(&p, qn_cfg.ecmp_seed) % n;
	/* idx < n <= QN_MAX_NEXTHOPS, but clang knows that too and drops any range check, while
	 * the verifier cannot follow the modulo. Hide idx from the optimiser and mask it
	 * (QN_MAX_NEXTHOPS is a power of two, so the mask never changes a valid index). */
	asm volatile("" : "+r"(idx));
	idx &= QN_MAX_NEXTHOPS - 1;
	nh = &fib->nh[idx];
	eport = nh->port_no;

	/* Egress queue depth and admission. */
	cfg = qn_swcfg_get();
	qs = bpf_map_lookup_elem(&qn_qstate, &eport);
	est = bpf_map_lookup_elem(&qn_port_stats, &eport);
	if (cfg && qs) {
		__u64 rate = 0, burst = 0;

		if (cfg->queue_mode == QN_QMODE_VIRTUAL || !qs->dev) {
			__u32 eif = nh->ifindex;
			struct qn_port *ep = bpf_map_lookup_elem(&qn_ports, &eif);

			if (ep) {
				rate = qn_wall_rate_bps(ep, qn_cfg.dilation_milli);
				burst = ep->burst_bytes;
			}
		}
		qsrc = qn_queue_depth(eport, qs, cfg, rate, burst, now, &depth_b, &depth_p, &tokens);
		qs->last_bytes = depth_b;
		qs->last_pkts = depth_p;
		qn_peak(qs, depth_b);
		if (cfg->loss_ppm && p.cls == QN_CLASS_DATA &&
		    bpf_get_prandom_u32() % 1000000 < cfg->loss_ppm) {
			qn_count_drop(st, QN_DROP_INJECTED);
			return TC_ACT_SHOT;
		}
		if (!qn_admit(cfg, depth_b, len, qn_is_ctrl(&p))) {
			qn_count_drop(st, QN_DROP_BUFFER);
			return TC_ACT_SHOT;
		}
		/* Only the data class is marked; the control class (CNP, ACK, signals) never is
		 * (dcqcn.md §3.1). */
		if (cfg->ecn && !qn_is_ctrl(&p) && (p.tos & QN_ECN_MASK) && (p.tos & QN_ECN_MASK) != QN_ECN_CE) {
			if (est)
				est->ecn_ect++;
			/* At enqueue on the depth ahead; at dequeue the departure hook decides. */
			if (!cfg->ecn_dequeue)
				mark_ce = qn_red_decide(cfg, depth_b);
		}
	}

	/* Rewrite: TTL, ECN, MACs. Re-derive pointers against the same data_end. */
	{
		struct ethhdr *eth = data;
		struct iphdr *ip;

		if ((void *)(eth + 1) > data_end)
			return TC_ACT_SHOT;
		if (p.l3_off > QN_ETH_HLEN + 4 * QN_VLAN_MAX_DEPTH)
			return TC_ACT_SHOT;
		ip = data + p.l3_off;
		if ((void *)(ip + 1) > data_end)
			return TC_ACT_SHOT;
		if (ip->ttl <= 1) {
			qn_count_drop(st, QN_DROP_TTL);
			return TC_ACT_SHOT;
		}
		qn_ip_decrease_ttl(ip);
		if (mark_ce) {
			qn_ipv4_set_ce(ip);
			if (est)
				est->ecn_marked++;
		}
		__builtin_memcpy(eth->h_dest, nh->dmac, 6);
		__builtin_memcpy(eth->h_source, nh->smac, 6);
	}

	/* Accounting, released by the qdisc_dequeue tracepoint; PFC on host-facing ports. */
	prio = (p.tos >> 5) & (QN_NUM_PRIOS - 1); /* DSCP >> 3: 26 -> 3 (data), 48 -> 6 (control) */
	if (cfg && qs) {
		__u32 pk = (in_port & (QN_MAX_PORTS - 1)) * QN_NUM_PRIOS + prio;
		struct qn_pfc_acct *pa = bpf_map_lookup_elem(&qn_pfc_acct, &pk);

		qn_charge(qs, len, qsrc == 1, depth_b, tokens, now);
		if (pa) {
			__s64 b = __sync_fetch_and_add(&pa->bytes, len) + len;

			if (cfg->pfc && port->role == QN_ROLE_HOST && b >= (__s64)cfg->pfc_xoff_bytes &&
			    __sync_val_compare_and_swap(&pa->paused, 0, 1) == 0) {
				pa->since_ns = now;
				st->pfc_xoff_sent++;
				qn_pfc_post(ifindex, in_port, prio, cfg->pfc_quanta);
			}
		}
		skb->mark = QN_MARK_MAGIC | (in_port << QN_MARK_PORT_SHIFT) | (prio << QN_MARK_PRIO_SHIFT);
	}

	/* Recirculation: a copy to the builder (its own ingress) while the original goes on. */
	if (cfg && cfg->mirror_dport && p.dport == cfg->mirror_dport && p.l4_off) {
		__u32 zero = 0, *rc = bpf_map_lookup_elem(&qn_recirc, &zero);

		if (rc && *rc) {
			__u32 saved = skb->mark;

			skb->mark = QN_MARK_RECIRC | (in_port << QN_MARK_PORT_SHIFT);
			if (bpf_clone_redirect(skb, *rc, BPF_F_INGRESS) == 0)
				st->mirrored++;
			skb->mark = saved;
		}
	}

	ret = bpf_redirect(nh->ifindex, 0);
	if (ret != TC_ACT_REDIRECT) {
		qn_count_drop(st, QN_DROP_REDIRECT);
		return TC_ACT_SHOT;
	}
	return TC_ACT_REDIRECT;
}

/*
 * qn_egress_classify - put control packets (ACK/NAK/CNP/LDCP-ACK/BTS/postcard) into the
 * strict-priority control class and everything else into the data class, by writing the full
 * HTB class id into skb->priority. Never drops.
 * Return: TC_ACT_OK.
 */
static __always_inline int qn_egress_classify(struct __sk_buff *skb)
{
	struct qn_port_stats *st = 0;
	struct qn_port *port;
	struct qn_pkt p;
	__u32 ifindex = skb->ifindex;
	__u32 idx;
	int ctrl = 0;

	if (qn_skb_linearize(skb) == 0 &&
	    qn_parse(qn_skb_data(skb), qn_skb_data_end(skb), skb->len, &p) == 0)
		ctrl = p.cls == QN_CLASS_CONTROL || p.cls == QN_CLASS_BTS ||
		       p.cls == QN_CLASS_POSTCARD;
	skb->priority = ctrl ? QN_HTB_CLASS_CONTROL : QN_HTB_CLASS_DATA;

	port = bpf_map_lookup_elem(&qn_ports, &ifindex);
	if (port) {
		struct qn_qstate *qs;

		idx = port->port_no;
		st = bpf_map_lookup_elem(&qn_port_stats, &idx);
		qs = bpf_map_lookup_elem(&qn_qstate, &idx);
		/* Record this port's net_device for the ingress depth read and the dequeue hook.
		 * The __sk_buff context is the kernel's sk_buff; read its dev pointer with CO-RE. */
		if (qs) {
			__u64 dev = (__u64)BPF_CORE_READ((struct sk_buff *)skb, dev);

			if (dev && qs->dev != dev) {
				bpf_map_update_elem(&qn_dev_port, &dev, &idx, BPF_ANY);
				qs->dev = dev;
			}
		}
	}
	if (st) {
		st->tx_pkts++;
		st->tx_bytes += skb->len;
		if (ctrl)
			st->tx_ctrl_pkts++;
		else
			st->tx_data_pkts++;
	}
	return TC_ACT_OK;
}

#endif /* QN_SWITCH_H */
