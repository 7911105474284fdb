/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sfc.h - SFC's congestion point at switch ingress (../shared/specs/sfc.md §3.1-§3.3,
 * docs/sfc.md): an SFC-eligible data packet whose egress queue is over Q_Th triggers a
 * back-to-sender signal (BTS) carrying the pause that drains the queue to Q_Tg at the port's
 * rate, unless the Bloom filter says this flow was already signalled in the current epoch.
 * The packet itself is forwarded unchanged (SFC never drops). The BTS is built by the
 * recirculation builder (recirc.h) from the ring entry filled here.
 *
 * Bloom filter: QN_SFC_BLOOM_HASHES arrays of QN_SFC_BLOOM_CELLS cells in one map value (one
 * lookup). A cell holds the epoch (wall time / T_BF, plus 1) in which it was last set and counts
 * as set only in that epoch (sfc.md §6): no reset pass races with the setters on the other CPU. The
 * cells' positions depend on the epoch too, so a false positive cannot outlive its epoch. Two CPUs
 * testing the same flow at once may both send: a duplicate BTS, never a missing one.
 *
 * Pause cache (sfc.md §3.1 I1/I3, §6.2-§6.5): a cacheable BTS transiting a switch whose
 * sfc_cache setting says it caches sets cache[dst, DSCP] = max(current, now + pause); a data
 * packet toward a key with time left makes this switch request a BTS (origin 1) with the time
 * left, unless the Bloom filter suppresses it; the packet is forwarded. A slot is one u64 (tag |
 * end, qn_abi.h) updated by compare-and-exchange, so the max-update is atomic on two CPUs; a
 * slot held by another live key is a collision (no insert, no hit: never a wrong pause).
 *
 * SFC-P (paper §5.2): with sfc_p on, a BTS about to leave toward a host port is replaced by one
 * PFC PAUSE of its pause's duration for the data priority of the trimmed header, posted to the
 * control thread as a frame it sends once (QN_PFC_EV_ONCE: no refresh, no XON). A BTS this switch
 * builds bypasses its own ingress, so the builder (recirc.h) converts those with qn_sfcp_post().
 *
 * Incast estimator (sfc.md §3.4, off by default): per destination, X_d decays with time constant
 * tau and grows by each packet's length at this switch's host ports; the bytes beyond what the
 * destination's link drains in tau, less Q_Tg, give a pause (origin 2), combined with the cache's
 * by max.
 *
 * Settings: qn_set_sfc (on, qth_bytes, qtg_bytes, tbf_ns in fabric ns; cache, sfcp, est,
 * est_tau_ns, est_rate_bps). Counters on the data's egress port: sfc_congested, sfc_bts_queue,
 * sfc_bts_cache, sfc_bts_est, sfc_suppressed; on a BTS's ingress port: sfc_cache_insert,
 * sfc_cache_update, sfc_cache_collide, sfc_cache_lost; on the host port: sfcp_pause.
 */
#ifndef QN_SFC_H
#define QN_SFC_H

#include "pipeline.h"
#include "hash.h"
#include "signals.h"
#include "pfc.h"

struct qn_sfc_bloom {
	__u64 cell[QN_SFC_BLOOM_HASHES][QN_SFC_BLOOM_CELLS]; /* epoch + 1 when last set; 0 = never */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct qn_sfc_bloom);
} qn_sfc_bloom SEC(".maps");

/* SFC-eligible: RoCE data of the data class (priority 3; DSCP's low bit, PB-FS's marker, is
 * ignored). Control packets, BTS, postcards and non-RoCE traffic never trigger (sfc.md §6.8). */
static __always_inline int qn_sfc_eligible(const struct qn_ctx *c)
{
	return c->p.cls == QN_CLASS_DATA && ((c->p.tos >> 5) & (QN_NUM_PRIOS - 1)) == QN_PRIO_DATA;
}

/*
 * qn_sfc_bloom_test_and_set - has this flow been signalled in the current epoch? Sets its cells
 * either way. Return: 1 when every cell already held the current epoch (suppress).
 */
