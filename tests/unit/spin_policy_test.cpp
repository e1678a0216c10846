// spin_policy and blocking_result: when a blocking call polls before it sleeps (no server).
// Each test runs in its own process (gtest_discover_tests), so the policy's process-wide
// counters start fresh.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "detail/blocking.hpp"

namespace rlock::detail {
namespace {

// One blocking call that polled and did (or did not) get its result while polling.
void poll_once(bool got_result) {
  ASSERT_TRUE(spin_policy::try_enter());
  spin_policy::leave(got_result);
}

TEST(spin_policy, three_counted_misses_in_a_row_pause_polling_for_64_calls) {
  poll_once(false);
  poll_once(false);
  poll_once(false);
  for (int i = 0; i < 64; ++i) EXPECT_FALSE(spin_policy::try_enter()) << "call " << i;
  EXPECT_TRUE(spin_policy::try_enter());
  spin_policy::leave(true);
}

TEST(spin_policy, a_result_while_polling_resets_the_misses) {
  poll_once(false);
  poll_once(false);
  poll_once(true);
  poll_once(false);
  poll_once(false);
  EXPECT_TRUE(spin_policy::try_enter());
  spin_policy::leave(true);
}

TEST(spin_policy, at_most_half_the_cores_poll_at_once) {
  const unsigned limit = std::max(1U, std::thread::hardware_concurrency() / 2);
  for (unsigned i = 0; i < limit; ++i) ASSERT_TRUE(spin_policy::try_enter()) << i;
  EXPECT_FALSE(spin_policy::try_enter());
  spin_policy::leave(true);
  EXPECT_TRUE(spin_policy::try_enter());
  for (unsigned i = 0; i < limit; ++i) spin_policy::leave(true);
}

TEST(blocking_result, take_returns_what_another_thread_set_polling_or_sleeping) {
  for (const auto spin : {std::chrono::microseconds(0), std::chrono::microseconds(50)}) {
    blocking_result<int> r;
    std::thread t([&r] { r.set(42); });
    EXPECT_EQ(r.take(spin), 42);
    t.join();
  }
}

}  // namespace
}  // namespace rlock::detail
