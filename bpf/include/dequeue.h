/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * dequeue.h - departures, seen through the read-only tp_btf/qdisc_dequeue tracepoint. It fires
 * for every qdisc in the system; the topology's dispatcher (bpf/switch/qn_dqdisp.bpf.c) calls a
 * switch's hook only for departures inside its namespace, and the switch recognises its own ports by the net_device pointer
 * (qn_dev_port) and its own packets by the skb->mark tag the ingress pipeline wrote. Stages per
 * departing packet, over one struct qn_dq_ctx:
 *   fidelity   fidmon.h  departure monitor
 *   (schemes)  qn_dq_scheme_stages below: pcn.h (PCN NP-ECN: a packet that had been paused is not marked)
 *   red        here      RED at dequeue on the backlog behind the packet (dqmark.h), when set
 *   release    here, acct.h egress, buffer and (ingress port, priority) accounting; XON
 * and per port, once per hook: peak depth and a dequeue-time queue sample (qn_qsamples) at most
 * every qn_cfg.sample_interval_wall_ns; a port found empty has its unseen departures released
 * (acct.h).
 */
#ifndef QN_DEQUEUE_H
#define QN_DEQUEUE_H

#include "pipeline.h"
#include "dqmark.h"
#include "fidmon.h"
#include "pfc.h"
#include "pcn.h"
#include "acct.h"
#include "queue.h"

#define QN_DEQ_MAX_BULK 9 /* (the QN_DQ_STEP lines below) skbs a bulk dequeue may chain: 1 + 8 on a
                           * multi-queue device (try_bulk_dequeue_skb_slow: quench's veths have one
                           * tx queue per CPU); a single-queue veth without BQL dequeues one. Skbs
                           * beyond it are released by the repair (acct.h). */

struct qn_dq_ctx {
	struct sk_buff *skb;          /* the departing packet */
	struct qn_qstate *qs;
	const struct qn_swcfg *cfg;
	struct qn_fid_port *fp;
	__u64 now;                    /* wall ns */
	__u64 backlog;                /* bytes queued behind the last packet of the bulk */
	__u64 rest;                   /* bytes of the bulk's packets after the current one */
	__u64 behind;                 /* bytes queued behind the current packet: backlog + rest */
	__u64 peak;                   /* behind the bulk's first packet: the deepest of the bulk */
	__u32 eport;
};

/* Release stage: the packet's accounting (only packets the ingress pipeline charged, and only
 * once: acct.h). */
static __always_inline void qn_dq_release(struct qn_dq_ctx *d)
{
	__u32 mark = d->skb->mark, len = d->skb->len, in_port, prio;

	if ((mark & QN_MARK_MAGIC_MASK) != QN_MARK_MAGIC)
		return;
	in_port = (mark >> QN_MARK_PORT_SHIFT) & (QN_MAX_PORTS - 1);
	prio = (mark >> QN_MARK_PRIO_SHIFT) & (QN_NUM_PRIOS - 1);
	qn_acct_release(d->cfg, d->qs, d->eport, in_port, prio, len, d->now);
}

/*
 * Scheme stages at departure, run on every departing packet before RED, in a header of their
 * own: a scheme adds its include above and one line here (the departure counterpart of
 * switch.h's QN_SCHEME_STAGES). A stage gets the settings, the egress port's state and whether
 * the packet is data the ingress pipeline charged; it returns 1 when the packet must not be
 * marked. Shared by the departure hook and the test-run departure (qn_dq_test).
 */
static __always_inline int qn_dq_scheme_stages(const struct qn_swcfg *cfg, struct qn_qstate *qs, int is_data)
{
	int no_mark = 0;

	no_mark |= qn_dq_stage_pcn(cfg, qs, is_data); /* pcn.h */
	return no_mark;
}

/* The RED decision at dequeue on one departing ECT data packet with dequeue-mark key `k` and
 * `backlog` bytes behind it: a marked packet's identity goes to qn_dqmarks for the next hop and
 * the egress port counts the mark; a packet PCN's NP-ECN spares (`spare`: it had been paused) is
 * counted instead. Shared by the departure hook and the test-run departure (qn_dq_test).
 * Return: 1 marked, 2 spared, 0 neither. */
static __always_inline int qn_dq_red_decide(const struct qn_swcfg *cfg, __u32 eport, __u64 backlog, __u8 tos,
					    const struct qn_dqkey *k, int spare)
{
	struct qn_port_stats *st;
	__u32 one = 1;

	if (!(tos & QN_ECN_MASK) || (tos & QN_ECN_MASK) == QN_ECN_CE)
		return 0;
	if (!qn_red_decide(&cfg->red, backlog))
		return 0;
	st = bpf_map_lookup_elem(&qn_port_stats, &eport);
	if (spare) {
		if (st)
			st->pcn_spared++;
		return 2;
	}
	if (bpf_map_update_elem(&qn_dqmarks, k, &one, BPF_ANY))
		return 0;
	if (st)
		st->ecn_marked++;
	return 1;
}

