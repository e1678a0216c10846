// rlock::lock behaviour against a real server: exclusion, reentrancy, leases, watchdog, loss.
#include <gtest/gtest.h>

#include <asio/experimental/deferred.hpp>
#include <asio/use_future.hpp>
#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "common.hpp"
#include "detail/lock_service.hpp"
#include "support/lock_listeners.hpp"
#include "support/process.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

TEST(lock, mutual_exclusion_across_four_processes_of_four_threads) {
  redis_server server;
  std::vector<child_process> workers;
  workers.reserve(4);
  for (int p = 0; p < 4; ++p) {
    // 4 processes x 4 threads x 125 = 2000 acquisitions
    workers.emplace_back(RLOCK_LOCK_WORKER,
                         std::vector<std::string>{"count", server.url(), "mx", "4", "125"});
  }
  for (auto& w : workers) {
    auto status = w.wait_for(120s);
    ASSERT_TRUE(status.has_value()) << "worker did not finish";
    EXPECT_EQ(*status, 0) << w.output();
    EXPECT_NE(w.output().find("acquisitions=500 overlaps=0"), std::string::npos) << w.output();
  }
  EXPECT_EQ(server.cli({"GET", "mx:counter"}), "2000");  // no lost update
  EXPECT_EQ(server.cli({"EXISTS", "mx"}), "0");          // released
}

TEST(lock, reentrant_hold_count_and_ttl_reset) {
  redis_server server;
  client c(config_for(server));
  auto l = c.get_lock("re");
  l.lock(10s);
  l.lock(20s);
  l.lock();
  EXPECT_EQ(l.hold_count(), 3);
  // Re-entry resets the TTL to the new acquire's lease (the watchdog's 30 s here).
  EXPECT_GT(server.cli_reply({"PTTL", "re"}).integer, 20000);
  l.unlock_or_throw();
  EXPECT_EQ(server.cli({"EXISTS", "re"}), "1");
  l.unlock_or_throw();
  EXPECT_EQ(server.cli({"EXISTS", "re"}), "1");
  EXPECT_EQ(l.hold_count(), 1);
  l.unlock_or_throw();
  EXPECT_EQ(server.cli({"EXISTS", "re"}), "0");
  EXPECT_FALSE(l.is_locked());
}

// A re-entry resets the lock's TTL to its own lease (Redisson's script), and so does an unlock
// that leaves holds: the local deadline must follow the server, or valid_until() claims a lock
// the server has already let go. Before the fix: (1) lock(); lock(1500ms) let the key expire
// after 1.5 s while valid_until() still promised ~28 s and no loss was reported; (2)
// lock(1500ms); lock() was never renewed.
// Two acquires of one owner in flight at once (async API, explicit owner) are two holds on the
// server too: the second starts once the first has ended. Before, the second one's script took
// the first's hold for its own resend (count 1 + prior 0) and both were granted one server hold,
// so the owner's first unlock freed the lock under its second "holder", which was never told.
TEST(lock, concurrent_acquires_of_one_owner_count_twice_on_the_server) {
  for (const bool queue : {true, false}) {
    redis_server server;
    config cfg = config_for(server);
    cfg.lock_queue = queue;
    client c(cfg);
    auto l = c.get_lock("twice");
    std::promise<std::error_code> a;
    std::promise<std::error_code> b;
    l.async_lock(7, [&a](std::error_code ec) { a.set_value(ec); });
    l.async_lock(7, [&b](std::error_code ec) { b.set_value(ec); });
    EXPECT_FALSE(a.get_future().get());
    EXPECT_FALSE(b.get_future().get());
    EXPECT_EQ(server.cli({"HGET", "twice", c.id() + ":7"}), "2") << "queue " << queue;
    EXPECT_EQ(l.async_hold_count(7, asio::use_future).get(), 2);
    std::promise<std::error_code> u;
    l.async_unlock(7, [&u](std::error_code ec) { u.set_value(ec); });
    EXPECT_FALSE(u.get_future().get());
    EXPECT_EQ(server.cli({"HGET", "twice", c.id() + ":7"}), "1") << "still held once";
    std::promise<std::error_code> v;
    l.async_unlock(7, [&v](std::error_code ec) { v.set_value(ec); });
    EXPECT_FALSE(v.get_future().get());
    EXPECT_EQ(server.cli({"EXISTS", "twice"}), "0");
  }
}

