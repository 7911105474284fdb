// engine_shards.cc - the engine over its shards (engine.h): the split of hosts and cables
// (plan_shards), opening, one thread per shard in run(), inboxes for posts across shards, the
// engine's QP handles, and every report merged over the shards.
#include "transport/shard.h"

#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <thread>
#include <tuple>

namespace qn::tp {

namespace {

// The shard whose loop runs on this thread (-1: none) and its engine.
thread_local int t_shard = -1;
thread_local const Engine *t_engine = nullptr;

// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus()
{
	cpu_set_t set;
	CPU_ZERO(&set);
	std::vector<int> v;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(size_t(c), &set))
				v.push_back(c);
	return v;
}

void pin_to(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(size_t(cpu), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

void merge_health(Health &r, const Health &o)
{
	r.hosts += o.hosts;
	r.switch_monitored = r.switch_monitored && o.switch_monitored;
	r.late_p99_ns = std::max(r.late_p99_ns, o.late_p99_ns);
	r.late_max_ns = std::max(r.late_max_ns, o.late_max_ns);
	r.late_count += o.late_count;
	if (o.link_efficiency < r.link_efficiency) {
		r.link_efficiency = o.link_efficiency;
		r.link_efficiency_host = o.link_efficiency_host;
	}
	r.stalls += o.stalls;
	r.stall_max_wall_ns = std::max(r.stall_max_wall_ns, o.stall_max_wall_ns);
	r.rearm_deferred += o.rearm_deferred;
	r.pass_stops += o.pass_stops;
	r.overload_passes += o.overload_passes;
	r.moved_passes += o.moved_passes;
	if (o.long_pass_wall_ns && (!r.long_pass_wall_ns || o.long_pass_wall_ns < r.long_pass_wall_ns))
		r.long_pass_wall_ns = o.long_pass_wall_ns;
	r.xsk_drops += o.xsk_drops;
	r.softnet_drops += o.softnet_drops; // the owner's only (the machine's counters)
	r.time_squeeze += o.time_squeeze;
	r.veth_drops += o.veth_drops;
	r.tx_held += o.tx_held;
	r.tx_no_frame += o.tx_no_frame;
	r.tx_frames_peak = std::max(r.tx_frames_peak, o.tx_frames_peak);
	r.loop_iters += o.loop_iters;
	r.sleeps += o.sleeps;
	r.kick_p50_wall_ns = std::max(r.kick_p50_wall_ns, o.kick_p50_wall_ns);
	r.kick_p99_wall_ns = std::max(r.kick_p99_wall_ns, o.kick_p99_wall_ns);
	r.kick_max_wall_ns = std::max(r.kick_max_wall_ns, o.kick_max_wall_ns);
	r.kicks += o.kicks;
	r.pass_p50_wall_ns = std::max(r.pass_p50_wall_ns, o.pass_p50_wall_ns);
	r.pass_p90_wall_ns = std::max(r.pass_p90_wall_ns, o.pass_p90_wall_ns);
	r.pass_p99_wall_ns = std::max(r.pass_p99_wall_ns, o.pass_p99_wall_ns);
	r.pass_max_wall_ns = std::max(r.pass_max_wall_ns, o.pass_max_wall_ns);
	r.passes += o.passes;
	r.syscall_kicks += o.syscall_kicks;
	// Each shard's CPU: the busiest one is what a larger D relieves (the paced check).
	r.busy_wall_ns = std::max(r.busy_wall_ns, o.busy_wall_ns);
	r.switch_links.insert(r.switch_links.end(), o.switch_links.begin(), o.switch_links.end());
	r.shards.insert(r.shards.end(), o.shards.begin(), o.shards.end());
}

} // namespace

bool engine_serves(const EngineOptions &o, const std::string &name)
{
	return o.only_hosts.empty() || std::find(o.only_hosts.begin(), o.only_hosts.end(), name) != o.only_hosts.end();
}

namespace {

// Per node of the fabric: its neighbours (every link both ways; links naming no node skipped).
std::vector<std::vector<size_t>> neighbours(const EngineDesc &d)
{
	const size_t nodes = d.nodes.size();
	std::vector<std::vector<size_t>> adj(nodes);
	for (const FabricLink &l : d.links)
		if (l.a >= 0 && l.b >= 0 && size_t(l.a) < nodes && size_t(l.b) < nodes) {
			adj[size_t(l.a)].push_back(size_t(l.b));
			adj[size_t(l.b)].push_back(size_t(l.a));
		}
	return adj;
}

// Per node of the fabric: the shard whose hosts are nearest (-1: a tie, or no host reaches it).
// Hosts vote for their shard; a node takes the votes of its neighbours one hop nearer to the
// hosts (breadth first from every host at once; hosts do not forward).
std::vector<int> home_shards(const EngineDesc &d, const std::vector<int> &host_shard, size_t n)
{
	const size_t nodes = d.nodes.size();
	const std::vector<std::vector<size_t>> adj = neighbours(d);
	std::vector<int> dist(nodes, -1);
	std::vector<std::vector<uint64_t>> votes(nodes, std::vector<uint64_t>(n, 0));
	std::vector<size_t> layer;
	for (size_t i = 0; i < d.hosts.size(); i++) {
		const int node = d.hosts[i].node;
		if (host_shard[i] < 0 || node < 0 || size_t(node) >= nodes)
			continue;
		dist[size_t(node)] = 0;
		votes[size_t(node)][size_t(host_shard[i])]++;
		layer.push_back(size_t(node));
	}
	while (!layer.empty()) {
		std::vector<size_t> next;
		for (size_t u : layer) {
			if (dist[u] > 0 && d.nodes[u].host)
				continue; // hosts do not forward
			for (size_t v : adj[u]) {
				if (dist[v] >= 0 && dist[v] != dist[u] + 1)
					continue;
				if (dist[v] < 0) {
					dist[v] = dist[u] + 1;
					next.push_back(v);
				}
				for (size_t s = 0; s < n; s++)
					votes[v][s] += votes[u][s];
			}
		}
		layer = std::move(next);
	}
	std::vector<int> home(nodes, -1);
	for (size_t v = 0; v < nodes; v++) {
		const auto top = std::max_element(votes[v].begin(), votes[v].end());
		if (*top > 0 && std::count(votes[v].begin(), votes[v].end(), *top) == 1)
			home[v] = int(top - votes[v].begin());
	}
	return home;
}

} // namespace

ShardPlan plan_shards(const EngineDesc &d, const std::vector<bool> &served, size_t n)
{
	const size_t hosts = size_t(std::count(served.begin(), served.end(), true));
	const size_t cables = d.cables.size();
	n = std::max<size_t>(1, std::min(n, hosts + cables));
	for (;; n--) {
		ShardPlan p;
		p.shards = n;
		p.host.assign(d.hosts.size(), -1);
		p.cable.assign(cables, -1);
		std::vector<size_t> units(n, 0);
		size_t k = 0;
		for (size_t i = 0; i < d.hosts.size() && i < served.size(); i++)
			if (served[i]) {
				p.host[i] = int(k++ * n / hosts);
				units[size_t(p.host[i])]++;
			}
		// A cable goes with the hosts nearest to it: its frames are mostly theirs (a pod's
		// cables with the pod's hosts), so a shard's frames cross its own cables. A cable
		// between equally near groups (core links) goes to the shard with the fewest cables.
		const std::vector<int> home = home_shards(d, p.host, n);
		std::vector<size_t> per(n, 0);
		std::vector<size_t> tied;
		for (size_t c = 0; c < cables; c++) {
			const int li = d.cables[c].link;
			int h = -1;
			if (li >= 0 && size_t(li) < d.links.size()) {
				const int a = home[size_t(d.links[size_t(li)].a)], b = home[size_t(d.links[size_t(li)].b)];
				h = a == b ? a : a < 0 ? b : b < 0 ? a : -1;
			}
			if (h < 0) {
				tied.push_back(c);
				continue;
			}
			p.cable[c] = h;
			per[size_t(h)]++;
		}
		for (size_t c : tied) {
			const size_t s = size_t(std::min_element(per.begin(), per.end()) - per.begin());
			p.cable[c] = int(s);
			per[s]++;
		}
		for (size_t s = 0; s < n; s++)
			units[s] += per[s];
		// Every shard serves something (fewer hosts than shards and no cable for the rest:
		// fewer shards).
		if (n == 1 || std::find(units.begin(), units.end(), 0) == units.end())
			return p;
	}
}

std::function<uint64_t(const std::string &, const std::string &)> flow_shards(const EngineDesc &d,
										const ShardPlan &plan)
{
	struct Paths {
		size_t nodes = 0;
		std::vector<std::vector<size_t>> adj;
		std::vector<bool> host;
		std::map<std::string, std::pair<size_t, int>> host_of; // name -> (node, shard)
		std::vector<std::tuple<size_t, size_t, int>> cables;   // end nodes, shard
		std::map<size_t, std::vector<int>> dist;                // hops from a host's node
		const std::vector<int> &from(size_t src)
		{
			auto it = dist.find(src);
			if (it != dist.end())
				return it->second;
			std::vector<int> dd(nodes, -1);
			std::vector<size_t> q{src};
			dd[src] = 0;
			for (size_t i = 0; i < q.size(); i++) {
				const size_t u = q[i];
				if (u != src && host[u])
					continue; // hosts do not forward
				for (size_t v : adj[u])
					if (dd[v] < 0) {
						dd[v] = dd[u] + 1;
						q.push_back(v);
					}
			}
			return dist.emplace(src, std::move(dd)).first->second;
		}
	};
	auto p = std::make_shared<Paths>();
	p->nodes = d.nodes.size();
	p->adj = neighbours(d);
	for (const FabricNode &n : d.nodes)
		p->host.push_back(n.host);
	for (size_t i = 0; i < d.hosts.size() && i < plan.host.size(); i++)
		if (plan.host[i] >= 0 && d.hosts[i].node >= 0 && size_t(d.hosts[i].node) < p->nodes)
			p->host_of[d.hosts[i].name] = {size_t(d.hosts[i].node), plan.host[i]};
	for (size_t c = 0; c < d.cables.size() && c < plan.cable.size(); c++) {
		const int li = d.cables[c].link;
		if (li >= 0 && size_t(li) < d.links.size())
			p->cables.emplace_back(size_t(d.links[size_t(li)].a), size_t(d.links[size_t(li)].b), plan.cable[c]);
	}
	const uint64_t every = plan.shards >= 64 ? ~uint64_t(0) : (uint64_t(1) << plan.shards) - 1;
	// A cable whose link is unknown may be on any path: its shard touches every flow.
	uint64_t always = 0;
	for (size_t c = 0; c < d.cables.size() && c < plan.cable.size(); c++)
		if (d.cables[c].link < 0 || size_t(d.cables[c].link) >= d.links.size())
			always |= uint64_t(1) << (plan.cable[c] & 63);
	return [p, every, always](const std::string &src, const std::string &dst) -> uint64_t {
		auto a = p->host_of.find(src), b = p->host_of.find(dst);
		if (a == p->host_of.end() || b == p->host_of.end())
			return every;
		uint64_t mask = always | uint64_t(1) << (a->second.second & 63) | uint64_t(1) << (b->second.second & 63);
		const std::vector<int> &ds = p->from(a->second.first);
		const std::vector<int> &dd = p->from(b->second.first);
		const int hops = ds[b->second.first];
		if (hops < 0)
			return mask;
		for (const auto &[u, v, shard] : p->cables) {
			const bool on = (ds[u] >= 0 && dd[v] >= 0 && ds[u] + 1 + dd[v] == hops) ||
					(ds[v] >= 0 && dd[u] >= 0 && ds[v] + 1 + dd[u] == hops);
			if (on)
				mask |= uint64_t(1) << (shard & 63);
		}
		return mask;
	};
}

struct Engine::Inbox {
	std::mutex mu;
	std::vector<std::function<void(Shard &)>> q;
	std::atomic<bool> any{false};
	int efd = -1; // wakes the shard's loop from a sleep
	~Inbox()
	{
		if (efd >= 0)
			close(efd);
	}
};

Engine::Engine(const EngineDesc &desc, const EngineOptions &o) : desc_(desc), opt_(o) {}

Engine::~Engine()
{
	// The other shards point at the owner's monitor maps: they go first.
	while (!shards_.empty())
		shards_.pop_back();
}

Result<std::unique_ptr<Engine>> Engine::open(const EngineDesc &desc, const Dilation &d, const EngineOptions &o,
					     PortPool *pool)
{
	std::unique_ptr<Engine> e(new Engine(desc, o));
	QN_TRY(e->fit_ports(pool));
	QN_TRY(e->open_shards(d, pool, nullptr));
	return e;
}

Result<std::unique_ptr<Engine>> Engine::open_on(const EngineDesc &desc, const Dilation &d, const EngineOptions &o,
						const Clock &clock, PortPool *pool)
{
	std::unique_ptr<Engine> e(new Engine(desc, o));
	QN_TRY(e->fit_ports(pool));
	QN_TRY(e->open_shards(d, pool, &clock));
	return e;
}

Status Engine::fit_ports(PortPool *pool)
{
	// QP numbers go on from the last engine on these ports (PortPool::next_qpn).
	if (pool && pool->next_qpn >= 0x100 && pool->next_qpn <= 0x3FFF)
		next_qpn_ = pool->next_qpn;
	// What the fabric takes from the machine, checked before any socket exists (resources.h): a
	// UMEM above 3/4 of the available memory gets fewer chunks per socket, down to a floor.
	// The ports a pool holds are memory this process already has: fitted as if free, and their
	// chunk count is the one to open with (fitted afresh against the memory they take, the
	// count would come out smaller, no pooled port would be taken, and binding a new socket to
	// a queue a pooled one holds fails with EBUSY).
	MachineLimits lim = machine_limits();
	if (pool && !pool->ports.empty()) {
		if (lim.mem_available_bytes)
			lim.mem_available_bytes += uint64_t(pool->ports.size()) * pool->frames_per_port * kChunkBytes;
		opt_.frames_per_port = std::min(opt_.frames_per_port, pool->frames_per_port);
	}
	const uint64_t hosts = uint64_t(std::count_if(desc_.hosts.begin(), desc_.hosts.end(),
						      [&](const HostDesc &h) { return engine_serves(opt_, h.name); }));
	const FittedNeeds fit = fit_engine_needs(hosts, desc_.cables.size(), opt_.frames_per_port, lim);
	opt_.frames_per_port = fit.frames_per_port;
	// Ports of another chunk count are closed before any socket is made (they hold the queues).
	if (pool && pool->frames_per_port != opt_.frames_per_port)
		pool->clear();
	QN_TRY(check_engine_needs("fabric " + desc_.name, fit.need, lim));
	return raise_nofile(fit.need.fds + 16); // and the shards' rings and wake-up descriptors
}

Status Engine::open_shards(const Dilation &d, PortPool *pool, const Clock *fake)
{
	std::vector<bool> served(desc_.hosts.size());
	for (size_t i = 0; i < desc_.hosts.size(); i++)
		served[i] = engine_serves(opt_, desc_.hosts[i].name);
	// Automatic: one shard per CPU on a fabric of more than one switch, one on a single switch.
	// A second shard halves a multi-hop fabric's D (its capacity bounds D), but it puts an engine
	// loop on every CPU, and this machine stops two spinning threads far more often than one
	// (`quench jitter`: 0-0.5 gaps over 500 us a second with one thread, 4-18 with two), so a
	// single switch, whose D its timer jitter sets, gains nothing and loses runs (docs/transport.md
	// "Shards", measured).
	size_t switches = 0;
	for (const FabricNode &n : desc_.nodes)
		switches += !n.host;
	const size_t want = opt_.shards ? opt_.shards : switches > 1 ? std::max<size_t>(1, allowed_cpus().size()) : 1;
	const ShardPlan plan = plan_shards(desc_, served, want);
	if (plan.shards > 1)
		shards_of_ = flow_shards(desc_, plan);
	const DilatedClock clock0(d.milli()); // fabric time 0: the same instant for every shard
	for (size_t k = 0; k < plan.shards; k++) {
		ShardRole role;
		role.index = k;
		role.count = plan.shards;
		role.owner = k == 0;
		if (plan.shards > 1) {
			for (int s : plan.host)
				role.hosts.push_back(s == int(k));
			for (int s : plan.cable)
				role.cables.push_back(s == int(k));
		}
		auto s = fake ? Shard::open_on(desc_, d, opt_, role, *fake, pool)
			      : Shard::open(desc_, d, opt_, role, clock0, pool);
		if (!s)
			return s.error();
		shards_.push_back(std::move(*s));
		for (size_t i = 0; i < plan.host.size(); i++)
			if (plan.host[i] == int(k))
				shard_of_host_[desc_.hosts[i].name] = int(k);
	}
	global_.resize(shards_.size());
	for (size_t k = 0; k < shards_.size(); k++) {
		std::vector<const Shard *> peers;
		for (size_t j = 0; j < shards_.size(); j++)
			if (j != k)
				peers.push_back(shards_[j].get());
		shards_[k]->set_peers(std::move(peers));
		if (k > 0)
			shards_[k]->attach_monitors(owner());
		if (shards_.size() > 1) {
			auto in = std::make_unique<Inbox>();
			if (!fake) {
				in->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
				if (in->efd < 0)
					return sys_error(errno, "eventfd for shard " + std::to_string(k));
				shards_[k]->set_wake_fd(in->efd);
			}
			inbox_.push_back(std::move(in));
		}
		QN_TRY(shards_[k]->start());
	}
	opt_ = owner().options(); // the derived base RTT and the fitted chunk count
	wire_callbacks();
	return ok_status();
}

void Engine::wire_callbacks()
{
	// A shard's callback calls the caller's with the engine's handle, under the lock when
	// several shards run at once.
	const bool lock = shards_.size() > 1;
	auto relay = [this, lock](auto Engine::*user, size_t k) {
		return [this, lock, user, k](QpHandle l, const auto &arg) {
			const auto &f = this->*user;
			if (!f)
				return;
			if (!lock)
				return f(global_[k][l], arg);
			std::lock_guard<std::mutex> g(cb_mu_);
			f(global_[k][l], arg);
		};
	};
	for (size_t k = 0; k < shards_.size(); k++) {
		shards_[k]->on_complete = relay(&Engine::on_complete, k);
		shards_[k]->on_deliver = relay(&Engine::on_deliver, k);
	}
}

void Engine::release_ports(PortPool &pool)
{
	for (auto &s : shards_)
		s->release_ports(pool);
	pool.next_qpn = next_qpn_;
}

int Engine::shard_of(const std::string &host) const
{
	auto it = shard_of_host_.find(host);
	return it == shard_of_host_.end() ? -1 : it->second;
}

Result<QpHandle> Engine::connect(const std::string &a, const std::string &b, const QpOptions &o)
{
	const int sa = shard_of(a), sb = shard_of(b);
	if (sa < 0)
		return make_error("connect: host '" + a + "' is not served by this engine");
	if (sb < 0)
		return make_error("connect: host '" + b + "' is not served by this engine");
	if (qpns_made_ + 2 > 0x3F00)
		return make_error("connect: out of QP numbers (16K per engine: the UDP source port carries 14 bits)");
	// From where the last engine on these ports stopped (PortPool::next_qpn), wrapping after
	// 0x3FFF: the numbers of a run long gone come round again only after 16K others.
	auto take = [&] {
		const uint32_t q = next_qpn_++;
		if (next_qpn_ > 0x3FFF)
			next_qpn_ = 0x100;
		qpns_made_++;
		return q;
	};
	const uint32_t qa = take(), qb = take();
	QpHandle la = Shard::kNoQp, lb = Shard::kNoQp;
	for (int s : {sa, sb}) {
		if (s == sb && s == sa && la != Shard::kNoQp)
			break; // one shard made both halves
		auto r = shards_[size_t(s)]->connect(a, b, o, qa, qb);
		if (!r)
			return r.error();
		if (r->first != Shard::kNoQp)
			la = r->first;
		if (r->second != Shard::kNoQp)
			lb = r->second;
	}
	const QpHandle ga = QpHandle(qps_.size()), gb = ga + 1;
	qps_.push_back(QpRef{uint32_t(sa), la, gb, 0});
	qps_.push_back(QpRef{uint32_t(sb), lb, ga, 0});
	auto note = [&](int s, QpHandle l, QpHandle g) {
		auto &v = global_[size_t(s)];
		if (v.size() <= l)
			v.resize(size_t(l) + 1, 0);
		v[l] = g;
	};
	note(sa, la, ga);
	note(sb, lb, gb);
	return ga;
}

QpHandle Engine::peer(QpHandle h) const { return qps_[h].peer; }
uint32_t Engine::qpn(QpHandle h) const { return of(h).qpn(qps_[h].local); }

uint64_t Engine::post(QpHandle h, Message m)
{
	QpRef &r = qps_[h];
	const uint64_t msn = r.posted++; // every post passes here, in order (under the lock in run())
	on_shard_of(h, [l = r.local, m = std::move(m)](Shard &s) mutable { s.post(l, std::move(m)); });
	return msn;
}

uint64_t Engine::drain_inbox(size_t k)
{
	if (inbox_.empty())
		return UINT64_MAX;
	Inbox &in = *inbox_[k];
	if (!in.any.load(std::memory_order_acquire))
		return UINT64_MAX;
	std::vector<std::function<void(Shard &)>> q;
	{
		std::lock_guard<std::mutex> g(in.mu);
		q.swap(in.q);
		in.any.store(false, std::memory_order_release);
	}
	if (in.efd >= 0) {
		uint64_t v;
		[[maybe_unused]] ssize_t rd = read(in.efd, &v, sizeof(v));
	}
	for (auto &f : q)
		f(*shards_[k]);
	return UINT64_MAX;
}

void Engine::on_shard_of(QpHandle h, std::function<void(Shard &)> f)
{
	const QpRef &r = qps_[h];
	Inbox *in = inbox_.empty() ? nullptr : inbox_[r.shard].get();
	const bool own = !running_ || (t_engine == this && t_shard == int(r.shard));
	if (own && (!in || !in->any.load(std::memory_order_acquire))) {
		f(of(h));
		return;
	}
	{ // another shard's QP (or its own with work still queued, which goes first)
		std::lock_guard<std::mutex> g(in->mu);
		in->q.push_back(std::move(f));
		in->any.store(true, std::memory_order_release);
	}
	if (in->efd >= 0) {
		const uint64_t one = 1;
		[[maybe_unused]] ssize_t w = write(in->efd, &one, sizeof(one));
	}
}

void Engine::set_rate(QpHandle h, uint64_t bps)
{
	on_shard_of(h, [l = qps_[h].local, bps](Shard &s) { s.set_rate(l, bps); });
}

void Engine::set_window(QpHandle h, uint64_t bytes)
{
	on_shard_of(h, [l = qps_[h].local, bytes](Shard &s) { s.set_window(l, bytes); });
}

void Engine::run(const std::function<bool()> &done, uint64_t until_ns, const std::function<uint64_t(uint64_t)> &tick)
{
	t_engine = this;
	if (shards_.size() == 1) {
		t_shard = 0;
		owner().run(done, until_ns, tick);
		t_shard = -1;
		return;
	}
	const std::vector<int> cpus = opt_.pin_shards ? allowed_cpus() : std::vector<int>();
	cpu_set_t saved;
	const bool pinned = !cpus.empty() && sched_getaffinity(0, sizeof(saved), &saved) == 0;
	stop_.store(false);
	running_ = true;
	auto wake_all = [&] {
		const uint64_t one = 1;
		for (auto &in : inbox_)
			if (in->efd >= 0) {
				[[maybe_unused]] ssize_t w = write(in->efd, &one, sizeof(one));
			}
	};
	std::vector<std::thread> threads;
	for (size_t k = 1; k < shards_.size(); k++)
		threads.emplace_back([this, k, until_ns, &cpus, &wake_all] {
			t_engine = this;
			t_shard = int(k);
			if (!cpus.empty())
				pin_to(cpus[k % cpus.size()]);
			shards_[k]->run([this] { return stop_.load(std::memory_order_relaxed); }, until_ns,
					[this, k](uint64_t) { return drain_inbox(k); });
			if (!stop_.exchange(true)) // it ended first (the fabric went away): every shard stops
				wake_all();
			t_shard = -1;
		});
	if (pinned)
		pin_to(cpus[0]);
	t_shard = 0;
	owner().run(
		[&] {
			if (stop_.load(std::memory_order_relaxed))
				return true;
			if (!done)
				return false;
			std::lock_guard<std::mutex> g(cb_mu_);
			return done();
		},
		until_ns,
		[&](uint64_t now) {
			uint64_t next = drain_inbox(0);
			if (tick) {
				std::lock_guard<std::mutex> g(cb_mu_);
				next = std::min(next, tick(now));
			}
			return next;
		});
	stop_.store(true);
	wake_all();
	for (auto &t : threads)
		t.join();
	t_shard = -1;
	running_ = false;
	if (pinned)
		pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	// Posts made as the shards stopped are queued, not lost: the next run sends them.
}

uint64_t Engine::step(uint64_t now, const std::function<uint64_t(uint64_t)> &tick)
{
	if (shards_.size() == 1)
		return owner().step(now, tick);
	t_engine = this;
	uint64_t next = UINT64_MAX;
	for (size_t k = 0; k < shards_.size(); k++) {
		t_shard = int(k);
		next = std::min(next, shards_[k]->step(now, [&](uint64_t n) {
			uint64_t d = drain_inbox(k);
			if (k == 0 && tick)
				d = std::min(d, tick(n));
			return d;
		}));
	}
	t_shard = -1;
	return next;
}

uint64_t Engine::now_ns() const { return owner().now_ns(); }
const DilatedClock &Engine::clock() const { return owner().clock(); }

bool Engine::topology_gone() const
{
	for (const auto &s : shards_)
		if (s->topology_gone())
			return true;
	return false;
}

Status Engine::health_begin()
{
	for (auto &s : shards_)
		QN_TRY(s->health_begin());
	return ok_status();
}

Health Engine::health()
{
	// The owner's switch links: lost time inside any shard's stall is the engine's stop.
	IntervalSet others;
	for (size_t k = 1; k < shards_.size(); k++)
		for (const auto &[from, to] : shards_[k]->stalls().intervals())
			others.add(from, to);
	Health r = owner().health(others);
	for (size_t k = 1; k < shards_.size(); k++)
		merge_health(r, shards_[k]->health());
	judge_health(r, opt_);
	return r;
}

const HostCounters &Engine::host_counters(const std::string &host)
{
	const int k = shard_of(host);
	return shards_[size_t(k < 0 ? 0 : k)]->host_counters(host); // unknown: the owner's error
}

std::vector<std::string> Engine::host_names() const
{
	std::vector<std::string> v;
	for (const HostDesc &h : desc_.hosts)
		if (shard_of(h.name) >= 0)
			v.push_back(h.name);
	return v;
}

const SenderStats &Engine::sender_stats(QpHandle h) const { return of(h).sender_stats(qps_[h].local); }
cc::CounterList Engine::cc_counters(QpHandle h) const { return of(h).cc_counters(qps_[h].local); }
const ReceiverStats &Engine::receiver_stats(QpHandle h) const { return of(h).receiver_stats(qps_[h].local); }
Engine::PathInfo Engine::path(const std::string &a, const std::string &b) const { return owner().path(a, b); }
uint64_t Engine::min_base_rtt_ns() const { return owner().min_base_rtt_ns(); }
uint64_t Engine::max_base_rtt_ns() const { return owner().max_base_rtt_ns(); }

Status Engine::sample_queue(const std::string &sw, const std::string &port, uint64_t interval_ns)
{
	return owner().sample_queue(sw, port, interval_ns);
}
Status Engine::sample_all_queues(uint64_t interval_ns) { return owner().sample_all_queues(interval_ns); }
const std::vector<QueueSeries> &Engine::queue_series() const { return owner().queue_series(); }
const std::vector<std::pair<uint64_t, uint64_t>> &Engine::rx_series() const { return owner().rx_series(); }
void Engine::clear_queue_series() { owner().clear_queue_series(); }

const Histogram &Engine::loop_delay(Signal s) const
{
	if (shards_.size() == 1)
		return owner().loop_delay(s);
	Histogram &m = loop_delay_[size_t(s)];
	m = Histogram();
	for (const auto &sh : shards_)
		m.merge(sh->loop_delay(s));
	return m;
}

const Histogram &Engine::bts_loop_by_origin(size_t origin) const
{
	origin = std::min(origin, kBtsOrigins - 1);
	if (shards_.size() == 1)
		return owner().bts_loop_by_origin(origin);
	Histogram &m = bts_loop_origin_[origin];
	m = Histogram();
	for (const auto &sh : shards_)
		m.merge(sh->bts_loop_by_origin(origin));
	return m;
}

uint64_t Engine::paused_until(QpHandle h) const { return of(h).paused_until(qps_[h].local); }
uint64_t Engine::paused_ns(QpHandle h) const { return of(h).paused_ns(qps_[h].local); }
uint64_t Engine::rto_deadline(QpHandle h) const { return of(h).rto_deadline(qps_[h].local); }

Affected Engine::affected() const
{
	Affected a = owner().affected();
	if (shards_.size() == 1)
		return a; // its stalls in `all`
	for (size_t k = 1; k < shards_.size(); k++) {
		const Affected b = shards_[k]->affected();
		for (const auto &[from, to] : b.all.intervals())
			a.all.add(from, to);
		for (const auto &[name, s] : b.host)
			for (const auto &[from, to] : s.intervals())
				a.host[name].add(from, to);
	}
	// A shard's stalls: the flows whose endpoints or paths' cables are the shard's.
	for (const auto &sh : shards_)
		a.shard.push_back(sh->stalls());
	a.shards_of = shards_of_;
	return a;
}

const cc::Output &Engine::cc_output(QpHandle h) const { return of(h).cc_output(qps_[h].local); }
const std::vector<RatePoint> &Engine::trace(QpHandle h) const { return of(h).trace(qps_[h].local); }
std::string Engine::cc_describe(QpHandle h) const { return of(h).cc_describe(qps_[h].local); }

Endpoint Engine::endpoint(const std::string &host) const
{
	for (const HostDesc &h : desc_.hosts)
		if (h.name == host)
			return h.ep;
	return Endpoint{};
}

size_t Engine::cable_count() const
{
	size_t n = 0;
	for (const auto &s : shards_)
		n += s->cable_count();
	return n;
}

} // namespace qn::tp
