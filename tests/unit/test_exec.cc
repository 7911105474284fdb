// Running external tools (userspace/control/exec.h): output, errors and status come back; input
// is piped; a command that does not exist is an error naming it; and a child dies with the
// process that started it (a `topo up` killed half-way leaves no `ip` running on).
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "control/exec.h"

using namespace qn;

namespace {

// Return: true while `pid` exists and is not a zombie.
bool alive(pid_t pid)
{
	std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
	std::string stat;
	if (!std::getline(f, stat))
		return false;
	const size_t close = stat.rfind(')');
	return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

} // namespace

TEST_CASE("exec__output_status_input_and_missing_commands", "[exec]")
{
	auto r = run({"sh", "-c", "echo out; echo err >&2; exit 3"});
	REQUIRE(r.ok());
	CHECK(r->out == "out\n");
	CHECK(r->err == "err\n");
	CHECK(r->status == 3);
	auto c = run({"cat"}, "line 1\nline 2\n");
	REQUIRE(c.ok());
	CHECK(c->out == "line 1\nline 2\n");
	CHECK(c->status == 0);
	auto m = run({"qn-no-such-command"});
	REQUIRE_FALSE(m.ok());
	CHECK_THAT(m.error().to_string(), Catch::Contains("cannot start 'qn-no-such-command'"));
	CHECK_THAT(m.error().to_string(), Catch::Contains("No such file"));
	auto bad = run_ok({"sh", "-c", "echo why >&2; exit 2"});
	REQUIRE_FALSE(bad.ok());
	CHECK_THAT(bad.error().message, Catch::Contains("failed (exit 2): why"));
}

TEST_CASE("exec__a_child_dies_with_the_process_that_started_it", "[exec]")
{
	// A process runs `sleep 30` through run() and is killed with SIGKILL (as a `topo up` killed
	// half-way): the sleep must be gone within 2 s, not run on as an orphan.
	char path[] = "/tmp/qn-exec-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0);
	close(fd);
	const pid_t starter = fork();
	REQUIRE(starter >= 0);
	if (starter == 0) {
		(void)run({"sh", "-c", std::string("echo $$ > ") + path + "; exec sleep 30"});
		_exit(0);
	}
	pid_t child = 0;
	for (int i = 0; i < 200 && child == 0; i++) { // up to 2 s for the pid file
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
		std::ifstream f(path);
		long v = 0;
		if (f >> v)
			child = pid_t(v);
	}
	REQUIRE(child > 0);
	REQUIRE(alive(child));
	kill(starter, SIGKILL);
	waitpid(starter, nullptr, 0);
	bool gone = false;
	for (int i = 0; i < 200 && !gone; i++) {
		gone = !alive(child);
		if (!gone)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	if (!gone)
		kill(child, SIGKILL); // leave nothing behind, then fail
	std::remove(path);
	CHECK(gone);
}