// Ids a caller picks for the async API (small counters here) never name a thread of the blocking
// API: before, threads were owners 1, 2, 3, ..., so a coroutine's async_try_lock(k) re-entered the
// lock the k-th thread held instead of being excluded.
TEST(lock, owner_ids_picked_for_the_async_api_are_never_a_threads) {
  redis_server server;
  client c(config_for(server));
  auto l = c.get_lock("picked");
  l.lock();  // this thread's owner id
  std::uint64_t other_thread = 0;
  std::thread([&] { other_thread = this_thread_owner_id(); }).join();
  EXPECT_NE(other_thread, this_thread_owner_id());
  const std::uint64_t fresh = new_owner_id();
  EXPECT_NE(fresh, this_thread_owner_id());
  EXPECT_NE(fresh, other_thread);
  std::vector<std::uint64_t> ids;
  for (std::uint64_t k = 1; k <= 256; ++k) ids.push_back(k);
  ids.push_back(fresh);
  for (const std::uint64_t id : ids) {
    EXPECT_FALSE(l.async_try_lock(id, asio::use_future).get()) << "owner " << id;
  }
  EXPECT_EQ(server.cli_reply({"HLEN", "picked"}).integer, 1);
  l.unlock_or_throw();
}

// A client that closes deletes the unlock latches it kept for its next unlock script (which it
// will never send) instead of leaving them to expire: a one-shot process such as `rlock exec`
// left one per run for about a minute.
TEST(lock, a_client_that_closes_leaves_no_unlock_latch_behind) {
  redis_server server;
  {
    client c(config_for(server));
    auto l = c.get_lock("latched");
    l.lock();
    l.unlock_or_throw();
    ASSERT_EQ(server.cli_reply({"KEYS", "redisson_unlock_latch:*"}).elements.size(), 1u);
  }
  EXPECT_EQ(server.cli_reply({"KEYS", "redisson_unlock_latch:*"}).elements.size(), 0u);
}

TEST(lock, re_entry_with_another_lease_keeps_the_watchdog_and_valid_until_true) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_watchdog_timeout = 3000ms;  // renewed every second
  client c(cfg);
  auto pttl = [&](const char* key) { return server.cli_reply({"PTTL", key}).integer; };
  {
    // An inner explicit lease under the watchdog: renewal continues, within a third of it.
    auto l = c.get_lock("re-short");
    l.lock();
    l.lock(600ms);
    const auto server_end = steady::now() + std::chrono::milliseconds(pttl("re-short"));
    EXPECT_LE(l.valid_until(), server_end + 50ms) << "valid_until() beyond the server's TTL";
    // Renewal restores the watchdog's lease before the inner one runs out.
    ASSERT_TRUE(wait_until([&] { return pttl("re-short") > 1000; }, 3s))
        << "not renewed; PTTL " << pttl("re-short");
    EXPECT_FALSE(l.loss_token().stop_requested());
    EXPECT_GT(l.valid_until(), steady::now());
    l.unlock_or_throw();  // partial: the watchdog's lease is set again
    EXPECT_GT(pttl("re-short"), 2000);
    l.unlock_or_throw();
    EXPECT_EQ(server.cli({"EXISTS", "re-short"}), "0");
  }
  {
    // A watchdog re-entry of a hold taken with a lease starts renewal.
    auto l = c.get_lock("re-renew");
    l.lock(600ms);
    l.lock();
    const auto first = l.valid_until();
    ASSERT_TRUE(wait_until([&] { return l.valid_until() > first + 300ms; }, 3s)) << "not renewed";
    EXPECT_EQ(server.cli({"EXISTS", "re-renew"}), "1");
    EXPECT_FALSE(l.loss_token().stop_requested());
    l.unlock_or_throw();
    l.unlock_or_throw();
  }
  {
    // Without the watchdog, a partial unlock sets the last acquire's lease; valid_until()
    // follows it down.
    auto l = c.get_lock("re-lease");
    l.lock(20s);
    l.lock(800ms);
    l.unlock_or_throw();
    const auto server_end = steady::now() + std::chrono::milliseconds(pttl("re-lease"));
    EXPECT_LE(l.valid_until(), server_end + 50ms) << "valid_until() beyond the server's TTL";
    std::promise<void> lost;
    std::stop_callback on_loss(l.loss_token(), [&] { lost.set_value(); });
    ASSERT_EQ(lost.get_future().wait_for(3s), std::future_status::ready);
    // Reported at the local deadline, which is at or before the server's expiry.
    EXPECT_TRUE(wait_until([&] { return server.cli({"EXISTS", "re-lease"}) == "0"; }, 1s));
  }
}

