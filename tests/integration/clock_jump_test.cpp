// The Redis server's wall clock jumps (an NTP step, an operator setting the clock: fault N18 of
// the reference's fault plan) while locks are held and waited for. Redis keeps key expiry and
// TIME on its wall clock, so a jump moves every lease and every queue deadline at once; the
// clients' own timing is on steady_clock and does not move.
//
// What lock.hpp and the queue's scripts promise, and these tests hold them to:
//  - forward past a lease: the lock is gone on the server; its holder is told (loss_token())
//    by its next renewal, and a waiter gets the lock within the lease it was told to wait for;
//    the old holder's unlock cannot release the new hold;
//  - forward past the waiters' queue deadlines only: the holder keeps its lock, and the waiters
//    whose entries went stale queue again and get the lock, the first within a refresh period;
//  - backward: the lease on the server is longer by the jump (a renewal never shortens a TTL),
//    the renewals go on, and the queue still hands the lock over at once; a dead waiter holds a
//    lock handed to it for its lease at most, though its queue deadline now lies far ahead;
//  - a jump of a client's own wall clock, either way, changes nothing: its waits, leases and
//    renewals are on steady_clock.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <future>
#include <optional>
#include <stop_token>
#include <thread>
#include <utility>

#include "common.hpp"
#include "support/clock_shift.hpp"
#include "support/process.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

// How many of the lock `name`'s keys exist: the lock, its queue and the queue's liveness hash.
std::string lock_keys_left(const redis_server& server, const std::string& name) {
  return server.cli(
      {"EXISTS", name, "rlock_queue:{" + name + "}", "rlock_queue_live:{" + name + "}"});
}

// A server whose wall clock follows `shift`.
server_options shifted(const clock_shift& shift) {
  server_options so;
  so.extra_env = shift.env();
  return so;
}

// A waiter on its own thread: try_lock(wait) on `l`; when it gets the lock it records when, and
// holds it until release() (or its destruction), then unlocks.
class waiter {
 public:
  waiter(lock& l, std::chrono::milliseconds wait)
      : acquired_at_(acquired_.get_future()),
        done_(std::async(std::launch::async, [this, &l, wait] {
          const bool ok = l.try_lock(wait);
          acquired_.set_value(ok ? std::optional(steady::now()) : std::nullopt);
          if (!ok) return;
          release_.get_future().wait();
          l.unlock_or_throw();
        })) {}
  ~waiter() {
    release();
    if (done_.valid()) done_.wait();
  }
  waiter(const waiter&) = delete;
  waiter& operator=(const waiter&) = delete;
  waiter(waiter&&) = delete;
  waiter& operator=(waiter&&) = delete;

  // When it got the lock, or nullopt if its wait ended without it; waits up to `limit`, then
  // fails the test.
  std::optional<steady::time_point> acquired(std::chrono::milliseconds limit = 20s) {
    if (acquired_at_.wait_for(limit) != std::future_status::ready) {
      ADD_FAILURE() << "the waiter neither got the lock nor gave up within " << limit.count()
                    << " ms";
      return std::nullopt;
    }
    return acquired_at_.get();
  }
  // Whether its wait has ended (with or without the lock), waiting up to `limit`.
  bool done_waiting_for(std::chrono::milliseconds limit) const {
    return acquired_at_.wait_for(limit) == std::future_status::ready;
  }
  // Lets it unlock, and waits until it has (rethrowing what its unlock threw).
  void release() {
    if (!released_) {
      released_ = true;
      release_.set_value();
    }
  }
  void join() {
    release();
    done_.get();
  }

 private:
  std::promise<std::optional<steady::time_point>> acquired_;
  std::shared_future<std::optional<steady::time_point>> acquired_at_;
  std::promise<void> release_;
  bool released_ = false;
  std::future<void> done_;  // last: its thread uses the members above
};

// A server whose clock jumps, and two clients of it whose watchdog leases are 1500 ms (renewed
// every 500 ms).
class clock_jump_watchdog : public ::testing::Test {
 protected:
  static config watchdog_config(const redis_server& server) {
    config cfg = config_for(server);
    cfg.lock_watchdog_timeout = 1500ms;
    return cfg;
  }

  clock_shift shift;
  redis_server server{shifted(shift)};
  client a{watchdog_config(server)};
  client b{watchdog_config(server)};
};

