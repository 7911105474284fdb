// abi.cc - names for the enums of qn_abi.h.
#include "common/abi.h"

namespace qn {

void accumulate(qn_port_stats &a, const qn_port_stats &b)
{
	a.rx_pkts += b.rx_pkts;
	a.rx_bytes += b.rx_bytes;
	a.tx_pkts += b.tx_pkts;
	a.tx_bytes += b.tx_bytes;
	a.tx_ctrl_pkts += b.tx_ctrl_pkts;
	a.tx_data_pkts += b.tx_data_pkts;
	a.rx_nonlinear += b.rx_nonlinear;
	a.ecn_marked += b.ecn_marked;
	a.ecn_ect += b.ecn_ect;
	a.pfc_xoff_sent += b.pfc_xoff_sent;
	a.pfc_xon_sent += b.pfc_xon_sent;
	a.pfc_rx += b.pfc_rx;
	a.paused_ns += b.paused_ns;
	a.mirrored += b.mirrored;
	for (int i = 0; i < QN_DROP_MAX; i++)
		a.drops[i] += b.drops[i];
}

std::string drop_reason_name(unsigned reason)
{
	switch (reason) {
	case QN_DROP_NONE: return "none";
	case QN_DROP_TRUNCATED: return "truncated";
	case QN_DROP_NOT_IPV4: return "not_ipv4";
	case QN_DROP_BAD_IP: return "bad_ip";
	case QN_DROP_TTL: return "ttl";
	case QN_DROP_NO_ROUTE: return "no_route";
	case QN_DROP_UNKNOWN_PORT: return "unknown_port";
	case QN_DROP_HOST_BTS: return "host_bts";
	case QN_DROP_HOST_POSTCARD: return "host_postcard";
	case QN_DROP_HOST_PFC: return "host_pfc";
	case QN_DROP_MALFORMED_ROCE: return "malformed_roce";
	case QN_DROP_VLAN_DEPTH: return "vlan_depth";
	case QN_DROP_PFC_FRAME: return "pfc_frame";
	case QN_DROP_REDIRECT: return "redirect";
	case QN_DROP_BUFFER: return "buffer";
	case QN_DROP_INJECTED: return "injected";
	default: return "reason_" + std::to_string(reason);
	}
}

std::string pkt_class_name(unsigned cls)
{
	switch (cls) {
	case QN_CLASS_OTHER: return "other";
	case QN_CLASS_DATA: return "data";
	case QN_CLASS_CONTROL: return "control";
	case QN_CLASS_BTS: return "bts";
	case QN_CLASS_POSTCARD: return "postcard";
	case QN_CLASS_PFC: return "pfc";
	default: return "class_" + std::to_string(cls);
	}
}

} // namespace qn
