// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * qn_rxe.bpf.c - tc clsact programs on a Soft-RoCE (rdma_rxe) host's veth (docs/agent.md).
 *
 * Egress, every RoCEv2 frame rxe sends:
 *  - learns the QP from its packets (peer address, BTH DestQP, UDP source port) in qn_rxe_qps;
 *  - with the agent on, sets ECT(0) on data frames that rxe sent Not-ECT (it copies the GRH
 *    traffic class, 0 for perftest), patching the IPv4 checksum (the ICRC masks the TOS byte);
 *    ACKs, NAKs and CNPs stay Not-ECT;
 *  - gives the frame an earliest departure time (EDT, honoured by sch_fq): no earlier than
 *    the end of a PFC pause of its priority (DSCP >> 3, as the switch accounts it) and, for data,
 *    of a BTS pause of its QP; after the QP's previous frame at the rate the agent wrote in
 *    qn_rxe_rate (agent on); and after its priority's previous frame at the host link's rate
 *    (always: the link is shaped whether the agent runs or not). A frame held by its QP's BTS
 *    pause skips the link's chain, so the host's other QPs keep sending.
 * Ingress:
 *  - PFC/PAUSE frames set the pause of each priority they name (qn_rxe_pause; XON ends it);
 *    a BTS pauses the QP it names (its trimmed headers: the data's destination and DestQP);
 *    both are taken from the stack (TC_ACT_SHOT) and need no agent: a NIC obeys PFC;
 *  - on RoCEv2 frames for rxe: applies a CE mark an upstream switch decided at dequeue
 *    (dqmark.h); counts CE-marked data per QP (qn_rxe_ce) and, with the agent on, posts each to
 *    the agent (the notification point decides whether a CNP leaves); with the agent on, takes
 *    CNPs away from rxe (which has no use for them) into the ring buffer for the agent.
 * What fq cannot do: re-time a queued frame. A frame stamped before a pause arrives leaves at its
 * stamp (the host's backlog in the qdisc slips through), and a frame stamped for a pause's end
 * leaves then even if an XON ended the pause earlier or a refresh extended it (docs/agent.md).
 */
#include "bpf_common.h"
#include "dqmark.h"
#include "ecn.h"
#include "parse.h"

#define QN_RXE_QPS 1024

struct qn_rxe_pace {
	struct bpf_spin_lock lock;
	__u32 pad;
	__u64 next_ns;
};

/* LRU: the QPs of finished applications age out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, QN_RXE_QPS);
	__type(key, struct qn_rxe_qp_key);
	__type(value, struct qn_rxe_qp);
} qn_rxe_qps SEC(".maps");

/* The agent's rate per QP (egress key), bit/s; no entry or 0: unpaced. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, QN_RXE_QPS);
	__type(key, struct qn_rxe_qp_key);
	__type(value, __u64);
} qn_rxe_rate SEC(".maps");

/* Per-QP EDT state (egress key); key {0, prio} is the link's chain of that priority. A plain
 * hash (spin locks live only in hash and array maps): the agent deletes a QP's entry with its
 * rate. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, QN_RXE_QPS + 1);
	__type(key, struct qn_rxe_qp_key);
	__type(value, struct qn_rxe_pace);
} qn_rxe_pace SEC(".maps");

/* PFC pause per priority (struct qn_rxe_pause), written by ingress, read by egress. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, QN_NUM_PRIOS);
	__type(key, __u32);
	__type(value, struct qn_rxe_pause);
} qn_rxe_pause SEC(".maps");

/* CE-marked data frames per QP (ingress key); LRU like qn_rxe_qps. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, QN_RXE_QPS);
	__type(key, struct qn_rxe_qp_key);
	__type(value, __u64);
} qn_rxe_ce SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct qn_rxe_cfg);
} qn_rxe_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} qn_rxe_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, QN_RXE_MAX);
	__type(key, __u32);
	__type(value, __u64);
} qn_rxe_stats SEC(".maps");

static __always_inline void qn_rxe_count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&qn_rxe_stats, &which);

	if (c)
		(*c)++;
}

/* Return: 1 when the parsed frame is unfragmented IPv4 / UDP 4791 with a whole BTH. */
static __always_inline int qn_rxe_roce(const struct qn_pkt *p, void *data, void *data_end)
{
	if (p->eth_proto != QN_ETH_P_IPV4 || p->is_frag || p->proto != IPPROTO_UDP_NUM ||
	    p->dport != QN_ROCE_UDP_PORT || !p->l4_off || p->l4_off > QN_ETH_HLEN + 4 * QN_VLAN_MAX_DEPTH + 60)
		return 0;
	return data + p->l4_off + QN_UDP_HLEN + QN_BTH_LEN <= data_end;
}

static __always_inline struct qn_bth *qn_rxe_bth(const struct qn_pkt *p, void *data, void *data_end)
{
	struct qn_bth *b;
	__u32 off = p->l4_off;

	if (off > QN_ETH_HLEN + 4 * QN_VLAN_MAX_DEPTH + 60)
		return NULL;
	b = data + off + QN_UDP_HLEN;
	if ((void *)(b + 1) > data_end)
		return NULL;
	return b;
}

static __always_inline __u32 qn_rxe_u24(const __u8 *b)
{
	return ((__u32)b[0] << 16) | ((__u32)b[1] << 8) | b[2];
}

/* EDT: the departure time of `wire` bytes at `rate_bps` after the previous frame of `key`
 * (never before `t`). Return: the departure time. */
static __always_inline __u64 qn_rxe_edt(const struct qn_rxe_qp_key *key, __u64 t, __u32 wire, __u64 rate_bps)
{
	struct qn_rxe_pace *st, init = {};
	__u64 start;

	if (!rate_bps)
		return t;
	st = bpf_map_lookup_elem(&qn_rxe_pace, key);
	if (!st) {
		bpf_map_update_elem(&qn_rxe_pace, key, &init, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&qn_rxe_pace, key);
		if (!st)
			return t;
	}
	bpf_spin_lock(&st->lock);
	start = st->next_ns > t ? st->next_ns : t;
	st->next_ns = start + (__u64)wire * 8000000000ULL / rate_bps;
	bpf_spin_unlock(&st->lock);
	return start;
}

SEC("tc")
int qn_rxe_egress(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct qn_rxe_qp_key key = {}, link = {};
	struct qn_rxe_pause *pz;
	struct qn_rxe_cfg *cfg;
	struct qn_rxe_qp *qp;
	struct qn_bth *bth;
	struct qn_pkt p;
	__u32 zero = 0, wire = skb->len + QN_WIRE_OVERHEAD, prio;
	__u64 now, t, *rate, qp_rate, qp_pause;

	qn_parse(data, data_end, skb->len, &p);
	if (!qn_rxe_roce(&p, data, data_end))
		return TC_ACT_OK;
	bth = qn_rxe_bth(&p, data, data_end);
	cfg = bpf_map_lookup_elem(&qn_rxe_cfg, &zero);
	if (!bth || !cfg)
		return TC_ACT_OK;
	now = bpf_ktime_get_ns();
	t = now;
	/* PFC: the frame's priority as the switch accounts it (switch.h: DSCP >> 3). */
	prio = (p.tos >> 5) & (QN_NUM_PRIOS - 1);
	link.qpn = prio;
	pz = bpf_map_lookup_elem(&qn_rxe_pause, &prio);
	if (pz && (cfg->honor & QN_RXE_HONOR_PFC) && pz->until_ns > t) {
		t = pz->until_ns;
		qn_rxe_count(QN_RXE_TX_PFC_HELD);
	}
	if (qn_classify_opcode(bth->opcode) == QN_CLASS_DATA) {
		qn_rxe_count(QN_RXE_TX_DATA);
		key.peer_ip_be = p.daddr_be;
		key.qpn = qn_rxe_u24(bth->dest_qp);
		qp = bpf_map_lookup_elem(&qn_rxe_qps, &key);
		if (!qp) {
			struct qn_rxe_qp init = {.first_ns = now, .local_ip_be = p.saddr_be, .sport = p.sport};

			bpf_map_update_elem(&qn_rxe_qps, &key, &init, BPF_NOEXIST);
			qp = bpf_map_lookup_elem(&qn_rxe_qps, &key);
		}
		qp_pause = 0;
		if (qp) {
			__sync_fetch_and_add(&qp->pkts, 1);
			__sync_fetch_and_add(&qp->bytes, skb->len);
			qp->last_ns = now;
			qp->sport = p.sport;
			if (cfg->honor & QN_RXE_HONOR_BTS)
				qp_pause = qp->pause_until_ns;
		}
		qp_rate = 0;
		if (cfg->agent) {
			if (!(p.tos & QN_ECN_MASK)) {
				struct iphdr *ip = data + p.l3_off;

				if (p.l3_off <= QN_ETH_HLEN + 4 * QN_VLAN_MAX_DEPTH && (void *)(ip + 1) <= data_end) {
					qn_ipv4_set_ecn(ip, 2); /* ECT(0) */
					qn_rxe_count(QN_RXE_TX_ECT);
				}
			}
			rate = bpf_map_lookup_elem(&qn_rxe_rate, &key);
			if (rate)
				qp_rate = *rate;
		}
		/* A QP with a rate, or one a BTS ever paused, keeps its own chain: its frames after
		 * a pause leave after the ones the pause held, never before (no reordering). */
		if (qp_rate || qp_pause) {
			int held = qp_pause > t;

			if (held) {
				t = qp_pause;
				qn_rxe_count(QN_RXE_TX_BTS_HELD);
			}
			t = qn_rxe_edt(&key, t, wire, qp_rate ? qp_rate : cfg->link_bps);
			if (held)
				goto stamp; /* the link's chain stays free for the other QPs */
		}
	} else {
		qn_rxe_count(QN_RXE_TX_CTRL);
	}
	t = qn_rxe_edt(&link, t, wire, cfg->link_bps);
stamp:
	if (t > now) {
		bpf_skb_set_tstamp(skb, t, BPF_SKB_TSTAMP_DELIVERY_MONO);
		qn_rxe_count(QN_RXE_TX_PACED);
	}
	return TC_ACT_OK;
}

/* A pause signal at `now` sets the pause to end at `end` (>= now), replacing what was left of
 * the previous one (802.1Qbb reloads its timer, XON is quanta 0; sfc.md §6.1: a BTS replaces,
 * even with an earlier end). *paused keeps the union of the pauses. */
static __always_inline void qn_rxe_pause_set(__u64 *until, __u64 *paused, __u64 now, __u64 end)
{
	__u64 left = *until > now ? *until : now;

	if (end > left)
		__sync_fetch_and_add(paused, end - left);
	else if (end < left)
		__sync_fetch_and_add(paused, -(left - end));
	*until = end;
}

/* A PFC (or 802.3x PAUSE) frame for this host: each priority it names pauses for its quanta at
 * the host link's rate, or resumes (quanta 0). Return: TC_ACT_SHOT (MAC control is the NIC's). */
static __always_inline int qn_rxe_pfc(void *data, void *data_end, const struct qn_rxe_cfg *cfg)
{
	struct qn_pfc_body *b = data + QN_ETH_HLEN;
	__u32 enable, op, i;
	__u64 now;

	qn_rxe_count(QN_RXE_RX_PFC);
	if ((void *)(b + 1) > data_end || !(cfg->honor & QN_RXE_HONOR_PFC) || !cfg->link_bps)
		return TC_ACT_SHOT;
	op = bpf_ntohs(b->opcode);
	if (op == QN_PAUSE_OPCODE)
		enable = 0xFF; /* every priority, for the one pause time after the opcode */
	else if (op == QN_PFC_OPCODE)
		enable = bpf_ntohs(b->enable) & 0xFF;
	else
		return TC_ACT_SHOT;
	now = bpf_ktime_get_ns();
	for (i = 0; i < QN_NUM_PRIOS; i++) {
		struct qn_rxe_pause *pz;
		__u32 prio = i;
		__u64 q;

		if (!(enable & (1u << i)))
			continue;
		pz = bpf_map_lookup_elem(&qn_rxe_pause, &prio);
		if (!pz)
			continue;
		q = bpf_ntohs(op == QN_PAUSE_OPCODE ? b->enable : b->quanta[i]);
		__sync_fetch_and_add(q ? &pz->xoff : &pz->xon, 1);
		qn_rxe_pause_set(&pz->until_ns, &pz->paused_ns, now, now + q * 512 * 1000000000ULL / cfg->link_bps);
	}
	return TC_ACT_SHOT;
}

/* A BTS for this host (sfc.md §5): pause the QP its trimmed headers name, the data's destination
 * and DestQP (the egress key), for its pause time (fabric us = wall us: rxe hosts run at D = 1;
 * 0 ends the pause).
 * Return: TC_ACT_SHOT (the signal is the NIC's, not the stack's). */
static __always_inline int qn_rxe_bts(struct __sk_buff *skb, const struct qn_pkt *p, const struct qn_rxe_cfg *cfg)
{
	struct qn_rxe_qp_key key = {};
	struct qn_bts b;
	struct qn_rxe_qp *qp;
	__u64 now;

	qn_rxe_count(QN_RXE_RX_BTS);
	if (bpf_skb_load_bytes(skb, p->l4_off + QN_UDP_HLEN, &b, sizeof(b)) || (b.ver_origin >> 4) != QN_BTS_VERSION)
		return TC_ACT_SHOT;
	__builtin_memcpy(&key.peer_ip_be, &b.orig_ip[16], 4); /* the data's destination */
	key.qpn = qn_rxe_u24(b.orig_bth.dest_qp);
	qp = bpf_map_lookup_elem(&qn_rxe_qps, &key);
	if (!qp) {
		qn_rxe_count(QN_RXE_RX_BTS_NO_QP);
		return TC_ACT_SHOT;
	}
	__sync_fetch_and_add(&qp->bts, 1);
	qp->pkts_at_bts = qp->pkts;
	if (!(cfg->honor & QN_RXE_HONOR_BTS))
		return TC_ACT_SHOT;
	now = bpf_ktime_get_ns();
	qn_rxe_pause_set(&qp->pause_until_ns, &qp->paused_ns, now, now + (__u64)bpf_ntohs(b.pause_us) * 1000);
	return TC_ACT_SHOT;
}

SEC("tc")
int qn_rxe_ingress(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct qn_rxe_qp_key key = {};
	struct qn_rxe_event *ev;
	struct qn_rxe_cfg *cfg;
	struct qn_bth *bth;
	struct qn_pkt p;
	__u32 zero = 0, kind = 0;
	__u64 *ce, one = 1;

	qn_parse(data, data_end, skb->len, &p);
	if (p.cls == QN_CLASS_PFC || (p.eth_proto == QN_ETH_P_IPV4 && !p.is_frag && p.proto == IPPROTO_UDP_NUM &&
				      p.dport == QN_BTS_UDP_PORT && p.l4_off)) {
		cfg = bpf_map_lookup_elem(&qn_rxe_cfg, &zero);
		if (!cfg)
			return TC_ACT_OK;
		if (p.cls == QN_CLASS_PFC)
			return qn_rxe_pfc(data, data_end, cfg);
		return qn_rxe_bts(skb, &p, cfg);
	}
	if (!qn_rxe_roce(&p, data, data_end))
		return TC_ACT_OK;
	if (qn_dqmark_apply(data, data_end, &p)) {
		qn_rxe_count(QN_RXE_RX_DQMARK);
		p.tos |= QN_ECN_CE;
	}
	bth = qn_rxe_bth(&p, data, data_end);
	cfg = bpf_map_lookup_elem(&qn_rxe_cfg, &zero);
	if (!bth || !cfg)
		return TC_ACT_OK;
	key.peer_ip_be = p.saddr_be;
	key.qpn = qn_rxe_u24(bth->dest_qp);
	if (bth->opcode == QN_OP_CNP) {
		qn_rxe_count(QN_RXE_RX_CNP);
		if (!cfg->agent)
			return TC_ACT_OK;
		kind = QN_RXE_EV_CNP;
	} else if (qn_classify_opcode(bth->opcode) == QN_CLASS_DATA) {
		qn_rxe_count(QN_RXE_RX_DATA);
		if ((p.tos & QN_ECN_MASK) != QN_ECN_CE)
			return TC_ACT_OK;
		qn_rxe_count(QN_RXE_RX_CE);
		ce = bpf_map_lookup_elem(&qn_rxe_ce, &key);
		if (ce)
			__sync_fetch_and_add(ce, 1);
		else
			bpf_map_update_elem(&qn_rxe_ce, &key, &one, BPF_NOEXIST);
		if (!cfg->agent)
			return TC_ACT_OK;
		kind = QN_RXE_EV_CE;
	} else {
		return TC_ACT_OK;
	}
	ev = bpf_ringbuf_reserve(&qn_rxe_events, sizeof(*ev), 0);
	if (!ev) {
		qn_rxe_count(QN_RXE_EV_LOST);
	} else {
		ev->t_ns = bpf_ktime_get_ns();
		ev->kind = kind;
		ev->qpn = key.qpn;
		ev->peer_ip_be = key.peer_ip_be;
		ev->psn = qn_rxe_u24(bth->psn);
		ev->len = skb->len;
		ev->sport = p.sport;
		ev->opcode = bth->opcode;
		ev->pad = 0;
		bpf_ringbuf_submit(ev, 0);
	}
	/* A CNP is the agent's; rxe never sees it. */
	return kind == QN_RXE_EV_CNP ? TC_ACT_SHOT : TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
