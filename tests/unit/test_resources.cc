// What an engine takes from the machine (transport/resources.h), computed for generated fabrics
// without bringing them up: sockets, file descriptors and UMEM bytes, and the errors that name a
// limit before any socket exists.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include "control/bringup.h"
#include "control/fattree.h"
#include "control/topology.h"
#include "transport/resources.h"

using namespace qn;

namespace {

struct Shape {
	uint64_t hosts = 0, cables = 0;
};

Shape shape(const Topology &t)
{
	Shape s;
	for (const auto &n : t.nodes)
		s.hosts += n.kind == NodeKind::Host;
	for (const auto &l : t.links)
		s.cables += is_cable_link(t, l);
	return s;
}

Shape fattree(int k)
{
	FatTreeSpec fs;
	fs.k = k;
	auto text = fattree_text(fs);
	REQUIRE(text);
	auto t = parse_topology(*text, "ft");
	REQUIRE(t);
	return shape(*t);
}

constexpr uint32_t kFrames = 8192; // EngineOptions::frames_per_port today
constexpr uint64_t GiB = 1ULL << 30;

} // namespace

TEST_CASE("engine_needs__sockets_fds_and_umem_from_the_fabric", "[resources]")
{
	// k-ary fat-trees with 1 us fabric links: every switch-to-switch link is a cable, two sockets
	const Shape k4 = fattree(4), k8 = fattree(8), k16 = fattree(16);
	CHECK(k4.hosts == 16);
	CHECK(k4.cables == 32);
	CHECK(k8.hosts == 128);
	CHECK(k8.cables == 256);
	CHECK(k16.hosts == 1024);
	CHECK(k16.cables == 2048);
	const auto n4 = tp::engine_needs(k4.hosts, k4.cables, kFrames);
	CHECK(n4.sockets == 80);
	CHECK(n4.fds == 80 + tp::kFdMargin);
	CHECK(n4.umem_bytes == 80ULL * kFrames * 4096);
	const auto n8 = tp::engine_needs(k8.hosts, k8.cables, kFrames);
	CHECK(n8.sockets == 640);
	CHECK(n8.umem_bytes == 20 * GiB); // 640 x 32 MiB
	// The ns-3 simulator's 320-host tree (fat.txt: 480 links, 320 of them to hosts) with cables:
	// 320 + 2 x 160 sockets, the same 20 GiB.
	const auto n320 = tp::engine_needs(320, 160, kFrames);
	CHECK(n320.sockets == 640);
	CHECK(n320.umem_bytes == 20 * GiB);
	// A star of 64 hosts, no cables.
	CHECK(tp::engine_needs(64, 0, kFrames).umem_bytes == 2 * GiB);
}

TEST_CASE("check_engine_needs__names_the_limit_it_exceeds", "[resources]")
{
	const auto k8 = tp::engine_needs(128, 256, kFrames);
	tp::MachineLimits roomy{1'048'576, 200 * GiB};
	CHECK(tp::check_engine_needs("ft8", k8, roomy).ok());
	// the default hard limit of many systems (1024 soft is raised; a hard limit is not)
	tp::MachineLimits few_fds = roomy;
	few_fds.nofile_hard = 512;
	auto st = tp::check_engine_needs("ft8", k8, few_fds);
	REQUIRE_FALSE(st.ok());
	CHECK_THAT(st.error().message, Catch::Contains("704 file descriptors") && Catch::Contains("hard limit 512"));
	// this machine's 24 GiB: 20 GiB of UMEM for k=8 with cables is refused before any mmap
	tp::MachineLimits m24 = roomy;
	m24.mem_available_bytes = 22 * GiB;
	st = tp::check_engine_needs("ft8", k8, m24);
	REQUIRE_FALSE(st.ok());
	CHECK_THAT(st.error().message, Catch::Contains("UMEM would take 20 GiB") && Catch::Contains("640 AF_XDP sockets"));
	// the 9-host star fits
	CHECK(tp::check_engine_needs("star", tp::engine_needs(9, 0, kFrames), m24).ok());
	// unknown memory is not checked
	m24.mem_available_bytes = 0;
	CHECK(tp::check_engine_needs("ft8", k8, m24).ok());
}

