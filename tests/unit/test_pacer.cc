// The NIC's transmit timing (transport/pacer.h): the link pacer never exceeds its rate and never
// bursts to catch up; the timing wheel never fires early and loses nothing.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "transport/pacer.h"

using namespace qn::tp;

TEST_CASE("link_pacer__never_exceeds_the_rate", "[pacer]")
{
	const uint64_t rate = 25'000'000'000ULL;
	LinkPacer p(rate);
	std::mt19937_64 rng(1);
	struct Tx {
		uint64_t t, bytes;
	};
	std::vector<Tx> log;
	uint64_t now = 0;
	// A busy sender polled at random instants, sometimes very late (stalls), sends whenever
	// the pacer allows.
	for (int i = 0; i < 200000; i++) {
		now += (rng() % 10 == 0) ? rng() % 20000 : rng() % 300;
		while (p.ready(now)) {
			uint64_t b = 84 + rng() % 2100;
			p.send(now, b, true);
			log.push_back({now, b});
		}
	}
	REQUIRE(log.size() > 1000);
	// Expect: for every pair i < j, the bytes started in [t_i, t_j) fit in the time between
	// them at the rate: sum_{i..j-1} ser(b) <= t_j - t_i. Checked for all windows ending at j.
	uint64_t worst_excess = 0;
	for (size_t j = 1; j < log.size(); j++) {
		uint64_t ser = 0;
		for (size_t i = j; i-- > 0 && j - i <= 64;) {
			ser += serialization_ns(log[i].bytes, rate);
			uint64_t span = log[j].t - log[i].t;
			if (ser > span)
				worst_excess = std::max(worst_excess, ser - span);
		}
	}
	CHECK(worst_excess == 0);
}

TEST_CASE("link_pacer__late_start_beyond_the_credit_is_not_recovered", "[pacer]")
{
	LinkPacer p(10'000'000'000ULL); // 1000 B = 800 ns; no credit (48ec9aa's rule)
	CHECK(p.send(0, 1000, true) == 0);
	CHECK(p.next_free() == 800);
	// Expect: polled 5 us late, the frame starts now and reports 4200 ns lateness, all lost ...
	uint64_t lost = 0;
	CHECK(p.send(5000, 1000, true, nullptr, &lost) == 4200);
	CHECK(lost == 4200);
	// ... and the next may start only one serialization time later (no catch-up burst).
	CHECK(p.next_free() == 5800);
	CHECK_FALSE(p.ready(5799));
	CHECK(p.ready(5800));
	// An idle link is not late.
	CHECK(p.send(9000, 1000, false) == 0);
}