// Renewal never shortens a TTL: an inner hold with a longer lease keeps it. (Redisson's renewal
// sets the watchdog's lease whatever the TTL was; so did rlock's, and a renewal reaching the
// server late could thereby cut the lease of the owner's next hold.)
TEST(lock, a_renewal_never_cuts_short_an_inner_hold_with_a_longer_lease) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_watchdog_timeout = 600ms;  // renewed every 200 ms
  client c(cfg);
  auto l = c.get_lock("re-long");
  l.lock();
  l.lock(20s);
  const auto activated = l.valid_until();
  auto renewals = [&] { return evalsha_calls(server); };
  const long before = renewals();
  // Renewed twice: the first renewal's reply has been handled (a hold is renewed again only
  // after it).
  ASSERT_TRUE(wait_until([&] { return renewals() >= before + 2; }, 3s)) << "not renewed";
  EXPECT_GT(server.cli_reply({"PTTL", "re-long"}).integer, 15000);
  // And valid_until() keeps the inner lease (one connection: the renewal ran after it); it
  // fell to the renewal's 600 ms before, although PTTL was still about 20 s.
  EXPECT_GE(l.valid_until(), activated);
  EXPECT_LE(l.valid_until(),
            steady::now() +
                std::chrono::milliseconds(server.cli_reply({"PTTL", "re-long"}).integer) + 50ms);
  l.unlock_or_throw();
  l.unlock_or_throw();
}

// shutdown() ends renewal and never releases: every hold's loss token is stopped.
TEST(lock, shutdown_stops_the_loss_token_of_every_hold) {
  redis_server server;
  client c(config_for(server));
  auto renewed = c.get_lock("shut-renewed");
  auto leased = c.get_lock("shut-leased");
  renewed.lock();
  leased.lock(30s);
  const std::stop_token renewed_lost = renewed.loss_token();
  const std::stop_token leased_lost = leased.loss_token();
  ASSERT_FALSE(renewed_lost.stop_requested());
  ASSERT_FALSE(leased_lost.stop_requested());
  c.shutdown();
  EXPECT_TRUE(renewed_lost.stop_requested());
  EXPECT_TRUE(leased_lost.stop_requested());
  EXPECT_TRUE(renewed.loss_token().stop_requested());
  EXPECT_EQ(server.cli({"EXISTS", "shut-renewed"}), "1") << "shutdown() does not release";
}

TEST(lock, lease_expires_and_is_not_renewed) {
  redis_server server;
  client a(config_for(server));
  client b(config_for(server));
  a.get_lock("lease").lock(300ms);
  const auto t0 = steady::now();
  auto lb = b.get_lock("lease");
  ASSERT_TRUE(lb.try_lock(5s));  // woken by the TTL, not by a message
  const auto waited = ms_since(t0);
  EXPECT_GE(waited, 250);
  EXPECT_LT(waited, 1500);
  lb.unlock_or_throw();
}

TEST(lock, watchdog_keeps_the_lock_alive_then_stops_after_unlock) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_watchdog_timeout = 600ms;  // renewed every 200 ms
  client c(cfg);
  auto l = c.get_lock("wd");
  l.lock();
  // Held for 5x the watchdog timeout: the key must never expire meanwhile. Another client's
  // try_lock(3 s) must fail, which it only does if every renewal landed.
  client other(config_for(server));
  EXPECT_FALSE(other.get_lock("wd").try_lock(3000ms));
  EXPECT_EQ(server.cli({"EXISTS", "wd"}), "1");
  EXPECT_GT(l.valid_until(), steady::now());
  l.unlock_or_throw();
  // After unlock no renewal is ever sent: the key does not come back and EVALSHA calls stop.
  auto evals = [&] { return evalsha_calls(server); };
  const long before = evals();
  std::this_thread::sleep_for(1000ms);  // five renewal periods: observing an absence
  EXPECT_EQ(evals(), before);
  EXPECT_EQ(server.cli({"EXISTS", "wd"}), "0");
}

