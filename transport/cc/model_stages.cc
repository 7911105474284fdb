// model_stages.cc - the reference model's switch stages (model_stage.h), one line per scheme
// that has one, in the order the model calls them (the BPF pipeline's ingress order: LDCP's
// drop first, then SFC's congestion point, then PB-FS's history).
#include "transport/cc/model_stage.h"

#include "common/units.h"

namespace qn::tp::cc {

std::unique_ptr<ModelStage> make_model_ldcp();
std::unique_ptr<ModelStage> make_model_sfc();
std::unique_ptr<ModelStage> make_model_pbfs();

std::vector<std::unique_ptr<ModelStage>> make_model_stages()
{
	std::vector<std::unique_ptr<ModelStage>> v;
	v.push_back(make_model_ldcp());
	v.push_back(make_model_sfc());
	v.push_back(make_model_pbfs());
	return v;
}

Result<bool> model_parse_onoff(const std::string &key, const std::string &value)
{
	if (value != "on" && value != "off")
		return make_error("switch setting " + key + "=" + value + ": expected on or off");
	return value == "on";
}

Result<uint64_t> model_parse_bytes(const std::string &key, const std::string &value)
{
	auto b = parse_size_bytes(value);
	if (!b)
		return make_error("switch setting " + key + "=" + value + ": expected a size in bytes");
	return *b;
}

Result<uint64_t> model_parse_time(const std::string &key, const std::string &value)
{
	auto t = parse_time_ns(value);
	if (!t)
		return make_error("switch setting " + key + "=" + value + ": expected a time");
	return *t;
}

} // namespace qn::tp::cc