static __always_inline int qn_sfc_bloom_test_and_set(const struct qn_ctx *c, __u64 tbf_wall_ns)
{
	struct qn_sfc_bloom *b;
	__u32 zero = 0, h, i0, i1, i2;
	__u64 epoch;
	int all;

	if (!tbf_wall_ns)
		return 0; /* no filter: every congested packet signals */
	b = bpf_map_lookup_elem(&qn_sfc_bloom, &zero);
	if (!b)
		return 0;
	/* + 1: a cell never set (0) must not count as set in epoch 0 (the first T_BF after boot,
	 * or every packet when T_BF exceeds the uptime). 64 bits: no wrap. */
	epoch = c->now / tbf_wall_ns + 1;
	/* The epoch seeds the positions: a flow whose cells other flows set (a false positive) in
	 * one epoch lands on other cells in the next, so a collision lasts at most one epoch. */
	h = qn_flow_hash(&c->p, 0x5fc0b10du ^ (__u32)epoch ^ (__u32)(epoch >> 32));
	i0 = qn_fmix32(h ^ 0x9e3779b9u) & (QN_SFC_BLOOM_CELLS - 1);
	i1 = qn_fmix32(h ^ 0x7f4a7c15u) & (QN_SFC_BLOOM_CELLS - 1);
	i2 = qn_fmix32(h ^ 0x94d049bbu) & (QN_SFC_BLOOM_CELLS - 1);
	all = b->cell[0][i0] == epoch && b->cell[1][i1] == epoch && b->cell[2][i2] == epoch;
	b->cell[0][i0] = epoch;
	b->cell[1][i1] = epoch;
	b->cell[2][i2] = epoch;
	return all;
}

/* Fabric µs to drain `bytes` at `rate_bps` (fabric), rounded up (sfc.md §3.2 B1). */
static __always_inline __u32 qn_sfc_pause_us(__u64 bytes, __u64 rate_bps)
{
	__u64 us;

	if (!bytes || !rate_bps)
		return 0;
	us = (bytes * 8 * 1000000 + rate_bps - 1) / rate_bps;
	return us > 0xFFFFFFFFull ? 0xFFFFFFFFu : (__u32)us;
}

/* ---- pause cache ---- */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, QN_SFC_CACHE_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE); /* the control thread scans it for occupancy (gauges.cc) */
	__type(key, __u32);
	__type(value, __u64);
} qn_sfc_cache SEC(".maps");

#define QN_SFC_KEY_MASK ((1ull << QN_SFC_KEY_BITS) - 1)
#define QN_SFC_END_MASK ((1ull << QN_SFC_END_BITS) - 1)

/*
 * qn_sfc_key_hash - the cache key (destination, DSCP without QN_SFC_DSCP_IGNORE) through a
 * bijection of its 37 bits (odd multipliers and xorshifts modulo 2^37): the low
 * QN_SFC_CACHE_IDX_BITS pick the slot, the rest is the tag, and slot + tag give back the key.
 */
static __always_inline __u64 qn_sfc_key_hash(__u32 daddr_be, __u8 tos)
{
	/* QN_SFC_DSCP_IGNORE is the DSCP's low bit: the other five bits fill the key. */
	__u64 k = ((__u64)bpf_ntohl(daddr_be) << 5) | (((tos >> 2) & 0x3F & ~QN_SFC_DSCP_IGNORE) >> 1);

	k = (k * 0x9E3779B97Full) & QN_SFC_KEY_MASK;
	k ^= k >> 19;
	k = (k * 0x1C2B2AE35ull) & QN_SFC_KEY_MASK;
	k ^= k >> 17;
	return k;
}

/* The longest pause a live entry can hold, in end units (65,535 fabric µs at this D, plus two
 * units of rounding). An end further ahead than this is an entry from 52 days ago: stale. */
static __always_inline __u64 qn_sfc_max_units(void)
{
	return (qn_wall_ns(65535ull * 1000) >> QN_SFC_END_SHIFT) + 2;
}

/* Units of the entry's end still ahead of now_u (0 when expired, empty or stale). */
static __always_inline __u64 qn_sfc_rem_units(__u64 w, __u64 now_u)
{
	__u64 rem = ((w & QN_SFC_END_MASK) - now_u) & QN_SFC_END_MASK;

	return qn_sfc_cache_word_live(w, now_u, qn_sfc_max_units()) ? rem : 0;
}

/*
 * qn_sfc_cache_insert - cache[key] = max(cache[key], now + pause) (sfc.md §3.1 I1). `st`: the
 * BTS's ingress port counters.
 */