TEST(lock, loss_signal_fires_within_one_renewal_period_and_unlock_reports_not_owner) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_watchdog_timeout = 900ms;  // period 300 ms
  client c(cfg);
  auto l = c.get_lock("lost");
  l.lock();
  std::stop_token lost = l.loss_token();
  ASSERT_FALSE(lost.stop_requested());
  std::promise<steady::time_point> fired;
  std::stop_callback on_loss(lost, [&] { fired.set_value(steady::now()); });
  const auto t0 = steady::now();
  EXPECT_EQ(server.cli({"DEL", "lost"}), "1");
  auto f = fired.get_future();
  ASSERT_EQ(f.wait_for(2s), std::future_status::ready);
  EXPECT_LE(std::chrono::duration_cast<std::chrono::milliseconds>(f.get() - t0).count(), 300 + 150);
  try {
    l.unlock_or_throw();
    FAIL() << "unlock of a lost lock must report not_owner";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::not_owner);
  }
}

// reentrant_lock is BasicLockable, whose unlock() must not throw. A lock lost inside a
// std::lock_guard used to end the program: the guard's noexcept destructor called an unlock()
// that threw not_owner (std::terminate). Now that release fails quietly, the loss is told through
// the hold's loss token, and unlock(ec) says what happened.
TEST(lock, a_lock_guard_over_a_lost_lock_ends_without_terminating_and_the_loss_is_told) {
  redis_server server;
  client c(config_for(server));
  auto l = c.get_lock("guarded");
  std::stop_token lost;
  {
    std::lock_guard guard(l);
    lost = l.loss_token();
    // Lost while held; with the 30 s watchdog lease, the next renewal is 10 s away.
    ASSERT_EQ(server.cli({"DEL", "guarded"}), "1");
    EXPECT_FALSE(lost.stop_requested());
  }
  EXPECT_TRUE(lost.stop_requested()) << "told when its release found the lock gone";
  EXPECT_FALSE(l.is_held_by_current_thread());
  l.lock();
  std::error_code ec = make_error_code(errc::timeout);
  l.unlock(ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(server.cli({"EXISTS", "guarded"}), "0");
  l.unlock(ec);
  EXPECT_EQ(ec, errc::not_owner);
  l.unlock();  // holds nothing: nothing happens
  EXPECT_THROW(l.unlock_or_throw(), error);
}

// A lock's key deleted and re-created as another type (a string here) makes HEXISTS fail with
// WRONGTYPE. In the batch's script that failed the whole batch before: the healthy lock in it
// was never renewed and reported lost at its deadline, and the other one's loss came late.
TEST(lock, a_key_recreated_as_another_type_does_not_fail_its_renewal_batch) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_watchdog_timeout = 900ms;  // period 300 ms
  client c(cfg);
  auto healthy = c.get_lock("batch-healthy");
  auto taken = c.get_lock("batch-taken");
  healthy.lock();
  taken.lock();  // both renewed by one script
  std::promise<void> lost;
  std::stop_callback on_loss(taken.loss_token(), [&] { lost.set_value(); });
  EXPECT_EQ(server.cli({"DEL", "batch-taken"}), "1");
  EXPECT_EQ(server.cli({"SET", "batch-taken", "a string"}), "OK");
  ASSERT_EQ(lost.get_future().wait_for(2s), std::future_status::ready);
  // Renewed past its first deadline: the renewal that found the string renewed it too.
  const auto first_deadline = healthy.valid_until();
  ASSERT_TRUE(wait_until([&] { return healthy.valid_until() > first_deadline; }, 2s));
  EXPECT_FALSE(healthy.loss_token().stop_requested());
  EXPECT_EQ(server.cli({"GET", "batch-taken"}), "a string");  // left as it was
  healthy.unlock_or_throw();
}

