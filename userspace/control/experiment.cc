// experiment.cc - experiment files, presets and ns-3 flow files (experiment.h).
#include "control/experiment.h"

#include <filesystem>
#include "control/swcfg.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include "common/params.h"
#include "common/units.h"

namespace qn {

namespace {

Error err_at(const std::string &src, int line, const std::string &field, const std::string &msg)
{
	return make_error(src + ":" + std::to_string(line) + ": field '" + field + "': " + msg);
}

// One field's value as a time / a positive rate, or an error naming file, line and field.
Status time_at(const std::string &src, int line, const std::string &k, const std::string &v, uint64_t &out)
{
	auto r = parse_time_ns(v);
	if (!r)
		return err_at(src, line, k, "'" + v + "' is not a time (e.g. 10us)");
	out = *r;
	return ok_status();
}

Status rate_at(const std::string &src, int line, const std::string &k, const std::string &v, uint64_t &out)
{
	auto r = parse_rate_bps(v);
	if (!r || *r == 0)
		return err_at(src, line, k, "'" + v + "' is not a rate (e.g. 40Gbps)");
	out = *r;
	return ok_status();
}

std::vector<std::string> tokens(const std::string &line)
{
	std::string s = line.substr(0, line.find('#'));
	std::istringstream is(s);
	std::vector<std::string> v;
	for (std::string w; is >> w;)
		v.push_back(w);
	return v;
}

Result<std::string> read_text(const std::string &path, const std::string &what)
{
	std::ifstream f(path);
	if (!f)
		return sys_error(errno, "cannot open " + what + " " + path);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

bool exists(const std::string &p)
{
	struct stat st{};
	return ::stat(p.c_str(), &st) == 0;
}

std::string dir_of(const std::string &path)
{
	auto s = path.find_last_of('/');
	return s == std::string::npos ? "." : path.substr(0, s);
}

// A path relative to the file, or a bare name of something the project ships.
Result<std::string> resolve(const std::string &src, int line, const std::string &field, const std::string &v,
			    const std::string &subdir, const std::vector<std::string> &exts)
{
	if (v.empty())
		return err_at(src, line, field, "empty");
	std::vector<std::string> tries;
	const std::string rel = v[0] == '/' ? v : dir_of(src) + "/" + v;
	tries.push_back(rel);
	if (v.find('/') == std::string::npos) {
		const std::string base = data_dir() + (subdir.empty() ? "" : "/" + subdir) + "/";
		tries.push_back(base + v);
		for (const auto &e : exts)
			tries.push_back(base + v + e);
	}
	for (const auto &t : tries)
		if (exists(t))
			return t;
	std::string all;
	for (const auto &t : tries)
		all += (all.empty() ? "" : ", ") + t;
	return err_at(src, line, field, "'" + v + "' not found (tried " + all + ")");
}

// The CDFs the project ships (netns/workloads/README.md) by short name.
const std::map<std::string, std::string> kCdfNames = {
	{"websearch", "WebSearch_distribution.txt"},
	{"hadoop", "FbHdp_distribution.txt"},
	{"fbhdp", "FbHdp_distribution.txt"},
	{"googlerpc", "GoogleRPC2008.txt"},
	{"rpc", "GoogleRPC2008.txt"},
	{"alistorage", "AliStorage2019.txt"},
	{"pcn-w1", "PCN_W1_webserver.txt"},
	{"pcn-w2", "PCN_W2_hadoop.txt"},
};

struct Kv {
	std::string key, value;
};

Result<Kv> split_kv(const std::string &src, int line, const std::string &tok)
{
	auto eq = tok.find('=');
	if (eq == std::string::npos || eq == 0)
		return err_at(src, line, tok, "expected KEY=VALUE");
	return Kv{tok.substr(0, eq), tok.substr(eq + 1)};
}

} // namespace

std::string data_dir()
{
	if (const char *e = std::getenv("QUENCH_DATA"); e && *e)
		return e;
#ifdef QN_SOURCE_DIR
	return std::string(QN_SOURCE_DIR) + "/netns";
#else
	return "netns";
#endif
}

// ---------------------------------------------------------------------------------------------
// Presets

Result<Preset> parse_preset(const std::string &text, const std::string &source)
{
	Preset p;
	p.source = source;
	std::istringstream is(text);
	std::string raw;
	int line = 0;
	bool have_rate = false, have_mtu = false;
	while (std::getline(is, raw)) {
		line++;
		auto t = tokens(raw);
		if (t.empty())
			continue;
		const std::string &k = t[0];
		if (k == "description") {
			auto pos = raw.find("description");
			p.description = raw.substr(pos + 11, raw.find('#') == std::string::npos ? std::string::npos
											      : raw.find('#') - pos - 11);
			p.description.erase(0, p.description.find_first_not_of(" \t"));
			continue;
		}
		if (t.size() != 2)
			return err_at(source, line, k, "expected '" + k + " VALUE'");
		const std::string &v = t[1];
		auto rate = [&](uint64_t &out) { return rate_at(source, line, k, v, out); };
		auto time = [&](uint64_t &out) { return time_at(source, line, k, v, out); };
		if (k == "name") {
			p.name = v;
		} else if (k == "paper") {
			p.paper = v;
		} else if (k == "host-rate") {
			QN_TRY(rate(p.host_rate_bps));
			have_rate = true;
		} else if (k == "fabric-rate") {
			QN_TRY(rate(p.fabric_rate_bps));
		} else if (k == "host-delay") {
			QN_TRY(time(p.host_delay_ns));
		} else if (k == "fabric-delay") {
			QN_TRY(time(p.fabric_delay_ns));
		} else if (k == "switch-delay") {
			QN_TRY(time(p.switch_delay_ns));
		} else if (k == "nic-delay") {
			QN_TRY(time(p.nic_delay_ns));
		} else if (k == "mtu") {
			char *end = nullptr;
			long m = std::strtol(v.c_str(), &end, 10);
			// 3506: the largest IP MTU native XDP attaches to on a veth (host steering and the
			// AF_XDP engine; docs/units.md "Path MTU")
			if (*end || m < 576 || m > 3506)
				return err_at(source, line, k,
					      "'" + v + "' is outside [576, 3506] (native XDP on the host veths; docs/units.md)");
			p.mtu = uint32_t(m);
			have_mtu = true;
		} else if (k == "buffer") {
			auto b = parse_size_bytes(v);
			if (!b || *b == 0)
				return err_at(source, line, k, "'" + v + "' is not a size (e.g. 12MB)");
			p.buffer_bytes = *b;
		} else {
			return err_at(source, line, k,
				      "unknown key (name, description, paper, host-rate, fabric-rate, host-delay, "
				      "fabric-delay, mtu, buffer, switch-delay, nic-delay)");
		}
	}
	if (!have_rate)
		return err_at(source, line, "host-rate", "missing");
	if (!have_mtu)
		return err_at(source, line, "mtu", "missing");
	if (p.fabric_rate_bps == 0)
		p.fabric_rate_bps = p.host_rate_bps;
	if (p.fabric_delay_ns == 0)
		p.fabric_delay_ns = p.host_delay_ns;
	if (p.name.empty()) {
		std::string base = source.substr(source.find_last_of('/') + 1);
		p.name = base.substr(0, base.find('.'));
	}
	return p;
}

Result<Preset> load_preset(const std::string &path)
{
	auto t = read_text(path, "preset");
	if (!t)
		return t.error();
	return parse_preset(*t, path);
}

Result<Preset> find_preset(const std::string &v)
{
	std::vector<std::string> tries{v};
	if (v.find('/') == std::string::npos)
		tries.insert(tries.end(), {data_dir() + "/presets/" + v, data_dir() + "/presets/" + v + ".preset"});
	for (const auto &t : tries)
		if (std::filesystem::is_regular_file(t))
			return load_preset(t);
	std::string all;
	for (const auto &t : tries)
		all += (all.empty() ? "" : ", ") + t;
	return make_error("preset '" + v + "' not found (tried " + all + ")");
}

void apply_preset(Topology &t, const Preset &p)
{
	for (auto &l : t.links) {
		const bool host = t.nodes[size_t(l.a)].kind == NodeKind::Host || t.nodes[size_t(l.b)].kind == NodeKind::Host;
		l.rate_bps = host ? p.host_rate_bps : p.fabric_rate_bps;
		l.delay_ns = host ? p.host_delay_ns : p.fabric_delay_ns;
		l.mtu = p.mtu;
	}
	t.defaults.rate_bps = p.host_rate_bps;
	t.defaults.delay_ns = p.host_delay_ns;
	t.defaults.mtu = p.mtu;
	if (p.buffer_bytes) {
		t.default_buffer_bytes = p.buffer_bytes;
		for (auto &n : t.nodes)
			if (n.kind == NodeKind::Switch)
				n.buffer_bytes = p.buffer_bytes;
	}
}

// ---------------------------------------------------------------------------------------------
// Experiments

namespace {

// A workload line's keys, before hosts and files are resolved: one parameter table per workload
// kind (params.h), each the rows of its keys.
struct WorkloadKeys {
	std::string dst, senders, cdf, file;
	uint64_t size = 0, window_ns = 0, count = 1, interval_ns = 0, start_ns = 0, duration_ns = 0;
	double load = 0;
};

const ParamTable<WorkloadKeys> &workload_table(Workload::Kind k)
{
	using W = WorkloadKeys;
	using K = ParamKind;
	const std::vector<Param<W>> all = {
		{"dst", K::Text, &W::dst, 0, 0, {}, "the receiving host"},
		{"senders", K::Text, &W::senders, 0, 0, {}, "a count N (the first N other hosts) or hosts H,H,.."},
		{"size", K::Size, &W::size, 1, 1e12, {}, "bytes per message"},
		{"window", K::Time, &W::window_ns, 0, 1e12, {}, "incast: start times uniform in this window"},
		{"count", K::Count, &W::count, 1, 100000, {}, "incast, long: rounds"},
		{"interval", K::Time, &W::interval_ns, 0, 1e12, {}, "incast: between rounds; long: between senders"},
		{"start", K::Time, &W::start_ns, 0, 1e12, {}, "offset of the workload's first flow"},
		{"load", K::Number, &W::load, 1e-9, 1, {}, "poisson: fraction of each host's link"},
		{"cdf", K::Text, &W::cdf, 0, 0, {}, "poisson: flow-size CDF (a name or a file)"},
		{"duration", K::Time, &W::duration_ns, 1, 1e12, {}, "poisson: arrivals for this long"},
		{"file", K::Text, &W::file, 0, 0, {}, "flows: an ns-3 flow file"},
	};
	auto only = [&](std::initializer_list<const char *> keys) {
		std::vector<Param<W>> v;
		for (const auto &r : all)
			for (const char *n : keys)
				if (std::string(r.name) == n)
					v.push_back(r);
		return v;
	};
	static const ParamTable<W> incast("workload incast", only({"dst", "senders", "size", "window", "count", "interval", "start"}));
	static const ParamTable<W> lng("workload long", only({"dst", "senders", "size", "count", "interval", "start"}));
	static const ParamTable<W> poisson("workload poisson", only({"load", "cdf", "duration", "start"}));
	static const ParamTable<W> flows("workload flows", only({"file", "start"}));
	switch (k) {
	case Workload::Kind::Incast: return incast;
	case Workload::Kind::Long: return lng;
	case Workload::Kind::Poisson: return poisson;
	case Workload::Kind::Flows: return flows;
	}
	return incast;
}

Result<Workload> parse_workload(const std::string &src, int line, const std::vector<std::string> &t)
{
	Workload w;
	w.line = line;
	if (t.size() < 2)
		return err_at(src, line, "workload", "expected 'workload incast|long|poisson|flows KEY=VALUE...'");
	const std::string &kind = t[1];
	if (kind == "incast")
		w.kind = Workload::Kind::Incast;
	else if (kind == "long")
		w.kind = Workload::Kind::Long;
	else if (kind == "poisson")
		w.kind = Workload::Kind::Poisson;
	else if (kind == "flows")
		w.kind = Workload::Kind::Flows;
	else
		return err_at(src, line, "workload", "unknown workload '" + kind + "' (incast, long, poisson, flows)");
	WorkloadKeys x;
	const ParamTable<WorkloadKeys> &table = workload_table(w.kind);
	std::map<std::string, bool> seen;
	for (size_t i = 2; i < t.size(); i++) {
		auto kv = split_kv(src, line, t[i]);
		if (!kv)
			return kv.error();
		const std::string &k = kv->key, &v = kv->value;
		if (seen[k])
			return err_at(src, line, k, "given twice");
		seen[k] = true;
		if (auto st = table.apply(x, k, v); !st.ok())
			return err_at(src, line, k, st.error().message);
	}
	// what the table cannot say: hosts, files
	w.dst = x.dst;
	w.size = x.size;
	w.window_ns = x.window_ns;
	w.count = x.count;
	w.interval_ns = x.interval_ns;
	w.start_ns = x.start_ns;
	w.load = x.load;
	w.duration_ns = x.duration_ns;
	if (seen["senders"]) {
		char *end = nullptr;
		const long n = std::strtol(x.senders.c_str(), &end, 10);
		if (!*end) {
			if (n < 1)
				return err_at(src, line, "senders", "needs at least one sender");
			w.nsenders = int(n);
		} else {
			std::istringstream ss(x.senders);
			for (std::string h; std::getline(ss, h, ',');)
				if (!h.empty())
					w.senders.push_back(h);
			if (w.senders.empty())
				return err_at(src, line, "senders", "'" + x.senders + "' is not a count or a list of hosts");
		}
	}
	if (seen["cdf"]) {
		auto it = kCdfNames.find(x.cdf);
		auto r = resolve(src, line, "cdf", it == kCdfNames.end() ? x.cdf : it->second, "workloads", {".txt"});
		if (!r)
			return r.error();
		w.cdf = *r;
	}
	if (seen["file"]) {
		auto r = resolve(src, line, "file", x.file, "", {});
		if (!r)
			return r.error();
		w.file = *r;
	}
	auto need = [&](const char *k) -> Status {
		if (!seen[k])
			return err_at(src, line, k, std::string("missing (workload ") + kind + " needs it)");
		return ok_status();
	};
	switch (w.kind) {
	case Workload::Kind::Incast:
	case Workload::Kind::Long:
		QN_TRY(need("dst"));
		QN_TRY(need("senders"));
		QN_TRY(need("size"));
		break;
	case Workload::Kind::Poisson:
		QN_TRY(need("load"));
		QN_TRY(need("cdf"));
		QN_TRY(need("duration"));
		break;
	case Workload::Kind::Flows:
		QN_TRY(need("file"));
		break;
	}
	return w;
}

} // namespace

SchemeCatalog::SchemeCatalog(const std::vector<std::string> &names)
	: all(names), check([names](const std::string &n) -> std::string {
		  if (std::find(names.begin(), names.end(), n) != names.end())
			  return "";
		  std::string v;
		  for (const auto &s : names)
			  v += (v.empty() ? "" : ", ") + s;
		  return "no scheme named '" + n + "' (schemes that exist: " + v + ")";
	  })
{
}

const ParamTable<Experiment> &experiment_table()
{
	using K = ParamKind;
	using X = Experiment;
	static const ParamTable<X> t(
		"experiment",
		{
			{"name", K::Text, &X::name, 0, 0, {}, "the experiment's name (results and reports)"},
			{"dilation", K::Number, &X::dilation, 1, kMaxDilation, {},
			 "time dilation D (auto: calibrated on this machine, docs/experiments.md)", "auto"},
			{"duration", K::Time, &X::duration_ns, 1, 1e12, {},
			 "time limit per scheme after the last flow's start (fabric)"},
			{"seed", K::Count, &X::seed, 0, 9e15, {}, "the workload generator's seed"},
			{"queue-interval", K::Time, &X::queue_interval_ns, 1, 1e9, {},
			 "queue sampling interval (fabric; auto: one base RTT)", "auto"},
			{"mode", K::Choice, &X::mode, 0, 0, {"gbn", "sr"}, "reliability: go-back-N or selective repeat"},
			{"attempts", K::Count, &X::attempts, 1, 10, {}, "runs per scheme until one is VALID"},
		});
	return t;
}

Result<Experiment> parse_experiment(const std::string &text, const std::string &source, const SchemeCatalog &known)
{
	Experiment x;
	x.source = source;
	std::istringstream is(text);
	std::string raw;
	int line = 0;
	std::map<std::string, int> seen;
	while (std::getline(is, raw)) {
		line++;
		auto t = tokens(raw);
		if (t.empty())
			continue;
		const std::string &k = t[0];
		const bool multi = k == "param" || k == "workload" || k == "cc" || k == "switch" || k == "trace";
		if (!multi && seen.count(k))
			return err_at(source, line, k, "given twice (first on line " + std::to_string(seen[k]) + ")");
		seen[k] = line;
		auto one = [&]() -> Result<std::string> {
			if (t.size() != 2)
				return err_at(source, line, k, "expected '" + k + " VALUE'");
			return t[1];
		};
		if (k == "topology") {
			auto v = one();
			if (!v)
				return v.error();
			auto r = resolve(source, line, k, *v, "", {".topo"});
			if (!r)
				return r.error();
			x.topology = *r;
		} else if (k == "param") {
			for (size_t i = 1; i < t.size(); i++) {
				auto kv = split_kv(source, line, t[i]);
				if (!kv)
					return kv.error();
				x.params[kv->key] = kv->value;
			}
		} else if (k == "preset") {
			auto v = one();
			if (!v)
				return v.error();
			if (*v != "none") {
				auto r = resolve(source, line, k, *v, "presets", {".preset"});
				if (!r)
					return r.error();
				x.preset = *r;
			}
		} else if (k == "schemes") {
			if (t.size() < 2)
				return err_at(source, line, k, "expected 'schemes all' or a list of schemes");
			x.line_of_schemes = line;
			for (size_t i = 1; i < t.size(); i++) {
				if (t[i] == "all") {
					for (const auto &s : known.all)
						if (std::find(x.schemes.begin(), x.schemes.end(), s) == x.schemes.end())
							x.schemes.push_back(s);
					continue;
				}
				if (auto why = known.check(t[i]); !why.empty())
					return err_at(source, line, k, why);
				if (std::find(x.schemes.begin(), x.schemes.end(), t[i]) != x.schemes.end())
					return err_at(source, line, k, "'" + t[i] + "' listed twice");
				x.schemes.push_back(t[i]);
			}
		} else if (k == "cc") {
			if (t.size() < 3)
				return err_at(source, line, k, "expected 'cc SCHEME params=SET|KEY=VALUE...'");
			if (auto why = known.check(t[1]); !why.empty())
				return err_at(source, line, k, why);
			SchemeCc &c = x.cc[t[1]];
			for (size_t i = 2; i < t.size(); i++) {
				auto kv = split_kv(source, line, t[i]);
				if (!kv)
					return kv.error();
				if (kv->key == "params") {
					if (kv->value != "derived" && kv->value != "paper" && kv->value != "mellanox")
						return err_at(source, line, "params",
							      "'" + kv->value + "' is not derived, paper or mellanox");
					c.params = kv->value;
				} else {
					if (known.check_param)
						if (auto why = known.check_param(t[1], kv->key, kv->value); !why.empty())
							return err_at(source, line, kv->key, why);
					c.overrides[kv->key] = kv->value;
				}
			}
		} else if (k == "switch") {
			// switch [SCHEME] KEY=VALUE...: checked against a default switch here (key and
			// value); thresholds that contradict each other are found when the run applies
			// them over the scheme's profile.
			size_t first = 1;
			std::string scheme;
			if (t.size() >= 2 && t[1].find('=') == std::string::npos) {
				if (auto why = known.check(t[1]); !why.empty())
					return err_at(source, line, k, why);
				scheme = t[1];
				first = 2;
			}
			if (t.size() <= first)
				return err_at(source, line, k, "expected 'switch [SCHEME] KEY=VALUE...'");
			for (size_t i = first; i < t.size(); i++) {
				auto kv = split_kv(source, line, t[i]);
				if (!kv)
					return kv.error();
				qn_swcfg probe = default_swcfg(1'000'000);
				if (auto st = apply_swcfg(probe, kv->key, kv->value); !st.ok())
					return err_at(source, line, kv->key, st.error().message);
				x.switch_settings[scheme].emplace_back(kv->key, kv->value);
			}
			if (!scheme.empty())
				seen["switch " + scheme] = line;
		} else if (k == "trace") {
			if (t.size() < 2)
				return err_at(source, line, k, "expected 'trace FLOW_ID...'");
			for (size_t i = 1; i < t.size(); i++) {
				char *end = nullptr;
				errno = 0;
				const unsigned long long id = std::strtoull(t[i].c_str(), &end, 10);
				if (t[i].empty() || *end || errno || t[i][0] == '-')
					return err_at(source, line, k, "'" + t[i] + "' is not a flow id (0, 1, ...)");
				x.trace_flows.push_back(id);
			}
		} else if (k == "workload") {
			auto w = parse_workload(source, line, t);
			if (!w)
				return w.error();
			x.workloads.push_back(std::move(*w));
		} else if (experiment_table().has(k)) {
			auto v = one();
			if (!v)
				return v.error();
			if (auto st = experiment_table().apply(x, k, *v); !st.ok())
				return err_at(source, line, k, st.error().message);
		} else {
			return err_at(source, line, k,
				      "unknown directive (topology, param, preset, schemes, cc, switch, trace, workload, " +
					      experiment_table().names() + ")");
		}
	}
	if (x.topology.empty())
		return err_at(source, line, "topology", "missing");
	if (x.schemes.empty())
		return err_at(source, line, "schemes", "missing");
	if (x.workloads.empty())
		return err_at(source, line, "workload", "missing (at least one)");
	for (const auto &[s, c] : x.cc)
		if (std::find(x.schemes.begin(), x.schemes.end(), s) == x.schemes.end())
			return err_at(source, seen["cc"], "cc", "scheme '" + s + "' is configured but not in 'schemes'");
	for (const auto &[s, c] : x.switch_settings)
		if (!s.empty() && std::find(x.schemes.begin(), x.schemes.end(), s) == x.schemes.end())
			return err_at(source, seen["switch " + s], "switch", "scheme '" + s + "' is configured but not in 'schemes'");
	if (x.name.empty()) {
		std::string base = source.substr(source.find_last_of('/') + 1);
		x.name = base.substr(0, base.find('.'));
	}
	return x;
}

Result<Experiment> load_experiment(const std::string &path, const SchemeCatalog &known)
{
	auto t = read_text(path, "experiment");
	if (!t)
		return t.error();
	return parse_experiment(*t, path, known);
}

// ---------------------------------------------------------------------------------------------
// ns-3 flow files

Result<std::vector<Ns3Flow>> parse_ns3_flows(const std::string &text, const std::string &source)
{
	std::istringstream is(text);
	std::string raw;
	int line = 0;
	long long count = -1;
	std::vector<Ns3Flow> v;
	while (std::getline(is, raw)) {
		line++;
		auto t = tokens(raw);
		if (t.empty())
			continue;
		if (count < 0) {
			char *end = nullptr;
			count = std::strtoll(t[0].c_str(), &end, 10);
			if (t.size() != 1 || *end || count < 0)
				return err_at(source, line, "count", "the first line must be the flow count, got '" + raw + "'");
			continue;
		}
		if (t.size() != 6)
			return err_at(source, line, "flow", "expected 'src dst pg dport size start_s', got " +
								   std::to_string(t.size()) + " fields");
		Ns3Flow f;
		f.line = line;
		static const char *names[] = {"src", "dst", "pg", "dport"};
		int *ints[] = {&f.src, &f.dst, &f.pg, &f.dport};
		for (int i = 0; i < 4; i++) {
			char *end = nullptr;
			long x = std::strtol(t[size_t(i)].c_str(), &end, 10);
			if (*end || x < 0 || x > 65535)
				return err_at(source, line, names[i], "'" + t[size_t(i)] + "' is not an integer in [0, 65535]");
			*ints[i] = int(x);
		}
		char *end = nullptr;
		unsigned long long sz = std::strtoull(t[4].c_str(), &end, 10);
		if (*end || sz == 0 || t[4][0] == '-')
			return err_at(source, line, "size", "'" + t[4] + "' is not a positive integer (bytes)");
		f.size = sz;
		double st = std::strtod(t[5].c_str(), &end);
		if (*end || !(st >= 0) || st > 1e6)
			return err_at(source, line, "start_s", "'" + t[5] + "' is not a time in seconds >= 0");
		f.start_ns = uint64_t(std::llround(st * 1e9));
		if (f.src == f.dst)
			return err_at(source, line, "dst", "the same node as src (" + std::to_string(f.src) + ")");
		v.push_back(f);
	}
	if (count < 0)
		return err_at(source, line, "count", "empty file");
	if (size_t(count) != v.size())
		return err_at(source, line, "count",
			      "the first line says " + std::to_string(count) + " flows, the file has " + std::to_string(v.size()));
	return v;
}

} // namespace qn
