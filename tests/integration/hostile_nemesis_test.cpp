// Every kind of lock and semaphore, taken by many threads of two clients (nemesis_load.hpp)
// while a nemesis kills their connections, pauses the server, blocks it and flushes its script
// cache: what each guarantees must hold through all of it.
//   - Exclusion, fencing-token order and call bounds: nemesis_load.hpp's checks; a waiting
//     acquire returns by its wait plus one request timeout (the try in flight at its deadline),
//     a release within twice its retries (after an acquire that gave up, its undo goes first).
//   - Errors name a fault of the link or the deadline, never the nemesis's side effects
//     (NOSCRIPT after SCRIPT FLUSH is recovered, not reported).
//   - Nothing is left: every hold ends (a release whose outcome stayed unknown with its lease),
//     and the semaphores come back to their permits (a permit-expirable semaphore's with its
//     leases; a plain semaphore's less at most the releases that failed).
// The nemesis's picks come from a fixed seed; the interleaving does not, so each run is a
// different schedule. It is bounded: the nemesis stops after 16 faults, then the workers.
//
// A longer soak by hand: RLOCK_NEMESIS_ROUNDS (each kind of fault that many times; 30 take
// about 2.5 min) and RLOCK_NEMESIS_THREADS scale it up, e.g.
//   RLOCK_NEMESIS_ROUNDS=30 RLOCK_NEMESIS_THREADS=24 build/tests/integration/rlock_hostile_tests
//   --gtest_filter='hostile_nemesis.*'
#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hostile_common.hpp"
#include "nemesis_load.hpp"
#include "support/raw_client.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

// A positive whole number from the environment, or `fallback` when it is unset or not one.
int from_env(const char* name, int fallback) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before any thread
  if (v == nullptr) return fallback;
  const int n = std::atoi(v);
  return n > 0 ? n : fallback;
}

enum class fault {
  kill_normal,
  kill_pubsub,
  script_flush,
  pause_writes,
  sleep,
  pause_all,
  kill_in_pause,
  kill_after_sleep,
};
constexpr int fault_kinds = 8;

// Blocks the server for 200 ms and has a kill of every connection wait behind the requests
// that came in meanwhile: the server runs them, then the kill drops their replies. Each such
// request ran, and its client cannot know it (resent, or undone, at most once).
void kill_after_sleep(const redis_server& server) {
  raw_client sleeper(server.host(), server.port());
  raw_client killer(server.host(), server.port());
  sleeper.send({"DEBUG", "SLEEP", "0.2"});
  (void)sleeper.read(0ms);             // written
  std::this_thread::sleep_for(100ms);  // the clients' requests queue up behind it
  // Written after theirs, so read after theirs: Linux's epoll reports sockets in the order
  // they became readable, and Redis writes replies only after it has read and run them all.
  killer.send({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  (void)killer.read(5s);
}

// One fault on the server: a kill of every connection of one type, a pause of writes or of
// everything, a blocked server, a flushed script cache, a kill in a pause of writes, which
// cuts every acquire and release written in the pause before it ran, or a kill right after a
// blocked spell, which cuts them after they ran (both: outcome unknown to the client; resent,
// or undone).
void strike(const redis_server& server, fault f) {
  switch (f) {
    case fault::kill_normal:
      server.cli({"CLIENT", "KILL", "TYPE", "normal"});
      break;
    case fault::kill_pubsub:
      server.cli({"CLIENT", "KILL", "TYPE", "pubsub"});
      break;
    case fault::script_flush:
      server.cli({"SCRIPT", "FLUSH"});
      break;
    case fault::pause_writes:
      server.cli({"CLIENT", "PAUSE", "300", "WRITE"});
      break;
    case fault::sleep:
      server.cli({"DEBUG", "SLEEP", "0.2"});
      break;
    case fault::pause_all:
      server.cli({"CLIENT", "PAUSE", "200", "ALL"});
      break;
    case fault::kill_in_pause:
      server.cli({"CLIENT", "PAUSE", "300", "WRITE"});
      server.cli({"CLIENT", "KILL", "TYPE", "normal"});
      break;
    case fault::kill_after_sleep:
      kill_after_sleep(server);
      break;
  }
}

TEST(hostile_nemesis, every_kind_keeps_its_exclusion_bounds_and_permits_under_faults) {
  redis_server server;
  config cfg = config_for(server);
  cfg.timeout = 1s;
  cfg.retry_delay_base = 100ms;
  cfg.retry_delay_max = 200ms;
  cfg.lock_watchdog_timeout = 3s;  // a hold whose release failed ends soon
  const int threads = from_env("RLOCK_NEMESIS_THREADS", 8);
  const int rounds = from_env("RLOCK_NEMESIS_ROUNDS", 2);
  client a(cfg);
  client b(cfg);
  ASSERT_TRUE(a.get_semaphore("n-sem").try_set_permits(nemesis_permits));
  ASSERT_TRUE(a.get_permit_expirable_semaphore("n-pes").try_set_permits(nemesis_permits));

  tally t;
  nemesis_load load(a, b, call_bounds::of(cfg), t, threads);
  // Every kind of fault `rounds` times, in an order of a fixed seed.
  std::vector<fault> faults;
  for (int k = 0; k < fault_kinds; ++k) faults.insert(faults.end(), rounds, static_cast<fault>(k));
  std::mt19937 rng(99);
  std::shuffle(faults.begin(), faults.end(), rng);
  for (const fault f : faults) {
    std::this_thread::sleep_for(milliseconds(300 + rng() % 400));  // the load runs meanwhile
    strike(server, f);
  }
  load.stop();

  // The faults reached the clients: each of the kills (3 kinds) dropped a connection at least.
  const client_stats sa = a.stats();
  const client_stats sb = b.stats();
  EXPECT_GE(sa.disconnects + sb.disconnects, 3U * static_cast<unsigned>(rounds));
  EXPECT_GE(sa.scripts_reloaded + sb.scripts_reloaded, 1U);
  RecordProperty("disconnects", std::to_string(sa.disconnects + sb.disconnects));
  RecordProperty("holds_lost", std::to_string(sa.holds_lost + sb.holds_lost));
  expect_clean(t);

  // Nothing held any more: a release whose outcome stayed unknown ends with its 3 s lease.
  for (const std::string& key : nemesis_keys()) {
    EXPECT_TRUE(wait_until(
        [&] {
          return server.cli({"EXISTS", key}) == "0";
        },
        10s, 20ms))
        << key << " is still held";
  }
  // Every permit back: the expirable ones at the latest when their leases end; the plain
  // semaphore's less at most one per release that failed, and never more than it had.
  auto pes = a.get_permit_expirable_semaphore("n-pes");
  EXPECT_TRUE(wait_until([&] { return pes.available_permits() == nemesis_permits; }, 10s, 20ms))
      << pes.available_permits();
  auto sem = a.get_semaphore("n-sem");
  EXPECT_TRUE(wait_until(
      [&] { return sem.available_permits() >= nemesis_permits - t.failed_releases(); }, 10s, 20ms))
      << sem.available_permits() << " of " << nemesis_permits << ", " << t.failed_releases()
      << " releases failed";
  EXPECT_LE(sem.available_permits(), nemesis_permits);
}

}  // namespace
}  // namespace rlock::test