/* RED stage at dequeue: `backlog` is the port's queue after this packet left (the tracepoint
 * fires after the qdisc's dequeue has taken it out). Data class only (dcqcn.md §3.1). `spare`:
 * PCN's NP-ECN exempts the packet (pcn.h). */
static __always_inline void qn_dq_red(struct qn_dq_ctx *d, int spare)
{
	struct sk_buff *skb = d->skb;
	unsigned char *l3;
	struct qn_dqkey k = {};
	struct iphdr ip;
	__u16 sport;

	if (!d->cfg->red.on || !d->cfg->red.at_dequeue || (skb->mark & QN_MARK_MAGIC_MASK) != QN_MARK_MAGIC ||
	    skb->priority == QN_HTB_CLASS_CONTROL)
		return;
	l3 = skb->head + skb->network_header;
	if (bpf_probe_read_kernel(&ip, sizeof(ip), l3))
		return;
	if (ip.version != 4 || ip.protocol != IPPROTO_UDP_NUM || (ip.frag_off & bpf_htons(0x3fff)))
		return;
	if (bpf_probe_read_kernel(&sport, sizeof(sport), l3 + ip.ihl * 4))
		return;
	k.saddr_be = ip.saddr;
	k.daddr_be = ip.daddr;
	k.ip_id_be = ip.id;
	k.sport_be = sport;
	qn_dq_red_decide(d->cfg, d->eport, d->behind, ip.tos, &k, spare);
}

/* Per-port stage, once per hook: peak and the sample stream. */
static __always_inline void qn_dq_sample(struct qn_dq_ctx *d, const struct Qdisc *q)
{
	struct qn_qsample *smp;

	qn_peak(d->qs, d->peak);
	if (d->now - d->qs->last_sample_ns < qn_cfg.sample_interval_wall_ns)
		return;
	d->qs->last_sample_ns = d->now;
	smp = bpf_ringbuf_reserve(&qn_qsamples, sizeof(*smp), 0);
	if (!smp)
		return;
	smp->ts_ns = d->now;
	smp->port_no = d->eport;
	smp->pkts = q->q.qlen;
	smp->bytes = d->backlog;
	bpf_ringbuf_submit(smp, 0);
}

/* One departing packet: the per-packet stages. */
static __always_inline void qn_dq_one(struct qn_dq_ctx *d, struct sk_buff *skb, int i, int packets)
{
	d->skb = skb;
	/* A bulk's earlier packets leave the later ones queued behind them, not only the backlog
	 * the qdisc reports after the whole bulk left. */
	d->rest = d->rest > skb->len ? d->rest - skb->len : 0;
	d->behind = d->backlog + d->rest;
	if (i == 0)
		d->peak = d->behind;
	if (d->fp)
		qn_fid_departure(d->fp, d->eport, skb->len, d->now, d->behind, d->qs->pause_start_ns != 0);
	qn_dq_red(d, qn_dq_scheme_stages(d->cfg, d->qs, (skb->mark & QN_MARK_MAGIC_MASK) == QN_MARK_MAGIC &&
							      skb->priority != QN_HTB_CLASS_CONTROL));
	qn_dq_release(d);
	/* A pause from the neighbouring switch is open: count what leaves (pfc.h). */
	if (d->qs->pause_start_ns && skb->priority != QN_HTB_CLASS_CONTROL)
		qn_pfc_departure(d->qs, d->eport, skb->len, d->now);
}

static __always_inline int qn_dequeue_hook(struct Qdisc *q, const struct netdev_queue *txq, int packets,
					   struct sk_buff *skb)
{
	struct qn_dq_ctx d = {};
	__u64 dev;
	__u32 *pp;

