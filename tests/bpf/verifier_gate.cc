// verifier_gate.cc - load every program of every BPF object given, print each program's verified
// instruction count on this kernel ("processed N insns", the verifier's own statistic) and fail
// above half of the kernel's 1M-instruction limit, so a pipeline that grows toward the limit is
// caught before a kernel where it no longer loads. On a failed load, print the verifier log. With
// --expect-fail, succeed only if loading fails with a non-empty verifier log (the gate's own
// negative test: a gate that cannot fail is no gate).
//
// usage: qn_verifier_gate [--expect-fail] [--max-insns N] OBJ.bpf.o...
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/utsname.h>
#include <vector>

#include <bpf/libbpf.h>

namespace {

int silent(enum libbpf_print_level, const char *, va_list) { return 0; }

long max_insns = 500'000; // half of BPF_COMPLEXITY_LIMIT_INSNS (1M)

// Return: the verifier's "processed N insns" count in `log`, or -1.
long processed(const char *log)
{
	const char *p = std::strstr(log, "processed ");
	if (!p)
		return -1;
	return std::strtol(p + 10, nullptr, 10);
}

// Load `path` with the given verifier log level; fill one log per program.
int load(const char *path, uint32_t level, std::vector<std::pair<std::string, std::vector<char>>> &logs)
{
	bpf_object *obj = bpf_object__open_file(path, nullptr);
	if (!obj)
		return -errno;
	bpf_program *prog;
	logs.clear();
	logs.reserve(16);
	bpf_object__for_each_program(prog, obj)
	{
		logs.emplace_back(bpf_program__name(prog), std::vector<char>(level & 1 ? 1 << 22 : 1 << 12));
		bpf_program__set_log_buf(prog, logs.back().second.data(), logs.back().second.size());
		bpf_program__set_log_level(prog, level);
	}
	int err = bpf_object__load(obj);
	bpf_object__close(obj);
	return err;
}

// Return: 0 when every program of `path` loaded within the budget, 1 otherwise (log printed).
int gate(const char *path, bool expect_fail)
{
	std::vector<std::pair<std::string, std::vector<char>>> logs;
	// Statistics only (BPF_LOG_STATS): the full log of a large program would not fit.
	int err = load(path, 4, logs);
	if (err) {
		load(path, 1, logs); // again with the full log, to show why
		bool any_log = false;
		for (auto &[name, log] : logs) {
			if (!log[0])
				continue;
			any_log = true;
			std::printf("--- verifier log of %s in %s ---\n%s--- end of log ---\n", name.c_str(), path, log.data());
		}
		std::printf("%s %s: load failed: %s%s\n", expect_fail && any_log ? "ok  " : "FAIL", path,
			    std::strerror(-err), any_log ? "" : " (no verifier log)");
		return expect_fail && any_log ? 0 : 1;
	}
	if (expect_fail) {
		std::printf("FAIL %s: all %zu programs loaded, but this fixture must be rejected\n", path, logs.size());
		return 1;
	}
	int rc = 0;
	for (auto &[name, log] : logs) {
		long n = processed(log.data());
		bool over = n > max_insns;
		std::printf("  %-20s %8ld verified insns%s\n", name.c_str(), n,
			    over ? "  ABOVE THE BUDGET" : n < 0 ? "  (no count in the log)" : "");
		if (over || n < 0)
			rc = 1;
	}
	std::printf("%s %s: all %zu programs load%s\n", rc ? "FAIL" : "ok  ", path, logs.size(),
		    rc ? ", but not within the budget" : "");
	return rc;
}

} // namespace

int main(int argc, char **argv)
{
	bool expect_fail = false;
	std::vector<const char *> objs;
	for (int i = 1; i < argc; i++) {
		if (std::strcmp(argv[i], "--expect-fail") == 0)
			expect_fail = true;
		else if (std::strcmp(argv[i], "--max-insns") == 0 && i + 1 < argc)
			max_insns = std::atol(argv[++i]);
		else
			objs.push_back(argv[i]);
	}
	if (objs.empty()) {
		std::fprintf(stderr, "usage: qn_verifier_gate [--expect-fail] [--max-insns N] OBJ.bpf.o...\n");
		return 2;
	}
	libbpf_set_print(silent);
	utsname u{};
	uname(&u);
	std::printf("kernel %s; budget %ld verified instructions per program\n", u.release, max_insns);
	int failed = 0;
	for (const char *o : objs)
		failed += gate(o, expect_fail) != 0;
	std::printf("%zu passed, %d failed\n", objs.size() - size_t(failed), failed);
	return failed ? 1 : 0;
}
