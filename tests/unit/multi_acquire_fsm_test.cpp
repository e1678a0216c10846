// multi_acquire_fsm with simulated time: all or nothing, quorum, bounded waits, no spinning on
// dead servers, stop requests.
#include "detail/multi_acquire_fsm.hpp"

#include <gtest/gtest.h>

#include "rlock/error.hpp"

namespace rlock::detail {
namespace multi_fsm_test {

using namespace std::chrono_literals;
using fsm = multi_acquire_fsm;
using kind = fsm::action_kind;
using result = fsm::member_result;
constexpr fsm::time_point t0 = fsm::time_point{} + 1h;

fsm::params all_of(std::size_t n, fsm::time_point deadline) {
  fsm::params p;
  p.members = n;
  p.quorum = n;
  p.deadline = deadline;
  return p;
}

fsm::params majority_of(std::size_t n, fsm::time_point deadline) {
  fsm::params p = all_of(n, deadline);
  p.quorum = n / 2 + 1;
  return p;
}

TEST(multi_acquire_fsm, takes_every_member_in_order_then_is_held) {
  fsm f(all_of(3, t0 + 1s));
  auto a = f.start(t0);
  for (std::size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(a.kind, kind::acquire);
    EXPECT_EQ(a.member, i);
    EXPECT_EQ(a.until, t0 + 1s) << "a MultiLock member may wait for all that is left";
    a = f.on_member(result::held, {}, t0);
  }
  ASSERT_EQ(a.kind, kind::done);
  EXPECT_TRUE(a.acquired);
  EXPECT_EQ(a.members, (std::vector<std::size_t>{0, 1, 2}));
}

TEST(multi_acquire_fsm, a_member_waits_at_most_one_round_wait_whatever_the_deadline) {
  fsm f(all_of(2, t0 + 60s));
  auto a = f.start(t0);
  EXPECT_EQ(a.until, t0 + 1500ms);
  a = f.on_member(result::busy, {}, t0 + 1500ms);
  ASSERT_EQ(a.kind, kind::release);
  a = f.on_released(t0 + 1500ms, 30ms);
  ASSERT_EQ(a.kind, kind::pause);
  a = f.on_paused(t0 + 1530ms);
  ASSERT_EQ(a.kind, kind::acquire);
  EXPECT_EQ(a.until, t0 + 3030ms);
}

TEST(multi_acquire_fsm, a_busy_member_releases_the_others_and_tries_again_after_the_pause) {
  fsm f(all_of(3, t0 + 3s));
  auto a = f.start(t0);
  a = f.on_member(result::held, {}, t0);
  a = f.on_member(result::held, {}, t0 + 10ms);
  a = f.on_member(result::busy, {}, t0 + 1s);
  ASSERT_EQ(a.kind, kind::release);
  EXPECT_EQ(a.members, (std::vector<std::size_t>{0, 1}));
  a = f.on_released(t0 + 1s, 20ms);
  ASSERT_EQ(a.kind, kind::pause);
  EXPECT_EQ(a.until, t0 + 1s + 20ms);
  a = f.on_paused(t0 + 1s + 20ms);
  ASSERT_EQ(a.kind, kind::acquire);
  EXPECT_EQ(a.member, 0U) << "a new round starts at the first member";
}

TEST(multi_acquire_fsm, the_deadline_ends_it_not_held_with_nothing_left_held) {
  fsm f(all_of(2, t0 + 1s));
  auto a = f.start(t0);
  a = f.on_member(result::held, {}, t0);
  a = f.on_member(result::busy, {}, t0 + 1s);
  ASSERT_EQ(a.kind, kind::release);
  a = f.on_released(t0 + 1s, 5ms);
  ASSERT_EQ(a.kind, kind::done);
  EXPECT_FALSE(a.acquired);
  EXPECT_FALSE(a.ec);
  // A pause that would pass the deadline stops at it.
  fsm g(all_of(2, t0 + 1s));
  a = g.start(t0);
  a = g.on_member(result::busy, {}, t0 + 990ms);
  ASSERT_EQ(a.kind, kind::release);
  EXPECT_TRUE(a.members.empty());
  a = g.on_released(t0 + 990ms, 20ms);
  ASSERT_EQ(a.kind, kind::pause);
  EXPECT_EQ(a.until, t0 + 1s);
  a = g.on_paused(t0 + 1s);
  ASSERT_EQ(a.kind, kind::done);
  EXPECT_FALSE(a.acquired);
}

TEST(multi_acquire_fsm, a_single_try_makes_one_round_of_single_tries) {
  fsm f(all_of(2, t0));
  auto a = f.start(t0);
  ASSERT_EQ(a.kind, kind::acquire);
  EXPECT_EQ(a.until, t0);
  a = f.on_member(result::held, {}, t0 + 1ms);
  ASSERT_EQ(a.kind, kind::acquire);
  EXPECT_EQ(a.until, t0 + 1ms);
  a = f.on_member(result::busy, {}, t0 + 2ms);
  ASSERT_EQ(a.kind, kind::release);
  a = f.on_released(t0 + 3ms, 10ms);
  ASSERT_EQ(a.kind, kind::done);
  EXPECT_FALSE(a.acquired);
}

TEST(multi_acquire_fsm, a_quorum_tolerates_a_minority_of_failures_and_shares_the_wait) {
  fsm f(majority_of(5, t0 + 5s));
  auto a = f.start(t0);
  EXPECT_EQ(a.until, t0 + 1s) << "a fifth of what is left";
  a = f.on_member(result::failed, make_error_code(errc::connection_refused), t0);
  EXPECT_EQ(a.member, 1U);
  a = f.on_member(result::held, {}, t0 + 1ms);
  a = f.on_member(result::busy, {}, t0 + 2ms);
  EXPECT_EQ(a.kind, kind::acquire) << "3 of 5 can still be held";
  a = f.on_member(result::held, {}, t0 + 3ms);
  a = f.on_member(result::held, {}, t0 + 4ms);
  ASSERT_EQ(a.kind, kind::done);
  EXPECT_TRUE(a.acquired);
  EXPECT_EQ(a.members, (std::vector<std::size_t>{1, 3, 4}));
}

TEST(multi_acquire_fsm, a_quorum_out_of_reach_ends_the_round_at_once) {
  fsm f(majority_of(3, t0 + 5s));
  auto a = f.start(t0);
  a = f.on_member(result::held, {}, t0);
  a = f.on_member(result::busy, {}, t0 + 1ms);
  a = f.on_member(result::busy, {}, t0 + 2ms);
  ASSERT_EQ(a.kind, kind::release);
  EXPECT_EQ(a.members, (std::vector<std::size_t>{0}));
  fsm g(majority_of(3, t0 + 5s));
  a = g.start(t0);
  a = g.on_member(result::busy, {}, t0);
  a = g.on_member(result::busy, {}, t0 + 1ms);
  ASSERT_EQ(a.kind, kind::release) << "the third member cannot make a majority: not tried";
  EXPECT_TRUE(a.members.empty());
}

TEST(multi_acquire_fsm, only_errors_end_it_with_the_first_error_instead_of_spinning) {
  fsm f(majority_of(3, fsm::time_point::max()));
  auto a = f.start(t0);
  EXPECT_EQ(a.until, t0 + 1500ms) << "no deadline: a bounded wait per member";
  a = f.on_member(result::failed, make_error_code(errc::connection_refused), t0);
  a = f.on_member(result::held, {}, t0);
  a = f.on_member(result::failed, make_error_code(errc::timeout), t0);
  ASSERT_EQ(a.kind, kind::release);
  a = f.on_released(t0, 1ms);
  ASSERT_EQ(a.kind, kind::done);
  EXPECT_EQ(a.ec, errc::connection_refused);
}

TEST(multi_acquire_fsm, a_stop_request_releases_and_ends_at_once) {
  fsm f(all_of(3, fsm::time_point::max()));
  auto a = f.start(t0);
  a = f.on_member(result::held, {}, t0);
  a = f.on_member(result::failed, make_error_code(errc::stopped), t0);
  ASSERT_EQ(a.kind, kind::release);
  EXPECT_EQ(a.members, (std::vector<std::size_t>{0}));
  a = f.on_released(t0, 1ms);
  ASSERT_EQ(a.kind, kind::done);
  EXPECT_EQ(a.ec, errc::stopped);
  // In a quorum too, where a failure could otherwise be tolerated.
  fsm g(majority_of(3, fsm::time_point::max()));
  a = g.start(t0);
  a = g.on_member(result::failed, make_error_code(errc::shutdown), t0);
  ASSERT_EQ(a.kind, kind::release);
  a = g.on_released(t0, 1ms);
  ASSERT_EQ(a.kind, kind::done);
  EXPECT_EQ(a.ec, errc::shutdown);
}

}  // namespace multi_fsm_test
}  // namespace rlock::detail
