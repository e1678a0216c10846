// permit_renewal (rlock/permit_keeper.hpp): when a kept permit's lease is renewed and when it
// counts as lost, with simulated time: no server, no sleeps.
#include "detail/permit_renewal.hpp"

#include <gtest/gtest.h>

namespace rlock::detail {
// Named, not anonymous: the unity build puts this file beside other tests' helpers.
namespace permit_renewal_test {

using namespace std::chrono_literals;
using step = permit_renewal::step;
using tp = permit_renewal::clock::time_point;

constexpr tp t0 = tp{} + 1000s;

TEST(permit_renewal, renews_every_third_of_the_lease_from_each_confirmed_send) {
  permit_renewal r(900ms, true, t0 + 900ms);  // the lease was set at t0
  auto a = r.next(t0);
  EXPECT_EQ(a.what, step::wait);
  EXPECT_EQ(a.until, t0 + 300ms);
  a = r.next(t0 + 300ms);
  ASSERT_EQ(a.what, step::renew);
  EXPECT_EQ(a.until, t0 + 900ms) << "its answer is awaited until the lease may end";
  a = r.on_reply(t0 + 320ms, false, true);  // confirmed: leased from its send time
  EXPECT_EQ(r.valid_until(), t0 + 300ms + 900ms);
  EXPECT_EQ(a.what, step::wait);
  EXPECT_EQ(a.until, t0 + 600ms);
  for (int i = 2; i < 10; ++i) {  // and so on, one renewal per third
    const tp now = t0 + i * 300ms;
    ASSERT_EQ(r.next(now).what, step::renew) << i;
    ASSERT_EQ(r.on_reply(now + 5ms, false, true).until, now + 300ms) << i;
  }
}

TEST(permit_renewal, a_permit_found_gone_is_lost_for_good) {
  permit_renewal r(900ms, true, t0 + 900ms);
  ASSERT_EQ(r.next(t0 + 300ms).what, step::renew);
  EXPECT_EQ(r.on_reply(t0 + 310ms, false, false).what, step::lost);
  EXPECT_EQ(r.next(t0 + 320ms).what, step::lost);
  EXPECT_EQ(r.on_reply(t0 + 330ms, false, true).what, step::lost);
}

TEST(permit_renewal, an_unanswered_renewal_is_a_loss_at_the_leases_end) {
  permit_renewal r(900ms, true, t0 + 900ms);
  const auto a = r.next(t0 + 300ms);
  ASSERT_EQ(a.what, step::renew);
  // The driver waits for the answer until a.until; none came.
  EXPECT_EQ(r.next(a.until).what, step::lost);
  EXPECT_EQ(r.on_reply(a.until + 1ms, false, true).what, step::lost) << "too late to count";
}

TEST(permit_renewal, errors_are_retried_every_tenth_of_the_lease_until_it_ends) {
  permit_renewal r(900ms, true, t0 + 900ms);
  ASSERT_EQ(r.next(t0 + 300ms).what, step::renew);
  auto a = r.on_reply(t0 + 310ms, true, false);
  EXPECT_EQ(a.what, step::wait);
  EXPECT_EQ(a.until, t0 + 310ms + 90ms);
  EXPECT_EQ(r.valid_until(), t0 + 900ms) << "an error moves nothing";
  tp now = a.until;
  while (now < t0 + 900ms) {
    a = r.next(now);
    if (a.what == step::lost) break;
    ASSERT_EQ(a.what, step::renew);
    a = r.on_reply(now + 1ms, true, false);
    if (a.what == step::lost) break;
    ASSERT_EQ(a.what, step::wait);
    ASSERT_LE(a.until, t0 + 900ms) << "never waits past the lease's end";
    now = a.until;
  }
  EXPECT_EQ(r.next(t0 + 900ms).what, step::lost);
}

TEST(permit_renewal, a_retry_after_an_error_that_succeeds_keeps_the_permit) {
  permit_renewal r(900ms, true, t0 + 900ms);
  ASSERT_EQ(r.next(t0 + 300ms).what, step::renew);
  const auto a = r.on_reply(t0 + 310ms, true, false);
  ASSERT_EQ(r.next(a.until).what, step::renew);
  EXPECT_EQ(r.on_reply(a.until + 2ms, false, true).what, step::wait);
  EXPECT_EQ(r.valid_until(), a.until + 900ms);
}

TEST(permit_renewal, the_retry_delay_is_at_least_1_ms_and_at_most_1_s) {
  permit_renewal small(3ms, true, t0 + 3ms);
  ASSERT_EQ(small.next(t0 + 1ms).what, step::renew);
  EXPECT_EQ(small.on_reply(t0 + 1ms, true, false).until, t0 + 2ms);
  permit_renewal big(60s, true, t0 + 60s);
  ASSERT_EQ(big.next(t0 + 20s).what, step::renew);
  EXPECT_EQ(big.on_reply(t0 + 20s, true, false).until, t0 + 21s);
}

TEST(permit_renewal, without_renewal_the_permit_is_lost_when_the_lease_ends) {
  permit_renewal r(500ms, false, t0 + 500ms);
  const auto a = r.next(t0);
  EXPECT_EQ(a.what, step::wait);
  EXPECT_EQ(a.until, t0 + 500ms);
  EXPECT_EQ(r.next(t0 + 499ms).what, step::wait);
  EXPECT_EQ(r.next(t0 + 500ms).what, step::lost);
}

TEST(permit_renewal, a_bound_already_past_is_lost_at_once) {
  permit_renewal r(900ms, true, t0);
  EXPECT_EQ(r.next(t0).what, step::lost);
}

}  // namespace permit_renewal_test
}  // namespace rlock::detail