TEST_CASE("link_pacer__late_start_within_the_credit_keeps_the_schedule", "[pacer]")
{
	LinkPacer p(10'000'000'000ULL, 0, 800); // credit: one 1000 B frame
	uint64_t start = 0, lost = 1;
	p.send(0, 1000, true);
	// Expect: served 500 ns late, the frame starts now, nothing is lost, and the schedule
	// goes on from 800: the next frame is due at 1600, 300 ns after this one started.
	CHECK(p.send(1300, 1000, true, &start, &lost) == 500);
	CHECK(start == 1300);
	CHECK(lost == 0);
	CHECK(p.next_free() == 1600);
	// Served 1000 ns late (200 beyond the credit): 200 ns are lost, the schedule restarts at
	// now - credit.
	CHECK(p.send(2600, 1000, true, &start, &lost) == 1000);
	CHECK(start == 2600);
	CHECK(lost == 200);
	CHECK(p.next_free() == 2600);
	// Expect: the starts never go backwards (a delay line behind the pacer stays in order).
	uint64_t s2 = 0;
	p.send(2600, 1000, true, &s2);
	CHECK(s2 >= start);
}

TEST_CASE("link_pacer__credit_bounds_the_catch_up", "[pacer]")
{
	// A backlogged link served at random lateness: over any window of up to 64 frames the bytes
	// started never exceed rate x (window + horizon) + credit; the link time lost is exactly the
	// lateness beyond the credit; starts never go backwards.
	const uint64_t rate = 10'000'000'000ULL, horizon = 100, credit = 1666;
	LinkPacer p(rate, horizon, credit);
	std::mt19937_64 rng(3);
	struct Tx {
		uint64_t start, bytes;
	};
	std::vector<Tx> log;
	uint64_t now = 0, lost_sum = 0, expect_lost = 0;
	for (int i = 0; i < 100000; i++) {
		const uint64_t due = p.ready_at();
		now = std::max(now, due) + (rng() % 4 == 0 ? rng() % 3000 : 0);
		const uint64_t late = now > p.next_free() ? now - p.next_free() : 0;
		uint64_t s = 0, lost = 0;
		REQUIRE(p.send(now, 2082, true, &s, &lost) == late);
		expect_lost += late > credit ? late - credit : 0;
		lost_sum += lost;
		REQUIRE(s >= now);
		REQUIRE((log.empty() || s >= log.back().start));
		log.push_back({s, 2082});
	}
	CHECK(lost_sum == expect_lost);
	uint64_t worst = 0;
	for (size_t j = 1; j < log.size(); j++) {
		uint64_t bytes = 0;
		for (size_t i = j; i-- > 0 && j - i <= 64;) {
			bytes += log[i].bytes;
			// bytes of frames i..j-1 started within [start_i, start_j]
			const uint64_t allowed_ns = log[j].start - log[i].start + horizon + credit;
			const uint64_t used_ns = serialization_ns(bytes, rate);
			if (used_ns > allowed_ns)
				worst = std::max(worst, used_ns - allowed_ns);
		}
	}
	CHECK(worst == 0);
}

TEST_CASE("timing_wheel__fires_in_order_never_early_and_loses_nothing", "[pacer]")
{
	TimingWheel<uint64_t> w(1000, 64); // 1 us slots, 64 us horizon
	std::mt19937_64 rng(3);
	std::vector<uint64_t> due;
	uint64_t now = 0;
	size_t fired = 0;
	for (int i = 0; i < 5000; i++) {
		uint64_t t = now + rng() % 200000; // up to 3 turns ahead
		due.push_back(t);
		w.insert(t, uint64_t(due.size() - 1));
		now += rng() % 3000;
		w.pop_due(now, [&](uint64_t id) {
			// Expect: never before its due time.
			CHECK(due[id] <= now);
			fired++;
		});
	}
	while (w.size() > 0) {
		now += 5000;
		w.pop_due(now, [&](uint64_t id) {
			CHECK(due[id] <= now);
			fired++;
		});
		REQUIRE(now < 10'000'000'000ULL);
	}
	CHECK(fired == due.size());
}

TEST_CASE("timing_wheel__late_poll_fires_everything_due", "[pacer]")
{
	TimingWheel<int> w(100, 8);
	for (int i = 0; i < 20; i++)
		w.insert(uint64_t(i) * 100, i);
	std::vector<int> got;
	// Expect: one poll 10 turns late fires all 20 items, in due order within a slot.
	w.pop_due(8000, [&](int v) { got.push_back(v); });
	CHECK(got.size() == 20);
	CHECK(w.next_due() == UINT64_MAX);
}

TEST_CASE("link_pacer__horizon_bounds_the_burst", "[pacer]")
{
	const uint64_t rate = 100'000'000'000ULL, horizon = 1000;
	LinkPacer p(rate, horizon);
	std::mt19937_64 rng(2);
	struct Tx {
		uint64_t handed, start, bytes;
	};
	std::vector<Tx> log;
	uint64_t now = 0;
	for (int i = 0; i < 100000; i++) {
		now += rng() % 2000;
		while (p.ready(now)) {
			uint64_t b = 84 + rng() % 2100, s = 0;
			p.send(now, b, true, &s);
			// Expect: a frame starts no earlier than handed and at most horizon later.
			REQUIRE(s >= now);
			REQUIRE(s <= now + horizon);
			log.push_back({now, s, b});
		}
	}
	// Expect: frames handed over in any interval fit rate x (interval + horizon), and their
	// start times never overlap (the link itself is never above its rate).
	uint64_t worst = 0;
	for (size_t j = 1; j < log.size(); j++) {
		REQUIRE(log[j].start >= log[j - 1].start + serialization_ns(log[j - 1].bytes, rate));
		uint64_t ser = 0;
		for (size_t i = j; i-- > 0 && j - i <= 64;) {
			ser += serialization_ns(log[i].bytes, rate);
			uint64_t span = log[j].handed - log[i].handed + horizon;
			if (ser > span)
				worst = std::max(worst, ser - span);
		}
	}
	CHECK(worst == 0);
}

TEST_CASE("tx_scheduler__rate_limits_hold_under_the_link_pacer", "[pacer]")
{
	// A 10 Gbit/s host with three always-backlogged QPs limited to 1, 2.5 Gbit/s and none.
	const uint64_t link = 10'000'000'000ULL;
	const uint64_t rates[3] = {1'000'000'000ULL, 2'500'000'000ULL, 0};
	LinkPacer pacer(link);
	TxScheduler<int> s(1000, 64);
	std::mt19937_64 rng(4);
	struct Tx {
		uint64_t t, bytes;
	};
	std::vector<Tx> log[3];
	uint64_t now = 0;
	uint64_t eligible[3] = {0, 0, 0};
	for (int q = 0; q < 3; q++)
		s.add(q, 0, 0);
	for (int i = 0; i < 300000; i++) {
		now += rng() % 400;
		s.advance(now);
		while (pacer.ready(now) && s.has_ready()) {
			int q = s.pop();
			uint64_t b = 84 + rng() % 2100;
			pacer.send(now, b, true);
			log[q].push_back({now, b});
			eligible[q] = TxScheduler<int>::next_ok(std::min(eligible[q], now), now, b, rates[q], link, 2184);
			s.add(q, eligible[q], now);
		}
	}
	// Expect: a limited QP never sends faster than its rate beyond its one-frame burst (the bytes
	// of packets i..j-1 fit in t_j - t_i + one full frame's time at the rate), and it reaches
	// its rate (it is backlogged and below its fair share).
	for (int q = 0; q < 2; q++) {
		REQUIRE(log[q].size() > 100);
		for (size_t j = 1; j < log[q].size(); j++) {
			uint64_t ser = 0;
			for (size_t k = j; k-- > 0 && j - k <= 32;) {
				ser += serialization_ns(log[q][k].bytes, rates[q]);
				REQUIRE(ser <= log[q][j].t - log[q][k].t + serialization_ns(84 + 2100, rates[q]));
			}
		}
		uint64_t bytes = 0;
		for (const auto &x : log[q])
			bytes += x.bytes;
		double achieved = double(bytes) * 8e9 / double(log[q].back().t - log[q].front().t);
		INFO("qp " << q << " achieved " << achieved << " of " << rates[q]);
		CHECK(achieved <= double(rates[q]) * 1.002);
		CHECK(achieved >= double(rates[q]) * 0.97);
	}
	// The unlimited QP takes the rest of the link; together they never exceed it.
	uint64_t total = 0;
	for (int q = 0; q < 3; q++)
		for (const auto &x : log[q])
			total += x.bytes;
	CHECK(double(total) * 8e9 / double(now) <= double(link) * 1.001);
	CHECK(log[2].size() > log[1].size());
}