TEST_F(clock_jump_watchdog, a_forward_jump_past_the_lease_is_reported_and_frees_the_lock) {
  lock la = a.get_lock("ahead");
  la.lock();
  std::promise<steady::time_point> lost;
  const std::stop_callback on_loss(la.loss_token(), [&lost] { lost.set_value(steady::now()); });
  lock lb = b.get_lock("ahead");
  waiter w(lb, 20s);
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{ahead}") == 1; }, 10s));

  const auto jumped = steady::now();
  shift.set(60s);  // past the lease, and past the waiter's queue deadline too

  auto told = lost.get_future();
  ASSERT_EQ(told.wait_for(10s), std::future_status::ready) << "the holder was never told";
  EXPECT_LT(ms_between(jumped, told.get()), 500 + 1000) << "told by its next renewal";
  const auto got = w.acquired();
  ASSERT_TRUE(got.has_value()) << "the waiter did not get the freed lock";
  EXPECT_LT(ms_between(jumped, *got), 1500 + 1500) << "within the lease it waited for";

  // The old holder's unlock must not release the new hold.
  try {
    la.unlock_or_throw();
    ADD_FAILURE() << "the unlock of a lost hold must report not_owner";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::not_owner) << e.what();
  }
  const raw_reply fields = server.cli_reply({"HKEYS", "ahead"});
  ASSERT_EQ(fields.elements.size(), 1u);
  EXPECT_TRUE(fields.elements[0].str.starts_with(b.id())) << "the waiter's hold is intact";

  w.join();
  EXPECT_EQ(lock_keys_left(server, "ahead"), "0");
}

// Both waiters' queue deadlines (at most 3 s ahead) pass in the jump; the holder's lease (60 s)
// does not. 4.5 s: the queue's keys outlive the jump (their TTL is twice the liveness) and the
// unlock drops the stale entries; 10 s: the keys expire in it. Either way the unlock finds
// nobody to hand the lock to (unless a refresh ran between the jump and the unlock), deletes
// it, and each waiter learns at its next refresh that it is no longer queued and queues again:
// the first to run gets the free lock, the other queues behind it and is handed the lock when
// it is released, or finds it free at its own refresh. (A waiter whose subscription completes
// just after the unlock tries at once, as every waiter does once subscribed, and may be first.)
class clock_jump_stale : public ::testing::TestWithParam<std::chrono::milliseconds> {};

TEST_P(clock_jump_stale, waiters_whose_queue_entries_a_forward_jump_made_stale_queue_again) {
  clock_shift shift;
  redis_server server(shifted(shift));
  config cfg = config_for(server);
  cfg.lock_queue_liveness = 3000ms;  // entries refreshed every second
  client a(cfg);
  client b(cfg);
  client c(cfg);
  lock la = a.get_lock("stale");
  la.lock(60s);  // an explicit lease: not renewed, and far longer than the jump
  lock lb = b.get_lock("stale");
  waiter wb(lb, 30s);
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{stale}") == 1; }, 10s));
  lock lc = c.get_lock("stale");
  waiter wc(lc, 30s);
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{stale}") == 2; }, 10s));

  shift.set(GetParam());
  const auto released = steady::now();
  la.unlock_or_throw();

  // The first to get the lock: the other waits behind it until it is released.
  const auto limit = released + 20s;
  while (!wb.done_waiting_for(10ms) && !wc.done_waiting_for(10ms) && steady::now() < limit) {
  }
  // When each got it, if it has yet (a wait that ended without the lock: never).
  const auto at = [](waiter& w) {
    return w.done_waiting_for(0ms) ? w.acquired(0ms).value_or(steady::time_point::max())
                                   : steady::time_point::max();
  };
  const bool b_first = at(wb) <= at(wc);
  waiter& first = b_first ? wb : wc;
  waiter& second = b_first ? wc : wb;
  const auto got_first = first.acquired(0ms);
  ASSERT_TRUE(got_first.has_value()) << "nobody got the released lock";
  EXPECT_LT(ms_between(released, *got_first), 1000 + 1500) << "within a refresh period";
  const auto first_released = steady::now();
  first.join();
  const auto got_second = second.acquired();
  ASSERT_TRUE(got_second.has_value()) << "the second waiter did not get the lock";
  // Handed over at once if it had queued again by then; if the first took the lock before
  // either refresh ran, the second learns at its own refresh that the lock is free.
  EXPECT_LT(ms_between(first_released, *got_second), 1000 + 1500) << "within a refresh period";
  second.join();
  EXPECT_EQ(lock_keys_left(server, "stale"), "0");
}

INSTANTIATE_TEST_SUITE_P(jumps, clock_jump_stale, ::testing::Values(4500ms, 10s),
                         [](const ::testing::TestParamInfo<std::chrono::milliseconds>& p) {
                           return std::to_string(p.param.count()) + "ms";
                         });

