// swcfg.h - a switch's run-time configuration (struct qn_swcfg in the qn_swcfg map): shared
// buffer, dynamic-threshold alphas, RED/ECN profile, edge PFC thresholds, queue-depth source,
// the recirculation test trigger. Set from the topology's switch attributes at `topo up` and
// changed at run time with `quench switch set`. Sizes in bytes (fabric = wall: bytes never
// dilate), probabilities and alphas as decimals.
#pragma once

#include <string>
#include <vector>

#include "common/abi.h"
#include "common/result.h"

namespace qn {

// Defaults: B = buffer_bytes; alpha data 1.0 (a lone queue takes B/2), control 8; RED/ECN on
// with DCQCN's paper profile (Kmin 5 KB, Kmax 200 KB, Pmax 1%, DCQCN Figure 14); PFC off,
// XOFF 100 KB, XON 80 KB, quanta 65535; real qdisc depth with the virtual fallback.
qn_swcfg default_swcfg(uint64_t buffer_bytes);

// Apply one key=value. Keys: buffer, admission (on|off), alpha, alpha_ctrl, ecn (on|off), kmin,
// kmax, pmax, pfc (on|off), xoff, xon, quanta, queue (auto|real|virtual), mirror_dport.
// Return: an error naming the key and the accepted values.
Status apply_swcfg(qn_swcfg &c, const std::string &key, const std::string &value);
// Return: an error when thresholds contradict each other (kmin > kmax, xon > xoff...).
Status validate_swcfg(const qn_swcfg &c);
std::string describe_swcfg(const qn_swcfg &c);
// Every setting by its key, exact: sizes in bytes, probabilities and alphas as decimals, words
// for switches (apply_swcfg reads each value back to the same setting).
std::vector<std::pair<std::string, std::string>> swcfg_values(const qn_swcfg &c);

// The pinned map of a running switch.
Result<qn_swcfg> read_swcfg(const std::string &pin_dir);
Status write_swcfg(const std::string &pin_dir, const qn_swcfg &c);

} // namespace qn
