// swcfg.cc - switch run-time settings: the key table and the pinned map.
#include "control/swcfg.h"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include <bpf/bpf.h>

namespace qn {

#define W(member, ...) QN_WIRE(qn_swcfg, member __VA_OPT__(, ) __VA_ARGS__)

const ParamTable<qn_swcfg> &swcfg_table()
{
	using K = ParamKind;
	// Rows: {key, kind, field, lo, hi, choices, doc, word for 0, default}.
	// clang-format off
	static const ParamTable<qn_swcfg> t("switch", {
		// buffer: shared buffer and dynamic-threshold admission (queue.h)
		{"buffer", K::Size, W(buffer.bytes), 1e3, 1e12, {}, "shared buffer B (default: the topology's buffer)", nullptr, nullptr},
		{"admission", K::Flag, W(buffer.admission), 0, 0, {}, "enforce the dynamic threshold", nullptr, "on"},
		{"alpha", K::Number, W(buffer.alpha_data_ppm, 1e6), 0, 1000, {}, "dynamic threshold alpha of the data class", nullptr, "1"},
		{"alpha_ctrl", K::Number, W(buffer.alpha_ctrl_ppm, 1e6), 0, 1000, {}, "... of the control class", nullptr, "8"},
		{"queue", K::Choice, W(buffer.queue_mode), 0, 0, {"auto", "real", "virtual"},
		 "egress depth: the real qdisc (virtual until known), real, or the virtual queue", nullptr, "auto"},
		// red: RED/ECN marking of the data class (red.h, dequeue.h)
		{"ecn", K::Flag, W(red.on), 0, 0, {}, "RED/ECN marking", nullptr, "on"},
		{"ecn_at", K::Choice, W(red.at_dequeue), 0, 0, {"enqueue", "dequeue"},
		 "where RED decides: on the queue ahead (enqueue) or behind (dequeue)", nullptr, "enqueue"},
		{"kmin", K::Size, W(red.kmin_bytes), 0, 1e12, {}, "RED Kmin", nullptr, "5000"},
		{"kmax", K::Size, W(red.kmax_bytes), 0, 1e12, {}, "RED Kmax", nullptr, "200000"},
		{"pmax", K::Number, W(red.pmax_ppm, 1e6), 0, 1, {}, "marking probability at Kmax", nullptr, "0.01"},
		// pfc: PFC generated and obeyed, the data class lossless (pfc.h, docs/switch.md "PFC")
		{"pfc", K::Flag, W(pfc.on), 0, 0, {}, "PFC: XOFF/XON per (ingress port, priority), the data class lossless", nullptr, "off"},
		{"pfc_ports", K::Choice, W(pfc.edge_only), 0, 0, {"all", "host"},
		 "where PFC is generated: every port, or host-facing ports only (edge PFC)", nullptr, "all"},
		{"pfc_obey", K::Flag, W(pfc.obey), 0, 0, {}, "a PAUSE from a neighbouring switch stops this port's data class", nullptr, "on"},
		{"pfc_alpha", K::Number, W(pfc.alpha_ppm, 1e6), 0, 1000, {},
		 "dynamic XOFF threshold: alpha x (B - headroom - used), XON (xoff - xon) below it (0 = static xoff/xon)", nullptr, "0"},
		{"pfc_hdrm", K::Size, W(pfc.hdrm_bytes), 0, 1e12, {},
		 "headroom per (ingress port, priority) (port = sized per port from its rate, delay and the measured pause latency)", "port", "port"},
		{"xoff", K::Size, W(pfc.xoff_bytes), 0, 1e12, {}, "XOFF threshold per (ingress port, priority)", nullptr, "100000"},
		{"xon", K::Size, W(pfc.xon_bytes), 0, 1e12, {}, "XON (resume) threshold", nullptr, "80000"},
		{"quanta", K::Count, W(pfc.quanta), 1, 65535, {}, "pause quanta in XOFF frames", nullptr, "65535"},
		// test knobs (testknob.h): off the per-packet path unless one is set
		{"mirror_dport", K::Count, W(test.mirror_dport), 0, 65535, {}, "test: packets to this UDP port trigger mirror_signal (0 = off)", nullptr, "0"},
		{"mirror_signal", K::Choice, W(test.mirror_signal), 0, 0, {"echo", "bts", "postcard"}, "test: the signal mirror_dport triggers", nullptr, "echo"},
		{"loss", K::Number, W(test.loss_ppm, 1e6), 0, 1, {}, "test: random loss of RoCE data packets (probability)", nullptr, "0"},
		{"qdepth", K::Flag, W(test.qdepth), 0, 0, {}, "test: egress depths from the qn_test_qdepth map", nullptr, "off"},
		// qalarm (qalarm.h)
		{"qalarm", K::Size, W(qalarm.bytes), 0, 1e12, {}, "count packets finding their egress queue at or above this (0 = off)", nullptr, "0"},
		// sfc: SFC's congestion point (sfc.h, docs/sfc.md); a scheme with /sfc derives the values
		{"sfc", K::Flag, W(sfc.on), 0, 0, {}, "SFC: back-to-sender signals (BTS) from ingress", nullptr, "off"},
		{"sfc_where", K::Choice, W(sfc.where), 0, 0, {"tor", "all"},
		 "SFC's congestion points: ToRs (switches with a host port, as the paper's simulations) or every switch", nullptr, "tor"},
		{"sfc_qth", K::Size, W(sfc.qth_bytes), 0, 1e12, {}, "SFC Q_Th: a BTS when the egress queue is over this", nullptr, "250000"},
		{"sfc_qtg", K::Size, W(sfc.qtg_bytes), 0, 1e12, {}, "SFC Q_Tg: the pause drains the queue to this", nullptr, "125000"},
		{"sfc_tbf", K::Time, W(sfc.tbf_ns), 0, 1e12, {}, "SFC T_BF: Bloom filter epoch, fabric time (0 = no suppression)", nullptr, "5us"},
		{"sfc_cache", K::Choice, W(sfc.cache), 0, 0, {"off", "tor", "all"},
		 "SFC pause cache: off, tor (BTS toward this switch's hosts, answers their data) or all (Alg. 1)", nullptr, "tor"},
		{"sfc_p", K::Flag, W(sfc.sfcp), 0, 0, {}, "SFC-P: a BTS leaving toward a host becomes one PFC PAUSE", nullptr, "off"},
		{"sfc_est", K::Flag, W(sfc.est), 0, 0, {}, "SFC incast estimator at this switch's host ports", nullptr, "off"},
		{"sfc_est_tau", K::Time, W(sfc.est_tau_ns), 0, 1e12, {}, "its time constant tau, fabric time", nullptr, "10us"},
		{"sfc_est_rate", K::Rate, W(sfc.est_rate_bps), 0, 1e13, {}, "the receivers' link rate R_dst (port = the ingress port's)", "port", "port"},
		// ldcp: LDCP's Not-ECT drop (ldcp.h, docs/ldcp.md); the scheme ldcp derives the values
		{"ldcp", K::Flag, W(ldcp.on), 0, 0, {}, "LDCP: drop Not-ECT (fast-start) data at K", nullptr, "off"},
		{"ldcp_k", K::Size, W(ldcp.k_bytes), 0, 1e12, {}, "LDCP K: the Not-ECT drop threshold (kmin = the RED profile's Kmin)", "kmin", "kmin"},
		// pbfs: PB-FS's history and CC-postcards (pbfs.h, docs/pbfs.md); a scheme with /pbfs derives the values
		{"pbfs", K::Flag, W(pbfs.on), 0, 0, {}, "PB-FS: slot history per port, CC-postcards for PBT-marked packets", nullptr, "off"},
		{"pbfs_n", K::Count, W(pbfs.n), 1, QN_PBFS_MAX_N, {}, "PB-FS N: history slots per half DC_RTT", nullptr, "8"},
		{"pbfs_slot", K::Time, W(pbfs.slot_ns), 0, 1e9, {}, "PB-FS slot length DC_RTT / 2N, fabric time", nullptr, "1560ns"},
		{"pbfs_tdelta", K::Time, W(pbfs.tdelta_ns), 0, 1e9, {}, "PB-FS T_Δ: the recentBytes window, fabric time", nullptr, "2035ns"},
		{"pbfs_dc_rtt", K::Time, W(pbfs.dc_rtt_ns), 0, 1e9, {}, "PB-FS DC_RTT, fabric time", nullptr, "25us"},
		// pcn: PCN's NP-ECN (pcn.h, docs/pcn.md); the scheme pcn derives the values
		{"pcn", K::Flag, W(pcn.on), 0, 0, {}, "PCN NP-ECN: packets paused by a neighbour's PFC are never marked", nullptr, "off"},
		{"pcn_pn", K::Choice, W(pcn.pn_mode), 0, 0, {"xoff+enq", "xoff"},
		 "PCN PN: the queue at the PAUSE plus packets enqueued while paused, or the queue at the PAUSE only", nullptr, "xoff+enq"},
	});
	// clang-format on
	return t;
}

#undef W

void finalize_swcfg(qn_swcfg &c)
{
	// Any test knob set: every field of the test struct after `on` (zero means off).
	static_assert(offsetof(qn_set_test, on) == 0);
	const auto *b = reinterpret_cast<const unsigned char *>(&c.test) + sizeof(c.test.on);
	c.test.on = 0;
	for (size_t i = 0; i < sizeof(c.test) - sizeof(c.test.on); i++)
		if (b[i])
			c.test.on = 1;
}

qn_swcfg default_swcfg(uint64_t buffer_bytes)
{
	qn_swcfg c{};
	// The table's defaults are literals it accepts; a failure is a bug in the table.
	if (auto st = swcfg_table().defaults(c); !st.ok())
		std::abort();
	c.buffer.bytes = buffer_bytes;
	finalize_swcfg(c);
	return c;
}

Status apply_swcfg(qn_swcfg &c, const std::string &k, const std::string &v)
{
	QN_TRY(swcfg_table().apply(c, k, v));
	finalize_swcfg(c);
	return ok_status();
}

std::string ecn_before_pfc(const qn_swcfg &c, size_t nports, uint64_t hdrm_reserved)
{
	if (!c.red.on || !c.pfc.on || nports < 2)
		return "";
	const double feeders = double(nports - 1), kmin = double(c.red.kmin_bytes);
	char b[400];
	if (c.pfc.alpha_ppm == 0) {
		if (feeders * kmin < double(c.pfc.xoff_bytes))
			return "";
		std::snprintf(b, sizeof(b),
			      "ECN before PFC does not hold: %zu ports x kmin %llu B = %.0f B reach xoff %llu B "
			      "(DCQCN §4: kmin < xoff / %zu = %.0f B)",
			      nports - 1, static_cast<unsigned long long>(c.red.kmin_bytes), feeders * kmin,
			      static_cast<unsigned long long>(c.pfc.xoff_bytes), nports - 1,
			      double(c.pfc.xoff_bytes) / feeders);
		return b;
	}
	const double a = double(c.pfc.alpha_ppm) / 1e6;
	const double free_b = c.buffer.bytes > hdrm_reserved ? double(c.buffer.bytes - hdrm_reserved) : 0.0;
	const double bound = a * free_b / (feeders * (1 + a));
	if (kmin < bound)
		return "";
	std::snprintf(b, sizeof(b),
		      "ECN before PFC does not hold: kmin %llu B is not below pfc_alpha %g x (buffer %llu B - "
		      "headroom %llu B) / (%zu x (1 + %g)) = %.0f B (DCQCN §4)",
		      static_cast<unsigned long long>(c.red.kmin_bytes), a,
		      static_cast<unsigned long long>(c.buffer.bytes), static_cast<unsigned long long>(hdrm_reserved),
		      nports - 1, a, bound);
	return b;
}

Status validate_swcfg(const qn_swcfg &c)
{
	if (c.red.kmin_bytes > c.red.kmax_bytes)
		return make_error("kmin (" + std::to_string(c.red.kmin_bytes) + ") is above kmax (" +
				  std::to_string(c.red.kmax_bytes) + ")");
	if (c.pfc.xon_bytes > c.pfc.xoff_bytes)
		return make_error("xon (" + std::to_string(c.pfc.xon_bytes) + ") is above xoff (" +
				  std::to_string(c.pfc.xoff_bytes) + ")");
	if (c.sfc.qtg_bytes > c.sfc.qth_bytes)
		return make_error("sfc_qtg (" + std::to_string(c.sfc.qtg_bytes) + ") is above sfc_qth (" +
				  std::to_string(c.sfc.qth_bytes) + ")");
	if (c.buffer.bytes == 0)
		return make_error("buffer must be positive");
	if (c.pbfs.on && (c.pbfs.slot_ns == 0 || c.pbfs.dc_rtt_ns == 0))
		return make_error("pbfs=on needs pbfs_slot and pbfs_dc_rtt above 0");
	return ok_status();
}

std::string describe_swcfg(const qn_swcfg &c) { return swcfg_table().describe(c); }

std::vector<std::pair<std::string, std::string>> swcfg_values(const qn_swcfg &c)
{
	std::vector<std::pair<std::string, std::string>> v;
	for (const auto &p : swcfg_table().rows())
		v.emplace_back(p.name, swcfg_table().exact(c, p));
	return v;
}

Result<qn_swcfg> read_swcfg(const std::string &pin_dir)
{
	int fd = bpf_obj_get((pin_dir + "/qn_swcfg").c_str());
	if (fd < 0)
		return sys_error(errno, "open " + pin_dir + "/qn_swcfg");
	qn_swcfg c{};
	uint32_t zero = 0;
	int err = bpf_map_lookup_elem(fd, &zero, &c);
	close(fd);
	if (err)
		return sys_error(errno, "read " + pin_dir + "/qn_swcfg");
	return c;
}

Status write_swcfg(const std::string &pin_dir, qn_swcfg c)
{
	QN_TRY(validate_swcfg(c));
	finalize_swcfg(c);
	int fd = bpf_obj_get((pin_dir + "/qn_swcfg").c_str());
	if (fd < 0)
		return sys_error(errno, "open " + pin_dir + "/qn_swcfg");
	uint32_t zero = 0;
	int err = bpf_map_update_elem(fd, &zero, &c, BPF_ANY);
	close(fd);
	if (err)
		return sys_error(errno, "write " + pin_dir + "/qn_swcfg");
	return ok_status();
}

} // namespace qn
