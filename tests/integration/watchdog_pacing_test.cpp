// The watchdog's renewal round, seen from the server (MONITOR): its batches are spread over
// half a period, most urgent first, so that a lock request on the same connection is not held
// behind a whole round.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "detail/lock_scripts.hpp"
#include "support/blocked_pool.hpp"
#include "support/client_list.hpp"
#include "support/server_monitor.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

bool is_renewal(const monitored& m) {
  return m.args.size() >= 3 && m.args[0] == "EVALSHA" &&
         m.args[1] == detail::lock_renew_script().sha1();
}

/// The next renewal script `watch` sees.
std::optional<monitored> next_renewal(server_monitor& watch, std::chrono::milliseconds within) {
  return watch.next([](const monitored& m) { return is_renewal(m); }, within);
}

std::vector<rlock::lock> take(client& c, const std::string& prefix, int n) {
  std::vector<rlock::lock> held;
  for (int i = 0; i < n; ++i) {
    held.push_back(c.get_lock(prefix + std::to_string(i)));
    held.back().lock();
  }
  return held;
}

/// The keys of a renewal script (ARGV follows: the lease, then one owner per key).
std::set<std::string> keys_of(const monitored& m) {
  const auto n = static_cast<std::size_t>(std::stol(m.args.at(2)));
  return {m.args.begin() + 3, m.args.begin() + 3 + static_cast<std::ptrdiff_t>(n)};
}

TEST(watchdog_pacing, a_rounds_batches_are_spread_over_half_a_period) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_watchdog_timeout = 6000ms;  // a round every 2 s, spread over 1 s
  client c(cfg);
  server_monitor watch(server);
  auto held = take(c, "spread:", 300);  // 3 batches: at 0, 333 and 667 ms into the round
  // A round that renews all 300: three scripts in a row that hold them all (a round that came
  // while the locks were still being taken, on a slow machine, holds fewer).
  std::vector<monitored> round;
  const auto end = steady::now() + 10s;
  while (steady::now() < end) {
    auto r = next_renewal(watch, 1s);
    if (!r) continue;
    round.push_back(std::move(*r));
    if (round.size() > 3) round.erase(round.begin());
    std::set<std::string> keys;
    for (const auto& m : round) keys.merge(keys_of(m));
    if (keys.size() == 300) break;
  }
  ASSERT_EQ(round.size(), 3U);
  // All within a few ms before; a timer never fires early.
  EXPECT_GE(round[1].at - round[0].at, 0.300);
  EXPECT_GE(round[2].at - round[1].at, 0.300);
  EXPECT_LT(round[2].at - round[0].at, 2.0);  // within the period
  for (auto& l : held) l.unlock_or_throw();
}

TEST(watchdog_pacing, the_most_urgent_holds_are_renewed_first) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_watchdog_timeout = 6000ms;
  client c(cfg);
  server_monitor watch(server);
  auto held = take(c, "urgent:", 200);  // 2 batches, in the order taken
  // The last lock's re-entry sets a 4 s lease (Redisson's script resets the TTL): its deadline
  // is now the earliest, though it was taken last.
  const std::string key = held.back().key();
  held.back().lock(4000ms);
  // The re-entry's script (the second with this key), then the first renewal after it.
  int seen = 0;
  ASSERT_TRUE(watch.next(
      [&](const monitored& m) {
        return !is_renewal(m) && m.args.size() > 3 && m.args[0] == "EVALSHA" && m.args[3] == key &&
               ++seen == 2;
      },
      10s));
  const auto first = next_renewal(watch, 10s);
  ASSERT_TRUE(first);
  EXPECT_TRUE(keys_of(*first).contains(key))
      << "the re-entered hold must be in the first batch of the next round";
  held.back().unlock_or_throw();
  for (auto& l : held) l.unlock_or_throw();
}

