// When the undo of an acquire goes out again after a failed round (undo_policy.hpp).
#include "detail/undo_policy.hpp"

#include <gtest/gtest.h>

#include <chrono>

#include "rlock/error.hpp"

namespace rlock::detail {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// A round that timed out, with the next one 1 s away and the hold gone in 30 s.
undo_round_failure timed_out() {
  undo_round_failure f;
  f.ec = make_error_code(errc::timeout);
  const auto now = steady::time_point(100s);
  f.next_round = now + 1s;
  f.hold_gone_by = now + 30s;
  return f;
}

TEST(undo_policy, a_round_that_may_go_through_later_goes_out_again) {
  for (errc e : {errc::timeout, errc::connection_lost, errc::not_connected,
                 errc::connection_refused, errc::server_busy, errc::protocol_error}) {
    undo_round_failure f = timed_out();
    f.ec = make_error_code(e);
    EXPECT_TRUE(undo_again(f)) << f.ec.message();
  }
  undo_round_failure f = timed_out();
  f.ec = std::make_error_code(std::errc::connection_reset);  // from the OS
  EXPECT_TRUE(undo_again(f));
}

TEST(undo_policy, a_refusal_that_stays_ends_the_undo) {
  for (errc e : {errc::no_permission, errc::wrong_type, errc::out_of_memory, errc::script_error,
                 errc::read_only, errc::command_unavailable, errc::auth_failed, errc::shutdown}) {
    undo_round_failure f = timed_out();
    f.ec = make_error_code(e);
    EXPECT_FALSE(undo_again(f)) << f.ec.message();
  }
}

TEST(undo_policy, a_closing_client_sends_no_round_after_its_last) {
  undo_round_failure f = timed_out();
  f.closing = true;
  EXPECT_FALSE(undo_again(f));
}

TEST(undo_policy, the_round_is_the_last_when_the_owner_waits_for_it) {
  undo_round_failure f = timed_out();
  f.others_waiting = true;
  EXPECT_FALSE(undo_again(f));
}

TEST(undo_policy, no_round_goes_out_when_no_hold_can_be_left_by_then) {
  undo_round_failure f = timed_out();
  f.next_round = f.hold_gone_by - 1ms;
  EXPECT_TRUE(undo_again(f));
  f.next_round = f.hold_gone_by;
  EXPECT_FALSE(undo_again(f));
  f.next_round = f.hold_gone_by + 1s;
  EXPECT_FALSE(undo_again(f));
}

}  // namespace
}  // namespace rlock::detail
