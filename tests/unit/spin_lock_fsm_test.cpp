// A spin lock's waiting (acquire_fsm in spin mode, spin_delays) with simulated time: no
// server, no sleeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "detail/acquire_fsm.hpp"
#include "detail/spin_delays.hpp"
#include "rlock/error.hpp"

namespace rlock::detail {
// Named, not anonymous: the unity build puts this file beside acquire_fsm_test.cpp's helpers.
namespace spin_lock_fsm_test {

using namespace std::chrono_literals;
using kind = acquire_fsm::action_kind;
using tp = acquire_fsm::time_point;
using std::chrono::milliseconds;

constexpr tp t0 = tp{} + 1000s;
constexpr auto none = acquire_fsm::channels::none;

acquire_fsm::reply held(long long ttl, bool hands_off = false) {
  acquire_fsm::reply r;
  r.ttl_ms = ttl;
  r.holder_hands_off = hands_off;
  return r;
}

acquire_fsm make_spin(tp deadline = tp::max(), spin_backoff b = {}, std::uint64_t seed = 7) {
  acquire_fsm::params p;
  p.deadline = deadline;
  p.spin = b;
  p.spin_seed = seed;
  return acquire_fsm(p);
}

TEST(spin_delays, redissons_exponential_steps_with_growing_jitter) {
  // Sleep 1 is initial_delay; sleep k + 1 = sleep k x multiplier + [0, k - 1] ms, capped.
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    spin_delays d(spin_backoff{10ms, 100ms, 3}, seed);
    EXPECT_EQ(d.next(), 10ms);
    const milliseconds second = d.next();
    EXPECT_EQ(second, 30ms);  // 10 x 3 + [0, 0]
    const milliseconds third = d.next();
    EXPECT_GE(third, second * 3);
    EXPECT_LE(third, second * 3 + 1ms);
    EXPECT_EQ(d.next(), 100ms);  // 270 or more, capped
    EXPECT_EQ(d.next(), 100ms);
  }
}

TEST(spin_delays, defaults_double_from_one_ms_to_128) {
  spin_delays d(spin_backoff{}, 1);
  milliseconds prev = d.next();
  EXPECT_EQ(prev, 1ms);
  int steps = 1;
  while (prev < 128ms) {
    const milliseconds cur = d.next();
    ASSERT_GE(cur, std::min(prev * 2, 128ms));
    ASSERT_LE(cur, std::min(prev * 2 + milliseconds(steps), 128ms));
    prev = cur;
    ASSERT_LT(++steps, 20);
  }
  EXPECT_EQ(d.next(), 128ms);
}

TEST(spin_delays, constant_is_the_same_every_time_and_huge_values_do_not_overflow) {
  spin_delays c(spin_backoff::constant(), 3);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(c.next(), 64ms);
  const milliseconds big = milliseconds(std::numeric_limits<long long>::max() / 2);
  spin_delays h(spin_backoff{1ms, big, 1'000'000'000}, 3);
  EXPECT_EQ(h.next(), 1ms);
  EXPECT_EQ(h.next(), 1'000'000'000ms);
  const milliseconds third = h.next();  // 10^18 ms plus 0 or 1
  EXPECT_GE(third.count(), 1'000'000'000'000'000'000LL);
  EXPECT_LE(third.count(), 1'000'000'000'000'000'001LL);
  EXPECT_EQ(h.next(), big);  // 10^27 would overflow: capped instead
  EXPECT_EQ(h.next(), big);
}

TEST(spin_delays, the_jitter_depends_on_the_seed) {
  std::vector<milliseconds> seen;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    spin_delays d(spin_backoff{1ms, 100'000ms, 2}, seed);
    milliseconds last{};
    for (int i = 0; i < 8; ++i) last = d.next();
    seen.push_back(last);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_NE(seen.front(), seen.back());
}

TEST(acquire_fsm_spin, a_failed_try_sleeps_the_backoff_and_never_subscribes) {
  auto f = make_spin();
  EXPECT_EQ(f.start(t0, true, none).kind, kind::send_acquire);
  // Even a holder that hands over (queued mode) gets no subscription from a spin waiter.
  auto a = f.on_reply(t0, held(30'000, true));
  ASSERT_EQ(a.kind, kind::wait);
  EXPECT_EQ(a.until, t0 + 1ms);
  tp now = t0 + 1ms;
  ASSERT_EQ(f.on_timer(now).kind, kind::send_acquire);
  a = f.on_reply(now, held(30'000));
  ASSERT_EQ(a.kind, kind::wait);
  EXPECT_EQ(a.until, now + 2ms);
  // The sleeps grow to 128 ms and stay there; each is a wait, never a subscribe.
  for (int i = 0; i < 12; ++i) {
    now = a.until;
    ASSERT_EQ(f.on_timer(now).kind, kind::send_acquire);
    a = f.on_reply(now, held(30'000));
    ASSERT_EQ(a.kind, kind::wait);
    EXPECT_LE(a.until - now, 128ms);
  }
  EXPECT_EQ(a.until - now, 128ms);
  EXPECT_EQ(f.attempts(), 14);
}

TEST(acquire_fsm_spin, a_sleep_ends_when_the_ttl_seen_runs_out_or_at_the_deadline) {
  auto f = make_spin(t0 + 1s, spin_backoff::constant(500ms));
  f.start(t0, true, none);
  auto a = f.on_reply(t0, held(20));
  ASSERT_EQ(a.kind, kind::wait);
  EXPECT_EQ(a.until, t0 + 21ms);  // the TTL + 1 ms, before the 500 ms step
  ASSERT_EQ(f.on_timer(t0 + 21ms).kind, kind::send_acquire);
  a = f.on_reply(t0 + 700ms, held(-1));  // no TTL: the step, cut at the deadline
  ASSERT_EQ(a.kind, kind::wait);
  EXPECT_EQ(a.until, t0 + 1s);
  a = f.on_timer(t0 + 1s);
  EXPECT_EQ(a.kind, kind::done);
  EXPECT_FALSE(a.acquired);
  EXPECT_FALSE(a.ec);
}

TEST(acquire_fsm_spin, a_local_release_wakes_a_sleep_and_one_during_an_attempt_retries) {
  auto f = make_spin(tp::max(), spin_backoff::constant(1000ms));
  f.start(t0, true, none);
  auto a = f.on_reply(t0, held(30'000));
  ASSERT_EQ(a.kind, kind::wait);
  EXPECT_EQ(f.on_wake(t0 + 5ms).kind, kind::send_acquire);
  EXPECT_EQ(f.on_wake(t0 + 6ms).kind, kind::none);  // folded into a re-try after the reply
  EXPECT_EQ(f.on_reply(t0 + 7ms, held(30'000)).kind, kind::send_acquire);
  a = f.on_reply(t0 + 8ms, held(30'000));
  EXPECT_EQ(a.kind, kind::wait);
  EXPECT_EQ(a.until, t0 + 1008ms);
}

TEST(acquire_fsm_spin, single_attempt_and_stop_end_without_waiting) {
  acquire_fsm::params p;
  p.single_attempt = true;
  p.spin = spin_backoff{};
  acquire_fsm once(p);
  once.start(t0, true, none);
  auto a = once.on_reply(t0, held(100));
  EXPECT_EQ(a.kind, kind::done);
  EXPECT_FALSE(a.acquired);

  auto f = make_spin();
  f.start(t0, true, none);
  f.on_reply(t0, held(100));
  a = f.on_stop(t0 + 1ms);
  EXPECT_EQ(a.kind, kind::done);
  EXPECT_EQ(a.ec, make_error_code(errc::stopped));
}

}  // namespace spin_lock_fsm_test
}  // namespace rlock::detail
