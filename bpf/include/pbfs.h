/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pbfs.h - PB-FS's switch side (../shared/specs/pbfs.md §3.2, docs/pbfs.md): per egress port a
 * history of slots of DC_RTT / 2N (bytes received for the port, and the queue at the slot's
 * start: the queue ahead of the slot's first packet), kept without timers in per-CPU rings
 * (qn_abi.h "PB-FS history"); on a PBT-marked data packet, Definition 1 with Eq. 1 over the N
 * completed slots summed over every CPU; when the port is congested, a CC-postcard request
 * (signals.h) with I_p, Q1, the port's rate, recentBytes and recentMarkedBytes of the last T_Δ
 * (sub-slots), built by the recirculation builder (recirc.h) and sent to the sender in the
 * control class. The packet is forwarded unchanged (its PBT bit kept for the next switch).
 *
 * The work is a global function on scalars (qn_pbfs_decide), verified once on its own (the
 * pattern of ldcp.h); its sum runs in a bpf_loop over the CPUs (one ring lookup each) and a
 * nested bpf_loop over the window's cells, one cell per call (a plain loop over the cells, like
 * the unrolled 64, ran the verifier past its million instructions). It leaves the postcard's values
 * in a per-CPU scratch entry for the stage, which alone holds the packet context.
 */
#ifndef QN_PBFS_H
#define QN_PBFS_H

#include "pipeline.h"
#include "signals.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, QN_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct qn_pbfs_hist);
} qn_pbfs_hist SEC(".maps");

/* The postcard values qn_pbfs_decide computed (this CPU's, for the packet in hand). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct qn_sig_postcard_vals);
} qn_pbfs_scratch SEC(".maps");

struct qn_pbfs_walk {
	__u32 port;
	__u32 n;
	__u32 nfine;
	__u32 pad;
	__u64 e, fe;
	struct qn_pbfs_sum s;
};

/* One CPU's ring, for the cell callback. */
struct qn_pbfs_cpu {
	const struct qn_pbfs_hist *h;
	struct qn_pbfs_walk *w;
};

/* bpf_loop callback over one CPU's window: cell k < N is slot e-1-k, cell N + j sub-slot fe-j,
 * located by their ring position (a cell of another epoch there is skipped by the add). */
static long qn_pbfs_cell_cb(__u64 k, void *ctx)
{
	struct qn_pbfs_cpu *c = ctx;
	struct qn_pbfs_walk *w = c->w;
	const struct qn_pbfs_hist *h = c->h;

	if (k < w->n)
		qn_pbfs_add_slot(&h->slot[(w->e - 1 - k) & (QN_PBFS_RING - 1)], w->e, w->n, &w->s);
	else
		qn_pbfs_add_fine(&h->fine[(w->fe - (k - w->n)) & (QN_PBFS_FINE - 1)], w->fe, w->nfine, &w->s);
	return 0;
}

/* bpf_loop callback over the CPUs: one lookup of the CPU's ring, then its N + nfine cells
 * (a nested bpf_loop: one callback per cell keeps the verifier's work to one cell; one ring
 * lookup per CPU instead of one per cell: docs/PERFORMANCE.md). */
static long qn_pbfs_cpu_cb(__u64 cpu, void *ctx)
{
	struct qn_pbfs_walk *w = ctx;
	struct qn_pbfs_cpu c;

	c.h = bpf_map_lookup_percpu_elem(&qn_pbfs_hist, &w->port, (__u32)cpu);
	if (!c.h)
		return 1; /* past the last CPU */
	c.w = w;
	bpf_loop(w->n + w->nfine, qn_pbfs_cell_cb, &c, 0);
	return 0;
}

/* qn_pbfs_decide's first argument: the egress port number and the PBT flag. */
#define QN_PBFS_ARG_PBT 0x100u

/*
 * qn_pbfs_decide - count a data packet of `len` bytes toward egress port `port_pbt & 0xFF` in
 * this CPU's history (now: wall ns; depth: the queue ahead of it); for a PBT-marked one
 * (QN_PBFS_ARG_PBT), Definition 1 at the port's fabric rate `rate_bps`. (Five arguments: the BPF
 * calling convention's limit; so it reads the settings itself, one array lookup the caller also
 * made, rather than taking slot, N, T_Δ and DC_RTT as arguments.) Return: 1 when the port is congested (the postcard's values are
 * in qn_pbfs_scratch), 0 otherwise.
 */
