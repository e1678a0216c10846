// spin_policy, blocking_plan and blocking_result: when a blocking call polls before it sleeps,
// and where it starts its work (no server).
// Each test uses a policy of its own, not the process's.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "detail/blocking.hpp"

namespace rlock::detail {
namespace {

// One blocking call that polled and did (or did not) get its result while polling.
void poll_once(spin_policy& p, bool got_result) {
  ASSERT_TRUE(p.try_enter());
  p.leave(got_result);
}

// How many blocking calls in a row sleep at once from now on (the last call that may poll
// gets its result while polling).
int calls_paused(spin_policy& p) {
  int n = 0;
  while (!p.try_enter() && n < 100000) ++n;
  p.leave(true);
  return n;
}

TEST(spin_policy, half_of_the_latest_16_polls_missing_pauses_polling_for_64_calls) {
  spin_policy p(1);
  for (int i = 0; i < 7; ++i) poll_once(p, false);
  EXPECT_EQ(calls_paused(p), 0) << "7 misses: still polling";
  poll_once(p, false);  // 8 of the latest 9 (calls_paused() polled once, and got its result)
  EXPECT_EQ(calls_paused(p), spin_policy::min_pause);
  EXPECT_EQ(spin_policy::min_pause, 64);
}

TEST(spin_policy, bursts_of_misses_among_results_do_not_pause_polling) {
  spin_policy p(1);
  // Three misses in a row in every eight polls (a tail of slow replies): polling still pays.
  // (poll_once fails as soon as a call may not poll.)
  for (int i = 0; i < 800; ++i) poll_once(p, i % 8 >= 3);
  EXPECT_EQ(calls_paused(p), 0);
}

TEST(spin_policy, a_pause_doubles_while_polling_keeps_missing_and_starts_over_once_it_pays) {
  spin_policy p(1);
  for (int i = 0; i < 8; ++i) poll_once(p, false);
  EXPECT_EQ(calls_paused(p), 64);
  // calls_paused() ended with one poll that paid; polling misses again at once.
  for (int i = 0; i < 8; ++i) poll_once(p, false);
  EXPECT_EQ(calls_paused(p), 128);
  for (int i = 0; i < 8; ++i) poll_once(p, false);
  EXPECT_EQ(calls_paused(p), 256);
  // Polling pays for a while: the next pause is the shortest again.
  for (int i = 0; i < 32; ++i) poll_once(p, true);
  for (int i = 0; i < 8; ++i) poll_once(p, false);
  EXPECT_EQ(calls_paused(p), 64);
}

TEST(spin_policy, the_pause_is_bounded) {
  spin_policy p(1);
  int last = 0;
  for (int round = 0; round < 12; ++round) {
    for (int i = 0; i < 8; ++i) poll_once(p, false);
    last = calls_paused(p);
  }
  EXPECT_EQ(last, spin_policy::max_pause);
  EXPECT_EQ(spin_policy::max_pause, 4096);
}

TEST(spin_policy, at_most_max_polling_threads_poll_at_once) {
  spin_policy p(2);
  ASSERT_TRUE(p.try_enter());
  ASSERT_TRUE(p.try_enter());
  EXPECT_FALSE(p.try_enter()) << "a third call sleeps at once";
  p.leave(true);
  EXPECT_TRUE(p.try_enter());
  p.leave(true);
  p.leave(true);
}

TEST(spin_policy, the_process_policy_lets_half_the_cores_poll) {
  spin_policy& p = spin_policy::process();
  const unsigned limit = std::max(1U, std::thread::hardware_concurrency() / 2);
  for (unsigned i = 0; i < limit; ++i) ASSERT_TRUE(p.try_enter()) << i;
  EXPECT_FALSE(p.try_enter());
  for (unsigned i = 0; i < limit; ++i) p.leave(true);
}

TEST(blocking_result, take_returns_what_another_thread_set_polling_or_sleeping) {
  for (const auto spin : {std::chrono::microseconds(0), std::chrono::microseconds(50)}) {
    blocking_result<int> r;
    std::thread t([&r] { r.set(42); });
    EXPECT_EQ(r.take(spin), 42);
    t.join();
  }
}

// The polling slots of `p` free now (takes and gives them back).
int free_slots(spin_policy& p) {
  int n = 0;
  while (p.try_enter()) ++n;
  for (int i = 0; i < n; ++i) p.leave(true);
  return n;
}

TEST(blocking_plan, the_only_call_in_flight_starts_on_the_caller_any_other_posts) {
  spin_policy p(2);
  const auto spin = std::chrono::microseconds(100);
  {
    blocking_plan first(spin, p);
    EXPECT_EQ(first.mode(), call_mode::blocking_on_caller) << "no other blocking call in flight";
    EXPECT_EQ(free_slots(p), 1) << "it took a polling slot";
    blocking_plan second(spin, p);
    EXPECT_EQ(second.mode(), call_mode::blocking_posted)
        << "another call is in flight: it posts, and sleeps";
    EXPECT_EQ(free_slots(p), 1) << "without taking a polling slot";
  }
  EXPECT_EQ(free_slots(p), 2) << "a plan that never polled gave its slot back as it ended";
  // Both have ended: a call is alone again, even one that does not poll.
  blocking_plan alone(std::chrono::microseconds(0), p);
  EXPECT_EQ(alone.mode(), call_mode::blocking_on_caller);
  EXPECT_EQ(free_slots(p), 2);
}

TEST(blocking_plan, take_polls_only_when_the_plan_says_so_and_gives_the_slot_back) {
  spin_policy p(1);
  {
    blocking_plan plan(std::chrono::microseconds(50), p);
    EXPECT_FALSE(p.try_enter()) << "the plan holds the only polling slot";
    blocking_result<int> r;
    std::thread t([&r] { r.set(7); });
    EXPECT_EQ(r.take(plan), 7);
    t.join();
    EXPECT_TRUE(p.try_enter()) << "take() gave the slot back";
    p.leave(true);
  }
  EXPECT_TRUE(p.try_enter()) << "and the plan's end did not give it back twice";
  EXPECT_FALSE(p.try_enter());
  p.leave(true);
}

}  // namespace
}  // namespace rlock::detail
