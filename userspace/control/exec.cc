// exec.cc - fork/exec with pipes; no shell, so no quoting bugs.
#include "control/exec.h"

#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <csignal>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace qn {
namespace {
bool g_verbose = false;

std::string join(const std::vector<std::string> &argv)
{
	std::string s;
	for (const auto &a : argv) {
		if (!s.empty())
			s += ' ';
		s += a;
	}
	return s;
}
} // namespace

void set_exec_verbose(bool on) { g_verbose = on; }

Result<ExecResult> run(const std::vector<std::string> &argv, const std::string &input)
{
	if (argv.empty())
		return make_error("run: empty command");
	if (g_verbose) {
		std::fprintf(stderr, "+ %s\n", join(argv).c_str());
		if (!input.empty())
			std::fprintf(stderr, "%s", input.c_str());
	}
	int in[2], out[2], err[2];
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return sys_error(errno, "pipe");
	std::vector<char *> args;
	for (const auto &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	// The child dies with this process (PR_SET_PDEATHSIG): a `topo up` killed half-way must not
	// leave an `ip -batch` running on, adding namespaces after a `topo down` cleaned up (seen:
	// netns_topo_lifecycle in the 6.1 VM found qn-T-h9 made after its down). An exec failure
	// comes back through a close-on-exec pipe as the child's errno.
	int ex[2];
	if (pipe2(ex, O_CLOEXEC))
		return sys_error(errno, "pipe");
	const pid_t parent = getpid();
	const pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		execvp(args[0], args.data());
		const int e = errno;
		(void)!write(ex[1], &e, sizeof(e));
		_exit(127);
	}
	const int fork_errno = errno;
	close(ex[1]);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	int rc = pid < 0 ? fork_errno : 0;
	if (pid > 0) {
		int e = 0;
		ssize_t n;
		while ((n = read(ex[0], &e, sizeof(e))) < 0 && errno == EINTR) {
		}
		if (n == ssize_t(sizeof(e))) {
			rc = e;
			while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
			}
		}
	}
	close(ex[0]);
	if (rc != 0) {
		close(in[1]);
		close(out[0]);
		close(err[0]);
		return sys_error(rc, "cannot start '" + argv[0] + "'");
	}
	ExecResult r;
	size_t written = 0;
	if (input.empty()) {
		close(in[1]);
		in[1] = -1;
	}
	pollfd fds[3] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}, {in[1], POLLOUT, 0}};
	int open_reads = 2;
	char buf[65536];
	while (open_reads > 0 || fds[2].fd >= 0) {
		if (poll(fds, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t n = read(fds[i].fd, buf, sizeof(buf));
			if (n > 0) {
				(i == 0 ? r.out : r.err).append(buf, size_t(n));
			} else {
				close(fds[i].fd);
				fds[i].fd = -1;
				open_reads--;
			}
		}
		if (fds[2].fd >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t n = write(fds[2].fd, input.data() + written, input.size() - written);
			if (n > 0)
				written += size_t(n);
			if (n <= 0 || written == input.size()) {
				close(fds[2].fd);
				fds[2].fd = -1;
			}
		}
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
	}
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return r;
}

Result<std::string> run_ok(const std::vector<std::string> &argv, const std::string &input)
{
	auto r = run(argv, input);
	if (!r)
		return r.error();
	if (r->status != 0) {
		std::string e = r->err.empty() ? r->out : r->err;
		while (!e.empty() && (e.back() == '\n' || e.back() == ' '))
			e.pop_back();
		return make_error("'" + join(argv) + "' failed (exit " + std::to_string(r->status) + "): " + e);
	}
	return std::move(r->out);
}

} // namespace qn
