/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * dequeue.h - departures, seen through the read-only tp_btf/qdisc_dequeue tracepoint. It fires
 * for every qdisc in the system; a switch recognises its own ports by the net_device pointer
 * (qn_dev_port) and its own packets by the skb->mark tag the ingress pipeline wrote. For each
 * departing packet: release egress, buffer and (ingress port, priority) accounting; post an XON
 * when a paused ingress falls to the resume threshold. Per port: peak depth and a dequeue-time
 * sample stream (qn_qsamples) at most every qn_cfg.sample_interval_wall_ns. With
 * qn_swcfg.ecn_dequeue, the RED decision for each departing ECT packet on the backlog behind it
 * (dqmark.h).
 */
#ifndef QN_DEQUEUE_H
#define QN_DEQUEUE_H

#include "bpf_common.h"
#include "dqmark.h"
#include "fidmon.h"
#include "maps.h"
#include "queue.h"

#define QN_DEQ_MAX_BULK 8 /* skbs a bulk dequeue may chain (veth without BQL dequeues one);
                           * skbs beyond it would keep their accounting charged */

static __always_inline void qn_release_one(struct sk_buff *skb, struct qn_qstate *qs, const struct qn_swcfg *cfg,
					   __u64 now)
{
	__u32 mark = skb->mark, len = skb->len, in, prio, pk, zero = 0;
	struct qn_pfc_acct *pa;
	__s64 *used;

	if ((mark & QN_MARK_MAGIC_MASK) != QN_MARK_MAGIC)
		return;
	__sync_fetch_and_add(&qs->acct_bytes, -(__s64)len);
	__sync_fetch_and_add(&qs->acct_pkts, -1);
	used = bpf_map_lookup_elem(&qn_buffer, &zero);
	if (used)
		__sync_fetch_and_add(used, -(__s64)len);
	in = (mark >> QN_MARK_PORT_SHIFT) & (QN_MAX_PORTS - 1);
	prio = (mark >> QN_MARK_PRIO_SHIFT) & (QN_NUM_PRIOS - 1);
	pk = in * QN_NUM_PRIOS + prio;
	pa = bpf_map_lookup_elem(&qn_pfc_acct, &pk);
	if (!pa)
		return;
	if (__sync_fetch_and_add(&pa->bytes, -(__s64)len) - (__s64)len <= (__s64)cfg->pfc_xon_bytes &&
	    pa->paused && __sync_val_compare_and_swap(&pa->paused, 1, 0) == 1) {
		struct qn_port_stats *st = bpf_map_lookup_elem(&qn_port_stats, &in);
		struct qn_pfc_event *ev;

		if (st) {
			st->pfc_xon_sent++;
			st->paused_ns += now - pa->since_ns;
		}
		ev = bpf_ringbuf_reserve(&qn_pfc_events, sizeof(*ev), 0);
		if (ev) {
			ev->ifindex = 0; /* the control thread maps port_no to its ifindex */
			ev->port_no = in;
			ev->prio = prio;
			ev->quanta = 0;
			bpf_ringbuf_submit(ev, 0);
		}
	}
}

/* RED at dequeue: `backlog` is the port's queue after this packet left (the tracepoint fires
 * after the qdisc's dequeue has taken it out). A marked packet's identity goes to qn_dqmarks for
 * the next hop; the egress port counts the mark. */
static __always_inline void qn_dequeue_red(struct sk_buff *skb, const struct qn_swcfg *cfg, __u64 backlog,
					   __u32 eport)
{
	unsigned char *l3 = skb->head + skb->network_header;
	struct qn_port_stats *st;
	struct qn_dqkey k = {};
	struct iphdr ip;
	__u32 one = 1;
	__u16 sport;

	if (bpf_probe_read_kernel(&ip, sizeof(ip), l3))
		return;
	if (ip.version != 4 || ip.protocol != IPPROTO_UDP_NUM || (ip.frag_off & bpf_htons(0x3fff)))
		return;
	if (!(ip.tos & QN_ECN_MASK) || (ip.tos & QN_ECN_MASK) == QN_ECN_CE)
		return;
	if (bpf_probe_read_kernel(&sport, sizeof(sport), l3 + ip.ihl * 4))
		return;
	if (!qn_red_decide(cfg, backlog))
		return;
	k.saddr_be = ip.saddr;
	k.daddr_be = ip.daddr;
	k.ip_id_be = ip.id;
	k.sport_be = sport;
	if (bpf_map_update_elem(&qn_dqmarks, &k, &one, BPF_ANY))
		return;
	st = bpf_map_lookup_elem(&qn_port_stats, &eport);
	if (st)
		st->ecn_marked++;
}

static __always_inline int qn_dequeue_hook(struct Qdisc *q, const struct netdev_queue *txq, int packets,
					   struct sk_buff *skb)
{
	struct qn_fid_port *fp;
	struct qn_swcfg *cfg;
	struct qn_qstate *qs;
	__u64 dev, now, backlog;
	__u32 *pp, eport;
	int i;

	if (!skb || !txq)
		return 0;
	dev = (__u64)txq->dev;
	pp = bpf_map_lookup_elem(&qn_dev_port, &dev);
	if (!pp)
		return 0;
	eport = *pp;
	qs = bpf_map_lookup_elem(&qn_qstate, &eport);
	cfg = qn_swcfg_get();
	if (!qs || !cfg)
		return 0;
	now = bpf_ktime_get_ns();
	backlog = q->qstats.backlog;
	fp = bpf_map_lookup_elem(&qn_fid, &eport);
	for (i = 0; i < QN_DEQ_MAX_BULK; i++) { /* bounded loop (kernels >= 5.3) */
		if (!skb || i >= packets)
			break;
		if (fp) /* a bulk's earlier packets leave the later ones queued */
			qn_fid_departure(fp, eport, skb->len, now, i + 1 < packets ? 1 : backlog);
		if (cfg->ecn && cfg->ecn_dequeue && (skb->mark & QN_MARK_MAGIC_MASK) == QN_MARK_MAGIC &&
		    skb->priority != QN_HTB_CLASS_CONTROL) /* data class only (dcqcn.md §3.1) */
			qn_dequeue_red(skb, cfg, backlog, eport);
		qn_release_one(skb, qs, cfg, now);
		skb = skb->next;
	}
	qn_peak(qs, backlog);
	if (now - qs->last_sample_ns >= qn_cfg.sample_interval_wall_ns) {
		struct qn_qsample *smp;

		qs->last_sample_ns = now;
		smp = bpf_ringbuf_reserve(&qn_qsamples, sizeof(*smp), 0);
		if (smp) {
			smp->ts_ns = now;
			smp->port_no = eport;
			smp->pkts = q->q.qlen;
			smp->bytes = backlog;
			bpf_ringbuf_submit(smp, 0);
		}
	}
	return 0;
}

#endif /* QN_DEQUEUE_H */
