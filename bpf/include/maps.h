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

#endif /* QN_MAPS_H */
