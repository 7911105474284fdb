// model_stage.h - a scheme's switch stage in the reference model (model.h): the counterpart of
// its BPF stage (bpf/include/<scheme>.h) at the bottleneck port's ingress. A stage owns its
// settings (the `quench switch keys` names it implements, plus model-only ones such as its
// phase), its state, its counters and its report line. The model calls every registered stage
// for each data packet, in registry order, before RED; a stage may drop the packet or send its
// sender a signal back over the sender's link. Adding a scheme's stage is one file and one line
// in model_stages.cc; the model and `quench model` name no scheme (docs/cc.md "Reference model").
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "transport/cc/cc.h"

namespace qn::tp::cc {

struct ModelConfig;

// A data packet at the port's ingress.
struct ModelArrival {
	int who = 0;                 // its sender
	uint64_t seq = 0;            // packet number (its PSN)
	uint32_t frame = 0;          // bytes, Ethernet header on
	bool ect = true;
	bool pbt = false;            // PB-FS's PBT bit (QN_TOS_PBT)
	uint64_t now = 0;            // fabric ns
	uint64_t queue_bytes = 0;    // queued ahead of it
};

// A signal to the packet's sender, over the sender's own link (serialization + one hop), in the
// control class. The model hands it to the sender's controller (on_bts, on_postcard).
struct ModelSignal {
	enum class Kind { Bts, Postcard } kind = Kind::Bts;
	int who = 0;
	uint32_t frame_bytes = 0;    // the Ethernet frame
	uint32_t bts_us = 0;         // Bts: the pause
	PostcardEvent postcard{};    // Postcard: its values (now_ns: set on arrival)
};

class ModelStage {
public:
	virtual ~ModelStage() = default;
	virtual const char *name() const = 0;
	// The keys it takes (for --switch-set's help and errors).
	virtual std::vector<std::string> keys() const = 0;
	// Apply one key. Return: false when it is not one of its keys; an error for a bad value.
	virtual Result<bool> set(const std::string &key, const std::string &value) = 0;
	// Before the run: the model's settings and the seed's generator (a phase is drawn here, in
	// registry order, so runs stay repeatable for a seed).
	virtual void start(const ModelConfig &c, std::mt19937_64 &rng) = 0;
	// A data packet at the ingress. Return: true to drop it (counted by the stage); signals to
	// send go into `out`.
	virtual bool ingress(const ModelArrival &a, std::vector<ModelSignal> &out) = 0;
	// Its counters (the switch's names where the BPF stage has them).
	virtual void counters(std::map<std::string, uint64_t> &out) const = 0;
	// One line for `quench model` ("<name>: ..." or "<name>: off").
	virtual std::string report() const = 0;
};

// Every registered stage, fresh, in registry order (model_stages.cc).
std::vector<std::unique_ptr<ModelStage>> make_model_stages();

// Store a parsed setting: model_assign(on_, model_parse_onoff(k, v)) in a stage's set().
template <typename T, typename U> Result<bool> model_assign(T &dst, Result<U> r)
{
	if (!r.ok())
		return r.error();
	dst = T(*r);
	return true;
}

// Parsers for stage settings; errors name the key and value.
Result<bool> model_parse_onoff(const std::string &key, const std::string &value);
Result<uint64_t> model_parse_bytes(const std::string &key, const std::string &value);
Result<uint64_t> model_parse_time(const std::string &key, const std::string &value);

} // namespace qn::tp::cc
