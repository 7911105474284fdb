/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pfc.h - edge PFC (802.1Qbb) generation: per (ingress port, priority) accounting charged when
 * the ingress pipeline forwards a packet and released when the packet leaves its egress queue
 * (dequeue.h). Crossing pfc.xoff_bytes on a host-facing port posts an XOFF request, falling to
 * pfc.xon_bytes an XON request; the control thread (switchd) sends the frames. Times in wall ns.
 */
#ifndef QN_PFC_H
#define QN_PFC_H

#include "bpf_common.h"
#include "maps.h"

/* Post an XOFF (quanta > 0) or XON (quanta 0) request for the control thread. ifindex 0 lets the
 * control thread map port_no to its ifindex. Return: 0 on success. */
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

static __always_inline struct qn_pfc_acct *qn_pfc_acct_of(__u32 port_no, __u32 prio)
{
	__u32 k = (port_no & (QN_MAX_PORTS - 1)) * QN_NUM_PRIOS + (prio & (QN_NUM_PRIOS - 1));

	return bpf_map_lookup_elem(&qn_pfc_acct, &k);
}

/*
 * qn_pfc_charge - charge `len` bytes toward egress port `eport` to (in_port, prio); on a
 * host-facing port with PFC on, the first crossing of the XOFF threshold pauses the peer.
 * `st`: the ingress port's counters.
 */
static __always_inline void qn_pfc_charge(const struct qn_set_pfc *pfc, const struct qn_port *in,
					  struct qn_port_stats *st, __u32 ifindex, __u32 in_port, __u32 prio,
					  __u32 eport, __u32 len, __u64 now)
{
	struct qn_pfc_acct *pa = qn_pfc_acct_of(in_port, prio);
	__s64 b;

	if (!pa)
		return;
	__sync_fetch_and_add(&pa->by_egress[eport & (QN_MAX_PORTS - 1)], len);
	b = __sync_fetch_and_add(&pa->bytes, len) + len;
	if (pfc->on && in->role == QN_ROLE_HOST && b >= (__s64)pfc->xoff_bytes &&
	    __sync_val_compare_and_swap(&pa->paused, 0, 1) == 0) {
		pa->since_ns = now;
		st->pfc_xoff_sent++;
		qn_pfc_post(ifindex, in_port, prio, pfc->quanta);
	}
}

/* qn_pfc_release - release `len` bytes of account `pa` (in_port, prio); a paused peer whose
 * account fell to the XON threshold is resumed and its pause time counted. */
static __always_inline void qn_pfc_release(const struct qn_set_pfc *pfc, struct qn_pfc_acct *pa, __u32 in_port,
					   __u32 prio, __u32 len, __u64 now)
{
	if (__sync_fetch_and_add(&pa->bytes, -(__s64)len) - (__s64)len <= (__s64)pfc->xon_bytes && pa->paused &&
	    __sync_val_compare_and_swap(&pa->paused, 1, 0) == 1) {
		__u32 in = in_port & (QN_MAX_PORTS - 1);
		struct qn_port_stats *st = bpf_map_lookup_elem(&qn_port_stats, &in);

		if (st) {
			st->pfc_xon_sent++;
			st->paused_wall_ns += now - pa->since_ns;
		}
		qn_pfc_post(0, in, prio, 0);
	}
}

#endif /* QN_PFC_H */
