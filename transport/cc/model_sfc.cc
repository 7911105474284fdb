// model_sfc.cc - SFC's congestion point in the reference model (model_stage.h; the BPF stage is
// bpf/include/sfc.h, docs/sfc.md): a data packet that finds more than Q_Th bytes queued ahead of
// it sends its sender a BTS of ceil((depth - Q_Tg) / line rate) µs, once per sender and T_BF
// epoch (epoch = (t + phase) / T_BF; T_BF 0: every packet).
#include "transport/cc/model.h"
#include "transport/cc/model_stage.h"

#include "common/abi.h"
#include "common/units.h"

#include <algorithm>

namespace qn::tp::cc {

namespace {

class SfcStage final : public ModelStage {
public:
	const char *name() const override { return "sfc"; }
	std::vector<std::string> keys() const override { return {"sfc", "sfc_qth", "sfc_qtg", "sfc_tbf", "sfc_phase"}; }
	Result<bool> set(const std::string &k, const std::string &v) override
	{
		if (k == "sfc")
			return model_assign(on_, model_parse_onoff(k, v));
		if (k == "sfc_qth")
			return model_assign(qth_, model_parse_bytes(k, v));
		if (k == "sfc_qtg")
			return model_assign(qtg_, model_parse_bytes(k, v));
		if (k == "sfc_tbf")
			return model_assign(tbf_, model_parse_time(k, v));
		if (k == "sfc_phase")
			return model_assign(phase_, model_parse_time(k, v));
		return false;
	}
	void start(const ModelConfig &c, std::mt19937_64 &rng) override
	{
		rate_ = c.line_rate_bps;
		bloom_.assign(size_t(c.senders), 0);
		// The switch's epochs follow its clock, unrelated to when a run starts, and whether a
		// sender's packets still in flight when it pauses fall into a new epoch (a second BTS,
		// from a deeper queue, extends the pause) depends on it: unset, uniform in [0, T_BF).
		if (phase_ == UINT64_MAX)
			phase_ = on_ && tbf_ ? std::uniform_int_distribution<uint64_t>(0, tbf_ - 1)(rng) : 0;
	}
	bool ingress(const ModelArrival &a, std::vector<ModelSignal> &out) override
	{
		if (!on_ || a.queue_bytes <= qth_)
			return false;
		congested_++;
		const uint64_t epoch = tbf_ ? (a.now + phase_) / tbf_ + 1 : 0;
		uint64_t &cell = bloom_[size_t(a.who)];
		if (epoch && cell == epoch) {
			suppressed_++;
			return false;
		}
		cell = epoch;
		const uint64_t over = a.queue_bytes > qtg_ ? a.queue_bytes - qtg_ : 0;
		const uint64_t us = std::min<uint64_t>(65535, (over * 8'000'000 + rate_ - 1) / rate_);
		bts_++;
		ModelSignal s;
		s.kind = ModelSignal::Kind::Bts;
		s.who = a.who;
		s.frame_bytes = QN_ETH_HLEN + QN_BTS_IP_LEN;
		s.bts_us = uint32_t(us);
		out.push_back(s);
		return false;
	}
	void counters(std::map<std::string, uint64_t> &out) const override
	{
		out["sfc_congested"] = congested_;
		out["sfc_bts"] = bts_;
		out["sfc_suppressed"] = suppressed_;
	}
	std::string report() const override
	{
		if (!on_)
			return "sfc: off";
		return "sfc: Q_Th " + format_size(qth_) + ", Q_Tg " + format_size(qtg_) + ", T_BF " + format_time(tbf_) +
		       " (phase " + format_time(phase_) + "); " + std::to_string(congested_) + " packets over Q_Th, " +
		       std::to_string(bts_) + " BTS, " + std::to_string(suppressed_) + " suppressed";
	}

private:
	bool on_ = false;
	uint64_t qth_ = 250'000, qtg_ = 125'000, tbf_ = 5'000, phase_ = UINT64_MAX, rate_ = 1;
	std::vector<uint64_t> bloom_; // per sender: epoch + 1 of its last BTS (the Bloom cell)
	uint64_t congested_ = 0, bts_ = 0, suppressed_ = 0;
};

} // namespace

std::unique_ptr<ModelStage> make_model_sfc() { return std::make_unique<SfcStage>(); }

} // namespace qn::tp::cc