// A hold is reported lost (renewal could not reach a paused server before its lease ended) while
// a re-entry of it is in flight; the server then lets the key expire and the re-entry creates a
// fresh one. Before the fix the re-entry was added to the lost hold: it returned true with a
// hold count of 2 locally, its loss signal already fired and nothing renewing it. Now it is
// taken as a first acquire: a fresh hold, renewed, with a new loss signal.
TEST(lock, a_re_entry_in_flight_when_its_hold_is_lost_becomes_a_fresh_hold) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_watchdog_timeout = 900ms;  // period 300 ms
  cfg.timeout = 10s;                  // the re-entry outlasts the pause
  client c(cfg);
  auto l = c.get_lock("reentry-lost");
  std::promise<std::uint64_t> first_held;
  std::promise<void> paused;
  std::promise<bool> reentered;
  std::thread holder([&] {
    l.lock();
    first_held.set_value(this_thread_owner_id());
    paused.get_future().wait();
    l.lock();  // sent to the paused server; answered after the loss
    reentered.set_value(!l.loss_token().stop_requested());
  });
  const std::uint64_t owner = first_held.get_future().get();
  std::promise<void> lost;
  std::stop_callback on_loss(l.loss_token(owner), [&] { lost.set_value(); });
  server.pause();
  paused.set_value();
  ASSERT_EQ(lost.get_future().wait_for(5s), std::future_status::ready);
  server.resume();
  auto f = reentered.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  holder.join();
  EXPECT_TRUE(f.get()) << "returned as held with its loss signal already fired";
  EXPECT_EQ(server.cli({"HGET", "reentry-lost", c.id() + ":" + std::to_string(owner)}), "1");
  // Renewed: the watchdog has the fresh hold.
  const auto first = l.valid_until(owner);
  EXPECT_GT(first, steady::now());
  ASSERT_TRUE(wait_until([&] { return l.valid_until(owner) > first; }, 3s)) << "not renewed";
}

TEST(lock, loss_fires_when_renewal_cannot_reach_a_paused_server_before_the_lease_ends) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_watchdog_timeout = 900ms;
  cfg.timeout = 200ms;
  client c(cfg);
  auto l = c.get_lock("paused-holder");
  l.lock();
  std::promise<steady::time_point> fired;
  std::stop_callback cb(l.loss_token(), [&] { fired.set_value(steady::now()); });
  const auto valid_until = l.valid_until();
  server.pause();
  auto f = fired.get_future();
  const bool ok = f.wait_for(3s) == std::future_status::ready;
  server.resume();
  ASSERT_TRUE(ok) << "the loss signal must fire at the lease's local deadline";
  const auto at = f.get();
  EXPECT_GE(at, valid_until - 5ms);
  EXPECT_LT(at, valid_until + 300ms);
}

TEST(lock, watchdog_renews_in_batches_of_at_most_one_hundred_keys) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_watchdog_timeout = 1500ms;  // a round every 500 ms
  client c(cfg);
  std::vector<rlock::lock> held;
  for (int i = 0; i < 250; ++i) {
    held.push_back(c.get_lock("batch:" + std::to_string(i)));
    held.back().lock();
  }
  auto evals = [&] { return evalsha_calls(server); };
  const long before = evals();
  std::this_thread::sleep_for(2000ms);  // four rounds: counting what the watchdog sends
  const long scripts = evals() - before;
  // 250 keys = 3 scripts per round (100 + 100 + 50); 4 rounds, give or take one.
  EXPECT_GE(scripts, 3 * 3);
  EXPECT_LE(scripts, 3 * 5);
  for (auto& l : held) EXPECT_EQ(server.cli({"PTTL", l.key()}).size() > 0, true);
  for (auto& l : held) l.unlock_or_throw();
}

TEST(lock, lease_loss_is_signalled_when_the_lease_runs_out) {
  redis_server server;
  client c(config_for(server));
  auto l = c.get_lock("lease-loss");
  l.lock(200ms);
  std::promise<void> fired;
  std::stop_callback cb(l.loss_token(), [&] { fired.set_value(); });
  EXPECT_EQ(fired.get_future().wait_for(2s), std::future_status::ready);
}

TEST(lock, try_lock_with_wait_times_out_or_wins_promptly) {
  redis_server server;
  client a(config_for(server));
  client b(config_for(server));
  auto la = a.get_lock("tw");
  la.lock();
  auto lb = b.get_lock("tw");
  auto t0 = steady::now();
  EXPECT_FALSE(lb.try_lock(400ms));
  auto took = ms_since(t0);
  EXPECT_GE(took, 390);
  EXPECT_LT(took, 400 + 200);

  // Freed mid-wait: acquired promptly (pub/sub), far sooner than the 30 s TTL.
  auto waiter = std::async(std::launch::async, [&] {
    const auto w0 = steady::now();
    const bool ok = lb.try_lock(10s);
    const auto ms = ms_since(w0);
    if (ok) lb.unlock_or_throw();
    return std::pair{ok, ms};
  });
  ASSERT_TRUE(wait_until([&] { return lock_listeners(server, "tw") == 1; }, 3s));
  t0 = steady::now();
  la.unlock_or_throw();
  auto [ok, ms] = waiter.get();
  EXPECT_TRUE(ok);
  EXPECT_LT(ms_since(t0), 500);
  (void)ms;
}

