// cmd_agent.cc - `quench agent TOPO`: runs the Soft-RoCE agent (agent/agent.h) on the rxe hosts
// (`host NAME stack=rxe`) of a running topology until Ctrl-C or --duration, then prints what it
// did (docs/agent.md).
#include "quench/cmd_agent.h"

#include <atomic>
#include <csignal>
#include <cstdio>

#include "agent/agent.h"
#include "common/paths.h"
#include "control/bringup.h"
#include "control/rxe_host.h"
#include "quench/cli.h"

namespace {

std::atomic<bool> g_agent_stop{false};

void on_signal(int) { g_agent_stop.store(true); }

int die(const std::string &m)
{
	std::fprintf(stderr, "quench agent: %s\n", m.c_str());
	return 2;
}

} // namespace

int cmd_agent(int argc, char **argv, int first)
{
	using namespace qn;
	agent::Options o;
	std::string topo;
	bool paper = false, no_pace = false, no_pause = false;
	CLI::App app{cli::about("agent"), "agent"};
	app.add_option("TOPO", topo, "a running topology with rxe hosts")->required();
	app.add_option("--cc", o.scheme, "scheme: none, dcqcn, dcqcn+w, dcqcn/sfc, ... (what needs more than CNPs, "
					 "pacing and BTS is refused with the reason)");
	cli::key_values(app, "--cc-set", o.overrides, "one parameter, KEY=VALUE (repeatable)");
	app.add_flag("--paper", paper, "the scheme's paper parameters (default: derived for the host link, common.md §7)");
	cli::time(app, "--base-rtt", o.base_rtt_ns, "the base RTT the parameters are derived for (default 100us)");
	cli::time(app, "--duration", o.duration_ns, "stop after this long (default: at Ctrl-C)");
	app.add_option("--trace-out", o.trace_path, "every rate change, CSV: t_mono_ns,t_real_ns,host,lqpn,rqpn,rate_bps");
	app.add_flag("--no-pace", no_pace, "negative control: compute the rates, never write them to the pacer");
	app.add_flag("--no-pause", no_pause,
		     "negative control: the host programs ignore PFC PAUSE and BTS while the agent runs");
	if (int rc = cli::parse(app, argc, argv, first); rc >= 0)
		return rc;
	o.derived = !paper;
	o.pace = !no_pace;
	o.obey_pauses = !no_pause;
	auto t = load_running(topo);
	if (!t)
		return die(t.error().to_string());
	std::vector<agent::HostDesc> hosts;
	for (const Node &n : t->nodes) {
		if (n.kind != NodeKind::Host || !is_rxe_stack(n.stack))
			continue;
		const Port &p = t->ports[size_t(t->ports_of(n.id)[0])];
		const Link &l = t->links[size_t(p.link)];
		agent::HostDesc h;
		h.name = n.name;
		h.rdma_dev = rxe_device(*t, n.id);
		h.pin_dir = node_pin_dir(t->name, n.name);
		h.netns = t->netns(n.id);
		h.ifname = p.ifname;
		h.ifindex = p.ifindex;
		h.mac = n.mac;
		h.ip = n.ip;
		h.gw = t->ports[size_t(p.peer_port)].mac;
		h.link_bps = l.rate_bps;
		h.mtu = l.mtu;
		hosts.push_back(h);
	}
	if (hosts.empty())
		return die("topology " + topo + " has no rxe hosts (`host NAME stack=rxe`, docs/agent.md)");
	std::signal(SIGINT, on_signal);
	std::signal(SIGTERM, on_signal);
	std::fprintf(stderr, "agent: %zu rxe host(s) of %s, scheme %s%s%s; Ctrl-C stops\n", hosts.size(), topo.c_str(),
		     o.scheme.c_str(), o.pace ? "" : " (--no-pace: rates computed, not applied)",
		     o.obey_pauses ? "" : " (--no-pause: PAUSE and BTS ignored)");
	auto r = agent::run(hosts, o, g_agent_stop);
	if (!r)
		return die(r.error().to_string());
	for (const auto &n : r->notes)
		std::printf("params: %s\n", n.c_str());
	for (const auto &n : r->per_qp)
		std::printf("qp: %s\n", n.c_str());
	for (const auto &n : r->pfc)
		std::printf("pfc: %s\n", n.c_str());
	std::printf("agent: %llu QPs, %llu CE events, %llu CNPs sent, %llu CNPs received, %llu rate cuts, lowest rate "
		    "%llu bit/s, %llu pacer writes, %llu data frames set ECT(0), %llu events lost, %llu BTS, BTS-paused %.3f ms\n",
		    static_cast<unsigned long long>(r->qps), static_cast<unsigned long long>(r->ce_rx),
		    static_cast<unsigned long long>(r->cnp_tx), static_cast<unsigned long long>(r->cnp_rx),
		    static_cast<unsigned long long>(r->rate_cuts), static_cast<unsigned long long>(r->lowest_rate_bps),
		    static_cast<unsigned long long>(r->rate_writes), static_cast<unsigned long long>(r->ect_set),
		    static_cast<unsigned long long>(r->events_lost), static_cast<unsigned long long>(r->bts),
		    double(r->bts_paused_ns) / 1e6);
	return 0;
}
