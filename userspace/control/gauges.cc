// gauges.cc - table scans for the switch's gauges (gauges.h).
#include "control/gauges.h"

#include "control/rawsock.h"

#include <bpf/bpf.h>
#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

namespace qn {

namespace {

// SFC's pause cache (bpf/include/sfc.h): a word is live while its end is ahead of now by at most
// the longest pause (65,535 fabric µs at this D, plus two units), the stage's own rule.
uint64_t sfc_cache_live(const uint64_t *w, size_t n, uint64_t now_ns, const Dilation &d)
{
	const uint64_t now_u = now_ns >> QN_SFC_END_SHIFT;
	const uint64_t max_units = ((65535ull * 1000 * d.milli() / 1000) >> QN_SFC_END_SHIFT) + 2;
	uint64_t live = 0;
	for (size_t i = 0; i < n; i++)
		live += w[i] ? uint64_t(qn_sfc_cache_word_live(w[i], now_u, max_units)) : 0;
	return live;
}

constexpr const char *kNames[] = {
#define QN_X_NAME(name, doc) #name,
	QN_SW_GAUGES(QN_X_NAME)
#undef QN_X_NAME
};
constexpr const char *kDocs[] = {
#define QN_X_DOC(name, doc) doc,
	QN_SW_GAUGES(QN_X_DOC)
#undef QN_X_DOC
};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == QN_GAUGE_MAX);

size_t page_round(size_t n)
{
	const size_t pg = size_t(sysconf(_SC_PAGESIZE));
	return (n + pg - 1) / pg * pg;
}

} // namespace

const std::vector<TableScan> &table_scans()
{
	static const std::vector<TableScan> v = {
		{"qn_sfc_cache", QN_GAUGE_sfc_cache_live, QN_GAUGE_sfc_cache_peak, sfc_cache_live},
	};
	return v;
}

bool is_peak_gauge(const std::string &name)
{
	return name.size() > 5 && name.compare(name.size() - 5, 5, "_peak") == 0;
}

const char *gauge_name(unsigned g) { return g < QN_GAUGE_MAX ? kNames[g] : "?"; }
const char *gauge_doc(unsigned g) { return g < QN_GAUGE_MAX ? kDocs[g] : ""; }

SwitchGauges &SwitchGauges::operator=(SwitchGauges &&o) noexcept
{
	if (this != &o) {
		close_all();
		tables_ = std::move(o.tables_);
		gauges_ = o.gauges_;
		gauges_len_ = o.gauges_len_;
		d_ = o.d_;
		scans_ = o.scans_;
		scan_ns_ = o.scan_ns_;
		o.tables_.clear();
		o.gauges_ = nullptr;
		o.gauges_len_ = 0;
	}
	return *this;
}

SwitchGauges::~SwitchGauges() { close_all(); }

void SwitchGauges::close_all()
{
	for (auto &t : tables_)
		if (t.words)
			munmap(const_cast<uint64_t *>(t.words), t.len);
	tables_.clear();
	if (gauges_)
		munmap(gauges_, gauges_len_);
	gauges_ = nullptr;
}

namespace {
// mmap a pinned ARRAY of __u64; returns the mapping and its entry count.
Result<std::pair<void *, size_t>> map_array(const std::string &path, bool writable, size_t *len)
{
	int fd = bpf_obj_get(path.c_str());
	if (fd < 0)
		return sys_error(errno, "open " + path);
	bpf_map_info info{};
	uint32_t il = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &il)) {
		int e = errno;
		close(fd);
		return sys_error(e, "map info of " + path);
	}
	if (info.value_size != sizeof(uint64_t) || !(info.map_flags & BPF_F_MMAPABLE)) {
		close(fd);
		return make_error(path + ": not an mmapable array of 8-byte words");
	}
	*len = page_round(size_t(info.max_entries) * sizeof(uint64_t));
	void *p = mmap(nullptr, *len, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (p == MAP_FAILED)
		return sys_error(e, "mmap " + path);
	return std::make_pair(p, size_t(info.max_entries));
}
} // namespace

Result<SwitchGauges> SwitchGauges::open(const std::string &pin_dir, const Dilation &d)
{
	SwitchGauges g;
	g.d_ = d;
	auto gm = map_array(pin_dir + "/qn_sw_gauges", true, &g.gauges_len_);
	if (!gm)
		return gm.error();
	g.gauges_ = static_cast<uint64_t *>(gm->first);
	if (gm->second < QN_GAUGE_MAX)
		return make_error(pin_dir + "/qn_sw_gauges: fewer entries than gauges");
	for (const TableScan &r : table_scans()) {
		Table t;
		t.reg = &r;
		auto m = map_array(pin_dir + "/" + r.map, false, &t.len);
		if (!m)
			return m.error();
		t.words = static_cast<const uint64_t *>(m->first);
		t.n = m->second;
		g.tables_.push_back(t);
	}
	return g;
}

void SwitchGauges::scan(uint64_t now_ns)
{
	for (const Table &t : tables_) {
		const uint64_t live = t.reg->count(t.words, t.n, now_ns, d_);
		__atomic_store_n(&gauges_[t.reg->live], live, __ATOMIC_RELAXED);
		// An experiment may zero the peak between the load and the store: it then holds a level
		// seen after the zeroing, still a true peak of its window.
		if (live > __atomic_load_n(&gauges_[t.reg->peak], __ATOMIC_RELAXED))
			__atomic_store_n(&gauges_[t.reg->peak], live, __ATOMIC_RELAXED);
	}
	scans_++;
	scan_ns_ += mono_ns() - now_ns;
}

std::vector<std::pair<std::string, uint64_t>> read_gauges(const std::string &pin_dir)
{
	std::vector<std::pair<std::string, uint64_t>> out;
	int fd = bpf_obj_get((pin_dir + "/qn_sw_gauges").c_str());
	for (uint32_t g = 0; g < QN_GAUGE_MAX; g++) {
		uint64_t v = 0;
		if (fd >= 0 && bpf_map_lookup_elem(fd, &g, &v))
			v = 0;
		out.emplace_back(kNames[g], v);
	}
	if (fd >= 0)
		close(fd);
	return out;
}

Status zero_peak_gauges(const std::string &pin_dir)
{
	const std::string path = pin_dir + "/qn_sw_gauges";
	int fd = bpf_obj_get(path.c_str());
	if (fd < 0)
		return errno == ENOENT ? ok_status() : sys_error(errno, "open " + path);
	for (const TableScan &r : table_scans()) {
		uint32_t k = r.peak;
		uint64_t zero = 0;
		if (bpf_map_update_elem(fd, &k, &zero, BPF_ANY)) {
			int e = errno;
			close(fd);
			return sys_error(e, "zero " + path);
		}
	}
	close(fd);
	return ok_status();
}

} // namespace qn
