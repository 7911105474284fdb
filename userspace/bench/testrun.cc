// testrun.cc - BPF_PROG_TEST_RUN.
#include "bench/testrun.h"

#include <cstdio>
#include <linux/bpf.h>

#include <bpf/bpf.h>

namespace qn {

Result<TestRunOut> test_run_tc(int prog_fd, const Bytes &in, uint32_t ingress_ifindex, uint32_t ifindex,
			       uint32_t repeat)
{
	TestRunOut out;
	out.data.resize(in.size() + 256);
	__sk_buff ctx_in{}, ctx_out{};
	ctx_in.ingress_ifindex = ingress_ifindex;
	ctx_in.ifindex = ifindex;
	DECLARE_LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in.data(), .data_out = out.data.data(),
			    .data_size_in = uint32_t(in.size()), .data_size_out = uint32_t(out.data.size()),
			    .ctx_in = &ctx_in, .ctx_out = &ctx_out, .ctx_size_in = sizeof(ctx_in),
			    .ctx_size_out = sizeof(ctx_out), .repeat = int(repeat));
	int err = bpf_prog_test_run_opts(prog_fd, &opts);
	if (err)
		return sys_error(err, "BPF_PROG_TEST_RUN (tc)");
	out.retval = opts.retval;
	out.data.resize(opts.data_size_out);
	out.duration_ns = opts.duration;
	out.priority = ctx_out.priority;
	out.mark = ctx_out.mark;
	out.tstamp = ctx_out.tstamp;
	return out;
}

Result<TestRunOut> test_run_xdp(int prog_fd, const Bytes &in, uint32_t repeat)
{
	TestRunOut out;
	out.data.resize(in.size() + 256);
	DECLARE_LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in.data(), .data_out = out.data.data(),
			    .data_size_in = uint32_t(in.size()), .data_size_out = uint32_t(out.data.size()),
			    .repeat = int(repeat));
	int err = bpf_prog_test_run_opts(prog_fd, &opts);
	if (err)
		return sys_error(err, "BPF_PROG_TEST_RUN (xdp)");
	out.retval = opts.retval;
	out.data.resize(opts.data_size_out);
	out.duration_ns = opts.duration;
	return out;
}

std::string bpf_stats_warning()
{
	char c = '0';
	if (FILE *f = std::fopen("/proc/sys/kernel/bpf_stats_enabled", "r")) {
		if (std::fread(&c, 1, 1, f) != 1)
			c = '0';
		std::fclose(f);
	}
	if (c == '0')
		return "";
	return "WARNING: kernel.bpf_stats_enabled=1: every BPF program run also reads the clock twice, so a "
	       "variant running more programs per packet is charged more (measured: quench/bare 0.79 with it, "
	       "0.82 without). `sysctl -w kernel.bpf_stats_enabled=0` for numbers comparable with "
	       "docs/PERFORMANCE.md.\n";
}

} // namespace qn
