// acquire_fsm with simulated time: no server, no sleeps.
#include "detail/acquire_fsm.hpp"

#include <gtest/gtest.h>

#include "rlock/error.hpp"

namespace rlock::detail {
namespace {

using namespace std::chrono_literals;
using kind = acquire_fsm::action_kind;
using tp = acquire_fsm::time_point;

constexpr tp t0 = tp{} + 1000s;  // an arbitrary simulated "now"
constexpr auto none = acquire_fsm::channels::none;
constexpr auto handoff = acquire_fsm::channels::handoff;
constexpr auto all = acquire_fsm::channels::all;

acquire_fsm::reply held(long long ttl) {
  acquire_fsm::reply r;
  r.ttl_ms = ttl;
  return r;
}
// A failed queued acquire: the holder hands the lock over through the queue when it unlocks.
acquire_fsm::reply held_by_queued_holder(long long ttl) {
  acquire_fsm::reply r = held(ttl);
  r.holder_hands_off = true;
  return r;
}
acquire_fsm::reply acquired() {
  acquire_fsm::reply r;
  r.acquired = true;
  return r;
}
acquire_fsm::reply failed(errc e) {
  acquire_fsm::reply r;
  r.ec = make_error_code(e);
  return r;
}

acquire_fsm make(tp deadline = tp::max(), bool single = false) {
  acquire_fsm::params p;
  p.deadline = deadline;
  p.single_attempt = single;
  p.subscription_timeout = 7500ms;
  return acquire_fsm(p);
}

TEST(acquire_fsm, free_lock_is_acquired_with_one_script) {
  auto f = make();
  EXPECT_EQ(f.start(t0, true, none).kind, kind::send_acquire);
  auto a = f.on_reply(t0 + 1ms, acquired());
  EXPECT_EQ(a.kind, kind::done);
  EXPECT_TRUE(a.acquired);
  EXPECT_FALSE(a.ec);
  EXPECT_FALSE(a.release);
  EXPECT_EQ(f.attempts(), 1);
}

// A re-entry refused because its owner's hold is gone is tried again at once as a fresh
// acquire, once, even by a single-attempt acquire; the second refusal is an ordinary one.
TEST(acquire_fsm, a_refused_re_entry_is_tried_again_at_once_as_a_fresh_acquire) {
  acquire_fsm::reply gone = held(0);
  gone.hold_gone = true;
  {
    auto f = make(t0 + 1s, true);
    f.start(t0, true, none);
    EXPECT_EQ(f.on_reply(t0 + 1ms, gone).kind, kind::send_acquire);
    auto a = f.on_reply(t0 + 2ms, acquired());
    EXPECT_EQ(a.kind, kind::done);
    EXPECT_TRUE(a.acquired);
    EXPECT_EQ(f.attempts(), 2);
  }
  {
    auto f = make(t0 + 1s, true);
    f.start(t0, true, none);
    EXPECT_EQ(f.on_reply(t0 + 1ms, gone).kind, kind::send_acquire);
    auto a = f.on_reply(t0 + 2ms, gone);  // not twice
    EXPECT_EQ(a.kind, kind::done);
    EXPECT_FALSE(a.acquired);
    EXPECT_EQ(f.attempts(), 2);
  }
  {
    auto f = make(t0 + 1s);
    f.start(t0, true, all);
    EXPECT_EQ(f.on_reply(t0 + 1ms, gone).kind, kind::send_acquire);
    EXPECT_EQ(f.on_reply(t0 + 2ms, held(500)).kind, kind::wait);
  }
  {
    // Not past the deadline.
    auto f = make(t0 + 1s, true);
    f.start(t0, true, none);
    auto a = f.on_reply(t0 + 1s, gone);
    EXPECT_EQ(a.kind, kind::done);
    EXPECT_FALSE(a.acquired);
  }
}

TEST(acquire_fsm, subscribes_before_retrying_then_waits_for_the_ttl) {
  auto f = make();
  f.start(t0, true, none);
  auto a = f.on_reply(t0 + 1ms, held(5000));
  ASSERT_EQ(a.kind, kind::subscribe);
  EXPECT_EQ(a.until, t0 + 1ms + 7500ms);  // bounded by subscription_timeout
  a = f.on_subscribed(t0 + 2ms, {}, all);
  EXPECT_EQ(a.kind, kind::send_acquire) << "re-try after the subscription is confirmed";
  a = f.on_reply(t0 + 3ms, held(4990));
  ASSERT_EQ(a.kind, kind::wait);
  EXPECT_EQ(a.until, t0 + 3ms + 4991ms) << "a lost message costs at most one TTL";
  a = f.on_wake(t0 + 100ms);
  EXPECT_EQ(a.kind, kind::send_acquire);
  a = f.on_reply(t0 + 101ms, acquired());
  EXPECT_TRUE(a.acquired);
  EXPECT_EQ(f.attempts(), 3);
}

TEST(acquire_fsm, already_subscribed_waits_without_a_second_attempt) {
  auto f = make();
  f.start(t0, true, all);
  auto a = f.on_reply(t0 + 1ms, held(1000));
  EXPECT_EQ(a.kind, kind::wait);
  EXPECT_EQ(f.attempts(), 1);
}

TEST(acquire_fsm, ttl_timer_retries_when_the_message_is_lost) {
  auto f = make();
  f.start(t0, true, all);
  auto a = f.on_reply(t0, held(200));
  ASSERT_EQ(a.kind, kind::wait);
  a = f.on_timer(a.until);
  EXPECT_EQ(a.kind, kind::send_acquire);
}

TEST(acquire_fsm, lock_without_ttl_waits_for_a_message_or_the_deadline) {
  auto f = make(t0 + 10s);
  f.start(t0, true, all);
  auto a = f.on_reply(t0, held(-1));
  ASSERT_EQ(a.kind, kind::wait);
  EXPECT_EQ(a.until, t0 + 10s);
}

// A fair waiter (params::max_wait) tries again at least that often, whatever the TTL says and
// with no TTL at all, so that each attempt can move its queue entry's eviction time out.
TEST(acquire_fsm, max_wait_bounds_every_wait_between_attempts) {
  acquire_fsm::params p;
  p.subscription_timeout = 7500ms;
  p.max_wait = 100ms;
  acquire_fsm f(p);
  f.start(t0, true, all);
  auto a = f.on_reply(t0, held(30000));
  ASSERT_EQ(a.kind, kind::wait);
  EXPECT_EQ(a.until, t0 + 100ms);
  a = f.on_timer(a.until);
  ASSERT_EQ(a.kind, kind::send_acquire);
  a = f.on_reply(t0 + 101ms, held(-1));
  ASSERT_EQ(a.kind, kind::wait);
  EXPECT_EQ(a.until, t0 + 201ms) << "a lock without a TTL too";
  a = f.on_timer(a.until);
  ASSERT_EQ(a.kind, kind::send_acquire);
  a = f.on_reply(t0 + 202ms, held(20));
  ASSERT_EQ(a.kind, kind::wait);
  EXPECT_EQ(a.until, t0 + 202ms + 21ms) << "a shorter TTL still ends the wait first";
}

TEST(acquire_fsm, wake_during_an_attempt_folds_into_one_retry) {
  auto f = make();
  f.start(t0, true, all);
  EXPECT_EQ(f.on_wake(t0 + 1ms).kind, kind::none);
  EXPECT_EQ(f.on_wake(t0 + 2ms).kind, kind::none);
  EXPECT_EQ(f.on_wake(t0 + 3ms).kind, kind::none);
  auto a = f.on_reply(t0 + 4ms, held(1000));
  EXPECT_EQ(a.kind, kind::send_acquire) << "the wake-up may postdate the failed attempt";
  a = f.on_reply(t0 + 5ms, held(1000));
  EXPECT_EQ(a.kind, kind::wait) << "three wake-ups cost one extra script, not three";
  EXPECT_EQ(f.attempts(), 2);
}

TEST(acquire_fsm, subscription_confirmed_during_attempt_causes_one_recheck) {
  auto f = make();
  f.start(t0, true, none);
  // A queued neighbour's subscribe completes while our first attempt is in flight.
  EXPECT_EQ(f.on_subscribed(t0 + 1ms, {}, all).kind, kind::none);
  auto a = f.on_reply(t0 + 2ms, held(1000));
  EXPECT_EQ(a.kind, kind::send_acquire);
  a = f.on_reply(t0 + 3ms, held(1000));
  EXPECT_EQ(a.kind, kind::wait);
}

TEST(acquire_fsm, deadline_bounds_waits_and_no_attempt_starts_after_it) {
  const tp deadline = t0 + 300ms;
  auto f = make(deadline);
  f.start(t0, true, all);
  auto a = f.on_reply(t0 + 1ms, held(30000));
  ASSERT_EQ(a.kind, kind::wait);
  EXPECT_EQ(a.until, deadline);
  a = f.on_timer(deadline);
  EXPECT_EQ(a.kind, kind::done);
  EXPECT_FALSE(a.acquired);
  EXPECT_FALSE(a.ec) << "timing out is a plain 'not acquired'";
  EXPECT_EQ(f.attempts(), 1);
}

TEST(acquire_fsm, wake_after_the_deadline_does_not_send) {
  const tp deadline = t0 + 300ms;
  auto f = make(deadline);
  f.start(t0, true, all);
  f.on_reply(t0 + 1ms, held(30000));
  auto a = f.on_wake(deadline + 1ms);
  EXPECT_EQ(a.kind, kind::done);
  EXPECT_FALSE(a.acquired);
}

TEST(acquire_fsm, reply_arriving_after_the_deadline_ends_it) {
  const tp deadline = t0 + 300ms;
  auto f = make(deadline);
  f.start(t0, true, all);
  auto a = f.on_reply(deadline + 1ms, held(10));
  EXPECT_EQ(a.kind, kind::done);
  EXPECT_FALSE(a.acquired);
}

TEST(acquire_fsm, retry_timed_out_at_the_deadline_after_a_held_reply_is_not_acquired) {
  auto f = make(t0 + 100ms);
  f.start(t0, true, all);
  EXPECT_EQ(f.on_reply(t0 + 1ms, held(5000)).kind, kind::wait);
  EXPECT_EQ(f.on_wake(t0 + 50ms).kind, kind::send_acquire);
  // The re-try's request is cut off by the deadline: the server did answer before, so this is
  // "not acquired within the wait", with a defensive release of the unknown attempt.
  auto a = f.on_reply(t0 + 100ms, failed(errc::timeout));
  EXPECT_EQ(a.kind, kind::done);
  EXPECT_FALSE(a.acquired);
  EXPECT_FALSE(a.ec);
  EXPECT_TRUE(a.release);
}

TEST(acquire_fsm, timeout_without_any_answer_is_reported) {
  auto f = make(t0 + 100ms);
  f.start(t0, true, all);
  auto a = f.on_reply(t0 + 100ms, failed(errc::timeout));
  EXPECT_EQ(a.ec, make_error_code(errc::timeout));
  EXPECT_TRUE(a.release);
}

TEST(acquire_fsm, subscribe_is_bounded_by_the_deadline) {
  auto f = make(t0 + 100ms);
  f.start(t0, true, none);
  auto a = f.on_reply(t0 + 1ms, held(30000));
  ASSERT_EQ(a.kind, kind::subscribe);
  EXPECT_EQ(a.until, t0 + 100ms);
}

TEST(acquire_fsm, single_attempt_never_subscribes_or_waits) {
  auto f = make(tp::max(), true);
  EXPECT_EQ(f.start(t0, false, none).kind, kind::send_acquire) << "not queued either";
  auto a = f.on_reply(t0 + 1ms, held(30000));
  EXPECT_EQ(a.kind, kind::done);
  EXPECT_FALSE(a.acquired);
  EXPECT_FALSE(a.ec);
}

TEST(acquire_fsm, queued_waiter_sends_nothing_until_its_turn) {
  auto f = make(t0 + 10s);
  auto a = f.start(t0, false, all);
  ASSERT_EQ(a.kind, kind::wait);
  EXPECT_EQ(a.until, t0 + 10s);
  EXPECT_FALSE(f.is_head());
  EXPECT_EQ(f.on_wake(t0 + 1ms).kind, kind::none);
  EXPECT_EQ(f.on_timer(t0 + 2ms).kind, kind::none);
  EXPECT_EQ(f.attempts(), 0);
  // The previous head acquired with a 30 s lease: sleep until a message, not a futile script.
  a = f.on_turn(t0 + 5ms, t0 + 5ms + 30s, all);
  ASSERT_EQ(a.kind, kind::wait);
  EXPECT_EQ(a.until, t0 + 10s);
  EXPECT_TRUE(f.is_head());
  EXPECT_EQ(f.attempts(), 0);
  EXPECT_EQ(f.on_wake(t0 + 6ms).kind, kind::send_acquire);
}

TEST(acquire_fsm, turn_without_known_holder_attempts_at_once) {
  auto f = make();
  f.start(t0, false, all);
  EXPECT_EQ(f.on_turn(t0 + 1ms, std::nullopt, all).kind, kind::send_acquire);
}

TEST(acquire_fsm, turn_when_not_subscribed_attempts_at_once) {
  auto f = make();
  f.start(t0, false, none);
  EXPECT_EQ(f.on_turn(t0 + 1ms, t0 + 30s, none).kind, kind::send_acquire);
}

// The process enqueues a waiter and starts its machine on the caller's thread; the previous head
// may finish on an I/O thread in between and pass the turn to a machine not started yet.
TEST(acquire_fsm, a_turn_that_comes_before_start_is_kept) {
  auto f = make();
  EXPECT_EQ(f.on_turn(t0, t0 + 30s, all).kind, kind::none);
  EXPECT_EQ(f.attempts(), 0);
  const auto a = f.start(t0 + 1ms, false, all);
  EXPECT_EQ(a.kind, kind::send_acquire);
  EXPECT_TRUE(f.is_head());
}

TEST(acquire_fsm, queued_waiter_times_out_at_its_deadline) {
  auto f = make(t0 + 50ms);
  f.start(t0, false, all);
  auto a = f.on_timer(t0 + 50ms);
  EXPECT_EQ(a.kind, kind::done);
  EXPECT_FALSE(a.acquired);
}

TEST(acquire_fsm, stop_while_waiting_ends_with_stopped) {
  auto f = make();
  f.start(t0, true, all);
  f.on_reply(t0, held(1000));
  auto a = f.on_stop(t0 + 1ms);
  EXPECT_EQ(a.kind, kind::done);
  EXPECT_EQ(a.ec, errc::stopped);
  EXPECT_FALSE(a.acquired);
}

TEST(acquire_fsm, stop_during_an_attempt_that_acquires_asks_for_release) {
  auto f = make();
  f.start(t0, true, all);
  EXPECT_EQ(f.on_stop(t0 + 1ms).kind, kind::none) << "wait for the reply in flight";
  auto a = f.on_reply(t0 + 2ms, acquired());
  EXPECT_EQ(a.kind, kind::done);
  EXPECT_EQ(a.ec, errc::stopped);
  EXPECT_TRUE(a.release) << "nothing may stay held after a stop";
}

TEST(acquire_fsm, stop_during_an_attempt_that_fails_sends_nothing_more) {
  auto f = make();
  f.start(t0, true, none);
  f.on_stop(t0 + 1ms);
  auto a = f.on_reply(t0 + 2ms, held(1000));
  EXPECT_EQ(a.kind, kind::done);
  EXPECT_EQ(a.ec, errc::stopped);
  EXPECT_FALSE(a.release);
}

TEST(acquire_fsm, stop_of_a_queued_waiter) {
  auto f = make();
  f.start(t0, false, all);
  auto a = f.on_stop(t0);
  EXPECT_EQ(a.kind, kind::done);
  EXPECT_EQ(a.ec, errc::stopped);
}

TEST(acquire_fsm, a_failed_attempt_ends_with_its_error_and_a_release_where_it_may_have_run) {
  // A timed-out acquire may have been applied; a script error may have written before it
  // failed. MOVED, ASK and CROSSSLOT are refused before the script runs, and an undo sent to
  // the same node would be redirected too.
  for (const auto& [ec, release] :
       {std::pair{errc::timeout, true}, std::pair{errc::script_error, true},
        std::pair{errc::cluster_redirect, false}}) {
    auto f = make();
    f.start(t0, true, all);
    auto a = f.on_reply(t0, failed(ec));
    EXPECT_EQ(a.kind, kind::done);
    EXPECT_EQ(a.ec, ec);
    EXPECT_EQ(a.release, release) << make_error_code(ec).message();
  }
}

TEST(acquire_fsm, wrong_type_is_reported) {
  auto f = make();
  f.start(t0, true, none);
  auto a = f.on_reply(t0, failed(errc::wrong_type));
  EXPECT_EQ(a.ec, errc::wrong_type);
}

TEST(acquire_fsm, subscription_failure_is_reported) {
  auto f = make();
  f.start(t0, true, none);
  f.on_reply(t0, held(1000));
  auto a = f.on_subscribed(t0 + 7500ms, make_error_code(errc::subscription_timeout), none);
  EXPECT_EQ(a.kind, kind::done);
  EXPECT_EQ(a.ec, errc::subscription_timeout);
}

// A wait shorter than subscription_timeout ends at its deadline while subscribing: the subscribe
// was bounded by the deadline, so its timing out is the wait running out (not acquired, no
// error), as when the machine's own timer fires first (a try_lock_for(2ms) used to throw
// "subscription timed out" when the subscriber's timer won that race).
TEST(acquire_fsm, a_subscription_cut_short_by_the_deadline_is_a_plain_timeout) {
  auto f = make(t0 + 2ms);
  f.start(t0, true, none);
  auto s = f.on_reply(t0 + 1ms, held(1000));
  ASSERT_EQ(s.kind, kind::subscribe);
  EXPECT_EQ(s.until, t0 + 2ms);
  auto a = f.on_subscribed(t0 + 2ms, make_error_code(errc::subscription_timeout), none);
  EXPECT_EQ(a.kind, kind::done);
  EXPECT_FALSE(a.ec);
  EXPECT_FALSE(a.acquired);
}

TEST(acquire_fsm, events_after_done_are_ignored) {
  auto f = make();
  f.start(t0, true, all);
  f.on_reply(t0, acquired());
  EXPECT_TRUE(f.finished());
  EXPECT_EQ(f.on_wake(t0).kind, kind::none);
  EXPECT_EQ(f.on_timer(t0).kind, kind::none);
  EXPECT_EQ(f.on_stop(t0).kind, kind::none);
  EXPECT_EQ(f.on_reply(t0, acquired()).kind, kind::none);
}

// ---- queued mode: which channels a waiter listens on ----

TEST(acquire_fsm, behind_a_queued_holder_only_the_handoff_channel_is_needed) {
  auto f = make();
  f.start(t0, true, none);
  auto a = f.on_reply(t0 + 1ms, held_by_queued_holder(5000));
  ASSERT_EQ(a.kind, kind::subscribe);
  EXPECT_EQ(a.level, handoff) << "no Redisson channel: other unlocks do not wake this process";
  a = f.on_subscribed(t0 + 2ms, {}, handoff);
  EXPECT_EQ(a.kind, kind::send_acquire) << "re-try: a hand-off before the subscription is found";
  a = f.on_reply(t0 + 3ms, held_by_queued_holder(4990));
  ASSERT_EQ(a.kind, kind::wait);
  EXPECT_EQ(a.until, t0 + 3ms + 4991ms) << "a lost hand-off costs at most one TTL";
  EXPECT_TRUE(f.on_handed(t0 + 10ms).acquired);
  EXPECT_EQ(f.attempts(), 2);
}

// A hand-off while an attempt is in flight completes with that attempt's reply: finishing at
// once would let a resend of the attempt land after the owner's unlock and take the lock again.
TEST(acquire_fsm, a_hand_off_during_an_attempt_completes_with_the_attempts_reply) {
  auto f = make();
  f.start(t0, true, none);
  auto a = f.on_reply(t0 + 1ms, held_by_queued_holder(5000));
  ASSERT_EQ(a.kind, kind::subscribe);
  a = f.on_subscribed(t0 + 2ms, {}, handoff);
  ASSERT_EQ(a.kind, kind::send_acquire);
  EXPECT_EQ(f.on_handed(t0 + 3ms).kind, kind::none) << "the re-check is still in flight";
  EXPECT_FALSE(f.finished());
  a = f.on_reply(t0 + 4ms, held_by_queued_holder(4990));  // it ran before the hand-off
  ASSERT_EQ(a.kind, kind::done);
  EXPECT_TRUE(a.acquired);
  EXPECT_FALSE(a.release);
  EXPECT_FALSE(a.ec);

  // Its reply an error (after every resend): still held through the hand-off.
  auto g = make();
  g.start(t0, true, handoff);
  g.on_handed(t0 + 1ms);
  a = g.on_reply(t0 + 2ms, failed(errc::timeout));
  ASSERT_EQ(a.kind, kind::done);
  EXPECT_TRUE(a.acquired);
  EXPECT_FALSE(a.ec);

  // A stop request meanwhile: handed, so released again.
  auto h = make();
  h.start(t0, true, handoff);
  h.on_handed(t0 + 1ms);
  h.on_stop(t0 + 2ms);
  a = h.on_reply(t0 + 3ms, acquired());
  ASSERT_EQ(a.kind, kind::done);
  EXPECT_EQ(a.ec, errc::stopped);
  EXPECT_TRUE(a.release);
}

// params::confirm_handoff (config::replica_sync): a hand-off is confirmed by one more attempt,
// whose reply decides; an attempt in flight at the hand-off is followed by one too (it may have
// run before the hand-off).
TEST(acquire_fsm, a_confirmed_hand_off_completes_with_the_confirming_attempts_reply) {
  auto confirming = [](tp deadline = tp::max()) {
    acquire_fsm::params p;
    p.deadline = deadline;
    p.confirm_handoff = true;
    return acquire_fsm(p);
  };
  // Waiting: the hand-off sends the confirming attempt; acquired, it completes.
  auto f = confirming();
  f.start(t0, true, handoff);
  ASSERT_EQ(f.on_reply(t0 + 1ms, held_by_queued_holder(5000)).kind, kind::wait);
  auto a = f.on_handed(t0 + 2ms);
  ASSERT_EQ(a.kind, kind::send_acquire);
  EXPECT_FALSE(f.finished());
  a = f.on_reply(t0 + 3ms, acquired());
  ASSERT_EQ(a.kind, kind::done);
  EXPECT_TRUE(a.acquired);
  EXPECT_FALSE(a.release);
  EXPECT_EQ(f.attempts(), 2);

  // Not confirmed: the handed hold is released and the error reported.
  auto g = confirming();
  g.start(t0, true, handoff);
  g.on_reply(t0 + 1ms, held_by_queued_holder(5000));
  g.on_handed(t0 + 2ms);
  a = g.on_reply(t0 + 3ms, failed(errc::replication_not_confirmed));
  ASSERT_EQ(a.kind, kind::done);
  EXPECT_FALSE(a.acquired);
  EXPECT_TRUE(a.release);
  EXPECT_EQ(a.ec, errc::replication_not_confirmed);

  // The handed hold already gone (its TTL ran out first): the wait goes on.
  auto h = confirming();
  h.start(t0, true, handoff);
  h.on_reply(t0 + 1ms, held_by_queued_holder(5000));
  h.on_handed(t0 + 2ms);
  a = h.on_reply(t0 + 3ms, held_by_queued_holder(4000));
  EXPECT_EQ(a.kind, kind::wait);
  EXPECT_FALSE(h.finished());

  // A hand-off during an attempt: its reply is followed by the confirming attempt, even past
  // the deadline (the lock is held: it is confirmed or released, never left).
  auto i = confirming(t0 + 5ms);
  i.start(t0, true, handoff);
  EXPECT_EQ(i.on_handed(t0 + 1ms).kind, kind::none);
  a = i.on_reply(t0 + 6ms, held_by_queued_holder(5000));
  ASSERT_EQ(a.kind, kind::send_acquire);
  a = i.on_reply(t0 + 7ms, acquired());
  ASSERT_EQ(a.kind, kind::done);
  EXPECT_TRUE(a.acquired);

  // A stop during the confirming attempt: held, so released.
  auto j = confirming();
  j.start(t0, true, handoff);
  j.on_reply(t0 + 1ms, held_by_queued_holder(5000));
  j.on_handed(t0 + 2ms);
  j.on_stop(t0 + 3ms);
  a = j.on_reply(t0 + 4ms, acquired());
  ASSERT_EQ(a.kind, kind::done);
  EXPECT_EQ(a.ec, errc::stopped);
  EXPECT_TRUE(a.release);
}

TEST(acquire_fsm, a_holder_that_does_not_hand_over_needs_the_redisson_channel_too) {
  auto f = make();
  f.start(t0, true, handoff);
  auto a = f.on_reply(t0 + 1ms, held(5000));  // a Java holder: its unlock only publishes "0"
  ASSERT_EQ(a.kind, kind::subscribe);
  EXPECT_EQ(a.level, all);
  a = f.on_subscribed(t0 + 2ms, {}, all);
  EXPECT_EQ(a.kind, kind::send_acquire) << "a \"0\" before the subscription is not missed";
  a = f.on_reply(t0 + 3ms, held(4990));
  ASSERT_EQ(a.kind, kind::wait);
  EXPECT_EQ(f.on_wake(t0 + 4ms).kind, kind::send_acquire) << "the \"0\" wakes it";
}

TEST(acquire_fsm, a_narrower_subscribe_of_another_waiter_is_not_enough) {
  auto f = make();
  f.start(t0, true, none);
  ASSERT_EQ(f.on_reply(t0 + 1ms, held(5000)).kind, kind::subscribe);
  // Another local waiter's hand-off-only subscribe completes first.
  auto a = f.on_subscribed(t0 + 2ms, {}, handoff);
  ASSERT_EQ(a.kind, kind::subscribe);
  EXPECT_EQ(a.level, all);
  EXPECT_EQ(f.attempts(), 1);
  EXPECT_EQ(f.on_subscribed(t0 + 3ms, {}, all).kind, kind::send_acquire);
}

TEST(acquire_fsm, listening_on_everything_already_needs_no_subscribe) {
  auto f = make();
  f.start(t0, true, all);
  auto a = f.on_reply(t0 + 1ms, held_by_queued_holder(5000));
  EXPECT_EQ(a.kind, kind::wait) << "subscribed at send time to more than needed: no re-try";
  EXPECT_EQ(f.attempts(), 1);
}

TEST(acquire_fsm, a_holder_change_to_one_that_does_not_hand_over_is_followed) {
  auto f = make();
  f.start(t0, true, handoff);
  ASSERT_EQ(f.on_reply(t0 + 1ms, held_by_queued_holder(100)).kind, kind::wait);
  // The queued holder's lease ran out and a Java client took the lock.
  ASSERT_EQ(f.on_timer(t0 + 102ms).kind, kind::send_acquire);
  auto a = f.on_reply(t0 + 103ms, held(30000));
  ASSERT_EQ(a.kind, kind::subscribe);
  EXPECT_EQ(a.level, all);
}

// An acquire tried again after the replicas did not confirm its last try (params::retry_of)
// holds its first attempt until the back-off ends (params::not_before): unlock messages do not
// cut it short, the timer ends it, a stop request ends the acquire at once. It starts no
// attempt at or after the deadline, and then ends with the last try's error.
TEST(acquire_fsm, a_try_again_holds_its_first_attempt_until_its_back_off_ends) {
  acquire_fsm::params p;
  p.deadline = t0 + 10s;
  p.not_before = t0 + 1500ms;
  p.retry_of = make_error_code(errc::replication_not_confirmed);
  {
    acquire_fsm f(p);
    auto a = f.start(t0, true, all);
    EXPECT_EQ(a.kind, kind::wait);
    EXPECT_EQ(a.until, t0 + 1500ms);
    EXPECT_EQ(f.on_wake(t0 + 10ms).kind, kind::none);
    EXPECT_EQ(f.attempts(), 0);
    EXPECT_EQ(f.on_timer(t0 + 1500ms).kind, kind::send_acquire);
    EXPECT_EQ(f.attempts(), 1);
    // After it, the acquire waits as any other: a wake-up re-tries.
    EXPECT_EQ(f.on_reply(t0 + 1501ms, held(5000)).kind, kind::wait);
    EXPECT_EQ(f.on_wake(t0 + 1600ms).kind, kind::send_acquire);
  }
  {
    acquire_fsm f(p);
    f.start(t0, true, all);
    auto a = f.on_stop(t0 + 10ms);
    EXPECT_EQ(a.kind, kind::done);
    EXPECT_EQ(a.ec, errc::stopped);
    EXPECT_FALSE(a.release);
    EXPECT_EQ(f.attempts(), 0);
  }
  {
    // A back-off already over does not wait.
    acquire_fsm f(p);
    EXPECT_EQ(f.start(t0 + 2s, true, all).kind, kind::send_acquire);
  }
  {
    // Never past the deadline: an acquire that reaches it before its attempt ends with the
    // last try's error, not as a wait that ran out.
    p.deadline = t0 + 1s;
    acquire_fsm f(p);
    EXPECT_EQ(f.start(t0, true, all).until, t0 + 1s);
    auto a = f.on_timer(t0 + 1s);
    EXPECT_EQ(a.kind, kind::done);
    EXPECT_EQ(a.ec, errc::replication_not_confirmed);
    EXPECT_FALSE(a.acquired);
    EXPECT_FALSE(a.release);
    acquire_fsm late(p);
    a = late.start(t0 + 2s, true, all);
    EXPECT_EQ(a.kind, kind::done);
    EXPECT_EQ(a.ec, errc::replication_not_confirmed);
    EXPECT_EQ(late.attempts(), 0);
  }
  {
    // An attempt whose reply the deadline cut off: that error too, and the attempt is undone.
    p.deadline = t0 + 1s;
    p.not_before = t0 + 500ms;
    acquire_fsm f(p);
    f.start(t0, true, all);
    EXPECT_EQ(f.on_timer(t0 + 500ms).kind, kind::send_acquire);
    auto a = f.on_reply(t0 + 1s, failed(errc::timeout));
    EXPECT_EQ(a.kind, kind::done);
    EXPECT_EQ(a.ec, errc::replication_not_confirmed);
    EXPECT_TRUE(a.release);
    // Before the deadline a timeout is the attempt's own error.
    acquire_fsm early(p);
    early.start(t0, true, all);
    early.on_timer(t0 + 500ms);
    EXPECT_EQ(early.on_reply(t0 + 900ms, failed(errc::timeout)).ec, errc::timeout);
  }
}

}  // namespace
}  // namespace rlock::detail
