// An acquire that the replicas did not confirm (config::replica_sync) is undone and tried again,
// as Redisson retries it: config::replica_sync_tries in all, config::retry_delay_base/max
// apart, never past the caller's wait. Against a real master and its replica (paused, then
// resumed) or a master without one, checked with MONITOR.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>

#include "common.hpp"
#include "replicated_pair.hpp"
#include "rlock/permit_expirable_semaphore.hpp"
#include "rlock/read_write_lock.hpp"
#include "rlock/semaphore.hpp"
#include "support/server_monitor.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

std::pair<std::error_code, std::string> as_pair(const thrown& t) {
  return {t.code, t.what};
}

/// True for the lock script MONITOR shows as run on `key` by a client (not from a script).
bool evalsha_on(const monitored& m, const std::string& key) {
  return m.args.size() > 3 && m.args[0] == "EVALSHA" && m.args[3] == key;
}

/// A client config for `p`'s master: one replica within 300 ms, 4 tries 200 to 400 ms apart.
config retrying(const replicated_pair& p) {
  config cfg = p.client_config(1, 300ms);
  cfg.replica_sync_tries = 4;
  cfg.retry_delay_base = 200ms;
  cfg.retry_delay_max = 400ms;
  return cfg;
}

/// Waits for the first try on `key` to fail: its script, its WAIT (which a paused replica
/// leaves to time out), then its undo, the next script on `key`.
void await_first_try_undone(server_monitor& watch, const std::string& key) {
  const auto on_key = [&key](const monitored& m) { return evalsha_on(m, key); };
  ASSERT_TRUE(watch.next(on_key, 10s));
  ASSERT_TRUE(watch.next_named("WAIT", 10s));
  ASSERT_TRUE(watch.next(on_key, 10s));
}

TEST(replica_sync_retry, an_acquire_the_replica_confirms_on_a_later_try_gets_the_lock) {
  replicated_pair p;
  ASSERT_TRUE(p.wait_until_synced());
  client c(retrying(p));
  server_monitor watch(*p.master);
  p.replica->pause();
  auto taken = std::async(std::launch::async, [&] {
    auto l = c.get_lock("retried");
    std::string on_replica;
    const bool ok = l.try_lock(20s);
    if (ok) {
      on_replica = p.replica->cli(
          {"HGET", "retried", c.id() + ":" + std::to_string(this_thread_owner_id())});
      l.unlock_or_throw();
    }
    return std::make_pair(ok, on_replica);
  });
  ASSERT_NO_FATAL_FAILURE(await_first_try_undone(watch, "retried"));
  p.replica->resume();
  const auto [ok, on_replica] = taken.get();
  EXPECT_TRUE(ok);
  // The try that counted was on the replica when try_lock returned.
  EXPECT_EQ(on_replica, "1");
  // At least two tries and the unlock each waited for the replica.
  EXPECT_GE(calls_of(*p.master, "wait"), 3);
  EXPECT_FALSE(exists_on(*p.master, "retried"));
}

TEST(replica_sync_retry, a_lock_without_a_wait_fails_after_replica_sync_tries) {
  redis_server server;
  config cfg = asking_a_lone_server(server);
  cfg.replica_sync_tries = 3;
  client c(cfg);
  auto l = c.get_lock("never-confirmed");
  const auto [code, what] = thrown_by([&] { l.lock(); });
  EXPECT_EQ(code, errc::replication_not_confirmed) << what;
  EXPECT_NE(what.find("tried 3 times (config::replica_sync_tries)"), std::string::npos) << what;
  EXPECT_EQ(calls_of(server, "wait"), 3);
  // Each try was undone: nothing is held, on the server or here.
  EXPECT_TRUE(wait_until([&] { return !exists_on(server, "never-confirmed"); }, 3s));
  EXPECT_FALSE(l.is_held_by_current_thread());
}

// A wait shorter than the retry delay: the tries again come halfway to the deadline instead,
// none starts after it, and the acquire ends with the last try's error, not as a wait that ran
// out (which would say the lock was another's).
TEST(replica_sync_retry, a_wait_shorter_than_the_retry_delay_tries_within_it_then_fails) {
  redis_server server;
  config cfg = asking_a_lone_server(server);
  cfg.retry_delay_base = 10s;
  cfg.retry_delay_max = 20s;
  client c(cfg);
  auto l = c.get_lock("short-wait");
  const auto t0 = steady::now();
  const auto [code, what] = thrown_by([&] { (void)l.try_lock(1s); });
  const auto took = ms_since(t0);
  EXPECT_EQ(code, errc::replication_not_confirmed) << what;
  const long waits = calls_of(server, "wait");
  EXPECT_GE(waits, 2);
  EXPECT_NE(what.find("tried " + std::to_string(waits) + " times"), std::string::npos) << what;
  // The last try started before the deadline and had its WAIT (100 ms) to finish.
  EXPECT_LT(took, 1000 + 100 + 500);
  EXPECT_TRUE(wait_until([&] { return !exists_on(server, "short-wait"); }, 3s));
}

