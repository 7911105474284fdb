// cc.cc - the scheme registry: builds a QP's controller and notification point by scheme name.
// Adding a scheme adds one entry here and its own files in transport/cc/; no other scheme's
// code changes (docs/cc.md).
#include "cc.h"

#include "dcqcn.h"

namespace qn::tp::cc {

namespace {

struct Scheme {
	const char *name;
	bool pfc;                               // the switch runs PFC for it
	Result<Parts> (*make)(const Setup &s);
	Derived (*derive)(const Fabric &f, bool scale);
};

Derived derive_none(const Fabric &, bool)
{
	Derived d;
	d.switch_settings = {{"pfc", "off"}};
	d.notes.push_back("switch PFC off (no congestion control, lossy)");
	return d;
}

Derived derive_pfc(const Fabric &, bool)
{
	Derived d;
	d.switch_settings = {{"pfc", "on"}};
	d.notes.push_back("switch PFC on (lossless, no end-to-end congestion control)");
	return d;
}

Derived derive_dcqcn(const Fabric &f, bool scale) { return dcqcn_derive(f, scale, false); }
Derived derive_dcqcn_w(const Fabric &f, bool scale) { return dcqcn_derive(f, scale, true); }

Parts line_rate_parts(const Setup &s, const char *what)
{
	Parts p;
	p.controller = std::make_unique<Controller>(std::make_unique<LineRate>(), std::make_unique<LineRateStart>(),
						    std::make_unique<NoFlowControl>(), s.line_rate_bps);
	p.describe = what;
	return p;
}

Result<Parts> make_none(const Setup &s)
{
	if (!s.overrides.empty())
		return make_error("scheme none takes no parameters");
	return line_rate_parts(s, "no congestion control: line rate, no PFC");
}

Result<Parts> make_pfc(const Setup &s)
{
	if (!s.overrides.empty())
		return make_error("scheme pfc takes no parameters");
	return line_rate_parts(s, "no congestion control: line rate, PFC on");
}

Result<Parts> make_dcqcn_common(const Setup &s, bool window)
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
	std::unique_ptr<Algorithm> a;
	if (p->variant == DcqcnParams::Variant::Paper)
		a = std::make_unique<DcqcnPaper>(*p, s.line_rate_bps);
	else
		a = std::make_unique<DcqcnMellanox>(*p, s.line_rate_bps);
	Parts out;
	out.controller = std::make_unique<Controller>(std::move(a), std::make_unique<LineRateStart>(),
						      std::make_unique<NoFlowControl>(), s.line_rate_bps);
	if (s.np)
		out.np = std::make_unique<DcqcnNp>(p->cnp_interval_ns);
	out.describe = dcqcn_describe(*p) + (s.np ? "" : " NP=off");
	return out;
}

Result<Parts> make_dcqcn(const Setup &s) { return make_dcqcn_common(s, false); }
Result<Parts> make_dcqcn_w(const Setup &s) { return make_dcqcn_common(s, true); }

const Scheme kSchemes[] = {
	{"none", false, make_none, derive_none},
	{"pfc", true, make_pfc, derive_pfc},
	{"dcqcn", true, make_dcqcn, derive_dcqcn},
	{"dcqcn+w", true, make_dcqcn_w, derive_dcqcn_w},
};

} // namespace

std::vector<std::string> schemes()
{
	std::vector<std::string> v;
	for (const auto &s : kSchemes)
		v.push_back(s.name);
	return v;
}

bool wants_pfc(const std::string &scheme)
{
	for (const auto &s : kSchemes)
		if (scheme == s.name)
			return s.pfc;
	return false;
}

Result<Derived> derive(const std::string &scheme, const Fabric &f, bool scale)
{
	if (f.line_rate_bps == 0 || f.mtu == 0)
		return make_error("scheme " + scheme + ": cannot derive parameters without a line rate and an MTU");
	for (const auto &k : kSchemes)
		if (scheme == k.name)
			return k.derive(f, scale);
	return make_error("unknown scheme '" + scheme + "'");
}

Result<Parts> make(const Setup &s)
{
	if (s.line_rate_bps == 0)
		return make_error("scheme " + s.scheme + ": the line rate is 0");
	for (const auto &k : kSchemes)
		if (s.scheme == k.name)
			return k.make(s);
	std::string names;
	for (const auto &k : kSchemes)
		names += std::string(names.empty() ? "" : ", ") + k.name;
	return make_error("unknown scheme '" + s.scheme + "' (schemes: " + names + ")");
}

} // namespace qn::tp::cc
