// model_ldcp.cc - LDCP's switch rule in the reference model (model_stage.h; the BPF stage is
// bpf/include/ldcp.h, docs/ldcp.md): a Not-ECT data packet (fast start) that finds at least K
// bytes queued ahead of it is dropped (K unset: the RED profile's Kmin).
#include "transport/cc/model.h"
#include "transport/cc/model_stage.h"

#include "common/units.h"

namespace qn::tp::cc {

namespace {

class LdcpStage final : public ModelStage {
public:
	const char *name() const override { return "ldcp"; }
	std::vector<std::string> keys() const override { return {"ldcp", "ldcp_k"}; }
	Result<bool> set(const std::string &k, const std::string &v) override
	{
		if (k == "ldcp")
			return model_assign(on_, model_parse_onoff(k, v));
		if (k == "ldcp_k") {
			if (v == "kmin") {
				k_ = 0;
				return true;
			}
			return model_assign(k_, model_parse_bytes(k, v));
		}
		return false;
	}
	void start(const ModelConfig &c, std::mt19937_64 &) override { kmin_ = c.kmin_bytes; }
	bool ingress(const ModelArrival &a, std::vector<ModelSignal> &) override
	{
		if (!on_ || a.ect || a.queue_bytes < (k_ ? k_ : kmin_))
			return false;
		drops_++;
		return true;
	}
	void counters(std::map<std::string, uint64_t> &out) const override { out["ldcp_drop"] = drops_; }
	std::string report() const override
	{
		if (!on_)
			return "ldcp: off";
		return "ldcp: K " + format_size(k_ ? k_ : kmin_) + "; " + std::to_string(drops_) + " Not-ECT packets dropped at K";
	}

private:
	bool on_ = false;
	uint64_t k_ = 0, kmin_ = 0;
	uint64_t drops_ = 0;
};

} // namespace

std::unique_ptr<ModelStage> make_model_ldcp() { return std::make_unique<LdcpStage>(); }

} // namespace qn::tp::cc
