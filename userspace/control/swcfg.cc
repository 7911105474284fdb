// swcfg.cc - switch run-time configuration.
#include "control/swcfg.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include <bpf/bpf.h>

#include "common/units.h"

namespace qn {
namespace {

Result<bool> on_off(const std::string &k, const std::string &v)
{
	if (v == "on" || v == "1" || v == "true")
		return true;
	if (v == "off" || v == "0" || v == "false")
		return false;
	return make_error("switch setting '" + k + "': '" + v + "' is not on or off");
}

Result<double> decimal(const std::string &k, const std::string &v, double lo, double hi)
{
	char *end = nullptr;
	double d = std::strtod(v.c_str(), &end);
	if (end == v.c_str() || *end != '\0' || !std::isfinite(d) || d < lo || d > hi) {
		char buf[96];
		std::snprintf(buf, sizeof(buf), "' is not a number in [%g, %g]", lo, hi);
		return make_error("switch setting '" + k + "': '" + v + buf);
	}
	return d;
}

Result<uint64_t> bytes(const std::string &k, const std::string &v)
{
	auto r = parse_size_bytes(v);
	if (!r)
		return make_error("switch setting '" + k + "': " + r.error().message);
	return *r;
}

} // namespace

qn_swcfg default_swcfg(uint64_t buffer_bytes)
{
	qn_swcfg c{};
	c.buffer_bytes = buffer_bytes;
	c.alpha_data_ppm = 1'000'000;
	c.alpha_ctrl_ppm = 8'000'000;
	c.admission = 1;
	c.queue_mode = QN_QMODE_AUTO;
	c.ecn = 1;
	c.ecn_kmin_bytes = 5'000;
	c.ecn_kmax_bytes = 200'000;
	c.ecn_pmax_ppm = 10'000;
	c.pfc = 0;
	c.pfc_quanta = 65535;
	c.pfc_xoff_bytes = 100'000;
	c.pfc_xon_bytes = 80'000;
	c.mirror_dport = 0;
	return c;
}

Status apply_swcfg(qn_swcfg &c, const std::string &k, const std::string &v)
{
	if (k == "buffer") {
		auto b = bytes(k, v);
		if (!b)
			return b.error();
		c.buffer_bytes = *b;
	} else if (k == "admission" || k == "ecn" || k == "pfc") {
		auto b = on_off(k, v);
		if (!b)
			return b.error();
		(k == "admission" ? c.admission : k == "ecn" ? c.ecn : c.pfc) = *b ? 1u : 0u;
	} else if (k == "alpha" || k == "alpha_ctrl") {
		auto d = decimal(k, v, 0.0, 1000.0);
		if (!d)
			return d.error();
		(k == "alpha" ? c.alpha_data_ppm : c.alpha_ctrl_ppm) = uint32_t(std::llround(*d * 1e6));
	} else if (k == "loss") {
		auto d = decimal(k, v, 0.0, 1.0);
		if (!d)
			return d.error();
		c.loss_ppm = uint32_t(std::llround(*d * 1e6));
	} else if (k == "pmax") {
		auto d = decimal(k, v, 0.0, 1.0);
		if (!d)
			return d.error();
		c.ecn_pmax_ppm = uint32_t(std::llround(*d * 1e6));
	} else if (k == "kmin" || k == "kmax" || k == "xoff" || k == "xon") {
		auto b = bytes(k, v);
		if (!b)
			return b.error();
		(k == "kmin" ? c.ecn_kmin_bytes : k == "kmax" ? c.ecn_kmax_bytes : k == "xoff" ? c.pfc_xoff_bytes
												: c.pfc_xon_bytes) = *b;
	} else if (k == "quanta") {
		auto d = decimal(k, v, 1, 65535);
		if (!d)
			return d.error();
		c.pfc_quanta = uint32_t(*d);
	} else if (k == "queue") {
		if (v == "auto")
			c.queue_mode = QN_QMODE_AUTO;
		else if (v == "real")
			c.queue_mode = QN_QMODE_REAL;
		else if (v == "virtual")
			c.queue_mode = QN_QMODE_VIRTUAL;
		else
			return make_error("switch setting 'queue': '" + v + "' is not auto, real or virtual");
	} else if (k == "ecn_at") {
		if (v == "enqueue" || v == "dequeue")
			c.ecn_dequeue = v == "dequeue" ? 1u : 0u;
		else
			return make_error("switch setting 'ecn_at': '" + v + "' is not enqueue or dequeue");
	} else if (k == "mirror_dport") {
		auto d = decimal(k, v, 0, 65535);
		if (!d)
			return d.error();
		c.mirror_dport = uint32_t(*d);
	} else {
		return make_error("unknown switch setting '" + k +
				  "' (buffer, admission, alpha, alpha_ctrl, ecn, ecn_at, kmin, kmax, pmax, pfc, xoff, "
				  "xon, quanta, queue, mirror_dport, loss)");
	}
	return ok_status();
}

Status validate_swcfg(const qn_swcfg &c)
{
	if (c.ecn_kmin_bytes > c.ecn_kmax_bytes)
		return make_error("kmin (" + std::to_string(c.ecn_kmin_bytes) + ") is above kmax (" +
				  std::to_string(c.ecn_kmax_bytes) + ")");
	if (c.pfc_xon_bytes > c.pfc_xoff_bytes)
		return make_error("xon (" + std::to_string(c.pfc_xon_bytes) + ") is above xoff (" +
				  std::to_string(c.pfc_xoff_bytes) + ")");
	if (c.buffer_bytes == 0)
		return make_error("buffer must be positive");
	return ok_status();
}

std::string describe_swcfg(const qn_swcfg &c)
{
	char buf[512];
	std::snprintf(buf, sizeof(buf),
		      "buffer=%s admission=%s alpha=%g alpha_ctrl=%g ecn=%s ecn_at=%s kmin=%s kmax=%s pmax=%g pfc=%s "
		      "xoff=%s xon=%s quanta=%u queue=%s mirror_dport=%u loss=%g",
		      format_size(c.buffer_bytes).c_str(), c.admission ? "on" : "off", c.alpha_data_ppm / 1e6,
		      c.alpha_ctrl_ppm / 1e6, c.ecn ? "on" : "off", c.ecn_dequeue ? "dequeue" : "enqueue",
		      format_size(c.ecn_kmin_bytes).c_str(),
		      format_size(c.ecn_kmax_bytes).c_str(), c.ecn_pmax_ppm / 1e6, c.pfc ? "on" : "off",
		      format_size(c.pfc_xoff_bytes).c_str(), format_size(c.pfc_xon_bytes).c_str(), c.pfc_quanta,
		      c.queue_mode == QN_QMODE_AUTO ? "auto" : c.queue_mode == QN_QMODE_REAL ? "real" : "virtual",
		      c.mirror_dport, c.loss_ppm / 1e6);
	return buf;
}

std::vector<std::pair<std::string, std::string>> swcfg_values(const qn_swcfg &c)
{
	auto dec = [](double v) {
		char b[32];
		std::snprintf(b, sizeof(b), "%.6g", v);
		return std::string(b);
	};
	auto onoff = [](uint32_t v) { return std::string(v ? "on" : "off"); };
	return {
		{"buffer", std::to_string(c.buffer_bytes)},
		{"admission", onoff(c.admission)},
		{"alpha", dec(c.alpha_data_ppm / 1e6)},
		{"alpha_ctrl", dec(c.alpha_ctrl_ppm / 1e6)},
		{"ecn", onoff(c.ecn)},
		{"ecn_at", c.ecn_dequeue ? "dequeue" : "enqueue"},
		{"kmin", std::to_string(c.ecn_kmin_bytes)},
		{"kmax", std::to_string(c.ecn_kmax_bytes)},
		{"pmax", dec(c.ecn_pmax_ppm / 1e6)},
		{"pfc", onoff(c.pfc)},
		{"xoff", std::to_string(c.pfc_xoff_bytes)},
		{"xon", std::to_string(c.pfc_xon_bytes)},
		{"quanta", std::to_string(c.pfc_quanta)},
		{"queue", c.queue_mode == QN_QMODE_AUTO ? "auto" : c.queue_mode == QN_QMODE_REAL ? "real" : "virtual"},
		{"mirror_dport", std::to_string(c.mirror_dport)},
		{"loss", dec(c.loss_ppm / 1e6)},
	};
}

Result<qn_swcfg> read_swcfg(const std::string &pin_dir)
{
	int fd = bpf_obj_get((pin_dir + "/qn_swcfg").c_str());
	if (fd < 0)
		return sys_error(errno, "open " + pin_dir + "/qn_swcfg");
	qn_swcfg c{};
	uint32_t zero = 0;
	int err = bpf_map_lookup_elem(fd, &zero, &c);
	close(fd);
	if (err)
		return sys_error(errno, "read " + pin_dir + "/qn_swcfg");
	return c;
}

Status write_swcfg(const std::string &pin_dir, const qn_swcfg &c)
{
	QN_TRY(validate_swcfg(c));
	int fd = bpf_obj_get((pin_dir + "/qn_swcfg").c_str());
	if (fd < 0)
		return sys_error(errno, "open " + pin_dir + "/qn_swcfg");
	uint32_t zero = 0;
	int err = bpf_map_update_elem(fd, &zero, &c, BPF_ANY);
	close(fd);
	if (err)
		return sys_error(errno, "write " + pin_dir + "/qn_swcfg");
	return ok_status();
}

} // namespace qn