// A hold waits in its round's queue for its batch's turn. A re-entry with a short lease (which
// Redisson's script sets as the TTL) then brings the next round forward; that round must queue
// the hold again, first, rather than leave it to its old batch, which would come after the new
// TTL has run out (found by review: the lock was lost with the server healthy).
TEST(watchdog_pacing, a_queued_hold_re_entered_with_a_short_lease_is_renewed_in_time) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_watchdog_timeout = 12000ms;  // a round every 4 s, spread over 2 s
  client c(cfg);
  server_monitor watch(server);
  auto held = take(c, "requeue:", 300);  // batches at 0, 667 and 1,333 ms into a round
  auto& last = held.back();              // the latest deadline: in the last batch
  const auto lost = last.loss_token();
  // The round starts: its first batch holds the first lock taken.
  ASSERT_TRUE(watch.next(
      [&](const monitored& m) { return is_renewal(m) && keys_of(m).contains(held.front().key()); },
      10s));
  last.lock(1000ms);  // TTL 1 s from now, before the last batch's turn
  // The next renewal of that lock comes well before its TTL ends, and the lock is kept.
  const auto renewal = watch.next(
      [&](const monitored& m) { return is_renewal(m) && keys_of(m).contains(last.key()); }, 5s);
  ASSERT_TRUE(renewal) << "never renewed again; lost: " << lost.stop_requested();
  EXPECT_GT(std::stoll(server.cli({"PTTL", last.key()})), 1000);
  EXPECT_FALSE(lost.stop_requested()) << "the lock was lost while its renewal waited in line";
  last.unlock_or_throw();
  for (auto& l : held) l.unlock_or_throw();
}

// With a pool, a renewal may be in flight on one connection while a re-entry with a short
// lease goes out on the other and is answered first. The early round that re-entry brings
// forward skips the hold (its renewal is in flight); if the renewal then ran before the
// re-entry, the server's TTL is the re-entry's, and if after, the client still cannot count on
// more: either way the hold must be renewed again before the short lease ends. Found by
// review: nothing renewed it, and the hold was reported lost with the server healthy.
// Each connection is held by a BLPOP, so the order in which the server runs the renewal and the
// re-entry is the test's (CLIENT UNBLOCK).
TEST(watchdog_pacing, a_hold_whose_renewal_is_in_flight_at_an_early_round_is_renewed_in_time) {
  redis_server server;
  config cfg = config_for(server);
  cfg.client_name = "in-flight";
  cfg.connection_pool_size = 2;
  cfg.lock_watchdog_timeout = 18000ms;  // a round every 6 s; a renewal's deadline 6 s
  cfg.timeout = 20000ms;                // the BLPOPs below wait up to about 9 s
  cfg.ping_connection_interval = 60000ms;
  blocked_pool blocks;  // before the client, whose shutdown may complete the BLPOPs
  std::promise<std::error_code> reentered;
  client c(cfg);
  auto l = c.get_lock("in-flight");
  l.lock();
  const auto lost = l.loss_token();
  ASSERT_TRUE(blocks.block(c, server, cfg.client_name));
  // The first round (6 s after the acquire) writes its renewal behind one of the BLPOPs.
  std::string renewal_conn;
  ASSERT_TRUE(wait_until(
      [&] {
        renewal_conn = blocked_with_pending(server, cfg.client_name);
        return !renewal_conn.empty();
      },
      10s));
  // The re-entry goes to the other connection (the next in turn), behind the other BLPOP.
  const auto t1 = steady::now();
  l.async_lock(this_thread_owner_id(), 4500ms,
               [&](std::error_code ec) { reentered.set_value(ec); });  // this thread's hold
  auto reentry = reentered.get_future();
  std::string reentry_conn;
  ASSERT_TRUE(wait_until(
      [&] {
        reentry_conn = blocked_with_pending(server, cfg.client_name, renewal_conn);
        return !reentry_conn.empty();
      },
      5s))
      << "the re-entry did not go to the other connection";
  server.cli({"CLIENT", "UNBLOCK", reentry_conn});
  if (reentry.wait_for(5s) != std::future_status::ready) {
    ADD_FAILURE() << "re-entry not done; hash: " << server.cli({"HGETALL", "in-flight"})
                  << "\nclients: " << server.cli({"CLIENT", "LIST"});
    server.cli({"CLIENT", "UNBLOCK", renewal_conn});
    return;
  }
  // TTL 4.5 s from t1; the early round at t1 + 1.5 s skips the hold in flight.
  ASSERT_FALSE(reentry.get());
  // The renewal runs after the re-entry and is answered 2.5 s after t1: a duration (between the
  // early round and the re-entry's deadline), not a wait for an outcome.
  std::this_thread::sleep_until(t1 + 2500ms);
  server.cli({"CLIENT", "UNBLOCK", renewal_conn});
  EXPECT_TRUE(wait_until([&] { return l.valid_until() > steady::now() + 5s; }, 4s))
      << "not renewed before the re-entry's lease ended; lost: " << lost.stop_requested();
  EXPECT_FALSE(lost.stop_requested()) << "reported lost with the server healthy";
  EXPECT_GT(std::stoll(server.cli({"PTTL", "in-flight"})), 5000);
  blocks.wait();
  l.unlock_or_throw();
  l.unlock_or_throw();
}

}  // namespace
}  // namespace rlock::test
