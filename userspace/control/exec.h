// exec.h - run external tools (ip, tc) without a shell: argv in, exit status and output out.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace qn {

struct ExecResult {
	int status = -1;      // exit status, or 128+signal
	std::string out;      // stdout
	std::string err;      // stderr
};

// Run argv[0] (searched in PATH) with `input` on stdin. Return: the result, or an error when
// the program could not be started.
Result<ExecResult> run(const std::vector<std::string> &argv, const std::string &input = "");

// Run and require exit status 0. Return: stdout, or an error carrying the command and stderr.
Result<std::string> run_ok(const std::vector<std::string> &argv, const std::string &input = "");

// Global verbosity: when set, run() echoes every command (and batch input) to stderr.
void set_exec_verbose(bool on);

} // namespace qn
