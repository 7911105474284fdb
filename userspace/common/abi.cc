// abi.cc - names for the enums of qn_abi.h.
#include "common/abi.h"

#include <cstring>

namespace qn {

void accumulate(qn_port_stats &a, const qn_port_stats &b)
{
#define QN_X_SUM(name, column, doc) a.name += b.name;
	QN_PORT_COUNTERS(QN_X_SUM)
#undef QN_X_SUM
	for (int i = 0; i < QN_DROP_MAX; i++)
		a.drops[i] += b.drops[i];
}

const std::vector<PortCounterInfo> &port_counter_info()
{
	static const std::vector<PortCounterInfo> v = {
#define QN_X_INFO(name, column, doc) {#name, column, doc, offsetof(qn_port_stats, name)},
		QN_PORT_COUNTERS(QN_X_INFO)
#undef QN_X_INFO
	};
	return v;
}

uint64_t port_counter(const qn_port_stats &s, const PortCounterInfo &c)
{
	uint64_t v;
	std::memcpy(&v, reinterpret_cast<const unsigned char *>(&s) + c.offset, sizeof(v));
	return v;
}

std::string drop_reason_name(unsigned reason)
{
	static const char *const names[] = {
#define QN_X_NAME(id, name, doc) #name,
		QN_DROP_REASONS(QN_X_NAME)
#undef QN_X_NAME
	};
	static_assert(sizeof(names) / sizeof(names[0]) == QN_DROP_MAX);
	if (reason < QN_DROP_MAX)
		return names[reason];
	return "reason_" + std::to_string(reason);
}

std::string drop_reason_doc(unsigned reason)
{
	static const char *const docs[] = {
#define QN_X_DOC(id, name, doc) doc,
		QN_DROP_REASONS(QN_X_DOC)
#undef QN_X_DOC
	};
	return reason < QN_DROP_MAX ? docs[reason] : "";
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
