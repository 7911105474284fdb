// verifier_gate.cc - load every program of every BPF object given and print the verifier log
// of any that fails. With --expect-fail, succeed only if loading fails with a non-empty
// verifier log (the gate's own negative test: a gate that cannot fail is no gate).
//
// usage: qn_verifier_gate [--expect-fail] OBJ.bpf.o...
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <bpf/libbpf.h>

namespace {

int silent(enum libbpf_print_level, const char *, va_list) { return 0; }

// Return: 0 when every program of `path` loaded, 1 when loading failed (log printed).
int gate(const char *path, bool expect_fail)
{
	bpf_object *obj = bpf_object__open_file(path, nullptr);
	if (!obj) {
		std::printf("FAIL %s: cannot open: %s\n", path, std::strerror(errno));
		return 2;
	}
	std::vector<std::pair<bpf_program *, std::vector<char>>> logs;
	bpf_program *prog;
	bpf_object__for_each_program(prog, obj)
	{
		logs.emplace_back(prog, std::vector<char>(1 << 20));
		bpf_program__set_log_buf(prog, logs.back().second.data(), logs.back().second.size());
		bpf_program__set_log_level(prog, 1);
	}
	int err = bpf_object__load(obj);
	int rc = 0;
	if (err) {
		bool any_log = false;
		for (auto &[p, log] : logs) {
			if (!log[0])
				continue;
			any_log = true;
			std::printf("--- verifier log of %s in %s ---\n%s--- end of log ---\n", bpf_program__name(p), path,
				    log.data());
		}
		std::printf("%s %s: load failed: %s%s\n", expect_fail && any_log ? "ok  " : "FAIL", path,
			    std::strerror(-err), any_log ? "" : " (no verifier log)");
		rc = expect_fail && any_log ? 0 : 1;
	} else {
		size_t n = logs.size();
		if (expect_fail) {
			std::printf("FAIL %s: all %zu programs loaded, but this fixture must be rejected\n", path, n);
			rc = 1;
		} else {
			std::printf("ok   %s: all %zu programs load\n", path, n);
		}
	}
	bpf_object__close(obj);
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
		else
			objs.push_back(argv[i]);
	}
	if (objs.empty()) {
		std::fprintf(stderr, "usage: qn_verifier_gate [--expect-fail] OBJ.bpf.o...\n");
		return 2;
	}
	libbpf_set_print(silent);
	int failed = 0;
	for (const char *o : objs)
		failed += gate(o, expect_fail) != 0;
	std::printf("%zu passed, %d failed\n", objs.size() - size_t(failed), failed);
	return failed ? 1 : 0;
}
