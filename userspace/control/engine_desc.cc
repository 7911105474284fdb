// engine_desc.cc - a running topology described for the engine (engine_desc.h).
#include "control/engine_desc.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <cerrno>

#include "common/abi.h"
#include "common/paths.h"
#include "control/bringup.h"
#include "control/netns.h"

namespace qn {

Status open_xsk(tp::XskPort &p, const std::string &netns, const std::string &ifname, const std::string &xskmap_pin,
		uint32_t frames)
{
	int mfd = -1;
	if (!xskmap_pin.empty()) {
		mfd = bpf_obj_get(xskmap_pin.c_str());
		if (mfd < 0)
			return sys_error(errno, "open " + xskmap_pin + " (is the topology up?)");
	}
	Status st = [&]() -> Status {
		// The socket's namespace is fixed when it is made (notes/datapath.md).
		NetnsScope ns(netns);
		if (!ns.ok())
			return ns.status();
		return p.open(ifname, mfd, frames);
	}();
	if (mfd >= 0)
		close(mfd);
	if (!st.ok()) {
		Error e = st.error();
		if (!netns.empty())
			e.message += " (namespace " + netns + ")";
		return e;
	}
	return ok_status();
}

Result<std::unique_ptr<tp::FramePort>> open_xsk_port(const std::string &netns, const std::string &ifname,
						      const std::string &xskmap_pin, uint32_t frames)
{
	auto p = std::make_unique<tp::XskPort>();
	QN_TRY(open_xsk(*p, netns, ifname, xskmap_pin, frames));
	return std::unique_ptr<tp::FramePort>(std::move(p));
}

namespace {

// A pinned map's file descriptor, opened at first use and closed with the last probe holding it.
class PinnedFd {
public:
	explicit PinnedFd(std::string pin) : pin_(std::move(pin)) {}
	~PinnedFd()
	{
		if (fd_ >= 0)
			close(fd_);
	}
	PinnedFd(const PinnedFd &) = delete;
	PinnedFd &operator=(const PinnedFd &) = delete;
	Result<int> get()
	{
		if (fd_ < 0) {
			fd_ = bpf_obj_get(pin_.c_str());
			if (fd_ < 0)
				return sys_error(errno, "open " + pin_);
		}
		return fd_;
	}

private:
	std::string pin_;
	int fd_ = -1;
};

} // namespace

tp::EngineDesc engine_desc(const Topology &t, const PortFactory &ports, bool probes)
{
	tp::EngineDesc d;
	d.name = t.name;
	for (const Node &n : t.nodes)
		d.nodes.push_back(tp::FabricNode{n.name, n.kind == NodeKind::Host});
	for (const Link &l : t.links)
		d.links.push_back(tp::FabricLink{l.a, l.b, l.rate_bps, l.delay_ns, l.mtu});
	for (const Node &n : t.nodes) {
		if (n.kind != NodeKind::Host || is_rxe_stack(n.stack)) // rxe hosts: rdma_rxe and the agent
			continue;
		const Port &p = t.ports[size_t(t.ports_of(n.id)[0])];
		const Link &l = t.links[size_t(p.link)];
		tp::HostDesc h;
		h.name = n.name;
		h.node = n.id;
		h.ep = tp::Endpoint{n.mac, n.ip};
		h.gw = t.ports[size_t(p.peer_port)].mac;
		h.link_bps = l.rate_bps;
		h.delay_ns = l.delay_ns;
		h.mtu = l.mtu;
		h.error_rate = l.error_rate;
		const std::string netns = t.netns(n.id), ifname = p.ifname;
		const std::string pin = node_pin_dir(t.name, n.name) + "/qn_xsks";
		h.open = [ports, netns, ifname, pin](uint32_t frames) { return ports(netns, ifname, pin, frames); };
		if (probes)
			h.port_drops = [netns, ifname]() -> Result<uint64_t> {
				auto c = if_counters(netns, ifname);
				if (!c)
					return c.error();
				return c->rx_dropped + c->tx_dropped;
			};
		d.hosts.push_back(std::move(h));
	}
	if (probes)
		for (const CableSpec &c : cable_specs(t)) {
			tp::CableDesc cb;
			cb.name = c.name;
			cb.link = c.link;
			cb.delay_ns = c.delay_ns;
			cb.rate_bps = c.rate_bps;
			cb.error_rate = c.error_rate;
			for (int k = 0; k < 2; k++)
				cb.open[k] = [ports, c, k](uint32_t frames) {
					return ports(c.netns, c.ifname[k], c.xskmap_pin[k], frames);
				};
			d.cables.push_back(std::move(cb));
		}
	if (!probes)
		return d;
	for (const Node &n : t.nodes) {
		if (n.kind != NodeKind::Switch)
			continue;
		const std::string dir = node_pin_dir(t.name, n.name);
		auto qstate = std::make_shared<PinnedFd>(dir + "/qn_qstate");
		tp::MonitorDesc m;
		m.name = n.name;
		m.port_label.assign(QN_MAX_PORTS, "");
		m.port_host.assign(QN_MAX_PORTS, "");
		for (int pi : t.ports_of(n.id)) {
			const Port &p = t.ports[size_t(pi)];
			const uint32_t port_no = uint32_t(p.port_no);
			d.queues.push_back(tp::QueueDesc{n.name, p.ifname, [qstate, port_no]() -> Result<uint64_t> {
								 auto fd = qstate->get();
								 if (!fd)
									 return fd.error();
								 qn_qstate q{};
								 uint32_t key = port_no;
								 if (bpf_map_lookup_elem(*fd, &key, &q) != 0)
									 return sys_error(errno, "read qn_qstate");
								 // the real queue at the latest event, not the
								 // accounts (qn_abi.h qn_qstate.last_bytes)
								 return q.last_bytes;
							 }});
			if (p.port_no < 0 || p.port_no >= QN_MAX_PORTS)
				continue;
			m.port_label[size_t(p.port_no)] = n.name + "/" + p.ifname;
			if (t.nodes[size_t(p.peer_node)].kind == NodeKind::Host)
				m.port_host[size_t(p.port_no)] = t.nodes[size_t(p.peer_node)].name;
		}
		m.open = [dir]() -> Result<tp::MonitorDesc::Fds> {
			tp::MonitorDesc::Fds f;
			f.ports = bpf_obj_get((dir + "/qn_fid").c_str());
			if (f.ports < 0)
				return sys_error(errno, "open " + dir + "/qn_fid (the switch's fidelity monitor)");
			f.events = bpf_obj_get((dir + "/qn_fid_events").c_str());
			if (f.events < 0) {
				int e = errno;
				close(f.ports);
				return sys_error(e, "open " + dir + "/qn_fid_events");
			}
			return f;
		};
		d.monitors.push_back(std::move(m));
	}
	const std::string state = state_path(t.name);
	d.alive = [state]() { return access(state.c_str(), F_OK) == 0; };
	return d;
}

} // namespace qn
