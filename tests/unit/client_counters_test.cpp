// detail::client_counters: how a completion is classified, and the snapshot's in-flight gauge.
#include "detail/client_counters.hpp"

#include <gtest/gtest.h>

#include "rlock/error.hpp"

namespace rlock::detail {
namespace {

TEST(client_counters, a_completion_counts_by_its_code) {
  client_counters c;
  for (int i = 0; i < 6; ++i) client_counters::add(c.requests);
  c.completed({});
  c.completed(make_error_code(errc::timeout));
  c.completed(make_error_code(errc::connection_lost));
  c.completed(make_error_code(errc::wrong_type));
  c.completed(make_error_code(errc::shutdown));
  const client_stats s = c.snapshot();
  EXPECT_EQ(s.requests, 6U);
  EXPECT_EQ(s.requests_failed, 4U);
  EXPECT_EQ(s.requests_timed_out, 1U);
  EXPECT_EQ(s.requests_unknown, 1U);
  EXPECT_EQ(s.requests_in_flight, 1U);
}

TEST(client_counters, in_flight_never_goes_below_zero) {
  client_counters c;
  // A completion counted before its request is read (the counts are relaxed): clamped at 0.
  c.completed({});
  EXPECT_EQ(c.snapshot().requests_in_flight, 0U);
  client_counters::add(c.renewals, 3);
  EXPECT_EQ(c.snapshot().renewals, 3U);
}

TEST(client_counters, each_counter_reaches_its_own_field) {
  client_counters c;
  client_counters::add(c.messages, 1);
  client_counters::add(c.subscribes, 2);
  client_counters::add(c.unsubscribes, 3);
  client_counters::add(c.writes_not_confirmed, 4);
  client_counters::add(c.holds_lost, 5);
  const client_stats s = c.snapshot();
  EXPECT_EQ(s.messages, 1U);
  EXPECT_EQ(s.subscribes, 2U);
  EXPECT_EQ(s.unsubscribes, 3U);
  EXPECT_EQ(s.writes_not_confirmed, 4U);
  EXPECT_EQ(s.holds_lost, 5U);
}

}  // namespace
}  // namespace rlock::detail