static __always_inline void qn_sfc_cache_insert(struct qn_port_stats *st, __u64 kh, __u64 now, __u32 pause_us)
{
	__u32 idx = (__u32)(kh & (QN_SFC_CACHE_SLOTS - 1));
	__u64 tag = kh >> QN_SFC_CACHE_IDX_BITS, now_u = now >> QN_SFC_END_SHIFT, end_u, new_rem, w, nw, old;
	__u64 *slot;
	int i;

	if (!pause_us)
		return;
	slot = bpf_map_lookup_elem(&qn_sfc_cache, &idx);
	if (!slot)
		return;
	end_u = (now + qn_wall_ns((__u64)pause_us * 1000) + (1ull << QN_SFC_END_SHIFT) - 1) >> QN_SFC_END_SHIFT;
	new_rem = (end_u - now_u) & QN_SFC_END_MASK;
	nw = (tag << QN_SFC_END_BITS) | (end_u & QN_SFC_END_MASK);
	w = *(volatile __u64 *)slot;
#pragma unroll
	for (i = 0; i < 4; i++) {
		__u64 rem = qn_sfc_rem_units(w, now_u);
		int same = (w >> QN_SFC_END_BITS) == tag;

		if (rem && !same) {
			st->sfc_cache_collide++;
			return;
		}
		if (rem && rem >= new_rem)
			return; /* the live entry already ends later: max keeps it */
		old = __sync_val_compare_and_swap(slot, w, nw);
		if (old == w) {
			if (rem)
				st->sfc_cache_update++;
			else
				st->sfc_cache_insert++;
			return;
		}
		w = old; /* the other CPU changed the slot: decide again on its value */
	}
	st->sfc_cache_lost++;
}

/* Wall ns left on the cache entry of (daddr, tos): 0 on a miss, a collision or an expired entry. */
static __always_inline __u64 qn_sfc_cache_left(__u32 daddr_be, __u8 tos, __u64 now)
{
	__u64 kh = qn_sfc_key_hash(daddr_be, tos), w, rem;
	__u32 idx = (__u32)(kh & (QN_SFC_CACHE_SLOTS - 1));
	__u64 *slot = bpf_map_lookup_elem(&qn_sfc_cache, &idx);

	if (!slot)
		return 0;
	w = *(volatile __u64 *)slot;
	if ((w >> QN_SFC_END_BITS) != (kh >> QN_SFC_CACHE_IDX_BITS))
		return 0;
	rem = qn_sfc_rem_units(w, now >> QN_SFC_END_SHIFT);
	return rem ? (rem << QN_SFC_END_SHIFT) - (now & ((1ull << QN_SFC_END_SHIFT) - 1)) : 0;
}

/* ---- SFC-P ---- */

/* PFC quanta (512 bit times at the host link's fabric rate) covering `pause_us` fabric µs, at
 * most 65,535 (sfc.md §3.5). */
static __always_inline __u32 qn_sfcp_quanta(__u32 pause_us, __u64 rate_bps)
{
	__u64 q = ((__u64)pause_us * rate_bps + 512000000ull - 1) / 512000000ull;

	return q > 65535 ? 65535 : (__u32)q;
}

/*
 * qn_sfcp_post - SFC-P: one PAUSE of `pause_us` for priority `prio` to the host behind egress
 * port `hp` (ifindex `ifindex`), sent once by the control thread. A pause of 0 sends nothing (a
 * PAUSE of 0 quanta would be an XON). Counts sfcp_pause on the host port.
 */
static __always_inline void qn_sfcp_post(const struct qn_port *hp, __u32 ifindex, __u32 prio, __u32 pause_us)
{
	struct qn_port_stats *hst;
	__u32 no = hp->port_no;
	__u32 quanta = qn_sfcp_quanta(pause_us, hp->rate_bps);
	struct qn_pfc_event *ev;

	if (!quanta)
		return;
	ev = bpf_ringbuf_reserve(&qn_pfc_events, sizeof(*ev), 0);
	if (!ev)
		return;
	ev->ifindex = ifindex;
	ev->port_no = no;
	ev->prio = prio & (QN_NUM_PRIOS - 1);
	ev->flags = QN_PFC_EV_ONCE;
	ev->quanta = quanta;
	bpf_ringbuf_submit(ev, 0);
	hst = bpf_map_lookup_elem(&qn_port_stats, &no);
	if (hst)
		hst->sfcp_pause++;
}

/* ---- incast estimator ---- */

struct qn_sfc_est {
	struct bpf_spin_lock lock;
	__u32 daddr_be;         /* the destination this slot estimates (0 = free) */
	__u64 x_bytes;          /* X_d, low-pass filtered bytes */
	__u64 t_last_ns;        /* wall ns of its last update */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, QN_SFC_EST_SLOTS);
	__type(key, __u32);
	__type(value, struct qn_sfc_est);
} qn_sfc_est SEC(".maps");

