// topology.cc - topology files, the ns-3 importer, derivation and ECMP routes.
#include "control/topology.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cctype>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "common/abi.h"
#include "common/params.h"
#include "common/units.h"
#include "control/swcfg.h"

namespace qn {
namespace {

// Largest IP MTU native XDP accepts on a veth with 4 KiB pages:
// PAGE_SIZE - XDP headroom (256) - Ethernet header (14) - skb_shared_info (320) = 3506.
constexpr uint32_t kMaxHostMtu = 3506;
constexpr uint32_t kMinMtu = 576;
constexpr uint32_t kMaxMtu = 65535; // veth's maximum
constexpr uint32_t kIfindexBase = 100;

std::string at(const std::string &src, int line) { return src + ":" + std::to_string(line) + ": "; }

Error field_error(const std::string &src, int line, const std::string &field, const std::string &msg)
{
	return make_error(at(src, line) + "field '" + field + "': " + msg);
}

bool valid_topo_name(const std::string &s)
{
	if (s.empty() || s.size() > 12)
		return false;
	return std::all_of(s.begin(), s.end(),
			   [](char c) { return std::islower(uint8_t(c)) || std::isdigit(uint8_t(c)); });
}

bool valid_node_name(const std::string &s)
{
	if (s.empty() || s.size() > 10)
		return false;
	if (!std::isalpha(uint8_t(s[0])))
		return false;
	return std::all_of(s.begin(), s.end(),
			   [](char c) { return std::isalnum(uint8_t(c)) || c == '_'; });
}

std::vector<std::string> split_ws(const std::string &line)
{
	std::vector<std::string> out;
	std::istringstream in(line);
	std::string tok;
	while (in >> tok)
		out.push_back(tok);
	return out;
}

struct Ctx {
	const std::string &src;
	Params params;
	std::set<std::string> declared_params;
};

Result<long> resolve_int(Ctx &c, int line, const std::string &field, const std::string &s)
{
	std::string v = s;
	auto it = c.params.find(s);
	if (it != c.params.end())
		v = it->second;
	if (v.empty() || !std::all_of(v.begin(), v.end(), [](char ch) { return std::isdigit(uint8_t(ch)); }))
		return field_error(c.src, line, field,
				   "'" + s + "' is neither a number nor a declared param");
	if (v.size() > 6)
		return field_error(c.src, line, field, "'" + v + "' is too large");
	return std::stol(v);
}

// Expand "h[1..N]" into h1..hN; a plain name expands to itself.
Result<std::vector<std::string>> expand(Ctx &c, int line, const std::string &field, const std::string &tok)
{
	auto lb = tok.find('[');
	if (lb == std::string::npos)
		return std::vector<std::string>{tok};
	auto dots = tok.find("..", lb);
	auto rb = tok.find(']', lb);
	if (dots == std::string::npos || rb == std::string::npos || rb < dots || rb != tok.size() - 1)
		return field_error(c.src, line, field,
				   "bad range '" + tok + "' (expected name[FIRST..LAST], e.g. h[1..N])");
	std::string base = tok.substr(0, lb);
	auto lo = resolve_int(c, line, field, tok.substr(lb + 1, dots - lb - 1));
	if (!lo)
		return lo.error();
	auto hi = resolve_int(c, line, field, tok.substr(dots + 2, rb - dots - 2));
	if (!hi)
		return hi.error();
	if (*hi < *lo)
		return field_error(c.src, line, field, "empty range '" + tok + "'");
	if (*hi - *lo >= 1024)
		return field_error(c.src, line, field, "range '" + tok + "' has more than 1024 names");
	std::vector<std::string> out;
	for (long i = *lo; i <= *hi; i++)
		out.push_back(base + std::to_string(i));
	return out;
}

// Split "key=value"; Return: error naming the token when there is no '='.
Result<std::pair<std::string, std::string>> kv(Ctx &c, int line, const std::string &tok)
{
	auto eq = tok.find('=');
	if (eq == std::string::npos || eq == 0)
		return make_error(at(c.src, line) + "expected key=value, got '" + tok + "'");
	std::string key = tok.substr(0, eq), value = tok.substr(eq + 1);
	if (value.size() > 1 && value[0] == '$') {
		auto it = c.params.find(value.substr(1));
		if (it == c.params.end())
			return field_error(c.src, line, key, "'" + value + "' names no declared param");
		value = it->second;
	}
	return std::make_pair(key, value);
}

// A link's attributes: one table (params.h) for `link` lines and `defaults`.
const ParamTable<Link> &link_table()
{
	static const ParamTable<Link> t(
		"link", {
				{"rate", ParamKind::Rate, &Link::rate_bps, 1, 10e12, {}, "line rate"},
				{"mtu", ParamKind::Count, &Link::mtu, double(kMinMtu), double(kMaxMtu), {},
				 "IP MTU (a declared param's bare name works too)"},
				{"delay", ParamKind::Time, &Link::delay_ns, 0, 1e9, {}, "propagation delay, one way"},
				{"error", ParamKind::Number, &Link::error_rate, 0, 1, {},
				 "frame loss probability per direction (not a default)"},
			});
	return t;
}

// A host's and a switch's own attributes (a switch's other settings are swcfg.h's table). The
// buffer row also serves `defaults buffer=`.
const ParamTable<Node> &host_table()
{
	static const ParamTable<Node> t("host", {
							{"ip", ParamKind::Ipv4, &Node::ip, 0, 0, {}, "IPv4 address (derived when not given)"},
							{"mac", ParamKind::MacAddr, &Node::mac, 0, 0, {}, "MAC address (derived when not given)"},
							{"stack", ParamKind::Choice, &Node::stack, 0, 0, {"engine", "rxe", "rxe-initns"},
							 "RDMA stack: the quench engine, or Soft-RoCE (rdma_rxe; VM kernels, docs/agent.md); "
							 "rxe-initns: its veth end in the initial namespace (kernels whose rxe works only "
							 "there; `topo up` picks it for stack=rxe on such a kernel)"},
						});
	return t;
}

const ParamTable<Node> &switch_table()
{
	static const ParamTable<Node> t("switch", {
							  {"buffer", ParamKind::Size, &Node::buffer_bytes, 1e3, 1e12, {},
							   "shared buffer B (default 12 MB, DCQCN's Trident II)"},
							  {"ip", ParamKind::Ipv4, &Node::ip, 0, 0, {},
							   "the switch's IPv4 address, source of the signals it originates (derived when not given)"},
						  });
	return t;
}

// Apply one link attribute. Return: error naming the field.
Status link_attr(Ctx &c, int line, Link &l, const std::string &k, std::string v)
{
	// mtu=M with M a declared param (without '$'), as ranges accept
	if (k == "mtu")
		if (auto it = c.params.find(v); it != c.params.end())
			v = it->second;
	if (auto st = link_table().apply(l, k, v); !st.ok())
		return field_error(c.src, line, k, st.error().message);
	return ok_status();
}

} // namespace

// The veth name of an rxe host in the initial namespace: unique there across topologies and
// within IFNAMSIZ ("qr" + 8 hex digits of an FNV-1a hash of "topology/host").
std::string initns_ifname(const std::string &topo, const std::string &host)
{
	uint32_t h = 2166136261u;
	for (char c : topo + "/" + host)
		h = (h ^ uint8_t(c)) * 16777619u;
	char b[16];
	std::snprintf(b, sizeof(b), "qr%08x", h);
	return b;
}

uint32_t ns3_node_ip(int id)
{
	uint32_t i = uint32_t(id);
	return 0x0b000001u + ((i / 256) << 16) + ((i % 256) << 8);
}

int Topology::find(const std::string &node) const
{
	for (size_t i = 0; i < nodes.size(); i++)
		if (nodes[i].name == node)
			return int(i);
	return -1;
}

std::vector<int> Topology::ports_of(int node) const
{
	std::vector<int> out;
	for (size_t i = 0; i < ports.size(); i++)
		if (ports[i].node == node)
			out.push_back(int(i));
	return out;
}

Result<Topology> parse_topology(const std::string &text, const std::string &source, const Params &overrides)
{
	Topology t;
	t.source = source;
	Ctx c{source, {}, {}};
	std::istringstream in(text);
	std::string raw;
	int lineno = 0;
	bool have_link = false;

	while (std::getline(in, raw)) {
		lineno++;
		auto hash = raw.find('#');
		if (hash != std::string::npos)
			raw.resize(hash);
		auto tok = split_ws(raw);
		if (tok.empty())
			continue;
		const std::string &dir = tok[0];
		if (dir == "name") {
			if (tok.size() != 2)
				return make_error(at(source, lineno) + "'name' takes one value");
			if (!valid_topo_name(tok[1]))
				return field_error(source, lineno, "name",
						   "'" + tok[1] + "' must be 1-12 characters of [a-z0-9]");
			t.name = tok[1];
		} else if (dir == "param") {
			if (tok.size() < 2)
				return make_error(at(source, lineno) + "'param' needs KEY=VALUE");
			for (size_t i = 1; i < tok.size(); i++) {
				auto p = kv(c, lineno, tok[i]);
				if (!p)
					return p.error();
				c.declared_params.insert(p->first);
				auto ov = overrides.find(p->first);
				c.params[p->first] = ov != overrides.end() ? ov->second : p->second;
			}
		} else if (dir == "defaults") {
			if (have_link || !t.nodes.empty())
				return make_error(at(source, lineno) + "'defaults' must come before hosts, switches and links");
			for (size_t i = 1; i < tok.size(); i++) {
				auto p = kv(c, lineno, tok[i]);
				if (!p)
					return p.error();
				if (p->first == "buffer") { // the one switch attribute with a default
					Node n;
					if (auto st = switch_table().apply(n, p->first, p->second); !st.ok())
						return field_error(source, lineno, p->first, st.error().message);
					t.default_buffer_bytes = n.buffer_bytes;
					continue;
				}
				Link l;
				if (p->first == "error")
					return field_error(source, lineno, "error", "not a default; give it per link");
				if (!link_table().has(p->first))
					return field_error(source, lineno, p->first,
							   "unknown default (rate, mtu, delay, buffer)");
				QN_TRY(link_attr(c, lineno, l, p->first, p->second));
				if (p->first == "rate")
					t.defaults.rate_bps = l.rate_bps;
				else if (p->first == "mtu")
					t.defaults.mtu = l.mtu;
				else
					t.defaults.delay_ns = l.delay_ns;
			}
		} else if (dir == "host" || dir == "switch") {
			if (tok.size() < 2)
				return make_error(at(source, lineno) + "'" + dir + "' needs a name");
			auto names = expand(c, lineno, "name", tok[1]);
			if (!names)
				return names.error();
			for (const auto &n : *names) {
				if (!valid_node_name(n))
					return field_error(source, lineno, "name",
							   "'" + n + "' must start with a letter and be 1-10 characters of [A-Za-z0-9_]");
				int prev = t.find(n);
				if (prev >= 0)
					return field_error(source, lineno, "name",
							   "'" + n + "' already declared at line " +
								   std::to_string(t.nodes[size_t(prev)].line));
				Node node;
				node.name = n;
				node.kind = dir == "host" ? NodeKind::Host : NodeKind::Switch;
				node.id = int(t.nodes.size());
				node.line = lineno;
				node.buffer_bytes = t.default_buffer_bytes;
				for (size_t i = 2; i < tok.size(); i++) {
					auto p = kv(c, lineno, tok[i]);
					if (!p)
						return p.error();
					const auto &[k, v] = *p;
					if (names->size() > 1 && (k == "ip" || k == "mac"))
						return field_error(source, lineno, k, "cannot be given for a range of hosts");
					const ParamTable<Node> &own = node.kind == NodeKind::Host ? host_table() : switch_table();
					if (own.has(k)) {
						if (auto st = own.apply(node, k, v); !st.ok())
							return field_error(source, lineno, k, st.error().message);
						node.ip_given = node.ip_given || k == "ip";
						node.mac_given = node.mac_given || k == "mac";
					} else if (node.kind == NodeKind::Switch) {
						qn_swcfg probe = default_swcfg(node.buffer_bytes);
						for (const auto &[pk, pv] : node.settings)
							(void)apply_swcfg(probe, pk, pv);
						auto st = apply_swcfg(probe, k, v);
						if (!st.ok())
							return field_error(source, lineno, k, st.error().message);
						node.settings.emplace_back(k, v);
					} else {
						return field_error(source, lineno, k,
								   std::string("unknown ") + dir + " attribute (" + own.names() + ")");
					}
				}
				t.nodes.push_back(node);
			}
		} else if (dir == "link") {
			if (tok.size() < 3)
				return make_error(at(source, lineno) + "'link' needs two endpoints");
			auto la = expand(c, lineno, "endpoint", tok[1]);
			if (!la)
				return la.error();
			auto lb = expand(c, lineno, "endpoint", tok[2]);
			if (!lb)
				return lb.error();
			size_t n = std::max(la->size(), lb->size());
			if (la->size() != lb->size() && la->size() != 1 && lb->size() != 1)
				return field_error(source, lineno, "endpoint",
						   "ranges of different lengths (" + std::to_string(la->size()) + " and " +
							   std::to_string(lb->size()) + ")");
			Link proto;
			proto.rate_bps = t.defaults.rate_bps;
			proto.mtu = t.defaults.mtu;
			proto.delay_ns = t.defaults.delay_ns;
			proto.line = lineno;
			for (size_t i = 3; i < tok.size(); i++) {
				auto p = kv(c, lineno, tok[i]);
				if (!p)
					return p.error();
				QN_TRY(link_attr(c, lineno, proto, p->first, p->second));
			}
			for (size_t i = 0; i < n; i++) {
				const std::string &an = (*la)[la->size() == 1 ? 0 : i];
				const std::string &bn = (*lb)[lb->size() == 1 ? 0 : i];
				Link l = proto;
				l.a = t.find(an);
				l.b = t.find(bn);
				if (l.a < 0)
					return field_error(source, lineno, "endpoint", "unknown node '" + an + "'");
				if (l.b < 0)
					return field_error(source, lineno, "endpoint", "unknown node '" + bn + "'");
				if (l.a == l.b)
					return field_error(source, lineno, "endpoint", "link from '" + an + "' to itself");
				t.links.push_back(l);
			}
			have_link = true;
		} else {
			return make_error(at(source, lineno) + "unknown directive '" + dir +
					  "' (name, param, defaults, host, switch, link)");
		}
	}
	for (const auto &[k, v] : overrides)
		if (!c.declared_params.count(k))
			return make_error(source + ": --param " + k + ": the file declares no param '" + k + "'");
	if (t.name.empty())
		return make_error(source + ": missing 'name' line");
	QN_TRY(derive(t));
	return t;
}

Result<Topology> load_topology_file(const std::string &path, const Params &overrides)
{
	std::ifstream f(path);
	if (!f)
		return sys_error(errno, "cannot open topology file " + path);
	std::stringstream ss;
	ss << f.rdbuf();
	// ns-3 files have no directives: their first token is the node count.
	std::string first;
	std::istringstream peek(ss.str());
	peek >> first;
	if (!first.empty() && std::isdigit(uint8_t(first[0]))) {
		if (!overrides.empty())
			return make_error(path + ": --param does not apply to ns-3 topology files");
		std::string base = path.substr(path.find_last_of('/') + 1);
		std::string name;
		for (char ch : base.substr(0, base.find('.')))
			if (std::isalnum(uint8_t(ch)) && name.size() < 12)
				name += char(std::tolower(uint8_t(ch)));
		return parse_ns3_topology(ss.str(), path, name.empty() ? "ns3" : name);
	}
	return parse_topology(ss.str(), path, overrides);
}

Result<Topology> parse_ns3_topology(const std::string &text, const std::string &source, const std::string &name)
{
	Topology t;
	t.source = source;
	if (!valid_topo_name(name))
		return make_error(source + ": topology name '" + name + "' must be 1-12 characters of [a-z0-9]");
	t.name = name;
	std::istringstream in(text);
	std::string line;
	int lineno = 0;
	auto next_line = [&](std::vector<std::string> &tok) {
		while (std::getline(in, line)) {
			lineno++;
			tok = split_ws(line);
			if (!tok.empty())
				return true;
		}
		return false;
	};
	auto to_long = [&](const std::string &s, const std::string &field) -> Result<long> {
		if (s.empty() || !std::all_of(s.begin(), s.end(), [](char ch) { return std::isdigit(uint8_t(ch)); }) ||
		    s.size() > 6)
			return field_error(source, lineno, field, "'" + s + "' is not a non-negative integer");
		return std::stol(s);
	};
	std::vector<std::string> tok;
	if (!next_line(tok))
		return make_error(source + ": empty file (expected 'nodes switches links')");
	if (tok.size() != 3)
		return make_error(at(source, lineno) + "expected 'nodes switches links', got " +
				  std::to_string(tok.size()) + " fields");
	auto nn = to_long(tok[0], "nodes");
	if (!nn)
		return nn.error();
	auto ns = to_long(tok[1], "switches");
	if (!ns)
		return ns.error();
	auto nl = to_long(tok[2], "links");
	if (!nl)
		return nl.error();
	if (*ns > *nn)
		return field_error(source, lineno, "switches", "more switches than nodes");
	std::vector<bool> is_switch(size_t(*nn), false);
	if (*ns > 0) {
		if (!next_line(tok))
			return make_error(source + ": missing the switch id line");
		if (long(tok.size()) != *ns)
			return make_error(at(source, lineno) + "expected " + std::to_string(*ns) + " switch ids, got " +
					  std::to_string(tok.size()));
		for (const auto &s : tok) {
			auto id = to_long(s, "switch id");
			if (!id)
				return id.error();
			if (*id >= *nn)
				return field_error(source, lineno, "switch id", s + " is not below the node count " +
											std::to_string(*nn));
			if (is_switch[size_t(*id)])
				return field_error(source, lineno, "switch id", s + " listed twice");
			is_switch[size_t(*id)] = true;
		}
	}
	for (long i = 0; i < *nn; i++) {
		Node n;
		n.kind = is_switch[size_t(i)] ? NodeKind::Switch : NodeKind::Host;
		n.name = (n.kind == NodeKind::Switch ? "sw" : "h") + std::to_string(i);
		n.id = int(i);
		n.line = n.kind == NodeKind::Switch ? 2 : 1;
		n.buffer_bytes = t.default_buffer_bytes;
		t.nodes.push_back(n);
	}
	Ctx c{source, {}, {}};
	for (long i = 0; i < *nl; i++) {
		if (!next_line(tok))
			return make_error(source + ": expected " + std::to_string(*nl) + " links, found " + std::to_string(i));
		if (tok.size() != 5)
			return make_error(at(source, lineno) + "expected 'src dst rate delay error_rate', got " +
					  std::to_string(tok.size()) + " fields");
		Link l;
		l.line = lineno;
		l.mtu = t.defaults.mtu;
		auto a = to_long(tok[0], "src");
		if (!a)
			return a.error();
		auto b = to_long(tok[1], "dst");
		if (!b)
			return b.error();
		if (*a >= *nn)
			return field_error(source, lineno, "src", tok[0] + " is not a node id");
		if (*b >= *nn)
			return field_error(source, lineno, "dst", tok[1] + " is not a node id");
		if (*a == *b)
			return field_error(source, lineno, "dst", "link from node " + tok[0] + " to itself");
		l.a = int(*a);
		l.b = int(*b);
		QN_TRY(link_attr(c, lineno, l, "rate", tok[2]));
		QN_TRY(link_attr(c, lineno, l, "delay", tok[3]));
		char *end = nullptr;
		errno = 0;
		double er = std::strtod(tok[4].c_str(), &end);
		if (end == tok[4].c_str() || *end != '\0' || errno || !(er >= 0.0 && er <= 1.0))
			return field_error(source, lineno, "error_rate", "'" + tok[4] + "' is not a probability in [0, 1]");
		l.error_rate = er;
		t.links.push_back(l);
	}
	if (next_line(tok))
		return make_error(at(source, lineno) + "unexpected data after " + std::to_string(*nl) + " links");
	QN_TRY(derive(t));
	return t;
}

Status derive(Topology &t)
{
	const std::string &src = t.source;
	t.ports.clear();
	t.warnings.clear();
	std::vector<int> nports(t.nodes.size(), 0);
	if (t.nodes.empty())
		return make_error(src + ": no hosts or switches");

	for (size_t li = 0; li < t.links.size(); li++) {
		const Link &l = t.links[li];
		int pa = int(t.ports.size());
		for (int side = 0; side < 2; side++) {
			Port p;
			p.node = side == 0 ? l.a : l.b;
			p.peer_node = side == 0 ? l.b : l.a;
			p.peer_port = side == 0 ? pa + 1 : pa;
			p.link = int(li);
			const Node &n = t.nodes[size_t(p.node)];
			p.port_no = nports[size_t(p.node)]++;
			if (n.kind == NodeKind::Host) {
				if (p.port_no > 0)
					return make_error(at(src, l.line) + "host '" + n.name +
							  "' has a second link: hosts are single-homed");
				p.ifname = n.name + "-eth0";
				if (n.stack == kStackRxeInitNs) // one initial namespace for every topology
					p.ifname = initns_ifname(t.name, n.name);
				if (is_rxe_stack(n.stack) && l.delay_ns > 0)
					return field_error(src, l.line, "delay",
							   "host '" + n.name + "' runs rdma_rxe (stack=rxe): its link has no delay "
							   "line, so its delay must be 0");
				if (l.mtu > kMaxHostMtu && !is_rxe_stack(n.stack))
					t.warnings.push_back(at(src, l.line) + "mtu " + std::to_string(l.mtu) +
							     " on host link of '" + n.name + "' is above " +
							     std::to_string(kMaxHostMtu) +
							     ": native XDP (steering, AF_XDP engine) cannot attach there (docs/units.md)");
			} else {
				if (p.port_no >= QN_MAX_PORTS)
					return make_error(at(src, l.line) + "switch '" + n.name + "' has more than " +
							  std::to_string(QN_MAX_PORTS) + " ports");
				p.ifname = n.name + "-p" + std::to_string(p.port_no + 1);
			}
			p.ifindex = kIfindexBase + uint32_t(t.ports.size());
			uint32_t id = uint32_t(n.id);
			if (n.kind == NodeKind::Host)
				p.mac = n.mac_given ? n.mac : Mac{0x02, 0x51, 0x00, uint8_t(id >> 8), uint8_t(id), 0x01};
			else
				p.mac = Mac{0x02, 0x51, 0x01, uint8_t(id >> 8), uint8_t(id), uint8_t(p.port_no + 1)};
			t.ports.push_back(p);
		}
	}

	std::map<uint32_t, int> ips;
	std::map<Mac, int> macs;
	for (auto &n : t.nodes) {
		if (n.kind == NodeKind::Host) {
			if (nports[size_t(n.id)] != 1)
				return make_error(at(src, n.line) + "host '" + n.name + "' has no link");
			if (!n.ip_given)
				n.ip = ns3_node_ip(n.id);
			if (!n.mac_given)
				n.mac = Mac{0x02, 0x51, 0x00, uint8_t(uint32_t(n.id) >> 8), uint8_t(n.id), 0x01};
			auto [it, fresh] = ips.emplace(n.ip, n.id);
			if (!fresh)
				return field_error(src, n.line, "ip", ip_to_string(n.ip) + " is also the address of '" +
										 t.nodes[size_t(it->second)].name + "'");
		} else if (nports[size_t(n.id)] == 0) {
			return make_error(at(src, n.line) + "switch '" + n.name + "' has no link");
		}
	}
	// Switch addresses (the source of CC-postcards): derived like a host's, unique among all.
	for (auto &n : t.nodes) {
		if (n.kind != NodeKind::Switch)
			continue;
		if (!n.ip_given)
			n.ip = ns3_node_ip(n.id);
		auto [it, fresh] = ips.emplace(n.ip, n.id);
		if (!fresh)
			return field_error(src, n.line, "ip", ip_to_string(n.ip) + " is also the address of '" +
								 t.nodes[size_t(it->second)].name + "'");
	}
	for (const auto &p : t.ports) {
		auto [it, fresh] = macs.emplace(p.mac, p.node);
		if (!fresh)
			return make_error(src + ": MAC " + mac_to_string(p.mac) + " used twice ('" +
					  t.nodes[size_t(p.node)].name + "' and '" + t.nodes[size_t(it->second)].name + "')");
	}
	// Every host must reach every other host through switches.
	std::vector<int> hosts;
	for (const auto &n : t.nodes)
		if (n.kind == NodeKind::Host)
			hosts.push_back(n.id);
	if (!hosts.empty()) {
		std::vector<int> seen(t.nodes.size(), 0);
		std::deque<int> q{hosts[0]};
		seen[size_t(hosts[0])] = 1;
		while (!q.empty()) {
			int u = q.front();
			q.pop_front();
			if (t.nodes[size_t(u)].kind == NodeKind::Host && u != hosts[0])
				continue;
			for (int pi : t.ports_of(u)) {
				int v = t.ports[size_t(pi)].peer_node;
				if (!seen[size_t(v)]) {
					seen[size_t(v)] = 1;
					q.push_back(v);
				}
			}
		}
		for (int h : hosts)
			if (!seen[size_t(h)])
				return make_error(src + ": host '" + t.nodes[size_t(h)].name + "' cannot reach host '" +
						  t.nodes[size_t(hosts[0])].name + "'");
	}
	return ok_status();
}

std::vector<Route> Topology::routes_for(int sw) const
{
	std::vector<Route> out;
	for (const auto &h : nodes) {
		if (h.kind != NodeKind::Host)
			continue;
		// BFS distances from the host; hosts never transit.
		std::vector<int> dist(nodes.size(), -1);
		std::deque<int> q{h.id};
		dist[size_t(h.id)] = 0;
		while (!q.empty()) {
			int u = q.front();
			q.pop_front();
			if (nodes[size_t(u)].kind == NodeKind::Host && u != h.id)
				continue;
			for (int pi : ports_of(u)) {
				int v = ports[size_t(pi)].peer_node;
				if (dist[size_t(v)] < 0) {
					dist[size_t(v)] = dist[size_t(u)] + 1;
					q.push_back(v);
				}
			}
		}
		if (dist[size_t(sw)] < 0)
			continue;
		Route r;
		r.dst_ip = h.ip;
		for (int pi : ports_of(sw)) {
			int v = ports[size_t(pi)].peer_node;
			bool toward = v == h.id ||
				      (nodes[size_t(v)].kind == NodeKind::Switch && dist[size_t(v)] == dist[size_t(sw)] - 1);
			if (toward)
				r.nexthops.push_back(NextHop{pi});
		}
		if (!r.nexthops.empty())
			out.push_back(r);
	}
	return out;
}

std::string Topology::to_text() const
{
	std::ostringstream o;
	o << "# " << name << ", derived from " << source << "\n";
	o << "name " << name << "\n";
	for (const auto &n : nodes) {
		if (n.kind == NodeKind::Host)
			o << "host " << n.name << " ip=" << ip_to_string(n.ip) << " mac=" << mac_to_string(n.mac)
			  << (n.stack == kStackRxe ? " stack=rxe" : n.stack == kStackRxeInitNs ? " stack=rxe-initns" : "")
			  << "\n";
		else
		{
			o << "switch " << n.name << " buffer=" << n.buffer_bytes;
			for (const auto &[k, v] : n.settings)
				o << " " << k << "=" << v;
			o << "\n";
		}
	}
	for (const auto &l : links) {
		o << "link " << nodes[size_t(l.a)].name << " " << nodes[size_t(l.b)].name << " rate=" << l.rate_bps
		  << " mtu=" << l.mtu << " delay=" << l.delay_ns << "ns";
		if (l.error_rate > 0) {
			char buf[32];
			std::snprintf(buf, sizeof(buf), "%.17g", l.error_rate);
			o << " error=" << buf;
		}
		o << "\n";
	}
	return o.str();
}

std::string Topology::describe() const
{
	std::ostringstream o;
	o << "topology " << name << " (" << source << ")\n";
	for (const auto &n : nodes) {
		o << (n.kind == NodeKind::Host ? "host   " : "switch ") << n.name << "  netns "
		  << (netns(n.id).empty() ? "(initial)" : netns(n.id));
		if (n.kind == NodeKind::Host)
			o << "  ip " << ip_to_string(n.ip) << "  mac " << mac_to_string(n.mac);
		else
			o << "  buffer " << format_size(n.buffer_bytes);
		o << "\n";
		for (int pi : ports_of(n.id)) {
			const Port &p = ports[size_t(pi)];
			const Link &l = links[size_t(p.link)];
			const Port &peer = ports[size_t(p.peer_port)];
			o << "  " << p.ifname << "  ifindex " << p.ifindex << "  mac " << mac_to_string(p.mac) << "  -> "
			  << nodes[size_t(p.peer_node)].name << ":" << peer.ifname << "  rate " << format_rate(l.rate_bps)
			  << "  mtu " << l.mtu << "  delay " << format_time(l.delay_ns);
			if (l.error_rate > 0)
				o << "  error_rate " << l.error_rate;
			o << "\n";
		}
	}
	return o.str();
}

namespace {

// Names grouped by pattern (each run of digits a '#'), in first-seen order: "h[1..320]" for one
// run of consecutive numbers, "e#x# 32: e1x1 .. e8x4" otherwise.
std::string name_groups(const std::vector<const Node *> &nodes)
{
	struct Group {
		std::string pattern, first, last;
		std::vector<long> nums; // the one number of a one-run pattern
		size_t n = 0;
		bool one_run = true;
	};
	std::vector<Group> groups;
	for (const Node *node : nodes) {
		std::string pat, digits;
		int runs = 0;
		for (size_t i = 0; i < node->name.size(); i++) {
			const char ch = node->name[i];
			if (std::isdigit(static_cast<unsigned char>(ch))) {
				if (i == 0 || !std::isdigit(static_cast<unsigned char>(node->name[i - 1]))) {
					pat += '#';
					runs++;
				}
				digits += ch;
			} else {
				pat += ch;
			}
		}
		auto g = std::find_if(groups.begin(), groups.end(), [&](const Group &x) { return x.pattern == pat; });
		if (g == groups.end()) {
			groups.push_back(Group{pat, node->name, node->name, {}, 0, runs == 1});
			g = groups.end() - 1;
		}
		g->last = node->name;
		g->n++;
		if (runs == 1 && digits.size() < 10)
			g->nums.push_back(std::stol(digits));
		else
			g->one_run = false;
	}
	std::string out;
	for (const Group &g : groups) {
		if (!out.empty())
			out += ", ";
		if (g.n == 1) {
			out += g.first;
			continue;
		}
		std::vector<long> v = g.nums;
		std::sort(v.begin(), v.end());
		const bool consecutive = g.one_run && v.size() == g.n && v.back() - v.front() + 1 == long(v.size()) &&
					 std::adjacent_find(v.begin(), v.end()) == v.end();
		if (consecutive) {
			const size_t at = g.pattern.find('#');
			out += g.pattern.substr(0, at) + "[" + std::to_string(v.front()) + ".." + std::to_string(v.back()) +
			       "]" + g.pattern.substr(at + 1);
		} else {
			out += g.pattern + " " + std::to_string(g.n) + ": " + g.first + " .. " + g.last;
		}
	}
	return out;
}

} // namespace

std::string Topology::summary() const
{
	std::ostringstream o;
	std::vector<const Node *> hosts, switches;
	for (const auto &n : nodes)
		(n.kind == NodeKind::Host ? hosts : switches).push_back(&n);
	o << "topology " << name << " (" << source << "): " << hosts.size() << " hosts, " << switches.size()
	  << " switches, " << links.size() << " links (`--detail` lists every node and port)\n";
	if (!hosts.empty())
		o << "  hosts     " << name_groups(hosts) << "\n";
	// switches by (port count, buffer): "e#x# ...: 8 ports, buffer 12MB"
	std::map<std::pair<size_t, uint64_t>, std::vector<const Node *>> by_shape;
	for (const Node *sw : switches)
		by_shape[{ports_of(sw->id).size(), sw->buffer_bytes}].push_back(sw);
	for (const auto &[shape, group] : by_shape)
		o << "  switches  " << name_groups(group) << ": " << group.size() << " with " << shape.first
		  << " ports, buffer " << format_size(shape.second) << "\n";
	// links by (kind, rate, delay, MTU, loss)
	struct LinkKey {
		bool fabric; // switch to switch
		uint64_t rate, delay;
		uint32_t mtu;
		double err;
		bool operator<(const LinkKey &x) const
		{
			return std::tie(fabric, rate, delay, mtu, err) < std::tie(x.fabric, x.rate, x.delay, x.mtu, x.err);
		}
	};
	std::map<LinkKey, size_t> by_kind;
	for (const auto &l : links) {
		const bool host = nodes[size_t(l.a)].kind == NodeKind::Host || nodes[size_t(l.b)].kind == NodeKind::Host;
		by_kind[LinkKey{!host, l.rate_bps, l.delay_ns, l.mtu, l.error_rate}]++;
	}
	for (const auto &[k, n] : by_kind) {
		o << "  links     " << n << (k.fabric ? " switch-to-switch" : " host") << ", rate " << format_rate(k.rate)
		  << ", delay " << format_time(k.delay) << ", mtu " << k.mtu;
		if (k.err > 0)
			o << ", error_rate " << k.err;
		o << "\n";
	}
	return o.str();
}

} // namespace qn