TEST_F(clock_jump_watchdog, a_backward_jump_changes_neither_renewal_nor_hand_off) {
  lock la = a.get_lock("behind");
  la.lock();
  const std::stop_token lost = la.loss_token();
  lock lb = b.get_lock("behind");
  waiter w(lb, 20s);
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{behind}") == 1; }, 10s));

  shift.set(-60s);
  // The lease now ends a minute later on the server's clock, and stays so: a renewal never
  // shortens a TTL (lock_renew.lua). The renewals go on, each confirming the hold.
  const auto jumped = steady::now();
  EXPECT_GT(server.cli_reply({"PTTL", "behind"}).integer, 1500 + 55'000);
  ASSERT_TRUE(wait_until([&] { return la.valid_until() > jumped + 1500ms; }, 5s))
      << "no renewal confirmed the hold after the jump";
  EXPECT_FALSE(lost.stop_requested());
  EXPECT_GT(server.cli_reply({"PTTL", "behind"}).integer, 1500 + 55'000);

  const auto released = steady::now();
  la.unlock_or_throw();
  const auto got = w.acquired();
  ASSERT_TRUE(got.has_value());
  EXPECT_LT(ms_between(released, *got), 1000) << "handed over at once, as before the jump";
  w.join();
  EXPECT_EQ(lock_keys_left(server, "behind"), "0");
}

TEST(clock_jump, a_dead_waiter_handed_the_lock_after_a_backward_jump_holds_it_for_its_lease) {
  clock_shift shift;
  redis_server server(shifted(shift));
  config cfg = config_for(server);
  client a(cfg);
  lock la = a.get_lock("dead");
  la.lock();
  // Lease 800 ms, queue liveness 1500 ms.
  child_process doomed(RLOCK_LOCK_WORKER,
                       std::vector<std::string>{"wait-hold", server.url(), "dead", "800", "1500"});
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{dead}") == 1; }, 10s));
  doomed.kill(SIGKILL);
  ASSERT_TRUE(doomed.wait_for(5s).has_value());

  shift.set(-60s);       // the dead waiter's queue deadline now lies a minute ahead
  la.unlock_or_throw();  // handed to the dead waiter
  const long long pttl = server.cli_reply({"PTTL", "dead"}).integer;
  EXPECT_GT(pttl, 0) << "handed to the waiter that is still queued";
  EXPECT_LE(pttl, 800) << "handed for longer than the waiter's lease";

  client second(cfg);
  lock l2 = second.get_lock("dead");
  const auto t0 = steady::now();
  ASSERT_TRUE(l2.try_lock(10s));
  EXPECT_LT(ms_since(t0), 800 + 1000) << "recovered within the dead waiter's lease";
  l2.unlock_or_throw();
}

// The environment of a worker whose wall clock follows `shift`. A sanitizer build's runtime must
// come first among the loaded libraries, and LD_PRELOAD puts the clock library before it: ASan
// is told not to check that (the clock library intercepts nothing it instruments).
std::vector<std::string> shifted_worker_env(const clock_shift& shift) {
  std::vector<std::string> env = shift.env();
  const char* asan = std::getenv("ASAN_OPTIONS");  // NOLINT(concurrency-mt-unsafe): no setenv
  env.push_back(std::string("ASAN_OPTIONS=") + (asan != nullptr ? asan : "") +
                (asan != nullptr && *asan != '\0' ? ":" : "") + "verify_asan_link_order=0");
  return env;
}

TEST(clock_jump, a_jump_of_a_clients_own_wall_clock_changes_neither_its_waits_nor_renewals) {
  redis_server server;
  clock_shift shift;  // the workers' clocks, not the server's
  client a(config_for(server));
  lock la = a.get_lock("own");
  la.lock();
  child_options shifted_child;
  shifted_child.extra_env = shifted_worker_env(shift);

  // A wait of 2 s, an hour into which the worker's wall clock jumps: it still lasts 2 s.
  const auto started = steady::now();
  child_process timed(RLOCK_LOCK_WORKER,
                      std::vector<std::string>{"try-hold", server.url(), "own", "600", "2000"},
                      shifted_child);
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{own}") == 1; }, 10s));
  shift.set(3600s);
  const std::optional<int> status = timed.wait_for(10s);
  ASSERT_TRUE(status.has_value()) << "the wait never ended";
  EXPECT_EQ(*status, 3) << timed.output();
  EXPECT_GE(ms_since(started), 2000) << "the wait ended early";

  // A hold under a 600 ms watchdog, an hour before which the worker's clock jumps back: it is
  // renewed every 200 ms all the same.
  child_process holder(RLOCK_LOCK_WORKER,
                       std::vector<std::string>{"try-hold", server.url(), "own", "600", "10000"},
                       shifted_child);
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{own}") == 1; }, 10s));
  la.unlock_or_throw();  // handed to the worker
  ASSERT_TRUE(wait_until([&] { return holder.output().find("held") != std::string::npos; }, 5s))
      << holder.output();
  shift.set(-3600s);
  // Six renewals, two leases' worth: the only scripts running now are the worker's.
  const long calls = evalsha_calls(server);
  ASSERT_TRUE(wait_until([&] { return evalsha_calls(server) >= calls + 6; }, 5s))
      << "the holder's renewals stopped after its clock jumped back";
  EXPECT_EQ(server.cli({"EXISTS", "own"}), "1");
  EXPECT_EQ(holder.output().find("lost"), std::string::npos) << holder.output();
}

}  // namespace
}  // namespace rlock::test
