/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fidmon.h - the fidelity monitor (qn_abi.h "fidelity monitor", docs/experiments.md
 * "Validity"): an ideal line-rate clock per port and direction, fed with each frame's wall time
 * at the switch. A backlogged frame should start one serialization time after the previous one
 * (lateness up to one maximum frame is the catch-up any link may make); later is link time lost
 * for good, counted and posted as a period to qn_fid_events so the flows it overlapped can be
 * tagged. Every window of QN_FID_WINDOW backlogged frames faster than line rate plus one frame
 * is counted (catching up more than a frame).
 *
 * Writers: arrivals of a port come from its one sender (the engine's transmit path), departures
 * under the port's qdisc lock; so each monitor has one writer at a time and needs no atomics.
 */
#ifndef QN_FIDMON_H
#define QN_FIDMON_H

#include "bpf_common.h"
#include "qn_abi.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, QN_MAX_PORTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct qn_fid_port);
} qn_fid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} qn_fid_events SEC(".maps");

/* One frame of `len` bytes (without the 24 B of preamble, IFG and FCS) seen at wall `now`;
 * `backlogged`: it should have followed the previous frame back to back. */
static __always_inline void qn_fid_frame(struct qn_fid_port *fp, __u32 dir, __u32 port_no, __u32 len, __u64 now,
					 int backlogged)
{
	struct qn_fid_mon *m = &fp->mon[dir & 1];
	__u64 ser = (__u64)(len + QN_WIRE_OVERHEAD) * fp->ps_per_byte / 1000;
	__u64 credit = fp->credit_wall_ns, start = now;
	__u32 idx;

	if (!fp->ps_per_byte)
		return;
	if (!backlogged || !m->next_ns || !m->run) {
		m->run = 0;
		m->cum_ns = 0;
	} else {
		start = m->next_ns;
		m->bl_ns += ser;
		m->bl_frames++;
		if (now > start + credit) {
			struct qn_fid_event *ev;

			m->lost_ns += now - start - credit;
			m->late_frames++;
			ev = bpf_ringbuf_reserve(&qn_fid_events, sizeof(*ev), 0);
			if (ev) {
				ev->from_ns = start + credit; /* the time lost, not the credit */
				ev->to_ns = now;
				ev->port_no = port_no;
				ev->dir = dir;
				bpf_ringbuf_submit(ev, 0);
			} else {
				m->events_lost++;
			}
			start = now - credit;
		}
	}
	idx = (__u32)m->run & (QN_FID_WINDOW - 1);
	if (m->run >= QN_FID_WINDOW) {
		m->windows++;
		if ((__s64)(now - m->ring_ts[idx]) + (__s64)credit < (__s64)(m->cum_ns - m->ring_cum[idx]))
			m->fast_windows++;
	}
	m->ring_ts[idx] = now;
	m->ring_cum[idx] = m->cum_ns;
	m->cum_ns += ser;
	m->run++;
	m->next_ns = start + ser;
}

/* Ingress of a host-facing port: the engine's declaration says whether this frame is backlogged. */
static __always_inline void qn_fid_arrival(__u32 port_no, __u32 len, __u64 now)
{
	struct qn_fid_port *fp = bpf_map_lookup_elem(&qn_fid, &port_no);

	if (fp)
		qn_fid_frame(fp, QN_FID_ARRIVAL, port_no, len, now, fp->engine_backlogged);
}

/* A departure: backlogged when the previous departure left packets queued, unless `held`: a
 * pause from the neighbouring switch began since (pfc.h; it stays open until the first departure
 * after its end), so the gap was the link's flow control, not link time lost. `left` is the
 * backlog this one leaves. */
static __always_inline void qn_fid_departure(struct qn_fid_port *fp, __u32 port_no, __u32 len, __u64 now, __u64 left,
					     int held)
{
	struct qn_fid_mon *m = &fp->mon[QN_FID_DEPARTURE];

	qn_fid_frame(fp, QN_FID_DEPARTURE, port_no, len, now, m->prev_left > 0 && !held);
	m->prev_left = left;
}

#endif /* QN_FIDMON_H */
