// swcfg.h - a switch's run-time settings (struct qn_swcfg in the qn_swcfg map, one sub-struct
// per feature: buffer, RED/ECN, PFC, test knobs, then one per scheme). One key table
// (swcfg_table()) generates `quench switch set` parsing and validation, `describe`, the usage
// text (`quench switch keys`), the topology file's and the experiment file's switch keys, the
// defaults and the exact values a results folder records. Sizes in bytes (fabric = wall: bytes
// never dilate), probabilities and alphas as decimals, times in fabric units.
#pragma once

#include <string>
#include <vector>

#include "common/abi.h"
#include "common/params.h"
#include "common/result.h"

namespace qn {

// The key table (docs/switch.md "Settings"). A setting is a field in qn_abi.h's feature
// sub-struct plus one row here; nothing else lists the keys.
const ParamTable<qn_swcfg> &swcfg_table();

// Every row's default, then the buffer: B = buffer_bytes; alpha data 1.0 (a lone queue takes
// B/2), control 8; RED/ECN on with DCQCN's paper profile (Kmin 5 KB, Kmax 200 KB, Pmax 1%,
// DCQCN Figure 14); PFC off, XOFF 100 KB, XON 80 KB, quanta 65535; real qdisc depth with the
// virtual fallback; test knobs off.
qn_swcfg default_swcfg(uint64_t buffer_bytes);

// Apply one key=value. Return: an error naming the key and the accepted values.
Status apply_swcfg(qn_swcfg &c, const std::string &key, const std::string &value);
// Return: an error when thresholds contradict each other (kmin > kmax, xon > xoff...).
Status validate_swcfg(const qn_swcfg &c);
// DCQCN's "ECN before PFC" (its §4): with ECN marking and PFC both on, the queues must be able to
// mark before PFC pauses, in the worst case where one ingress account feeds every other port's
// egress queue at once: (n - 1) x Kmin below the XOFF level, for n ports. Static XOFF:
// (n - 1) Kmin < xoff. Dynamic (pfc_alpha = a): XOFF at a (B - R - used) with used = (n - 1) Kmin,
// so Kmin < a (B - R) / ((n - 1)(1 + a)), R the headroom reserved (hdrm_reserved: the ports'
// sum). Conservative, as the paper says of its own (it keeps 8 priorities; quench one).
// Return: "" when it holds or does not apply, else the sentence with the values.
std::string ecn_before_pfc(const qn_swcfg &c, size_t nports, uint64_t hdrm_reserved);
// "key=value ..." of every setting (human units).
std::string describe_swcfg(const qn_swcfg &c);
// Every setting by its key, exact: sizes in bytes, times in ns, decimals at full precision,
// words for switches and choices (apply_swcfg reads each value back to the same setting).
std::vector<std::pair<std::string, std::string>> swcfg_values(const qn_swcfg &c);
// Derived fields: test.on (any test knob set). Called by write_swcfg; callers that write the map
// themselves call it first.
void finalize_swcfg(qn_swcfg &c);

// The pinned map of a running switch.
Result<qn_swcfg> read_swcfg(const std::string &pin_dir);
Status write_swcfg(const std::string &pin_dir, qn_swcfg c);

} // namespace qn
