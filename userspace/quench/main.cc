// main.cc - the `quench` command line (docs/cli.md).
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench.h"
#include "bench/bench_fabric.h"
#include "bench/bench_rxe.h"
#include "bench/bench_transport.h"
#include "common/paths.h"
#include "common/units.h"
#include "common/version.h"
#include "control/bringup.h"
#include "control/exec.h"
#include "control/experiment.h"
#include "control/fattree.h"
#include "control/report.h"
#include "control/runner.h"
#include "control/rxe_host.h"
#include "control/stats.h"
#include "control/swcfg.h"
#include "control/switch_loader.h"
#include "control/switchd.h"
#include "control/sysmem.h"
#include "control/topology.h"
#include "quench/cli.h"
#include "quench/cmd_engine.h"
#include "quench/cmd_agent.h"
#include "quench/cmd_model.h"
#include "quench/cmd_run.h"
#include "transport/cc/cc.h"
#include "transport/resources.h"

namespace {


volatile std::sig_atomic_t g_stop = 0;

int fail(const std::string &msg)
{
	std::fprintf(stderr, "quench: %s\n", msg.c_str());
	return 1;
}

struct Args {
	std::vector<std::string> pos;
	qn::Params params;
	std::string name;
	double dilation = 1.0;
	bool dilation_auto = false;   // topo up --dilation auto
	bool all = false;
	std::map<std::string, bool> up_flags; // topo up's flags by name (qn::up_flags())
	bool detail = false; // topo show --detail
	bool verbose = false;
	double watch = -1;
	std::string format = "table"; // switch stats: table or json
	std::string baseline_obj;     // bench switch --baseline-obj
	std::string only;             // bench switch --only
	std::string preset;           // topo check/up --preset
	double seconds = 1.0;
	int rounds = 10;
	size_t size = 64;
	int senders = 1;
	bool ecn_dequeue = false;
	bool sfc = false;             // bench switch --sfc
	uint64_t sfc_tbf_ns = 1'000'000'000; // bench switch --sfc-tbf
	std::string sfc_cache = "tor";        // bench switch --sfc-cache
	bool sfc_est = false;                 // bench switch --sfc-est
	bool gate_leaf = false;               // bench switch --gate-leaf
	std::vector<std::string> bench_sets;  // bench switch --set KEY=VALUE
	uint64_t bench_depth = 0;             // bench switch --depth
	int bench_tos = -1;                   // bench switch --tos
	qn::FatTreeSpec fattree{0};           // topo fattree (k = 0: --k not given)
	bool ns3_320 = false;                 // topo fattree --ns3-320
	std::string out;                      // topo fattree -o
	std::vector<std::string> shapes;      // bench fabric --shapes
	int fabric_rounds = 5;                // bench fabric --rounds
	double fabric_seconds = 0.3;          // bench fabric --seconds
	std::string fabric_prefix = "qnbf";   // bench fabric --prefix
	qn::cli::EngineFlags fabric_engine;   // bench fabric: the engine's options
};

// The topology, switch and bench commands on CLI11: every option where the command takes it,
// anywhere after the command; `-v` anywhere. Fills `a` (a.pos = command, subcommand, its
// arguments). Return: -1 when parsed; else the exit status after the error (2) or help (0).
int parse_args(int argc, char **argv, Args &a, std::FILE *help_out = stdout)
{
	CLI::App app{"quench: a datacenter in network namespaces (docs/cli.md)", "quench"};
	app.fallthrough(); // the main options (-v) after a command too
	app.require_subcommand(1);
	app.add_flag("-v,--verbose", a.verbose, "print every ip/tc command and libbpf debug output");
	app.set_version_flag("--version", std::string("quench ") + qn::build_version() + " (commit " + qn::build_commit() + ")",
			     "the version and the commit this binary was built from");
	app.footer("`quench COMMAND --help` gives a command's options. Files may be quench topology files\n"
		   "(docs/topology-format.md) or ns-3 RDMA simulator topology files (first line: nodes switches links).");
	std::vector<std::string> rest; // a subcommand's positional arguments
	auto params = [&](CLI::App *c) { qn::cli::key_values(*c, "--param", a.params, "a topology param, K=V (repeatable)"); };
	auto name = [&](CLI::App *c) { c->add_option("--name", a.name, "the topology's name instead of the file's"); };
	auto preset = [&](CLI::App *c) {
		c->add_option("--preset", a.preset,
			      "a fabric preset (netns/presets/ NAME or a FILE): every link's rate, delay and MTU, every switch's buffer");
	};
	auto args = [&](CLI::App *c, const char *what, bool required) {
		auto *o = c->add_option(what, rest, what);
		if (required)
			o->required();
	};
	CLI::App *topo = app.add_subcommand("topo", qn::cli::about("topo"))->require_subcommand(1);
	CLI::App *check = topo->add_subcommand("check", "parse, derive and print a topology (no root)");
	args(check, "FILE", true);
	check->add_flag("--detail", a.detail, "every node, port and route, however large the topology (a summary beyond 40 nodes)");
	params(check);
	name(check);
	preset(check);
	CLI::App *up = topo->add_subcommand("up", "bring a topology up (idempotent)");
	args(up, "FILE", true);
	params(up);
	name(up);
	preset(up);
	up->add_option_function<std::string>(
		   "--dilation",
		   [&a](const std::string &v) {
			   if (v == "auto") {
				   a.dilation_auto = true;
				   return;
			   }
			   char *end = nullptr;
			   const double d = std::strtod(v.c_str(), &end);
			   if (v.empty() || *end)
				   throw CLI::ValidationError("--dilation", "'" + v + "' is not auto or a number");
			   if (auto dil = qn::Dilation::make(d); !dil) // the one range check (common/units.h)
				   throw CLI::ValidationError("--dilation", dil.error().message);
			   a.dilation = d;
		   },
		   "time dilation D, or auto: measured for every host sending at once (docs/experiments.md \"Dilation and calibration\")")
		->type_name("D|auto");
	up->add_option("--format", a.format, "text (default) or json: what came up, its D and, with --dilation auto, the calibration")
		->check(CLI::IsMember({"text", "json"}));
	for (const qn::UpFlag &f : qn::up_flags())
		up->add_flag(f.flag, a.up_flags[f.flag], f.doc);
	CLI::App *down = topo->add_subcommand("down", "remove what `topo up` made");
	args(down, "FILE|NAME", false);
	params(down);
	name(down);
	down->add_flag("--all", a.all, "every quench topology");
	CLI::App *ft = topo->add_subcommand("fattree", "write a k-ary fat-tree topology file (docs/topology-format.md \"Fat-trees\")");
	CLI::Option *ftk = ft->add_option("--k", a.fattree.k, "pods, ports per switch: even, 4..16 (k^3/4 hosts)");
	ft->add_flag("--ns3-320", a.ns3_320,
		     "instead: the ns-3 simulator's 320-host tree (its mix/fat.txt) in the simulator's format")
		->excludes(ftk);
	name(ft);
	ft->add_option("--rate", a.fattree.rate, "host links' rate ($RATE; default 100Gbps)");
	ft->add_option("--fabric-rate", a.fattree.fabric_rate, "switch links' rate ($FABRIC; default the host rate)");
	ft->add_option("--delay", a.fattree.delay, "host links' delay ($DELAY; default 1us)");
	ft->add_option("--fabric-delay", a.fattree.fabric_delay,
		       "switch links' delay ($FABRIC_DELAY; default 1us; > 0 makes them cables)");
	ft->add_option("--buffer", a.fattree.buffer, "every switch's buffer (default 32MB)");
	ft->add_option("--mtu", a.fattree.mtu, "every link's MTU (default 2048)");
	ft->add_option("-o,--out", a.out, "write the file here (default: stdout)");
	CLI::App *show = topo->add_subcommand("show", "running topologies (or NAME), ports, addresses");
	args(show, "NAME", false);
	name(show);
	show->add_flag("--detail", a.detail, "every node and port, however large the topology (a summary beyond 40 nodes)");
	CLI::App *sw = app.add_subcommand("switch", qn::cli::about("switch"))->require_subcommand(1);
	CLI::App *stats = sw->add_subcommand("stats", "per-port counters and queues from the pinned maps");
	args(stats, "TOPO/SWITCH|SWITCH", false);
	stats->add_option("--watch", a.watch, "redraw every SECONDS (default 1)")
		->expected(0, 1)
		->default_str("1")
		->check(CLI::Validator(
			[](std::string &v) {
				char *end = nullptr;
				const double d = std::strtod(v.c_str(), &end);
				return !v.empty() && !*end && d > 0 ? std::string() : "'" + v + "' is not a positive interval";
			},
			"SECONDS"));
	stats->add_option("--format", a.format, "table (default) or json (exact integers, every counter by name)")
		->check(CLI::IsMember({"table", "json"}));
	CLI::App *set = sw->add_subcommand("set", "change settings (docs/switch.md)");
	args(set, "TOPO/SWITCH KEY=VALUE...", true);
	sw->add_subcommand("keys", "every switch setting: key, values, default, meaning");
	CLI::App *bench = app.add_subcommand("bench", qn::cli::about("bench"))->require_subcommand(1);
	CLI::App *bsw = bench->add_subcommand("switch", "quench's switch vs a bare redirect, side by side");
	CLI::App *btr = bench->add_subcommand("transport", "the engine vs kernel UDP and raw AF_XDP, side by side");
	CLI::App *brx = bench->add_subcommand("rxe", "the Soft-RoCE host programs' cost per packet, against the agent-off egress");
	qn::cli::number(*brx, "--rounds", a.rounds, 1, 1e6, "alternating rounds");
	CLI::App *bfa = bench->add_subcommand(
		"fabric", "per fabric shape: bring-up, memory, descriptors and the capacity at D=1 against raw AF_XDP on one and every core");
	{
		std::string names;
		for (const auto &n : qn::fabric_shape_names())
			names += (names.empty() ? "" : ", ") + n;
		std::string defs;
		for (const auto &n : qn::fabric_default_shapes())
			defs += (defs.empty() ? "" : ",") + n;
		bfa->add_option("--shapes", a.shapes, "shapes, comma-separated or repeated (" + names + "; default " + defs + ")")
			->delimiter(',');
	}
	qn::cli::number(*bfa, "--rounds", a.fabric_rounds, 1, 1000, "interleaved rounds per shape (medians; default 5)");
	qn::cli::number(*bfa, "--seconds", a.fabric_seconds, 0.01, 60, "per raw measurement, per 64 sockets of the shape (default 0.3)");
	bfa->add_option("--format", a.format, "table (default) or json")->check(CLI::IsMember({"table", "json"}));
	a.fabric_engine.add_to(*bfa); // --link-credit, --shards
	bfa->add_option("--prefix", a.fabric_prefix, "topology names: PREFIX and a shape code (default qnbf: qnbfs8, qnbfk4, ...)");
	for (CLI::App *c : {bsw, btr}) {
		qn::cli::number(*c, "--seconds", a.seconds, 1e-3, 3600, "per measurement");
		qn::cli::number(*c, "--rounds", a.rounds, 1, 1e6, "alternating rounds");
	}
	qn::cli::number(*bsw, "--size", a.size, 1, 1e6, "frame bytes");
	qn::cli::number(*bsw, "--senders", a.senders, 1, 1e6, "sending threads");
	bsw->add_flag("--ecn-dequeue", a.ecn_dequeue, "RED decided at dequeue");
	bsw->add_flag("--sfc", a.sfc, "SFC on, the egress depth forced above Q_Th (trigger, Bloom filter and BTS clone run)");
	qn::cli::time(*bsw, "--sfc-tbf", a.sfc_tbf_ns, "with --sfc: the Bloom epoch T_BF (default 1s; 0: every packet cloned)");
	bsw->add_option("--sfc-cache", a.sfc_cache, "with --sfc: the pause cache (off, tor: a lookup per packet from a host, all)")
		->check(CLI::IsMember({"off", "tor", "all"}));
	bsw->add_flag("--gate-leaf", a.gate_leaf, "s1's port toward h2 gets the open pause gate (tbf) as its data leaf, as a switch-facing port has");
	bsw->add_flag("--sfc-est", a.sfc_est, "with --sfc: the incast estimator on (a spin-locked slot update per packet from a host)");
	bsw->add_option("--set", a.bench_sets, "a switch setting KEY=VALUE (quench switch set keys; repeatable): any scheme's stage, e.g. ldcp=on, pbfs=on");
	qn::cli::size(*bsw, "--depth", a.bench_depth, "force the egress depth toward the sink (bytes; 0: the real queue)");
	qn::cli::number(*bsw, "--tos", a.bench_tos, -1, 255, "the frames' TOS byte (-1: ECT(0), data DSCP)");
	bsw->add_option("--baseline-obj", a.baseline_obj,
			"an older qn_switch.bpf.o: its ingress TEST_RUN cost, interleaved with this build's")
		->check(CLI::ExistingFile);
	bsw->add_option("--only", a.only, "run one variant alone, e.g. under perf record (no ratio)")
		->check(CLI::IsMember({"quench", "bare"}));
	// The commands main() hands to their own files (cmd_*.cc) appear here for this help only;
	// `schemes` has no options and is answered after the parse.
	for (const auto &c : qn::cli::commands()) {
		const std::string n = c.name;
		if (n != "topo" && n != "switch" && n != "bench" && n != "schemes")
			app.add_subcommand(n, c.about)->allow_extras();
	}
	app.add_subcommand("schemes", qn::cli::about("schemes"));
	CLI::App *switchd = app.add_subcommand("switchd", "started by `topo up`; not for users");
	switchd->group(""); // hidden
	args(switchd, "NAME", true);
	if (int rc = qn::cli::parse(app, argc, argv, 1, help_out); rc >= 0)
		return rc;
	for (CLI::App *c = &app; c;) {
		auto subs = c->get_subcommands();
		if (subs.empty())
			break;
		c = subs.front();
		a.pos.push_back(c->get_name());
	}
	a.pos.insert(a.pos.end(), rest.begin(), rest.end());
	return -1;
}

qn::Result<qn::Topology> load(const Args &a, const std::string &file)
{
	auto t = qn::load_topology_file(file, a.params);
	if (!t)
		return t.error();
	if (!a.name.empty()) {
		bool ok = a.name.size() <= 12 && !a.name.empty();
		for (char c : a.name)
			ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'));
		if (!ok)
			return qn::make_error("--name '" + a.name + "' must be 1-12 characters of [a-z0-9]");
		t->name = a.name;
	}
	if (!a.preset.empty()) {
		auto p = qn::find_preset(a.preset);
		if (!p)
			return p.error();
		qn::apply_preset(*t, *p);
		if (auto st = qn::derive(*t); !st)
			return st.error();
		if (p->switch_delay_ns || p->nic_delay_ns)
			std::fprintf(stderr, "note: preset %s's switch and NIC delays are the engine's: quench gen --switch-delay %s --nic-delay %s\n",
				     p->name.c_str(), qn::format_time(p->switch_delay_ns).c_str(), qn::format_time(p->nic_delay_ns).c_str());
	}
	for (const auto &w : t->warnings)
		std::fprintf(stderr, "warning: %s\n", w.c_str());
	return t;
}

int cmd_topo(const Args &a)
{
	if (a.pos.size() < 2)
		return fail("topo needs a subcommand (check, up, down, show, fattree)");
	const std::string &sub = a.pos[1];
	if (sub == "show") {
		if (a.pos.size() > 3)
			return fail("topo show takes at most one NAME");
		auto s = qn::topo_show(a.pos.size() == 3 ? a.pos[2] : a.name, a.detail);
		if (!s)
			return fail(s.error().to_string());
		std::fputs(s->c_str(), stdout);
		for (const auto &o : qn::orphaned_topologies())
			std::printf("note: topology %s was brought up by a quench run that is gone (killed?): `quench topo down "
				    "%s` or the next `quench run` removes it\n",
				    o.c_str(), o.c_str());
		return 0;
	}
	if (sub == "fattree") {
		qn::FatTreeSpec spec = a.fattree;
		spec.name = a.name;
		if (!a.ns3_320 && spec.k == 0)
			return fail("topo fattree: --k K is required (or --ns3-320)");
		auto text = a.ns3_320 ? qn::Result<std::string>(qn::ns3_fat320_text()) : qn::fattree_text(spec);
		if (!text)
			return fail(text.error().to_string());
		// The file must parse as written (a bad rate or delay names its field here, not at up).
		if (auto t = a.ns3_320 ? qn::parse_ns3_topology(*text, "fat.txt", "fat") : qn::parse_topology(*text, "fattree"); !t)
			return fail(t.error().to_string());
		if (a.out.empty()) {
			std::fputs(text->c_str(), stdout);
			return 0;
		}
		std::ofstream f(a.out);
		f << *text;
		f.close();
		if (!f)
			return fail("cannot write " + a.out);
		return 0;
	}
	if (sub == "down" && a.all) {
		auto s = qn::topo_down_all();
		return s.ok() ? 0 : fail(s.error().to_string());
	}
	if (sub == "down" && a.pos.size() == 2 && !a.name.empty()) {
		auto s = qn::topo_down(a.name);
		return s.ok() ? 0 : fail(s.error().to_string());
	}
	// `topo down NAME`: a running topology's name (a path that exists is a FILE, below)
	if (sub == "down" && a.pos.size() == 3 && !std::filesystem::exists(a.pos[2])) {
		auto names = qn::running_topologies();
		if (std::find(names.begin(), names.end(), a.pos[2]) == names.end())
			return fail("topo down: '" + a.pos[2] + "' is neither a file nor a running topology");
		auto s = qn::topo_down(a.pos[2]);
		return s.ok() ? 0 : fail(s.error().to_string());
	}
	if (a.pos.size() != 3)
		return fail("topo " + sub + " needs one FILE");
	auto t = load(a, a.pos[2]);
	if (!t)
		return fail(t.error().to_string());
	if (sub == "check") {
		const bool all = a.detail || t->nodes.size() <= qn::kShowAllNodes;
		std::fputs((all ? t->describe() : t->summary()).c_str(), stdout);
		// What an engine serving every host would take from this machine (transport/resources.h).
		uint64_t hosts = 0, cables = 0;
		for (const auto &n : t->nodes)
			hosts += n.kind == qn::NodeKind::Host;
		for (const auto &l : t->links)
			cables += qn::is_cable_link(*t, l);
		const auto lim = qn::tp::machine_limits();
		const auto fit = qn::tp::fit_engine_needs(hosts, cables, qn::tp::kDefaultFramesPerPort, lim);
		const auto &need = fit.need;
		std::printf("engine: %llu AF_XDP sockets (%llu hosts + 2 x %llu cables), %llu file descriptors, UMEM %.2f GiB (%llu chunks each); "
			    "this machine: open files hard limit %llu, %.2f GiB available\n",
			    static_cast<unsigned long long>(need.sockets), static_cast<unsigned long long>(hosts),
			    static_cast<unsigned long long>(cables), static_cast<unsigned long long>(need.fds),
			    double(need.umem_bytes) / double(1ULL << 30),
			    static_cast<unsigned long long>(fit.frames_per_port),
			    static_cast<unsigned long long>(lim.nofile_hard),
			    double(lim.mem_available_bytes) / double(1ULL << 30));
		// A topology no engine on this machine can serve is an error (after the description and
		// the needs, before the routes).
		if (auto st = qn::tp::check_engine_needs("topology " + t->name, need, lim); !st.ok())
			return fail("topo check: " + st.error().to_string());
		// Every route up to kShowAllNodes nodes (or with --detail); beyond, how many and their
		// ECMP fan-out.
		size_t routes = 0, nh_min = SIZE_MAX, nh_max = 0, sw_count = 0;
		for (const auto &n : t->nodes) {
			if (n.kind != qn::NodeKind::Switch)
				continue;
			sw_count++;
			for (const auto &r : t->routes_for(n.id)) {
				routes++;
				nh_min = std::min(nh_min, r.nexthops.size());
				nh_max = std::max(nh_max, r.nexthops.size());
				if (!all)
					continue;
				std::printf("route %s %s/32 ->", n.name.c_str(), qn::ip_to_string(r.dst_ip).c_str());
				for (const auto &nh : r.nexthops)
					std::printf(" %s", t->ports[size_t(nh.port)].ifname.c_str());
				std::printf("\n");
			}
		}
		if (!all && routes)
			std::printf("routes: %zu on %zu switches, %zu to %zu next hops each (ECMP; `--detail` prints every one)\n",
				    routes, sw_count, nh_min, nh_max);
		return 0;
	}
	if (sub == "up") {
		auto d = qn::Dilation::make(a.dilation);
		if (!d)
			return fail(d.error().to_string());
		qn::UpOptions o;
		o.dilation = *d;
		for (const qn::UpFlag &f : qn::up_flags())
			o.*f.field = a.up_flags.at(f.flag) != f.negates;
		if (int moved = qn::place_rxe_hosts(*t))
			std::fprintf(stderr, "topo up: this kernel's rdma_rxe works only in the initial namespace: %d rxe "
					     "host(s) put there (stack=rxe-initns, docs/agent.md)\n", moved);
		auto start = std::chrono::steady_clock::now();
		const double kmem0 = qn::kernel_mib();
		nlohmann::ordered_json cal_json;
		if (a.dilation_auto) {
			qn::RunHooks hooks;
			hooks.phase = [](const std::string &what, double) { std::fprintf(stderr, "topo up: %s\n", what.c_str()); };
			auto cal = qn::up_calibrated(*t, o, hooks);
			if (!cal)
				return fail("topo up " + t->name + " --dilation auto: " + cal.error().to_string());
			const auto &k = *cal;
			std::fprintf(stderr, "topo up: D rule %g (capacity %.2f Gbit/s wall at D=1 with %zu senders, offered %.1f Gbit/s; timer %.1f)\n",
				     k.rule.d, k.capacity_wall_bps / 1e9, k.capacity_senders, k.offered_bps / 1e9, k.rule.d_timer);
			for (const auto &p : k.paced)
				std::fprintf(stderr, "topo up: paced check at D=%g: engine busy %.1f%%, passes p90 %.2f frame times; needs D=%g\n",
					     p.d, 100 * p.busy_frac,
					     p.frame_wall_ns ? double(p.pass_p90_wall_ns) / double(p.frame_wall_ns) : 0.0, p.need);
			*d = *qn::Dilation::make(k.d);
			cal_json = {{"capacity_wall_bps", k.capacity_wall_bps}, {"capacity_senders", k.capacity_senders},
				    {"offered_bps", k.offered_bps}, {"dilation_rule", k.rule.d}, {"dilation_timer", k.rule.d_timer},
				    {"paced", qn::paced_trials_json(k.paced)}};
		} else if (auto s = qn::topo_up(*t, o); !s.ok()) {
			return fail("topo up " + t->name + ": " + s.error().to_string() +
				    "\n(partial state stays until `quench topo down " + a.pos[2] + "`)");
		}
		double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
		size_t hosts = 0, switches = 0;
		for (const auto &n : t->nodes)
			(n.kind == qn::NodeKind::Host ? hosts : switches)++;
		// What the topology took (docs/cli.md "topo up"): the kernel's non-cache memory since
		// the start (namespaces, veths, qdiscs, BPF maps; other work on the machine counts
		// too) and switchd's resident memory and descriptors.
		const std::string sd = qn::switchd_pid(t->name);
		const double kmem = qn::kernel_mib() - kmem0, sd_rss = sd.empty() ? 0 : qn::rss_mib(sd);
		const size_t sd_fds = sd.empty() ? 0 : qn::count_fds(sd);
		if (a.format == "json") {
			nlohmann::ordered_json j{{"topology", t->name}, {"hosts", hosts}, {"switches", switches},
						 {"links", t->links.size()}, {"dilation", d->factor()},
						 {"dilation_auto", a.dilation_auto}, {"seconds", secs},
						 {"kernel_mib", kmem}, {"switchd_rss_mib", sd_rss}, {"switchd_fds", sd_fds}};
			if (a.dilation_auto)
				j["calibration"] = cal_json;
			std::printf("%s\n", j.dump().c_str());
			return 0;
		}
		std::printf("topology %s up: %zu hosts, %zu switches, %zu links, dilation %g, %.2f s; kernel memory %+.0f MiB, "
			    "switchd %.0f MiB resident, %zu descriptors\n",
			    t->name.c_str(), hosts, switches, t->links.size(), d->factor(), secs, kmem, sd_rss, sd_fds);
		return 0;
	}
	if (sub == "down") {
		auto s = qn::topo_down(t->name);
		return s.ok() ? 0 : fail(s.error().to_string());
	}
	return fail("unknown topo subcommand '" + sub + "'");
}

int cmd_switch(const Args &a)
{
	if (a.pos.size() >= 2 && a.pos[1] == "keys") {
		// The key table: set with `switch set`, a topology's `switch` line or an experiment's
		// `switch [SCHEME] K=V` line.
		qn_swcfg d = qn::default_swcfg(12'000'000);
		std::printf("switch settings (quench switch set, topology `switch NAME K=V`, experiment `switch K=V`):\n");
		for (const auto &p : qn::swcfg_table().rows()) {
			std::string def = p.def ? qn::swcfg_table().value(d, p) : std::string("(topology)");
			std::printf("  %-14s %-30s default %-12s %s\n", p.name, qn::swcfg_table().usage_range(p).c_str(),
				    def.c_str(), p.doc);
		}
		return 0;
	}
	if (a.pos.size() >= 2 && a.pos[1] == "set") {
		if (a.pos.size() < 4)
			return fail("switch set needs TOPO/SWITCH (or SWITCH) and KEY=VALUE...");
		auto sws = qn::resolve_switches(a.pos[2]);
		if (!sws)
			return fail(sws.error().to_string());
		for (auto &[t, sw] : *sws) {
			std::string dir = qn::switch_pin_dir(t, sw);
			auto cfg = qn::read_swcfg(dir);
			if (!cfg)
				return fail(cfg.error().to_string());
			for (size_t i = 3; i < a.pos.size(); i++) {
				auto eq = a.pos[i].find('=');
				if (eq == std::string::npos || eq == 0)
					return fail("switch set: expected KEY=VALUE, got '" + a.pos[i] + "'");
				auto st = qn::apply_swcfg(*cfg, a.pos[i].substr(0, eq), a.pos[i].substr(eq + 1));
				if (!st.ok())
					return fail(st.error().to_string());
			}
			auto st = qn::write_swcfg(dir, *cfg);
			if (!st.ok())
				return fail(t.name + "/" + t.nodes[size_t(sw)].name + ": " + st.error().to_string());
			std::printf("%s/%s: %s\n", t.name.c_str(), t.nodes[size_t(sw)].name.c_str(),
				    qn::describe_swcfg(*cfg).c_str());
		}
		return 0;
	}
	if (a.pos.size() < 2 || a.pos[1] != "stats")
		return fail("switch needs a subcommand (stats, set)");
	std::string spec = a.pos.size() > 2 ? a.pos[2] : "";
	auto sws = qn::resolve_switches(spec);
	if (!sws)
		return fail(sws.error().to_string());
	std::vector<qn::SwitchCounters> prev;
	std::signal(SIGINT, [](int) { g_stop = 1; });
	auto last = std::chrono::steady_clock::now();
	do {
		std::vector<qn::SwitchCounters> cur;
		auto now = std::chrono::steady_clock::now();
		double dt = std::chrono::duration<double>(now - last).count();
		last = now;
		std::string out;
		for (size_t i = 0; i < sws->size(); i++) {
			auto &[t, sw] = (*sws)[i];
			auto c = qn::read_switch_counters(t, sw);
			if (!c)
				return fail(c.error().to_string());
			if (a.format != "json")
				out += qn::format_counters(*c, prev.empty() ? nullptr : &prev[i], dt);
			cur.push_back(*c);
		}
		if (a.format == "json")
			out = qn::counters_json(cur);
		if (a.watch > 0)
			std::fputs("\033[H\033[2J", stdout);
		std::fputs(out.c_str(), stdout);
		std::fflush(stdout);
		prev = cur;
		if (a.watch > 0)
			std::this_thread::sleep_for(std::chrono::duration<double>(a.watch));
	} while (a.watch > 0 && !g_stop);
	return 0;
}

int cmd_bench(const Args &a)
{
	if (a.pos.size() >= 2 && a.pos[1] == "transport") {
		qn::tp::TransportBenchOptions o;
		o.rounds = a.rounds;
		o.seconds = a.seconds;
		auto r = qn::tp::bench_transport(o);
		if (!r)
			return fail(r.error().to_string());
		std::fputs(r->c_str(), stdout);
		return 0;
	}
	if (a.pos.size() >= 2 && a.pos[1] == "fabric") {
		qn::FabricBenchOptions o;
		o.shapes = a.shapes;
		o.rounds = a.fabric_rounds;
		o.seconds = a.fabric_seconds;
		o.json = a.format == "json";
		o.prefix = a.fabric_prefix;
		a.fabric_engine.apply(o.engine);
		std::signal(SIGINT, [](int) { g_stop = 1; });
		std::signal(SIGTERM, [](int) { g_stop = 1; });
		o.stop = [] { return g_stop != 0; };
		auto r = qn::bench_fabric(o);
		if (!r)
			return fail(r.error().to_string());
		std::fputs(r->c_str(), stdout);
		return 0;
	}
	if (a.pos.size() >= 2 && a.pos[1] == "rxe") {
		auto r = qn::bench_rxe(uint32_t(a.rounds));
		if (!r)
			return fail(r.error().to_string());
		std::fputs(r->c_str(), stdout);
		return 0;
	}
	if (a.pos.size() < 2 || a.pos[1] != "switch")
		return fail("bench needs a subcommand (switch, transport, rxe, fabric)");
	qn::BenchOptions o;
	o.seconds = a.seconds;
	o.rounds = a.rounds;
	o.frame_bytes = a.size;
	o.senders = a.senders;
	o.ecn_dequeue = a.ecn_dequeue;
	o.sfc = a.sfc;
	o.sfc_tbf_ns = a.sfc_tbf_ns;
	o.sfc_cache = a.sfc_cache == "off" ? 0 : a.sfc_cache == "tor" ? 1 : 2;
	o.sfc_est = a.sfc_est;
	o.gate_leaf = a.gate_leaf;
	for (const auto &kv : a.bench_sets) {
		const size_t eq = kv.find('=');
		if (eq == std::string::npos || eq == 0)
			return fail("bench switch --set: '" + kv + "' is not KEY=VALUE");
		o.sets.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
	}
	o.depth_bytes = a.bench_depth;
	o.tos = a.bench_tos;
	o.baseline_obj = a.baseline_obj;
	o.only = a.only;
	auto r = qn::bench_switch(o);
	if (!r)
		return fail(r.error().to_string());
	std::fputs(r->c_str(), stdout);
	return 0;
}

// `quench schemes`: the registry: named schemes (what `schemes all` runs), then the parts a
// scheme is composed of and the grammar (docs/cc.md "Schemes").
int cmd_schemes()
{
	namespace cc = qn::tp::cc;
	std::printf("schemes (an experiment's `schemes all`):\n");
	for (const auto &n : cc::schemes()) {
		auto s = cc::scheme(n);
		std::printf("  %-12s %s\n", n.c_str(), s ? s->canonical().c_str() : s.error().to_string().c_str());
	}
	for (const char *kind : {"base", "start", "flow"}) {
		std::printf("%s:\n", std::strcmp(kind, "base") == 0    ? "base algorithms (with their notification points)"
				      : std::strcmp(kind, "start") == 0 ? "start policies"
									 : "flow controls");
		for (const auto &p : cc::parts())
			if (p.kind == kind) {
				std::printf("  %-12s %s\n", p.name.c_str(), p.doc.c_str());
				if (!p.params.empty())
					std::printf("    parameters (--cc-set K=V, an experiment's cc line):\n%s",
						    p.params.c_str());
			}
	}
	std::printf("grammar: BASE[/START][/FLOW][:lossy|:lossless], e.g. dcqcn+w:lossy, none/line-rate:lossless\n");
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	// The engine's commands have their own options (cmd_engine.cc).
	if (argc >= 2 && std::strcmp(argv[1], "gen") == 0)
		return cmd_gen(argc, argv, 2);
	if (argc >= 2 && std::strcmp(argv[1], "engine") == 0)
		return cmd_engine(argc, argv, 2);
	if (argc >= 2 && std::strcmp(argv[1], "run") == 0)
		return cmd_run(argc, argv, 2);
	if (argc >= 2 && std::strcmp(argv[1], "compare") == 0)
		return cmd_compare(argc, argv, 2);
	if (argc >= 2 && std::strcmp(argv[1], "analyze") == 0)
		return cmd_analyze(argc, argv, 2);
	if (argc >= 2 && std::strcmp(argv[1], "jitter") == 0)
		return cmd_jitter(argc, argv, 2);
	if (argc >= 2 && std::strcmp(argv[1], "model") == 0)
		return cmd_model(argc, argv, 2);
	if (argc >= 2 && std::strcmp(argv[1], "agent") == 0)
		return cmd_agent(argc, argv, 2);
	// No command: the help on stderr, status 2 (nothing was asked); `help`: as --help.
	if (argc < 2 || std::strcmp(argv[1], "help") == 0) {
		char help_flag[] = "--help";
		char *help_argv[] = {argv[0], help_flag, nullptr};
		Args h;
		const int rc = parse_args(2, help_argv, h, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : rc;
	}
	if (argv[1][0] != '-' && std::strcmp(argv[1], "switchd") != 0 && qn::cli::about(argv[1]).empty()) {
		std::fprintf(stderr, "quench: unknown command '%s' (quench --help)\n", argv[1]);
		return 2;
	}
	Args a;
	if (int rc = parse_args(argc, argv, a); rc >= 0)
		return rc;
	qn::set_exec_verbose(a.verbose);
	qn::setup_libbpf_logging(a.verbose);
	const std::string &cmd = a.pos[0];
	if (cmd == "schemes")
		return cmd_schemes();
	if (cmd == "topo")
		return cmd_topo(a);
	if (cmd == "switch")
		return cmd_switch(a);
	if (cmd == "bench")
		return cmd_bench(a);
	if (cmd == "switchd") { // started by `topo up`; not for users
		if (a.pos.size() != 2)
			return fail("switchd needs a topology name");
		auto s = qn::run_switchd(a.pos[1]);
		return s.ok() ? 0 : fail(s.error().to_string());
	}
	if (!qn::cli::about(cmd).empty()) { // e.g. `quench -v gen ...`: gen parses its own options
		std::fprintf(stderr, "quench: options before the command go with topo, switch and bench only: `quench %s --help`\n",
			     cmd.c_str());
		return 2;
	}
	std::fprintf(stderr, "quench: unknown command '%s' (quench --help)\n", cmd.c_str());
	return 2;
}