// Shut down while acquires wait out their back-offs (a lock's, a semaphore's): the callers are
// told at once, not after them.
TEST(replica_sync_retry, shutdown_during_a_back_off_ends_the_acquire_at_once) {
  redis_server server;
  config cfg = asking_a_lone_server(server);
  cfg.replica_sync_tries = 2;  // one back-off of 10 to 20 s
  cfg.retry_delay_base = 20s;
  cfg.retry_delay_max = 40s;
  client c(cfg);
  ASSERT_EQ(server.cli({"SET", "backing-off-sem", "1"}), "OK");
  server_monitor watch(server);
  auto l = c.get_lock("backing-off");
  auto sem = c.get_semaphore("backing-off-sem");
  auto lock_ended = std::async(std::launch::async, [&] { return code_of([&] { l.lock(); }); });
  ASSERT_NO_FATAL_FAILURE(await_first_try_undone(watch, "backing-off"));
  auto sem_ended = std::async(std::launch::async, [&] { return code_of([&] { sem.acquire(); }); });
  ASSERT_NO_FATAL_FAILURE(await_first_try_undone(watch, "backing-off-sem"));
  const auto t0 = steady::now();
  c.shutdown();
  ASSERT_EQ(lock_ended.wait_for(5s), std::future_status::ready);
  ASSERT_EQ(sem_ended.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(lock_ended.get(), errc::shutdown);
  EXPECT_EQ(sem_ended.get(), errc::shutdown);
  EXPECT_LT(ms_since(t0), 5000);
  EXPECT_EQ(calls_of(server, "wait"), 2);
}

// The other kinds' waits (semaphore, read-write lock) try again the same way: their first tries
// are given back, and a try after the replica came back is confirmed.
TEST(replica_sync_retry, a_semaphore_and_a_read_write_lock_take_on_a_later_try) {
  replicated_pair p;
  ASSERT_TRUE(p.wait_until_synced());
  client c(retrying(p));
  ASSERT_EQ(p.master->cli({"SET", "retried-sem", "2"}), "OK");
  server_monitor watch(*p.master);
  p.replica->pause();
  auto sem_taken = std::async(
      std::launch::async, [&] { return c.get_semaphore("retried-sem").try_acquire_for(20s, 2); });
  ASSERT_NO_FATAL_FAILURE(await_first_try_undone(watch, "retried-sem"));
  p.replica->resume();
  EXPECT_TRUE(sem_taken.get());
  EXPECT_EQ(p.replica->cli({"GET", "retried-sem"}), "0");

  p.replica->pause();
  auto rw_taken = std::async(std::launch::async, [&] {
    auto rw = c.get_read_write_lock("retried-rw");
    const bool ok = rw.try_lock_for(20s);
    std::string mode;
    if (ok) {
      mode = p.replica->cli({"HGET", "retried-rw", "mode"});
      rw.unlock();
    }
    return mode;
  });
  ASSERT_NO_FATAL_FAILURE(await_first_try_undone(watch, "retried-rw"));
  p.replica->resume();
  EXPECT_EQ(rw_taken.get(), "write");
}

TEST(replica_sync_retry, the_other_kinds_fail_after_replica_sync_tries_holding_nothing) {
  redis_server server;
  config cfg = asking_a_lone_server(server);
  cfg.replica_sync_tries = 3;
  client c(cfg);
  ASSERT_EQ(server.cli({"SET", "lone-sem", "2"}), "OK");
  auto sem = c.get_semaphore("lone-sem");
  auto [code, what] = thrown_by([&] { (void)sem.try_acquire_for(10s, 2); });
  EXPECT_EQ(code, errc::replication_not_confirmed) << what;
  EXPECT_NE(what.find("tried 3 times"), std::string::npos) << what;
  EXPECT_EQ(calls_of(server, "wait"), 3);
  EXPECT_TRUE(wait_until([&] { return server.cli({"GET", "lone-sem"}) == "2"; }, 3s));

  ASSERT_EQ(server.cli({"SET", "lone-pes", "1"}), "OK");
  auto pes = c.get_permit_expirable_semaphore("lone-pes");
  std::tie(code, what) = as_pair(thrown_by([&] { (void)pes.try_acquire_for(10s); }));
  EXPECT_EQ(code, errc::replication_not_confirmed) << what;
  EXPECT_NE(what.find("tried 3 times"), std::string::npos) << what;
  EXPECT_EQ(calls_of(server, "wait"), 6);
  EXPECT_TRUE(wait_until([&] { return expirable_permit_given_back(server, "lone-pes"); }, 3s));

  auto rw = c.get_read_write_lock("lone-rw");
  std::tie(code, what) = as_pair(thrown_by([&] { (void)rw.try_lock_shared_for(10s); }));
  EXPECT_EQ(code, errc::replication_not_confirmed) << what;
  EXPECT_NE(what.find("tried 3 times"), std::string::npos) << what;
  EXPECT_EQ(calls_of(server, "wait"), 9);
  EXPECT_TRUE(wait_until([&] { return server.cli({"EXISTS", "lone-rw"}) == "0"; }, 3s));
}

}  // namespace
}  // namespace rlock::test