__noinline __u32 qn_pbfs_decide(__u32 port_pbt, __u64 now, __u32 len, __u64 depth, __u64 rate_bps)
{
	__u32 zero = 0, port = port_pbt & (QN_MAX_PORTS - 1), pbt = port_pbt & QN_PBFS_ARG_PBT;
	const struct qn_swcfg *cfg = bpf_map_lookup_elem(&qn_swcfg, &zero);
	struct qn_sig_postcard_vals *out;
	struct qn_pbfs_hist *h;
	struct qn_pbfs_cell *cell;
	struct qn_pbfs_fine *f;
	struct qn_pbfs_walk w = {};
	__u64 slot, sub, tdelta, ip;
	__u32 n;

	if (!cfg || !cfg->pbfs.on)
		return 0;
	slot = qn_wall_ns(cfg->pbfs.slot_ns);
	n = cfg->pbfs.n;
	if (slot < QN_PBFS_SUB || n == 0 || n > QN_PBFS_MAX_N)
		return 0;
	sub = slot / QN_PBFS_SUB;
	h = bpf_map_lookup_elem(&qn_pbfs_hist, &port);
	if (!h)
		return 0;
	w.e = now / slot;
	w.fe = now / sub;
	/* W1 without a timer: the first packet of a slot on this CPU restarts its cell */
	cell = &h->slot[w.e & (QN_PBFS_RING - 1)];
	if (cell->epoch1 != w.e + 1) {
		cell->epoch1 = w.e + 1;
		cell->first_ns = now;
		cell->bytes = 0;
		cell->q_first = depth > 0xFFFFFFFFull ? 0xFFFFFFFFu : (__u32)depth;
	}
	cell->bytes += len; /* W2 */
	f = &h->fine[w.fe & (QN_PBFS_FINE - 1)];
	if (f->epoch1 != w.fe + 1) {
		f->epoch1 = w.fe + 1;
		f->bytes = 0;
		f->marked = 0;
	}
	f->bytes += len;
	if (!pbt)
		return 0;
	f->marked += len;
	/* W3: the N completed slots and the T_Δ window, every CPU's cells */
	tdelta = qn_wall_ns(cfg->pbfs.tdelta_ns);
	w.port = port;
	w.n = n;
	w.nfine = (__u32)((tdelta + sub - 1) / sub);
	if (w.nfine < 1)
		w.nfine = 1;
	if (w.nfine > QN_PBFS_FINE)
		w.nfine = QN_PBFS_FINE;
	w.s.q1_ns = ~0ull;
	bpf_loop(QN_PBFS_MAX_CPUS, qn_pbfs_cpu_cb, &w, 0);
	if (w.s.q1_ns == ~0ull)
		w.s.q1 = depth; /* no packet in the history: the queue now */
	if (!qn_pbfs_congested(&w.s, n, rate_bps, cfg->pbfs.dc_rtt_ns))
		return 0;
	out = bpf_map_lookup_elem(&qn_pbfs_scratch, &zero);
	if (!out)
		return 0;
	ip = qn_pbfs_ip(&w.s, n);
	out->i_p = ip > 0xFFFFFFFFull ? 0xFFFFFFFFu : (__u32)ip;
	out->q1 = w.s.q1 > 0xFFFFFFFFull ? 0xFFFFFFFFu : (__u32)w.s.q1;
	out->rate_mbps = (__u32)(rate_bps / 1000000);
	out->recent_bytes = (__u32)w.s.recent;
	out->recent_marked_bytes = (__u32)w.s.recent_marked;
	out->t0_ns = now;
	return 1;
}

/* Return: 0 (PB-FS never drops). */
static __always_inline __u32 qn_stage_pbfs(struct qn_ctx *c)
{
	const struct qn_swcfg *cfg = c->cfg;
	struct qn_sig_postcard_vals *v;
	struct qn_sig_entry *e;
	struct qn_port *ep;
	__u32 zero = 0, eif, pbt;
	__u64 rate = 0;

	if (!cfg || !cfg->pbfs.on || qn_is_ctrl(&c->p) || !c->nh)
		return 0;
	pbt = (c->p.tos & QN_TOS_PBT) && c->p.cls == QN_CLASS_DATA;
	if (pbt) {
		eif = c->nh->ifindex;
		ep = bpf_map_lookup_elem(&qn_ports, &eif);
		if (ep)
			rate = ep->rate_bps;
		if (c->est)
			c->est->pbfs_marked++;
	}
	if (!qn_pbfs_decide((c->eport & 0xFF) | (pbt && rate ? QN_PBFS_ARG_PBT : 0), c->now, c->len, c->depth_b, rate))
		return 0;
	if (c->est)
		c->est->pbfs_congested++;
	v = bpf_map_lookup_elem(&qn_pbfs_scratch, &zero);
	e = qn_sig_request(c, QN_SIG_POSTCARD);
	if (v && e)
		e->v.postcard = *v;
	return 0;
}

#endif /* QN_PBFS_H */
