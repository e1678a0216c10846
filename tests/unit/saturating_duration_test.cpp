// detail::saturating_ceil_ms: a caller's wait in whole milliseconds, never overflowing.
#include "rlock/detail/saturating_duration.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace rlock::detail {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

TEST(saturating_ceil_ms, rounds_up_within_range) {
  EXPECT_EQ(saturating_ceil_ms(1500us), 2ms);
  EXPECT_EQ(saturating_ceil_ms(3s), 3000ms);
  EXPECT_EQ(saturating_ceil_ms(0ns), 0ms);
  EXPECT_EQ(saturating_ceil_ms(-1500us), -1ms);
  EXPECT_EQ(saturating_ceil_ms(std::chrono::duration<double>(0.25)), 250ms);
}

// A plain ceil<milliseconds>(seconds::max()) wraps to a negative count: "do not wait".
TEST(saturating_ceil_ms, clamps_what_milliseconds_cannot_hold) {
  EXPECT_EQ(saturating_ceil_ms(std::chrono::seconds::max()), milliseconds::max());
  EXPECT_EQ(saturating_ceil_ms(std::chrono::hours::max()), milliseconds::max());
  EXPECT_EQ(saturating_ceil_ms(std::chrono::seconds::min()), milliseconds::min());
  EXPECT_EQ(saturating_ceil_ms(milliseconds::max()), milliseconds::max());
  EXPECT_EQ(saturating_ceil_ms(std::chrono::nanoseconds::max()),
            std::chrono::ceil<milliseconds>(std::chrono::nanoseconds::max()));
}

}  // namespace
}  // namespace rlock::detail