/* 65536 * 2^(-i/64), i = 0..63: the fractional part of the LPF's decay (no floating point). */
static const __u32 qn_exp2_frac[64] = {
	65536, 64830, 64132, 63441, 62757, 62081, 61413, 60751, 60097, 59449, 58809, 58176, 57549,
	56929, 56316, 55709, 55109, 54515, 53928, 53347, 52773, 52204, 51642, 51086, 50535, 49991,
	49452, 48920, 48393, 47871, 47356, 46846, 46341, 45842, 45348, 44859, 44376, 43898, 43425,
	42958, 42495, 42037, 41584, 41136, 40693, 40255, 39821, 39392, 38968, 38548, 38133, 37722,
	37316, 36914, 36516, 36123, 35734, 35349, 34968, 34591, 34219, 33850, 33486, 33125,
};

/* x * exp(-dt / tau) = x * 2^(-dt / (tau ln 2)), in 1/64 steps of the exponent (within 1.1%). */
static __always_inline __u64 qn_sfc_decay(__u64 x, __u64 dt, __u64 tau)
{
	__u64 m;

	if (!tau || dt >= 32 * tau)
		return 0; /* 2^-46: nothing left */
	m = dt * 64 * 1000000 / (tau * 693147); /* 64 dt / (tau ln 2) */
	if (m >= 64 * 46)
		return 0;
	x >>= m / 64;
	return x * qn_exp2_frac[m & 63] >> 16;
}

/*
 * qn_sfc_estimate - sfc.md §3.4 E1 for a data packet of `len` bytes toward daddr. Return: the
 * wall ns the estimate says its sender should pause (0 for none).
 */
static __always_inline __u64 qn_sfc_estimate(const struct qn_set_sfc *s, __u32 daddr_be, __u32 len, __u64 now,
					      __u64 in_rate_bps)
{
	__u64 tau = qn_wall_ns(s->est_tau_ns), rate = s->est_rate_bps ? s->est_rate_bps : in_rate_bps;
	__u32 idx = qn_fmix32(daddr_be) & (QN_SFC_EST_SLOTS - 1);
	struct qn_sfc_est *e;
	__u64 x, drained, q;

	if (!tau || !rate)
		return 0;
	e = bpf_map_lookup_elem(&qn_sfc_est, &idx);
	if (!e)
		return 0;
	bpf_spin_lock(&e->lock);
	if (e->daddr_be != daddr_be) { /* another destination's slot: restart (an under-estimate) */
		e->daddr_be = daddr_be;
		e->x_bytes = 0;
		e->t_last_ns = now;
	}
	x = qn_sfc_decay(e->x_bytes, now > e->t_last_ns ? now - e->t_last_ns : 0, tau) + len;
	e->x_bytes = x;
	e->t_last_ns = now;
	bpf_spin_unlock(&e->lock);
	/* What the destination's link drains in tau: R x tau in fabric units. */
	drained = rate / 8 * s->est_tau_ns / 1000000000ull;
	if (x <= drained + s->qtg_bytes)
		return 0;
	q = x - drained - s->qtg_bytes;
	return qn_wall_ns(q * 8 * 1000000000ull / rate);
}

/* Fabric µs covering `wall_ns`, rounded up. */
static __always_inline __u32 qn_sfc_wall_to_us(__u64 wall_ns)
{
	__u64 us = (qn_fabric_ns(wall_ns) + 999) / 1000;

	return us > 0xFFFFFFFFull ? 0xFFFFFFFFu : (__u32)us;
}

/*
 * A BTS entering this switch (sfc.md §3.1 I1): cache it when this switch caches BTS on its way
 * (sfc_cache: tor = toward one of its hosts, all = any), then, at the last hop with SFC-P on,
 * replace it by a PAUSE. Return: 0 (forward) or QN_VERDICT_CONSUMED.
 */
