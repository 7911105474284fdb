// engine_fidelity.cc - the engine's side of the switches' fidelity monitor
// (bpf/include/fidmon.h): it maps each switch's qn_fid array, tells the arrival monitor of
// its host's switch port whether the frames it kicks were due back to back, collects the lost
// periods the switches post (qn_fid_events) as affected periods in fabric time, and reads the
// monitors' counters into Health.
#include "common/abi.h"
#include "transport/shard.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace qn::tp {

namespace {

size_t fid_map_len()
{
	const size_t page = size_t(sysconf(_SC_PAGESIZE));
	return (sizeof(qn_fid_port) * QN_MAX_PORTS + page - 1) / page * page;
}

} // namespace

Status Shard::open_switch_monitors()
{
	for (const MonitorDesc &md : desc_.monitors) {
		if (!md.open)
			return make_error(desc_.name + ": switch " + md.name + "'s monitor has nothing to open");
		auto fds = md.open();
		if (!fds)
			return fds.error();
		auto m = std::make_unique<SwitchMon>();
		m->name = md.name;
		m->engine = this;
		m->peer_host.assign(QN_MAX_PORTS, -1);
		m->peer_name.assign(QN_MAX_PORTS, "");
		m->lost_at.assign(2 * QN_MAX_PORTS, IntervalSet());
		m->port_name.assign(QN_MAX_PORTS, "");
		m->map_len = fid_map_len();
		void *mem = mmap(nullptr, m->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fds->ports, 0);
		const int merr = errno;
		close(fds->ports);
		if (mem == MAP_FAILED) {
			close(fds->events);
			return sys_error(merr, "mmap the fidelity monitor of switch " + md.name);
		}
		m->ports = static_cast<qn_fid_port *>(mem);
		m->rb = ring_buffer__new(fds->events, on_fid_event, m.get(), nullptr);
		const int rerr = errno;
		close(fds->events);
		if (!m->rb) {
			munmap(mem, m->map_len);
			return sys_error(rerr, "ring buffer on the fidelity events of switch " + md.name);
		}
		for (size_t i = 0; i < QN_MAX_PORTS && i < md.port_label.size(); i++) {
			m->port_name[i] = md.port_label[i];
			if (i >= md.port_host.size() || md.port_host[i].empty())
				continue;
			m->peer_name[i] = md.port_host[i];
			auto it = host_by_name_.find(md.port_host[i]);
			if (it != host_by_name_.end()) {
				m->peer_host[i] = int(it->second);
				hosts_[it->second]->fid = &m->ports[i];
			}
		}
		swmons_.push_back(std::move(m));
	}
	return ok_status();
}

void Shard::attach_monitors(const Shard &owner)
{
	for (const auto &m : owner.swmons_)
		for (size_t i = 0; i < QN_MAX_PORTS; i++) {
			if (m->peer_name[i].empty())
				continue;
			auto it = host_by_name_.find(m->peer_name[i]);
			if (it != host_by_name_.end())
				hosts_[it->second]->fid = &m->ports[i];
		}
}

void Shard::close_switch_monitors()
{
	for (auto &h : hosts_) { // no kick of ours is in flight any more
		if (h->fid)
			__atomic_store_n(&h->fid->engine_backlogged, 0u, __ATOMIC_RELAXED);
		h->fid = nullptr;
	}
	for (auto &m : swmons_) {
		if (m->rb)
			ring_buffer__free(static_cast<ring_buffer *>(m->rb));
		if (m->ports)
			munmap(m->ports, m->map_len);
	}
	swmons_.clear();
}

// Health counts from here: drop the lost periods an earlier run left in the rings and take
// the counters as the base (the monitors run on; nothing is written under the BPF writers).
void Shard::reset_switch_monitors()
{
	poll_switch_monitors();
	sw_lost_all_.clear();
	foreign_affected_.clear();
	for (auto &m : swmons_)
		for (auto &s : m->lost_at)
			s.clear();
	Health h;
	switch_monitor_health(h, IntervalSet(), false);
	sw_base_ = std::move(h.switch_links);
}

