// model_pbfs.cc - PB-FS's switch in the reference model (model_stage.h; the BPF stage is
// bpf/include/pbfs.h qn_pbfs_decide, docs/pbfs.md): every data packet toward the port is written
// into a history of slots (one CPU's cells of the BPF layout, so Definition 1 and the sums are
// the same code, qn_abi.h); a PBT-marked packet that finds the port congested sends its sender a
// CC-postcard (Ethernet and the IP packet of pbfs.md §5) with the values the switch would put
// in it. Slots follow the switch's clock: slot = (t + phase) / slot length.
#include "transport/cc/model.h"
#include "transport/cc/model_stage.h"

#include "common/abi.h"
#include "common/units.h"

#include <algorithm>
#include <cstdlib>

namespace qn::tp::cc {

namespace {

class PbfsStage final : public ModelStage {
public:
	const char *name() const override { return "pbfs"; }
	std::vector<std::string> keys() const override
	{
		return {"pbfs", "pbfs_n", "pbfs_slot", "pbfs_tdelta", "pbfs_dc_rtt", "pbfs_phase"};
	}
	Result<bool> set(const std::string &k, const std::string &v) override
	{
		if (k == "pbfs")
			return model_assign(on_, model_parse_onoff(k, v));
		if (k == "pbfs_n") {
			char *end = nullptr;
			const unsigned long n = std::strtoul(v.c_str(), &end, 10);
			if (v.empty() || *end || n < 1 || n > QN_PBFS_MAX_N)
				return make_error("switch setting " + k + "=" + v + ": expected a count 1.." +
						  std::to_string(QN_PBFS_MAX_N));
			n_ = uint32_t(n);
			return true;
		}
		if (k == "pbfs_slot")
			return model_assign(slot_, model_parse_time(k, v));
		if (k == "pbfs_tdelta")
			return model_assign(tdelta_, model_parse_time(k, v));
		if (k == "pbfs_dc_rtt")
			return model_assign(dc_rtt_, model_parse_time(k, v));
		if (k == "pbfs_phase")
			return model_assign(phase_, model_parse_time(k, v));
		return false;
	}
	void start(const ModelConfig &c, std::mt19937_64 &rng) override
	{
		rate_ = c.line_rate_bps;
		per_sender_.assign(size_t(c.senders), 0);
		if (phase_ == UINT64_MAX)
			phase_ = on_ && slot_ ? std::uniform_int_distribution<uint64_t>(0, slot_ - 1)(rng) : 0;
	}
	bool ingress(const ModelArrival &a, std::vector<ModelSignal> &out) override
	{
		const uint64_t t = a.now + phase_;
		if (!on_ || slot_ < QN_PBFS_SUB || n_ == 0 || n_ > QN_PBFS_MAX_N)
			return false;
		const uint64_t sub = slot_ / QN_PBFS_SUB, e = t / slot_, fe = t / sub;
		qn_pbfs_cell &cell = hist_.slot[e & (QN_PBFS_RING - 1)];
		if (cell.epoch1 != e + 1) { // W1: the slot's first packet restarts its cell
			cell.epoch1 = e + 1;
			cell.first_ns = t;
			cell.bytes = 0;
			cell.q_first = uint32_t(std::min<uint64_t>(a.queue_bytes, 0xFFFFFFFFu));
		}
		cell.bytes += a.frame;
		qn_pbfs_fine &f = hist_.fine[fe & (QN_PBFS_FINE - 1)];
		if (f.epoch1 != fe + 1) {
			f.epoch1 = fe + 1;
			f.bytes = f.marked = 0;
		}
		f.bytes += a.frame;
		if (!a.pbt)
			return false;
		f.marked += a.frame;
		marked_++;
		const uint32_t nfine = uint32_t(std::clamp<uint64_t>((tdelta_ + sub - 1) / sub, 1, QN_PBFS_FINE));
		qn_pbfs_sum s{};
		s.q1_ns = ~0ull;
		qn_pbfs_add(&hist_, e, n_, fe, nfine, &s);
		if (s.q1_ns == ~0ull)
			s.q1 = a.queue_bytes; // no packet in the history: the queue now
		if (!qn_pbfs_congested(&s, n_, rate_, dc_rtt_))
			return false;
		congested_++;
		per_sender_[size_t(a.who)]++;
		const uint64_t ip = qn_pbfs_ip(&s, n_);
		ModelSignal sig;
		sig.kind = ModelSignal::Kind::Postcard;
		sig.who = a.who;
		sig.frame_bytes = QN_ETH_HLEN + QN_POSTCARD_IP_LEN;
		sig.postcard = PostcardEvent{0,
					     1,
					     uint32_t(a.seq & 0xFFFFFF),
					     uint32_t(std::min<uint64_t>(ip, 0xFFFFFFFFu)),
					     uint32_t(std::min<uint64_t>(s.q1, 0xFFFFFFFFu)),
					     uint32_t(rate_ / 1'000'000),
					     uint32_t(s.recent),
					     uint32_t(s.recent_marked),
					     a.now};
		out.push_back(sig);
		return false;
	}
	void counters(std::map<std::string, uint64_t> &out) const override
	{
		out["pbfs_marked"] = marked_;
		out["pbfs_congested"] = congested_;
	}
	std::string report() const override
	{
		if (!on_)
			return "pbfs: off";
		std::string per;
		for (uint64_t n : per_sender_)
			per += (per.empty() ? "" : ",") + std::to_string(n);
		return "pbfs: N " + std::to_string(n_) + ", slot " + format_time(slot_) + " (phase " + format_time(phase_) +
		       "), T_Δ " + format_time(tdelta_) + ", DC_RTT " + format_time(dc_rtt_) + "; " + std::to_string(marked_) +
		       " PBT packets, " + std::to_string(congested_) + " postcards sent; postcards per sender " + per;
	}

private:
	bool on_ = false;
	uint32_t n_ = 8;
	uint64_t slot_ = 1'560, tdelta_ = 2'035, dc_rtt_ = 25'000, phase_ = UINT64_MAX, rate_ = 0;
	qn_pbfs_hist hist_{}; // the port's history (one CPU's cells)
	std::vector<uint64_t> per_sender_;
	uint64_t marked_ = 0, congested_ = 0;
};

} // namespace

std::unique_ptr<ModelStage> make_model_pbfs() { return std::make_unique<PbfsStage>(); }

} // namespace qn::tp::cc