TEST_CASE("raise_nofile__lifts_the_soft_limit_up_to_the_hard_one", "[resources]")
{
	rlimit before{};
	REQUIRE(getrlimit(RLIMIT_NOFILE, &before) == 0);
	rlimit low = before;
	low.rlim_cur = 64;
	REQUIRE(setrlimit(RLIMIT_NOFILE, &low) == 0);
	const uint64_t hard = before.rlim_max == RLIM_INFINITY ? UINT64_MAX : uint64_t(before.rlim_max);
	const uint64_t want = std::min<uint64_t>(hard, 900);
	CHECK(tp::raise_nofile(want).ok());
	rlimit after{};
	REQUIRE(getrlimit(RLIMIT_NOFILE, &after) == 0);
	CHECK(uint64_t(after.rlim_cur) == want);
	// above the hard limit: raised to the hard limit, never beyond
	if (before.rlim_max != RLIM_INFINITY) {
		CHECK(tp::raise_nofile(hard + 100).ok());
		REQUIRE(getrlimit(RLIMIT_NOFILE, &after) == 0);
		CHECK(after.rlim_cur == before.rlim_max);
	}
	REQUIRE(setrlimit(RLIMIT_NOFILE, &before) == 0);
}

TEST_CASE("frames_to_fit__fewer_chunks_per_socket_when_the_umem_does_not_fit", "[resources]")
{
	tp::MachineLimits m24{1'048'576, 22 * GiB}; // this machine: 24 GiB, about 22 available
	// the star and k=4 with cables fit as they are
	CHECK(tp::frames_to_fit(9, kFrames, m24) == kFrames);
	CHECK(tp::frames_to_fit(80, kFrames, m24) == kFrames);
	// k=8 with cables and the 320-host tree: 640 sockets x 32 MiB = 20 GiB > 16.5 GiB; 4,096
	// chunks (10 GiB) fit, and the engine's needs then pass
	const uint32_t f = tp::frames_to_fit(640, kFrames, m24);
	CHECK(f == 4096);
	CHECK(tp::check_engine_needs("ft8", tp::engine_needs(128, 256, f), m24).ok());
	// k=16 with cables (1,024 + 2 x 2,048 sockets): 5,120 x 4 MiB = 20 GiB even at the floor: 0,
	// and the needs at the default are refused naming the UMEM
	CHECK(tp::frames_to_fit(5120, kFrames, m24) == 0);
	// the floor itself when only it fits: 1,500 sockets x 4 MiB = 5.9 GiB within 3/4 of 10 GiB
	// (7.5), at 8 MiB 11.7 GiB not; 2,048 sockets do not fit even at the floor (8 GiB)
	tp::MachineLimits m10{1'048'576, 10 * GiB};
	CHECK(tp::frames_to_fit(1500, kFrames, m10) == tp::kMinFramesPerPort);
	CHECK(tp::frames_to_fit(2048, kFrames, m10) == 0);
	// every result is a power of two (libxdp's ring sizes derive from it) and never above wanted
	for (uint64_t s : {1ULL, 100ULL, 300ULL, 640ULL, 1000ULL, 1500ULL, 2000ULL, 2500ULL})
		if (uint32_t x = tp::frames_to_fit(s, kFrames, m24)) {
			CHECK((x & (x - 1)) == 0);
			CHECK(x <= kFrames);
			CHECK(s * x * 4096 <= m24.mem_available_bytes / 4 * 3);
		}
	// unknown memory: as wanted
	CHECK(tp::frames_to_fit(5120, kFrames, tp::MachineLimits{1024, 0}) == kFrames);
}