static __always_inline __u32 qn_sfc_transit_bts(struct qn_ctx *c, const struct qn_set_sfc *s)
{
	__u8 b[QN_IPV4_HLEN + 8];
	__u32 eif = c->nh->ifindex, pause_us;
	struct qn_port *ep;
	int to_host;

	if (!s->cache && !s->sfcp)
		return 0;
	/* The BTS header and the trimmed original IPv4 header after it (qn_abi.h struct qn_bts). */
	if (bpf_skb_load_bytes(c->skb, c->p.l4_off + QN_UDP_HLEN, b, sizeof(b)))
		return 0;
	if ((b[0] >> 4) != QN_BTS_VERSION)
		return 0;
	pause_us = ((__u32)b[2] << 8) | b[3];
	ep = bpf_map_lookup_elem(&qn_ports, &eif);
	to_host = ep && ep->role == QN_ROLE_HOST;
	/* Cache key: the congested receiver (the BTS's source) and the data's DSCP (byte 1 of the
	 * trimmed IPv4 header at offset 8). */
	if ((b[1] & QN_BTS_CACHEABLE) && (s->cache == QN_SFC_CACHE_ALL || (s->cache == QN_SFC_CACHE_TOR && to_host)))
		qn_sfc_cache_insert(c->st, qn_sfc_key_hash(c->p.saddr_be, b[8 + 1]), c->now, pause_us);
	if (s->sfcp && to_host) {
		qn_sfcp_post(ep, eif, b[8 + 1] >> 5, pause_us);
		return QN_VERDICT_CONSUMED;
	}
	return 0;
}

/* SFC stage (sfc.md §3.1 I1-I4). Return: 0, or QN_VERDICT_CONSUMED for a BTS SFC-P replaced
 * (SFC never drops data). */
static __always_inline __u32 qn_stage_sfc(struct qn_ctx *c)
{
	const struct qn_set_sfc *s;
	struct qn_sig_entry *e;
	struct qn_port *ep;
	__u64 pre = 0, local_us, left;
	__u32 eif, pause_us;
	__u8 origin = QN_BTS_ORIGIN_CONGESTION;
	int congested, sender_side;

	if (!c->cfg || !c->cfg->sfc.on)
		return 0;
	s = &c->cfg->sfc;
	if (c->p.cls == QN_CLASS_BTS)
		return qn_sfc_transit_bts(c, s);
	if (!c->qs || !qn_sfc_eligible(c))
		return 0;
	/* sfc_where=tor: a switch without a host port is no congestion point; it still forwards
	 * and caches BTS (qn_cfg is load-time .rodata: no lookup) */
	congested = (s->where == QN_SFC_WHERE_ALL || qn_cfg.host_ports) && c->depth_b > s->qth_bytes;
	sender_side = c->in->role == QN_ROLE_HOST;
	/* The cache answers data from this switch's hosts (tor) or any data (all). */
	if (s->cache == QN_SFC_CACHE_ALL || (s->cache == QN_SFC_CACHE_TOR && sender_side)) {
		left = qn_sfc_cache_left(c->p.daddr_be, c->p.tos, c->now);
		if (left) {
			pre = left;
			origin = QN_BTS_ORIGIN_CACHE;
		}
	}
	if (s->est && sender_side) {
		left = qn_sfc_estimate(s, c->p.daddr_be, c->len, c->now, c->in->rate_bps);
		if (left > pre) {
			pre = left;
			origin = QN_BTS_ORIGIN_ESTIMATOR;
		}
	}
	if (!congested && !pre)
		return 0;
	if (congested && c->est)
		c->est->sfc_congested++;
	if (qn_sfc_bloom_test_and_set(c, qn_wall_ns(s->tbf_ns))) {
		if (c->est)
			c->est->sfc_suppressed++;
		return 0;
	}
	e = qn_sig_request(c, QN_SIG_BTS);
	if (!e)
		return 0;
	eif = c->nh->ifindex;
	ep = bpf_map_lookup_elem(&qn_ports, &eif);
	/* T_P = max(pre, (qd - Q_Tg) / R) from the depth this packet found, fabric µs (B1); when
	 * congested, qd > Q_Th >= Q_Tg (validated), so T_P > 0 (sfc.md §6.7). */
	local_us = ep ? qn_sfc_pause_us(c->depth_b > s->qtg_bytes ? c->depth_b - s->qtg_bytes : 0, ep->rate_bps) : 0;
	pause_us = qn_sfc_wall_to_us(pre);
	if (congested && local_us >= pause_us)
		origin = QN_BTS_ORIGIN_CONGESTION;
	e->v.bts.pause_us = local_us > pause_us ? (__u32)local_us : pause_us;
	e->v.bts.origin = origin;
	e->v.bts.cacheable = ep && ep->role == QN_ROLE_HOST;
	if (c->est) {
		if (origin == QN_BTS_ORIGIN_CONGESTION)
			c->est->sfc_bts_queue++;
		else if (origin == QN_BTS_ORIGIN_CACHE)
			c->est->sfc_bts_cache++;
		else
			c->est->sfc_bts_est++;
	}
	return 0;
}

#endif /* QN_SFC_H */
