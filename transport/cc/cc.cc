// cc.cc - the scheme registry: the parts (base algorithms with their notification points,
// start policies, flow controls), the registered compositions, the scheme grammar, and the
// builder of a QP's controller from a scheme's parts. Adding a part adds one table entry here
// and its own files in transport/cc/; no other code tests a scheme's name (docs/cc.md).
#include "transport/cc/cc.h"

#include "transport/cc/dcqcn.h"
#include "transport/cc/ldcp.h"
#include "transport/cc/pbfs.h"
#include "transport/cc/pcn.h"
#include "transport/cc/sfc.h"
#include "common/abi.h"

#include <cstdio>

namespace qn::tp::cc {

namespace {

// ---------------------------------------------------------------------------------------------
// The parts. Each kind is one table; a scheme is a composition of one entry of each.

// What a base algorithm builds for one QP: the algorithm, its notification point (may be null)
// and the parameters in effect.
struct BaseBuilt {
	std::unique_ptr<Algorithm> algo;
	std::unique_ptr<NotificationPoint> np;
	std::string describe;
};

// A start policy or flow control with a switch side (PB-FS's history, SFC's BTS trigger) derives
// the switch settings that turn it on for a fabric, and names those that turn it off: a scheme
// without the part switches it off, so an experiment comparing schemes on one topology never
// inherits another scheme's switch stage.
using SwitchOff = std::vector<std::pair<std::string, std::string>>;

struct BasePart {
	const char *name;
	const char *doc;
	Loss default_loss;
	bool lossy_ok, lossless_ok;
	bool ecn;                               // its data packets are ECT
	uint32_t signals;                       // Scheme::signals: what its reactions need
	Result<BaseBuilt> (*make)(const Setup &s);
	Derived (*derive)(const Fabric &f, bool scale);
	std::string (*params)();                // its parameter table's usage ("" = none)
	Status (*check)(const std::string &key, const std::string &value); // one parameter, via its table
	// A base with a switch stage of its own (LDCP's Not-ECT drop): the settings that turn it on
	// where the rest of its profile is set by hand (derive_stages), and off for every other base.
	SwitchOff stage_on = {};
	SwitchOff off = {};
	bool ack_on_ce = false;                 // Scheme::ack_on_ce
	std::vector<SummaryColumn> columns = {}; // summary-table columns it asks for
};

// A start policy may have parameters of its own: make() gets the overrides its table has
// (`has`), the base algorithm the rest; its derive() may refuse a fabric (PB-FS with N < 2).
struct StartPart {
	const char *name;
	const char *doc;
	uint32_t signals;                       // Scheme::signals: what its reactions need
	Result<std::unique_ptr<StartPolicy>> (*make)(const Setup &s);
	Result<Derived> (*derive)(const Fabric &f) = nullptr; // its switch settings (nullptr: none)
	SwitchOff off = {};
	std::string (*params)() = nullptr;      // its parameter table's usage (nullptr: none)
	bool (*has)(const std::string &key) = nullptr; // a key of its table
	Status (*check)(const std::string &key, const std::string &value) = nullptr;
	std::vector<SummaryColumn> columns = {}; // summary-table columns it asks for
};

struct FlowPart {
	const char *name;
	const char *doc;
	uint32_t signals;                       // Scheme::signals: what its reactions need
	std::unique_ptr<FlowControl> (*make)(const Setup &s);
	Result<Derived> (*derive)(const Fabric &f) = nullptr; // its switch settings (nullptr: none)
	SwitchOff off = {};
};

Result<BaseBuilt> make_line_rate(const Setup &s)
{
	if (!s.overrides.empty())
		return make_error("base algorithm none takes no parameters (got " + s.overrides.begin()->first + ")");
	return BaseBuilt{std::make_unique<LineRate>(), nullptr, "no congestion control: line rate"};
}

Derived derive_line_rate(const Fabric &, bool) { return Derived{}; }

Result<BaseBuilt> make_dcqcn_common(const Setup &s, bool window)
{
	auto p = dcqcn_params(s.params);
	if (!p)
		return p.error();
	p->window = window;
	for (const auto &[k, v] : s.overrides)
		QN_TRY(dcqcn_override(*p, k, v));
	if (window && p->window_bytes == 0)
		p->window_bytes = s.bdp_bytes;
	if (window && p->window_bytes == 0)
		return make_error("dcqcn+w needs a window: give w=BYTES or a BDP");
	BaseBuilt b;
	if (p->variant == DcqcnParams::Variant::Paper)
		b.algo = std::make_unique<DcqcnPaper>(*p, s.line_rate_bps);
	else
		b.algo = std::make_unique<DcqcnMellanox>(*p, s.line_rate_bps);
	if (s.np)
		b.np = std::make_unique<DcqcnNp>(p->cnp_interval_ns);
	b.describe = dcqcn_describe(*p) + (s.np ? "" : " NP=off");
	return b;
}

Result<BaseBuilt> make_dcqcn(const Setup &s) { return make_dcqcn_common(s, false); }
Result<BaseBuilt> make_dcqcn_w(const Setup &s) { return make_dcqcn_common(s, true); }
Derived derive_dcqcn(const Fabric &f, bool scale) { return dcqcn_derive(f, scale, false); }
Derived derive_dcqcn_w(const Fabric &f, bool scale) { return dcqcn_derive(f, scale, true); }

Result<BaseBuilt> make_ldcp(const Setup &s)
{
	LdcpParams p;
	// One set: the draft's values (`paper`, the name every runner uses for a scheme's source).
	if (!s.params.empty() && s.params != "paper" && s.params != "draft")
		return make_error("unknown LDCP parameter set '" + s.params + "' (paper, the draft's values)");
	for (const auto &[k, v] : s.overrides)
		QN_TRY(ldcp_override(p, k, v));
	const uint32_t mtu = s.fabric.mtu;
	if (mtu < 256)
		return make_error("ldcp needs the path MTU (got " + std::to_string(mtu) + ")");
	const uint64_t rtt = s.fabric.base_rtt_ns;
	if (rtt == 0)
		return make_error("ldcp needs the base RTT (its rate below one packet is cw per RTT)");
	if ((p.iw_bytes == 0 || p.cwnd_max_bytes == 0) && s.bdp_bytes == 0)
		return make_error("ldcp needs a BDP for IW and cwnd_max: give iw= and cwnd_max=");
	BaseBuilt b;
	// a full packet's payload (IPv4, UDP, BTH and ICRC fit in the MTU; rounded down to 4 bytes,
	// as the engine segments) and its frame on the wire (Ethernet header, preamble, gap, FCS)
	const uint32_t payload = (mtu - QN_IPV4_HLEN - QN_UDP_HLEN - QN_BTH_LEN - QN_ICRC_LEN) & ~3u;
	b.algo = std::make_unique<Ldcp>(p, s.line_rate_bps, payload, mtu + QN_ETH_HLEN + 24, s.bdp_bytes, rtt);
	auto &l = static_cast<Ldcp &>(*b.algo);
	char iw[96];
	std::snprintf(iw, sizeof(iw), " (IW %.0f packets, base RTT %llu ns)", l.iw_pkts(), static_cast<unsigned long long>(rtt));
	b.describe = ldcp_describe(p) + iw;
	return b;
}
std::string ldcp_params_usage() { return ldcp_table().usage("      "); }
Status check_ldcp(const std::string &key, const std::string &value)
{
	LdcpParams p;
	return ldcp_override(p, key, value);
}

Result<BaseBuilt> make_pcn(const Setup &s)
{
	PcnParams p;
	if (!s.params.empty() && s.params != "paper")
		return make_error("unknown PCN parameter set '" + s.params + "' (paper: the spec's values)");
	for (const auto &[k, v] : s.overrides)
		QN_TRY(pcn_override(p, k, v));
	BaseBuilt b;
	b.algo = std::make_unique<Pcn>(p, s.line_rate_bps);
	if (s.np)
		b.np = std::make_unique<PcnNp>(p);
	b.describe = pcn_describe(p) + (s.np ? "" : " NP=off");
	return b;
}
Status check_pcn(const std::string &key, const std::string &value)
{
	PcnParams p;
	return pcn_override(p, key, value);
}

std::string no_params() { return ""; }
std::string dcqcn_params_usage() { return dcqcn_table().usage("      "); }
Status check_none(const std::string &key, const std::string &)
{
	return make_error("base algorithm none takes no parameters (got " + key + ")");
}
Status check_dcqcn(const std::string &key, const std::string &value)
{
	DcqcnParams p;
	return dcqcn_override(p, key, value);
}

const BasePart kBases[] = {
	{"none", "no congestion control: every QP at line rate", Loss::Lossy, true, true, false, 0, make_line_rate,
	 derive_line_rate, no_params, check_none},
	{"dcqcn", "DCQCN (dcqcn.md): rate control from CNPs, the NP's CNP pacing", Loss::Lossless, true, true, true,
	 kSigCnp, make_dcqcn, derive_dcqcn, dcqcn_params_usage, check_dcqcn},
	{"dcqcn+w", "DCQCN with a BDP window (dcqcn.md §3.5)", Loss::Lossless, true, true, true, kSigCnp | kSigWindow, make_dcqcn_w,
	 derive_dcqcn_w, dcqcn_params_usage, check_dcqcn},
	{"ldcp", "LDCP (ldcp.md): per-ACK window, sub-packet windows, fast start with Not-ECT packets dropped first",
	 Loss::Lossy, true, false, true, kSigAck | kSigWindow | kSigMessage, make_ldcp, ldcp_derive, ldcp_params_usage, check_ldcp, {{"ldcp", "on"}},
	 {{"ldcp", "off"}}, true, {{"FS drops", "switch.drops.ldcp_not_ect"}}},
	{"pcn", "PCN (pcn.md): NP-ECN at the switch, receiving-rate CNPs, receiver-driven decrease, self-weighted increase",
	 Loss::Lossless, false, true, true, kSigCnp | kSigRxRate, make_pcn, pcn_derive, [] { return pcn_table().usage("      "); }, check_pcn,
	 {{"pcn", "on"}}, {{"pcn", "off"}}, false,
	 {{"NP-ECN spared", "switch.pcn_spared"}, {"congested CNPs", "cc.pcn.cnp_congested"}}},
};

Result<std::unique_ptr<StartPolicy>> make_pbfs(const Setup &s)
{
	PbfsParams p;
	for (const auto &[k, v] : s.overrides)
		QN_TRY(pbfs_override(p, k, v));
	Fabric f = s.fabric;
	if (p.dc_rtt_ns)
		f.max_base_rtt_ns = p.dc_rtt_ns;
	auto r = pbfs_rules(f);
	if (!r)
		return r.error();
	if (!p.dc_rtt_ns)
		p.dc_rtt_ns = r->dc_rtt_ns;
	if (!p.delta)
		p.delta = r->delta;
	if (!p.tau_ns)
		p.tau_ns = r->tau_ns;
	if (!p.i_min_bytes)
		p.i_min_bytes = r->i_min_bytes;
	if (!p.safety_ns)
		p.safety_ns = 2 * p.dc_rtt_ns;
	return std::unique_ptr<StartPolicy>(std::make_unique<Pbfs>(p, s.line_rate_bps));
}

const StartPart kStarts[] = {
	{"line-rate", "start at line rate (no slow start)", 0,
	 [](const Setup &) -> Result<std::unique_ptr<StartPolicy>> { return std::unique_ptr<StartPolicy>(std::make_unique<LineRateStart>()); }},
	{"pbfs", "PB-FS (pbfs.md): line rate, corrected within the first RTT by switches' CC-postcards",
	 kSigMessage | kSigAck | kSigPostcard, make_pbfs,
	 [](const Fabric &f) -> Result<Derived> { return pbfs_derive(f); }, {{"pbfs", "off"}},
	 [] { return pbfs_table().usage("      "); }, [](const std::string &k) { return pbfs_table().has(k); },
	 [](const std::string &k, const std::string &v) -> Status {
		 PbfsParams p;
		 return pbfs_override(p, k, v);
	 },
	 {{"postcards/eligible flow", "cc.pbfs.postcards/cc.pbfs.eligible"},
	  {"PB-FS ignored", "cc.pbfs.ignored"},
	  {"postcard loop p50 ns", "loop.postcard.p50_ns"}}},
};

const FlowPart kFlows[] = {
	{"no-pause", "no flow control of its own", 0,
	 [](const Setup &) -> std::unique_ptr<FlowControl> { return std::make_unique<NoFlowControl>(); }},
	{"sfc", "SFC (sfc.md): switches send back-to-sender signals, the QP pauses as told", kSigBts,
	 [](const Setup &) -> std::unique_ptr<FlowControl> { return std::make_unique<SfcPause>(); },
	 [](const Fabric &f) -> Result<Derived> { return sfc_derive(f); }, {{"sfc", "off"}}},
};

// Registered compositions by name; `schemes all` runs those marked.
struct Alias {
	const char *name;
	const char *composition;
	bool in_all;
};
const Alias kAliases[] = {
	{"none", "none:lossy", true},
	{"pfc", "none:lossless", true},
	{"dcqcn", "dcqcn:lossless", true},
	{"dcqcn+w", "dcqcn+w:lossless", true},
	{"ldcp", "ldcp:lossy", true},
	{"pbfs", "dcqcn/pbfs:lossless", true},
	{"pcn", "pcn:lossless", false},
};

// Retransmission defaults by loss mode: lossless QPs a RoCE NIC's QP timeout (4.096 us x 2^14 =
// 67 ms: losses are rare, a timeout mostly a paused queue), lossy ones IRN's RTO_low/RTO_high
// (100/320 us) (docs/transport.md "RTO").
constexpr uint64_t kLosslessRtoNs = 67'108'864, kLossyRtoLowNs = 100'000, kLossyRtoHighNs = 320'000;

template <typename T> const T *find_part(const T *begin, const T *end, const std::string &name)
{
	for (const T *p = begin; p != end; p++)
		if (name == p->name)
			return p;
	return nullptr;
}
const BasePart *find_base(const std::string &n) { return find_part(std::begin(kBases), std::end(kBases), n); }
const StartPart *find_start(const std::string &n) { return find_part(std::begin(kStarts), std::end(kStarts), n); }
const FlowPart *find_flow(const std::string &n) { return find_part(std::begin(kFlows), std::end(kFlows), n); }

template <typename T> std::string names_of(const T *begin, const T *end)
{
	std::string v;
	for (const T *p = begin; p != end; p++)
		v += std::string(v.empty() ? "" : ", ") + p->name;
	return v;
}

Result<Scheme> parse_scheme(const std::string &name, const std::string &text)
{
	auto bad = [&](const std::string &why) { return make_error("scheme '" + name + "': " + why); };
	if (text.empty())
		return bad("empty name");
	std::string body = text, loss;
	if (auto c = text.find(':'); c != std::string::npos) {
		body = text.substr(0, c);
		loss = text.substr(c + 1);
		if (loss != "lossy" && loss != "lossless")
			return bad("loss mode '" + loss + "' is not lossy or lossless");
	}
	std::vector<std::string> tok;
	for (size_t at = 0;;) {
		const size_t slash = body.find('/', at);
		tok.push_back(body.substr(at, slash == std::string::npos ? std::string::npos : slash - at));
		if (slash == std::string::npos)
			break;
		at = slash + 1;
	}
	for (const auto &t : tok)
		if (t.empty())
			return bad("an empty part between '/'");
	const BasePart *b = find_base(tok[0]);
	if (!b)
		return bad("no base algorithm '" + tok[0] + "' (base algorithms: " +
			   names_of(std::begin(kBases), std::end(kBases)) + ")");
	Scheme s;
	s.name = name;
	s.base = b->name;
	s.start = kStarts[0].name;
	s.flow = kFlows[0].name;
	bool have_start = false, have_flow = false;
	for (size_t i = 1; i < tok.size(); i++) {
		if (find_start(tok[i])) {
			if (have_start)
				return bad("two start policies ('" + s.start + "', '" + tok[i] + "')");
			have_start = true;
			s.start = tok[i];
		} else if (find_flow(tok[i])) {
			if (have_flow)
				return bad("two flow controls ('" + s.flow + "', '" + tok[i] + "')");
			have_flow = true;
			s.flow = tok[i];
		} else {
			return bad("no start policy or flow control '" + tok[i] + "' (start policies: " +
				   names_of(std::begin(kStarts), std::end(kStarts)) +
				   "; flow controls: " + names_of(std::begin(kFlows), std::end(kFlows)) + ")");
		}
	}
	s.loss = loss.empty() ? b->default_loss : loss == "lossy" ? Loss::Lossy : Loss::Lossless;
	if (s.loss == Loss::Lossy && !b->lossy_ok)
		return bad(std::string(b->name) + " runs only lossless");
	if (s.loss == Loss::Lossless && !b->lossless_ok)
		return bad(std::string(b->name) + " runs only lossy");
	s.ecn = b->ecn;
	s.signals = b->signals;
	if (const StartPart *sp = find_start(s.start))
		s.signals |= sp->signals;
	if (const FlowPart *fp = find_flow(s.flow))
		s.signals |= fp->signals;
	s.ack_on_ce = b->ack_on_ce;
	s.rto_low_ns = s.lossless() ? kLosslessRtoNs : kLossyRtoLowNs;
	s.rto_high_ns = s.lossless() ? kLosslessRtoNs : kLossyRtoHighNs;
	return s;
}

} // namespace

std::string signal_names(uint32_t bits)
{
	static const std::pair<uint32_t, const char *> kNames[] = {{kSigCnp, "cnp"},     {kSigAck, "ack"},
								   {kSigWindow, "window"}, {kSigMessage, "message"},
								   {kSigBts, "bts"},       {kSigPostcard, "postcard"},
								   {kSigRxRate, "rx-rate"}};
	std::string out;
	for (const auto &[b, n] : kNames)
		if (bits & b)
			out += (out.empty() ? "" : ", ") + std::string(n);
	return out;
}

const char *loss_name(Loss l) { return l == Loss::Lossless ? "lossless" : "lossy"; }

std::string Scheme::canonical() const { return base + "/" + start + "/" + flow + ":" + loss_name(loss); }

Result<Scheme> scheme(const std::string &name)
{
	for (const auto &a : kAliases)
		if (name == a.name)
			return parse_scheme(name, a.composition);
	return parse_scheme(name, name);
}

std::vector<PartInfo> parts()
{
	std::vector<PartInfo> v;
	for (const auto &p : kBases)
		v.push_back(PartInfo{"base", p.name,
				     std::string(p.doc) + " (default " + loss_name(p.default_loss) +
					     (p.lossy_ok && p.lossless_ok ? "; lossy or lossless" : "") + ")",
				     p.params()});
	for (const auto &p : kStarts)
		v.push_back(PartInfo{"start", p.name, p.doc, p.params ? p.params() : ""});
	for (const auto &p : kFlows)
		v.push_back(PartInfo{"flow", p.name, p.doc});
	return v;
}

std::vector<std::pair<std::string, std::string>> aliases()
{
	std::vector<std::pair<std::string, std::string>> v;
	for (const auto &a : kAliases)
		v.emplace_back(a.name, a.composition);
	return v;
}

std::vector<SummaryColumn> summary_columns(const std::string &name)
{
	auto s = scheme(name);
	if (!s)
		return {};
	std::vector<SummaryColumn> v = find_base(s->base)->columns;
	const auto &st = find_start(s->start)->columns;
	v.insert(v.end(), st.begin(), st.end());
	return v;
}

std::vector<std::string> schemes()
{
	std::vector<std::string> v;
	for (const auto &a : kAliases)
		if (a.in_all)
			v.push_back(a.name);
	return v;
}

Status check_param(const std::string &name, const std::string &key, const std::string &value)
{
	auto s = scheme(name);
	if (!s)
		return s.error();
	if (const StartPart *sp = find_start(s->start); sp->has && sp->has(key))
		return sp->check(key, value);
	return find_base(s->base)->check(key, value);
}

Result<Derived> derive_stages(const std::string &name, const Fabric &f)
{
	auto s = scheme(name);
	if (!s)
		return s.error();
	if (f.line_rate_bps == 0 || f.mtu == 0)
		return make_error("scheme " + name + ": cannot derive parameters without a line rate and an MTU");
	Derived d;
	// The start policy's and the flow control's switch sides: on for the scheme's own, off for
	// every other registered one.
	auto add_part = [&](const std::string &chosen, const auto &table) -> Status {
		for (const auto &p : table) {
			if (chosen != p.name) {
				d.switch_settings.insert(d.switch_settings.end(), p.off.begin(), p.off.end());
			} else if (p.derive) {
				auto pd = p.derive(f);
				if (!pd)
					return make_error("scheme " + name + ": " + pd.error().to_string());
				if (!pd->refused.empty())
					d.refused = "scheme " + name + ": " + pd->refused;
				d.switch_settings.insert(d.switch_settings.end(), pd->switch_settings.begin(),
							 pd->switch_settings.end());
				d.notes.insert(d.notes.end(), pd->notes.begin(), pd->notes.end());
			}
		}
		return ok_status();
	};
	// A base algorithm's own stage: on for the scheme's base (the rest of its profile is set by
	// hand), off for the others.
	for (const auto &b : kBases) {
		const auto &v = s->base == b.name ? b.stage_on : b.off;
		d.switch_settings.insert(d.switch_settings.end(), v.begin(), v.end());
	}
	QN_TRY(add_part(s->start, kStarts));
	QN_TRY(add_part(s->flow, kFlows));
	return d;
}

Result<Derived> derive(const std::string &name, const Fabric &f, bool scale)
{
	auto s = scheme(name);
	if (!s)
		return s.error();
	auto st = derive_stages(name, f);
	if (!st)
		return st.error();
	Derived d = find_base(s->base)->derive(f, scale);
	d.refused = st->refused;
	d.switch_settings.insert(d.switch_settings.end(), st->switch_settings.begin(), st->switch_settings.end());
	d.notes.insert(d.notes.end(), st->notes.begin(), st->notes.end());
	// The loss mode decides PFC, whatever the base algorithm's rules say.
	std::erase_if(d.switch_settings, [](const auto &kv) { return kv.first == "pfc"; });
	d.switch_settings.insert(d.switch_settings.begin(), {"pfc", s->lossless() ? "on" : "off"});
	d.notes.push_back(std::string("switch PFC ") + (s->lossless() ? "on (lossless)" : "off (lossy)") + " for " +
			  s->canonical());
	return d;
}

Result<Parts> make(const Setup &su)
{
	auto s = scheme(su.scheme);
	if (!s)
		return s.error();
	if (su.line_rate_bps == 0)
		return make_error("scheme " + su.scheme + ": the line rate is 0");
	// The start policy's parameters go to it, the rest to the base algorithm.
	const StartPart *sp = find_start(s->start);
	Setup bs = su, ss = su;
	bs.overrides.clear();
	ss.overrides.clear();
	for (const auto &[k, v] : su.overrides)
		(sp->has && sp->has(k) ? ss : bs).overrides[k] = v;
	auto b = find_base(s->base)->make(bs);
	if (!b)
		return make_error("scheme " + su.scheme + ": " + b.error().to_string());
	auto st = sp->make(ss);
	if (!st)
		return make_error("scheme " + su.scheme + ": " + st.error().to_string());
	Parts p;
	p.controller = std::make_unique<Controller>(std::move(b->algo), std::move(*st), find_flow(s->flow)->make(su),
						    su.line_rate_bps);
	p.np = std::move(b->np);
	const std::string sd = p.controller->start_policy().describe();
	p.describe = b->describe + (sd.empty() ? "" : "; " + s->start + ": " + sd) + "; " + s->canonical();
	return p;
}

} // namespace qn::tp::cc