// try_lock_for(seconds::max()) means "wait as long as it takes"; its conversion to milliseconds
// overflowed to a negative wait before, and the call gave up at once on a held lock.
TEST(lock, try_lock_for_the_longest_duration_waits) {
  redis_server server;
  client a(config_for(server));
  client b(config_for(server));
  auto held = a.get_lock("longest");
  held.lock();
  std::promise<bool> got;
  std::thread waiter(
      [&] { got.set_value(b.get_lock("longest").try_lock_for(std::chrono::seconds::max())); });
  auto f = got.get_future();
  // Waiting, not answered: observed through the server (the waiter's queue entry) rather than
  // a sleep.
  EXPECT_TRUE(wait_until(
      [&] {
        return server.cli({"ZCARD", "rlock_queue:{longest}"}) == "1";
      },
      5s));
  EXPECT_EQ(f.wait_for(0s), std::future_status::timeout) << "gave up without waiting";
  held.unlock_or_throw();
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(f.get());
  waiter.join();
}

// A deadline long past is one attempt, whatever the clock: tp - now overflowed for
// time_point::min() before, into a wait of centuries, and the call waited for the lock.
TEST(lock, try_lock_until_a_deadline_long_past_does_not_wait) {
  redis_server server;
  client a(config_for(server));
  client b(config_for(server));
  auto held = a.get_lock("past");
  held.lock();
  auto l = b.get_lock("past");
  auto t0 = steady::now();
  EXPECT_FALSE(l.try_lock_until(std::chrono::steady_clock::time_point::min()));
  EXPECT_FALSE(l.try_lock_until(std::chrono::system_clock::time_point::min()));
  EXPECT_FALSE(l.try_lock_until(std::chrono::steady_clock::now() - 1s));
  EXPECT_LT(ms_since(t0), 2000);
  held.unlock_or_throw();
  EXPECT_TRUE(l.try_lock_until(std::chrono::steady_clock::time_point::min())) << "a free lock";
  l.unlock_or_throw();
}

TEST(lock, non_owner_unlock_leaves_the_key_and_force_unlock_wakes_waiters) {
  redis_server server;
  client a(config_for(server));
  client b(config_for(server));
  auto la = a.get_lock("fu");
  la.lock();
  const auto before = server.cli_reply({"HGETALL", "fu"});
  auto lb = b.get_lock("fu");
  try {
    lb.unlock_or_throw();
    FAIL();
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::not_owner);
  }
  EXPECT_EQ(server.cli_reply({"HGETALL", "fu"}), before);  // untouched

  client w(config_for(server));
  auto lw = w.get_lock("fu");
  auto waiter = try_lock_then_unlock_async(lw, 20s);
  ASSERT_TRUE(wait_until([&] { return lock_listeners(server, "fu") >= 1; }, 3s));
  const auto t0 = steady::now();
  EXPECT_TRUE(lb.force_unlock());
  EXPECT_TRUE(waiter.get());
  EXPECT_LT(ms_since(t0), 1000) << "woken by the message, not by the 30 s TTL";
  EXPECT_FALSE(lb.force_unlock());
}

// Without the Redis queue only the head of the process's local FIFO contends; each waiter gets
// its turn when the one before it finishes. A waiter is enqueued on its caller's thread and
// started just after, so the previous head may pass the turn on in between: the turn must not be
// lost (the waiter would then sleep until its deadline, or forever without one). That window is
// a few instructions wide and this test did not hit it in 2 runs without the fix (the unit test
// acquire_fsm.a_turn_that_comes_before_start_is_kept is the regression check); it covers the
// turns of the non-queued mode under contention.
TEST(lock, threads_of_one_client_without_the_queue_each_get_their_turn) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_queue = false;
  client c(cfg);
  constexpr int threads = 4;
  constexpr int rounds = 300;
  std::atomic<int> missed{0};
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      auto l = c.get_lock("turns");
      for (int i = 0; i < rounds; ++i) {
        // Each hold is about 0.2 ms, so a wait of 5 s is only missed by a lost turn.
        if (!l.try_lock(5s)) {
          ++missed;
          continue;
        }
        if (inside.fetch_add(1) != 0) ++overlaps;
        inside.fetch_sub(1);
        l.unlock_or_throw();
      }
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(missed.load(), 0) << "waiters slept until their deadline";
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(server.cli({"EXISTS", "turns"}), "0");
}