	if (!skb || !txq)
		return 0;
	dev = (__u64)txq->dev;
	pp = bpf_map_lookup_elem(&qn_dev_port, &dev);
	if (!pp)
		return 0;
	d.eport = *pp;
	d.qs = bpf_map_lookup_elem(&qn_qstate, &d.eport);
	d.cfg = qn_swcfg_get();
	if (!d.qs || !d.cfg)
		return 0;
	d.now = bpf_ktime_get_ns();
	d.backlog = q->qstats.backlog;
	d.peak = d.backlog;
	d.fp = bpf_map_lookup_elem(&qn_fid, &d.eport);
	/* The bulk's bytes: RED, the peak and the departure monitor judge each packet on the queue
	 * behind it (qn_dq_one). A multi-queue veth (one tx queue per CPU) is dequeued in bulks of
	 * up to 1 + 8 (try_bulk_dequeue_skb_slow); judged on the backlog after the whole bulk, the
	 * bulk's first packets saw up to 8 frames too little queue (docs/switch.md "What the queue
	 * probes read"). No lookup: loads of the skbs the tracepoint hands over. */
	{
		struct sk_buff *s = skb;
#define QN_DQ_SUM(n)                                                                               \
	if (!s || (n) >= packets)                                                                  \
		goto summed;                                                                       \
	d.rest += s->len;                                                                          \
	s = s->next;
		QN_DQ_SUM(0)
		QN_DQ_SUM(1)
		QN_DQ_SUM(2)
		QN_DQ_SUM(3)
		QN_DQ_SUM(4)
		QN_DQ_SUM(5)
		QN_DQ_SUM(6)
		QN_DQ_SUM(7)
		QN_DQ_SUM(8)
#undef QN_DQ_SUM
	}
summed:
	/* Written out, not a loop: clang 14 lays this loop out with the head reached by a plain
	 * fall-through, and 6.1's CFG check refuses such a back-edge ("back-edge from insn N to
	 * N+1", measured in the 6.1 VM); newer kernels accept it. No loop, no back-edge. */
#define QN_DQ_STEP(n)                                                                              \
	if (!skb || (n) >= packets)                                                                \
		goto done;                                                                         \
	qn_dq_one(&d, skb, n, packets);                                                            \
	skb = skb->next;
	QN_DQ_STEP(0)
	QN_DQ_STEP(1)
	QN_DQ_STEP(2)
	QN_DQ_STEP(3)
	QN_DQ_STEP(4)
	QN_DQ_STEP(5)
	QN_DQ_STEP(6)
	QN_DQ_STEP(7)
	QN_DQ_STEP(8)
#undef QN_DQ_STEP
done:
	/* The port's real queue after this departure, for the probes that read qn_qstate between
	 * events (the ingress stage writes it at each enqueue, with the admitted packet). The accounts (acct_bytes) are
	 * no measure of it: a departure this hook never saw stays charged until the queue empties
	 * (acct.h), and a standing queue never does (docs/switch.md "What the queue probes read"). */
	d.qs->last_bytes = d.backlog;
	d.qs->last_pkts = q->q.qlen;
	qn_dq_sample(&d, q);
	/* The queue is empty: anything still charged toward it left unseen (acct.h). */
	if (!d.backlog && !q->q.qlen && d.qs->acct_bytes > 0)
		qn_acct_repair(d.cfg, d.qs, d.eport, d.now);
	return 0;
}

/*
 * qn_dq_test - a departure without a qdisc, for BPF_PROG_TEST_RUN (which has none; never
 * attached): the packet in `skb` leaves egress port skb->cb[0] with the backlog qn_test_qdepth
 * holds for that port behind it, its skb->mark and skb->priority as the ingress pipeline and the
 * egress classifier wrote them. It runs the hook's per-packet stages on it: PCN's PN, RED at
 * dequeue, the release of its accounting. Return: 1 marked, 2 spared, 0 neither.
 */
static __always_inline int qn_dq_test(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *data_end = (void *)(long)skb->data_end;
	__u32 eport = skb->cb[0] & (QN_MAX_PORTS - 1), mark = skb->mark;
	const struct qn_swcfg *cfg = qn_swcfg_get();
	struct qn_test_qdepth *td;
	struct qn_qstate *qs;
	struct qn_dqkey k = {};
	struct qn_pkt p;
	struct iphdr *ip;
	int is_data, spare, r = 0;

	qs = bpf_map_lookup_elem(&qn_qstate, &eport);
	td = bpf_map_lookup_elem(&qn_test_qdepth, &eport);
	if (!cfg || !qs || !td || qn_parse(data, data_end, skb->len, &p))
		return 0;
	is_data = (mark & QN_MARK_MAGIC_MASK) == QN_MARK_MAGIC && skb->priority != QN_HTB_CLASS_CONTROL;
	spare = qn_dq_scheme_stages(cfg, qs, is_data);
	if (is_data && cfg->red.on && cfg->red.at_dequeue && p.eth_proto == QN_ETH_P_IPV4 &&
	    p.proto == IPPROTO_UDP_NUM && !p.is_frag && p.l3_off <= QN_ETH_HLEN + 4 * QN_VLAN_MAX_DEPTH) {
		ip = data + p.l3_off;
		if ((void *)(ip + 1) > data_end)
			return 0;
		k.saddr_be = ip->saddr;
		k.daddr_be = ip->daddr;
		k.ip_id_be = ip->id;
		k.sport_be = bpf_htons(p.sport);
		r = qn_dq_red_decide(cfg, eport, td->bytes, p.tos, &k, spare);
	}
	if ((mark & QN_MARK_MAGIC_MASK) == QN_MARK_MAGIC)
		qn_acct_release(cfg, qs, eport, (mark >> QN_MARK_PORT_SHIFT) & (QN_MAX_PORTS - 1),
				(mark >> QN_MARK_PRIO_SHIFT) & (QN_NUM_PRIOS - 1), skb->len, bpf_ktime_get_ns());
	return r;
}

#endif /* QN_DEQUEUE_H */
