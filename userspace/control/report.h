// report.h - an experiment's results folder (docs/experiments.md "Results"): per scheme fct.txt,
// flows.csv, queues.csv, throughput.csv, rates.csv, counters.txt, validity.txt, cc.txt; for the
// run summary.md, summary.csv, summary.json, bins.csv, metadata.txt and the plots; and
// `quench compare` over two summary.csv files. Counters are written by name: a counter the
// runner gathers (runner.h Counters) reaches every output without an edit here.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/result.h"
#include "control/runner.h"

namespace qn {

// metadata.txt's lines for a calibrated run (date, kernel, commit, experiment, D and its terms,
// RTT and link checks, queue interval).
std::string metadata_text(const ExperimentRun &r);
// metadata.txt's lines for a scheme (derived notes, the switch settings applied and in force).
std::string scheme_metadata(const SchemeResult &s);

Status write_scheme_files(const std::string &out, const SchemeResult &s);

// The summary table (markdown) printed by `quench run` and written in summary.md.
std::string summary_table(const ExperimentRun &r, const std::vector<SchemeResult> &rs);
std::string summary_markdown(const ExperimentRun &r, const std::vector<SchemeResult> &rs, const std::string &meta,
			     bool with_plots);
// summary.csv: fixed columns, then every counter any scheme has ("c.<name>", 0 where a scheme
// lacks it).
std::string summary_csv(const ExperimentRun &r, const std::vector<SchemeResult> &rs);
// summary.json: the run and every scheme, integers exact (docs/experiments.md "JSON").
std::string summary_json(const ExperimentRun &r, const std::vector<SchemeResult> &rs);
// The paced checks of a calibration (calibration.h PacedTrial), as summary.json's
// calibration.dilation_paced and `topo up --dilation auto --format json`'s calibration.paced
// write them: [{d, busy_frac, pass_p90_wall_ns, frame_wall_ns, need}].
nlohmann::ordered_json paced_trials_json(const std::vector<PacedTrial> &paced);
// Write summary.md, summary.csv, summary.json and bins.csv.
Status write_summary(const std::string &out, const ExperimentRun &r, const std::vector<SchemeResult> &rs,
		     const std::string &meta);

// PNG plots with gnuplot: queue.png (the port whose queue peaked highest), slowdown.png (p50 and
// p99 by size bin: one x position per bin labelled with its largest size, log y) and
// throughput.png. Return: "" or why the plots were not drawn.
std::string write_plots(const std::string &out, const std::vector<SchemeResult> &rs);

// A rate trace CSV (`gen --trace-out`: pair,t_ns,rate_bps,window_bytes,acked_bytes; a run's
// rates.csv: flow,...) as one series per first-column value, in order of first appearance.
// Errors name the source, line and field (a time going backwards within a series is one).
Result<std::vector<tp::TraceSeries>> parse_rate_trace(const std::string &text, const std::string &source);

// `quench compare A B`: the ratio B / A of every numeric column of summary.csv, one row per
// column and one column per scheme; schemes and columns matched by name (one only one side has
// is listed as such); rows 0 in both runs for every scheme are counted, not shown.
// Return: the text; `matched` = schemes in both.
Result<std::string> compare_runs(const std::string &a, const std::string &b, int &matched);

} // namespace qn