TEST(lock, works_with_std_lock_wrappers) {
  redis_server server;
  client c(config_for(server));
  auto a = c.get_lock("std-a");
  auto b = c.get_lock("std-b");
  {
    std::unique_lock ul(a, std::defer_lock);
    EXPECT_TRUE(ul.try_lock_for(100ms));
    EXPECT_EQ(server.cli({"EXISTS", "std-a"}), "1");
  }
  EXPECT_EQ(server.cli({"EXISTS", "std-a"}), "0");
  {
    std::scoped_lock both(a, b);
    EXPECT_EQ(server.cli({"EXISTS", "std-a"}), "1");
    EXPECT_EQ(server.cli({"EXISTS", "std-b"}), "1");
  }
  EXPECT_EQ(server.cli({"EXISTS", "std-b"}), "0");
}

// One owner's re-entry and unlock at once (the async API allows it), over two connections: the
// unlock goes after the re-entry, so the two end where they started. Before, the unlock's reply
// could be handled first although the server ran it second: the re-entry was then counted on
// an ended hold that nobody renewed (its loss never told), or the server kept a hold more than
// the client knew of, left behind for its lease after the last unlock.
TEST(lock, an_owners_concurrent_re_entry_and_unlock_leave_one_hold_over_a_pool) {
  redis_server server;
  config cfg = config_for(server);
  cfg.connection_pool_size = 2;
  client c(cfg);
  auto l = c.get_lock("pair");
  constexpr std::uint64_t owner = 11;
  int bad = 0;
  for (int i = 0; i < 200 && bad == 0; ++i) {
    l.async_lock(owner, asio::use_future).get();
    auto relock = l.async_lock(owner, asio::use_future);
    auto unlock = l.async_unlock(owner, asio::use_future);
    relock.get();
    unlock.get();
    if (l.async_hold_count(owner, asio::use_future).get() != 1) ++bad;
    if (l.valid_until(owner) <= steady::now()) ++bad;  // renewed, not forgotten
    l.async_unlock(owner, asio::use_future).get();     // throws not_owner if forgotten
    if (server.cli({"EXISTS", "pair"}) != "0") ++bad;  // nothing left behind
  }
  EXPECT_EQ(bad, 0);
}

// A deferred operation keeps what it needs: the lock handle it was made from, and the script,
// may be gone when it starts (under ASan, before: stack-use-after-scope).
TEST(lock, deferred_operations_outlive_the_handle_and_script_they_came_from) {
  redis_server server;
  client c(config_for(server));
  auto lock_op = c.get_lock("deferred").async_lock(9, asio::experimental::deferred);
  auto count_op = c.get_lock("deferred").async_hold_count(9, asio::experimental::deferred);
  auto unlock_op = c.get_lock("deferred").async_unlock(9, asio::experimental::deferred);
  auto eval_op = c.async_eval(script("return 7"), {}, {}, asio::experimental::deferred);
  std::move(lock_op)(asio::use_future).get();  // throws on an error
  EXPECT_EQ(std::move(count_op)(asio::use_future).get(), 1);
  std::move(unlock_op)(asio::use_future).get();
  EXPECT_EQ(std::move(eval_op)(asio::use_future).get().integer(), 7);
  EXPECT_EQ(server.cli({"EXISTS", "deferred"}), "0");
}

TEST(lock, with_lock_releases_also_when_the_function_throws) {
  redis_server server;
  client c(config_for(server));
  EXPECT_EQ(c.with_lock("wl", {}, [&] { return server.cli({"EXISTS", "wl"}); }), "1");
  EXPECT_EQ(server.cli({"EXISTS", "wl"}), "0");
  EXPECT_THROW(c.with_lock("wl", {}, [] { throw std::runtime_error("boom"); }), std::runtime_error);
  EXPECT_EQ(server.cli({"EXISTS", "wl"}), "0");
  // The loss token is handed to functions that take one.
  c.with_lock("wl", {}, [](const std::stop_token& lost) { EXPECT_FALSE(lost.stop_requested()); });
}

}  // namespace
}  // namespace rlock::test