void Shard::poll_switch_monitors()
{
	for (auto &m : swmons_)
		ring_buffer__consume(static_cast<ring_buffer *>(m->rb));
}

int Shard::on_fid_event(void *ctx, void *data, size_t len)
{
	auto *m = static_cast<SwitchMon *>(ctx);
	if (len < sizeof(qn_fid_event))
		return 0;
	qn_fid_event ev;
	std::memcpy(&ev, data, sizeof(ev));
	Shard &e = *m->engine;
	if (ev.port_no >= QN_MAX_PORTS || ev.to_ns <= ev.from_ns)
		return 0;
	const uint64_t from = e.clock_.to_fabric(ev.from_ns), to = e.clock_.to_fabric(ev.to_ns);
	const int h = m->peer_host[ev.port_no];
	m->lost_at[ev.port_no * 2 + (ev.dir & 1)].add(from, to);
	if (h >= 0)
		e.hosts_[size_t(h)]->affected.add(from, to); // its link, either direction
	else if (!m->peer_name[ev.port_no].empty())
		e.foreign_affected_[m->peer_name[ev.port_no]].add(from, to); // another shard's host
	else
		e.sw_lost_all_.add(from, to); // between switches: any flow may cross it
	return 0;
}

void Shard::switch_monitor_health(Health &r, const IntervalSet &other_stalls, bool since_begin) const
{
	IntervalSet stalls = other_stalls; // any shard's stall excuses a link's lost time
	for (const auto &[a, b] : stalled_.intervals())
		stalls.add(a, b);
	const double d = double(clock_.d_milli()) / 1000.0;
	size_t k = 0;
	for (const auto &m : swmons_) {
		for (int i = 0; i < QN_MAX_PORTS; i++) {
			const qn_fid_port &fp = m->ports[i];
			for (int dir = 0; dir < 2; dir++, k++) {
				const qn_fid_mon &mon = fp.mon[dir];
				auto rd = [](const uint64_t &v) { return __atomic_load_n(&v, __ATOMIC_RELAXED); };
				SwitchLink l;
				l.port = m->port_name[size_t(i)];
				l.departures = dir == QN_FID_DEPARTURE;
				l.backlogged_ns = rd(mon.bl_ns);
				l.lost_ns = rd(mon.lost_ns);
				l.frames = rd(mon.bl_frames);
				l.late_frames = rd(mon.late_frames);
				l.windows = rd(mon.windows);
				l.fast_windows = rd(mon.fast_windows);
				l.events_lost = rd(mon.events_lost);
				if (since_begin && k < sw_base_.size()) {
					const SwitchLink &b = sw_base_[k];
					auto sub = [](uint64_t a, uint64_t z) { return a - std::min(a, z); };
					l.backlogged_ns = sub(l.backlogged_ns, b.backlogged_ns);
					l.lost_ns = sub(l.lost_ns, b.lost_ns);
					l.frames = sub(l.frames, b.frames);
					l.late_frames = sub(l.late_frames, b.late_frames);
					l.windows = sub(l.windows, b.windows);
					l.fast_windows = sub(l.fast_windows, b.fast_windows);
					l.events_lost = sub(l.events_lost, b.events_lost);
				}
				if (since_begin) { // fabric ns; links that carried no backlogged frame left out
					if (!fp.ps_per_byte || !l.frames)
						continue;
					l.backlogged_ns = uint64_t(double(l.backlogged_ns) / d);
					l.frame_ns = uint64_t(double(fp.credit_wall_ns) / d);
					l.lost_ns = uint64_t(double(l.lost_ns) / d);
					uint64_t in_stalls = 0;
					for (const auto &[from, to] : m->lost_at[size_t(i) * 2 + size_t(dir)].intervals())
						in_stalls += stalls.covered(from, to);
					l.lost_stalled_ns = std::min(l.lost_ns, in_stalls);
				}
				r.switch_links.push_back(l);
			}
		}
	}
}

} // namespace qn::tp
