/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * maps.h - the switch's maps. One skeleton instance per switch owns them; the control plane
 * pins them under /sys/fs/bpf/quench/<topology>/<switch>/ (docs/switch.md).
 */
#ifndef QN_MAPS_H
#define QN_MAPS_H

#include "qn_abi.h"

/* qn_ports: switch port table, key = ifindex in the switch namespace. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, QN_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct qn_port);
} qn_ports SEC(".maps");

/* qn_fib: destination prefix -> ECMP next-hop set. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, QN_MAX_ROUTES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct qn_fib_key);
	__type(value, struct qn_fib_val);
} qn_fib SEC(".maps");

/* qn_port_stats: per-CPU counters per port number. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, QN_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct qn_port_stats);
} qn_port_stats SEC(".maps");

/* Counters of frames whose ingress port is unknown (not in qn_ports), by reason. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, QN_DROP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} qn_orphan_drops SEC(".maps");

/* qn_swcfg: run-time switch configuration (single entry). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct qn_swcfg);
} qn_swcfg SEC(".maps");

/* qn_qstate: per egress port queue state, shared by all CPUs (atomics). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, QN_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct qn_qstate);
} qn_qstate SEC(".maps");

/* qn_buffer: bytes of the shared buffer in use (accounted), single entry. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} qn_buffer SEC(".maps");

/* qn_test_qdepth: per port, fixed egress depths; read only with the qdepth test knob. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, QN_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct qn_test_qdepth);
} qn_test_qdepth SEC(".maps");

/* qn_dev_port: egress net_device pointer -> port_no, so the system-wide dequeue tracepoint
 * recognises this switch's ports. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, QN_MAX_PORTS);
	__type(key, __u64);
	__type(value, __u32);
} qn_dev_port SEC(".maps");

/* qn_pfc_acct: per (ingress port, priority) PFC accounting. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, QN_MAX_PORTS * QN_NUM_PRIOS);
	__type(key, __u32);
	__type(value, struct qn_pfc_acct);
} qn_pfc_acct SEC(".maps");

/* qn_pfc_events: XOFF/XON requests for the control thread (struct qn_pfc_event). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} qn_pfc_events SEC(".maps");

/* qn_qsamples: dequeue-time queue samples (struct qn_qsample). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} qn_qsamples SEC(".maps");

/* qn_recirc: ifindex of the recirculation device (single entry, 0 = none). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} qn_recirc SEC(".maps");

/* qn_sig_ring: side values of requested signals, by sequence number (qn_abi.h "typed
 * recirculation signals"); qn_sig_seq (.bss) numbers the requests. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, QN_SIG_RING);
	__type(key, __u32);
	__type(value, struct qn_sig_entry);
} qn_sig_ring SEC(".maps");

/* qn_sw_gauges: the switch's gauges (enum qn_sw_gauge), written by its control thread, read by
 * `quench switch stats` and experiments. No program reads it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, QN_GAUGE_MAX);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} qn_sw_gauges SEC(".maps");

#endif /* QN_MAPS_H */
