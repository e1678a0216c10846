// Replica acknowledgement of lock writes (config::replica_sync) against a real master and its
// replica: a confirmed acquire or unlock is on the replica when it returns; one the replica does
// not acknowledge (paused, or none there) fails with errc::replication_not_confirmed, an acquire
// (after its tries: replica_sync_retry_test.cpp) leaving nothing held and an unlock having
// released all the same; a semaphore's change completes and is reported as an event.
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "replicated_pair.hpp"
#include "rlock/fenced_lock.hpp"
#include "rlock/permit_expirable_semaphore.hpp"
#include "rlock/read_write_lock.hpp"
#include "rlock/semaphore.hpp"
#include "support/event_recorder.hpp"
#include "support/replica_acks.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

TEST(replica_sync, a_confirmed_acquire_and_unlock_are_on_the_replica_when_they_return) {
  replicated_pair p;
  ASSERT_TRUE(p.wait_until_synced());
  client c(p.client_config(1));
  auto l = c.get_lock("synced");
  for (int i = 0; i < 20; ++i) {
    l.lock();
    // WAIT returned only once the replica had applied the script: read at once, no waiting.
    ASSERT_TRUE(exists_on(*p.replica, "synced")) << "round " << i;
    l.unlock_or_throw();
    ASSERT_FALSE(exists_on(*p.replica, "synced")) << "round " << i;
  }
  EXPECT_EQ(calls_of(*p.master, "wait"), 40);
  // A re-entry and its partial unlock are waited for too.
  l.lock();
  l.lock();
  l.unlock_or_throw();
  EXPECT_EQ(
      p.replica->cli({"HGET", "synced", c.id() + ":" + std::to_string(this_thread_owner_id())}),
      "1");
  l.unlock_or_throw();
  EXPECT_EQ(calls_of(*p.master, "wait"), 44);
}

TEST(replica_sync, off_by_default_sends_no_wait) {
  replicated_pair p;
  ASSERT_TRUE(p.wait_until_synced());
  client c(config_for(*p.master));
  auto l = c.get_lock("unsynced");
  l.lock();
  l.unlock_or_throw();
  EXPECT_EQ(calls_of(*p.master, "wait"), 0);
}

// Each try is undone, then tried again after retry_delay (short here), replica_sync_tries in
// all (replica_sync_retry_test.cpp has the try that succeeds).
TEST(replica_sync, an_acquire_a_paused_replica_never_confirms_fails_after_its_tries) {
  replicated_pair p;
  ASSERT_TRUE(p.wait_until_synced());
  config cfg = p.client_config(1, 300ms);
  cfg.replica_sync_tries = 3;
  client c(cfg);
  auto l = c.get_lock("unconfirmed");
  p.replica->pause();
  const auto t0 = steady::now();
  const auto [code, what] = thrown_by([&] { (void)l.try_lock(5s, 10s); });
  EXPECT_EQ(code, errc::replication_not_confirmed) << what;
  const auto took = ms_since(t0);
  EXPECT_GE(took, 900);   // three WAITs' timeouts
  EXPECT_LT(took, 3000);  // not the caller's whole wait
  EXPECT_EQ(calls_of(*p.master, "wait"), 3);
  EXPECT_NE(what.find("acknowledged by 0 of the 1 replicas"), std::string::npos) << what;
  EXPECT_NE(what.find("tried 3 times"), std::string::npos) << what;
  EXPECT_FALSE(l.is_held_by_current_thread());
  // Taken on the master, then undone there: the lock is free again well before its 10 s lease.
  EXPECT_TRUE(wait_until([&] { return !exists_on(*p.master, "unconfirmed"); }, 3s));
  p.replica->resume();
  // With the replica back, an acquire is confirmed.
  ASSERT_TRUE(p.wait_until_synced());
  client patient(p.client_config(1));
  auto pl = patient.get_lock("unconfirmed");
  EXPECT_TRUE(pl.try_lock(5s, 10s));
  EXPECT_TRUE(exists_on(*p.replica, "unconfirmed"));
  pl.unlock_or_throw();
}

TEST(replica_sync, an_unlock_a_paused_replica_does_not_confirm_has_released_the_lock) {
  replicated_pair p;
  ASSERT_TRUE(p.wait_until_synced());
  client c(p.client_config(1, 1000ms));
  auto l = c.get_lock("release-unconfirmed");
  l.lock();
  p.replica->pause();
  EXPECT_EQ(code_of([&] { l.unlock_or_throw(); }), errc::replication_not_confirmed);
  EXPECT_FALSE(exists_on(*p.master, "release-unconfirmed"));
  EXPECT_FALSE(l.is_held_by_current_thread());
  // Counted without events wanted (this client has no on_event).
  EXPECT_EQ(c.stats().writes_not_confirmed, 1U);
  // Another client takes it at once; the hold's loss is not signalled for a release.
  client other(config_for(*p.master));
  auto ol = other.get_lock("release-unconfirmed");
  EXPECT_TRUE(ol.try_lock());
  ol.unlock_or_throw();
  p.replica->resume();
}

// A semaphore's changes complete as they ran on the master whatever the replicas acknowledged
// (a caller told that a release failed would release again): a shortfall is reported as an
// event. With the replica up, they are on it when they return.
TEST(replica_sync, a_semaphore_change_a_paused_replica_does_not_confirm_is_reported) {
  replicated_pair p;
  ASSERT_TRUE(p.wait_until_synced());
  event_recorder rec;
  config cfg = p.client_config(1, 300ms);
  cfg.replica_sync_tries = 2;
  cfg.on_event = rec.handler();
  client c(cfg);
  auto sem = c.get_semaphore("sem-unconfirmed");
  ASSERT_TRUE(sem.try_set_permits(1));
  EXPECT_EQ(p.replica->cli({"GET", "sem-unconfirmed"}), "1");
  EXPECT_EQ(sem.release(), 2);
  EXPECT_EQ(p.replica->cli({"GET", "sem-unconfirmed"}), "2");
  EXPECT_EQ(rec.count(client_event_kind::write_not_confirmed), 0U);
  p.replica->pause();
  EXPECT_EQ(sem.add_permits(3), 5);
  EXPECT_EQ(sem.release(), 6);
  ASSERT_TRUE(rec.wait_for_count(client_event_kind::write_not_confirmed, 2, 5s));
  const auto e = rec.wait_for(client_event_kind::write_not_confirmed, 0ms);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->object, "sem-unconfirmed");
  EXPECT_NE(e->detail.find("changed the count on the master, but acknowledged by 0 of the 1"),
            std::string::npos)
      << e->detail;
  EXPECT_NE(e->detail.find("tried 2 times"), std::string::npos) << e->detail;
  EXPECT_EQ(p.master->cli({"GET", "sem-unconfirmed"}), "6");
  p.replica->resume();
  EXPECT_EQ(rec.count(client_event_kind::write_not_confirmed), 2U);
}

TEST(replica_sync, without_replicas_every_acquire_fails_at_the_sync_timeout) {
  redis_server server;
  client c(asking_a_lone_server(server));
  auto l = c.get_lock("alone");
  const auto t0 = steady::now();
  EXPECT_EQ(code_of([&] { (void)l.try_lock(); }), errc::replication_not_confirmed);
  EXPECT_LT(ms_since(t0), 2000);
  EXPECT_EQ(calls_of(server, "wait"), 1);  // try_lock() tries once: it never waits
  EXPECT_TRUE(wait_until([&] { return !exists_on(server, "alone"); }, 3s));
  // A spin lock and a fair lock ask the same.
  auto spin = c.get_spin_lock("alone-spin");
  EXPECT_EQ(code_of([&] { (void)spin.try_lock(); }), errc::replication_not_confirmed);
  auto fair = c.get_fair_lock("alone-fair");
  EXPECT_EQ(code_of([&] { (void)fair.try_lock(); }), errc::replication_not_confirmed);
  EXPECT_TRUE(wait_until(
      [&] { return !exists_on(server, "alone-spin") && !exists_on(server, "alone-fair"); }, 3s));
}

TEST(replica_sync, a_fenced_locks_token_is_on_the_replica_when_it_is_returned) {
  replicated_pair p;
  ASSERT_TRUE(p.wait_until_synced());
  client c(p.client_config(1));
  auto f = c.get_fenced_lock("fenced-synced");
  const fencing_token t = f.lock_and_get_token();
  // The acquire and the token's INCR each waited for the replica.
  EXPECT_EQ(calls_of(*p.master, "wait"), 2);
  EXPECT_EQ(p.replica->cli({"GET", "redisson_lock_token:{fenced-synced}"}), std::to_string(t));
  f.unlock_or_throw();
}

// WAITs go on connections of their own: while acquires queue behind a paused replica's WAITs
// for seconds (12 acquires on the 4 connections: 3 rounds of 1 s), a held lock's renewals
// (every 500 ms of a 1.5 s lease) still land. On the acquires' connections they would wait
// behind those WAITs past the lease, and the lock be lost.
TEST(replica_sync, renewals_do_not_queue_behind_waits) {
  replicated_pair p;
  ASSERT_TRUE(p.wait_until_synced());
  config cfg = p.client_config(1, 1000ms);
  cfg.lock_watchdog_timeout = 1500ms;
  // One try each: the WAITs this test queues are its first tries' (tries again would queue
  // more of them behind those, past the acquires' own deadlines).
  cfg.replica_sync_tries = 1;
  client c(cfg);
  auto held = c.get_lock("kept");
  held.lock();
  const std::stop_token lost = held.loss_token();
  p.replica->pause();
  const auto t0 = steady::now();
  std::vector<std::future<std::error_code>> tries;
  tries.reserve(12);
  for (int i = 0; i < 12; ++i) {
    tries.push_back(std::async(std::launch::async, [&c, i] {
      auto l = c.get_lock("queued-" + std::to_string(i));
      return code_of([&] { (void)l.try_lock(10s, 10s); });
    }));
  }
  for (auto& t : tries) {
    const std::error_code ec = t.get();
    EXPECT_TRUE(ec == errc::replication_not_confirmed || ec == errc::timeout) << ec.message();
  }
  EXPECT_GE(ms_since(t0), 2000);  // the WAITs ran one after another, past the lease
  EXPECT_FALSE(lost.stop_requested());
  EXPECT_GT(held.valid_until(), steady::now());
  p.replica->resume();
  held.unlock();  // not waited for while the replica catches up: the outcome is not checked
}

// The other kinds' acquires wait too: with no replica, each try that took something gives it
// back and fails; with one, what they took is on the replica when they return.
TEST(replica_sync, semaphores_and_read_write_locks_wait_for_their_acquires) {
  replicated_pair p;
  ASSERT_TRUE(p.wait_until_synced());
  client c(p.client_config(1));
  auto sem = c.get_semaphore("synced-sem");
  ASSERT_TRUE(sem.try_set_permits(2));
  ASSERT_TRUE(sem.try_acquire());
  EXPECT_EQ(p.replica->cli({"GET", "synced-sem"}), "1");
  EXPECT_EQ(sem.release(), 2);
  auto pes = c.get_permit_expirable_semaphore("synced-pes");
  ASSERT_TRUE(pes.try_set_permits(1));
  const auto id = pes.try_acquire(10s);
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(p.replica->cli({"ZCARD", "{synced-pes}:timeout"}), "1");
  pes.release(*id);
  auto rw = c.get_read_write_lock("synced-rw");
  ASSERT_TRUE(rw.try_lock_shared());
  EXPECT_EQ(p.replica->cli({"HGET", "synced-rw", "mode"}), "read");
  rw.unlock_shared();
  EXPECT_EQ(p.replica->cli({"EXISTS", "synced-rw"}), "0");
}

TEST(replica_sync, without_replicas_the_other_kinds_give_back_what_they_took) {
  redis_server server;
  client c(asking_a_lone_server(server));
  // The counts are set by hand: the semaphores' own setters would be sent replica_sync_tries
  // times here, and nothing below should depend on them.
  ASSERT_EQ(server.cli({"SET", "lone-sem", "2"}), "OK");
  auto sem = c.get_semaphore("lone-sem");
  EXPECT_EQ(code_of([&] { (void)sem.try_acquire(2); }), errc::replication_not_confirmed);
  EXPECT_TRUE(wait_until([&] { return server.cli({"GET", "lone-sem"}) == "2"; }, 3s));
  ASSERT_EQ(server.cli({"SET", "lone-pes", "1"}), "OK");
  auto pes = c.get_permit_expirable_semaphore("lone-pes");
  EXPECT_EQ(code_of([&] { (void)pes.try_acquire(10s); }), errc::replication_not_confirmed);
  EXPECT_TRUE(wait_until([&] { return expirable_permit_given_back(server, "lone-pes"); }, 3s));
  auto rw = c.get_read_write_lock("lone-rw");
  EXPECT_EQ(code_of([&] { (void)rw.try_lock(); }), errc::replication_not_confirmed);
  EXPECT_EQ(code_of([&] { (void)rw.try_lock_shared(); }), errc::replication_not_confirmed);
  EXPECT_TRUE(wait_until([&] { return server.cli({"EXISTS", "lone-rw"}) == "0"; }, 3s));
}

// A server without WAIT (renamed away, as some managed services do): nothing can be confirmed,
// so every acquire is undone and fails, and says why.
TEST(replica_sync, a_server_without_wait_confirms_nothing_and_says_so) {
  redis_server server(server_options{.extra_args = {"--rename-command", "WAIT", ""}});
  client c(asking_a_lone_server(server));
  auto l = c.get_lock("no-wait");
  const auto [code, what] = thrown_by([&] { (void)l.try_lock(); });
  EXPECT_EQ(code, errc::replication_not_confirmed) << what;
  EXPECT_NE(what.find("the master refused WAIT: ERR unknown command"), std::string::npos) << what;
  EXPECT_TRUE(wait_until([&] { return !exists_on(server, "no-wait"); }, 3s));
}

// A lock handed over by the wait queue is confirmed by a synced attempt of the new holder's
// own: the unlock that handed it (here a client that asks for no acknowledgement) gave the new
// holder no WAIT. With the replica paused, the hand-off is not confirmed: the waiter's acquire
// fails and the handed lock is released; with it back, a confirmed hand-off is on the replica
// when the waiter's acquire returns.
TEST(replica_sync, a_hand_off_is_confirmed_by_the_new_holder) {
  replicated_pair p;
  ASSERT_TRUE(p.wait_until_synced());
  client holder(config_for(*p.master));  // no replica_sync
  client waiter(p.client_config(1, 300ms));
  auto h = holder.get_lock("handed");
  auto w = waiter.get_lock("handed");
  struct outcome {
    std::error_code ec;
    bool acquired = false;
    std::string on_replica;  // the waiter's hold count on the replica, read once it returned
  };
  for (const bool paused : {true, false}) {
    h.lock();
    auto got = std::async(std::launch::async, [&] {
      outcome o;
      o.ec = code_of([&] { o.acquired = w.try_lock(10s); });
      if (o.acquired) {
        o.on_replica = p.replica->cli(
            {"HGET", "handed", waiter.id() + ":" + std::to_string(this_thread_owner_id())});
        w.unlock();
      }
      return o;
    });
    ASSERT_TRUE(wait_until([&] { return zcard(*p.master, "rlock_queue:{handed}") == 1; }, 5s));
    if (paused) p.replica->pause();
    h.unlock_or_throw();
    const outcome o = got.get();
    if (paused) {
      EXPECT_EQ(o.ec, errc::replication_not_confirmed) << o.ec.message();
      EXPECT_FALSE(o.acquired);
      // Handed over on the master, then released by the waiter.
      EXPECT_TRUE(wait_until([&] { return !exists_on(*p.master, "handed"); }, 3s));
      p.replica->resume();
      ASSERT_TRUE(p.wait_until_synced());
    } else {
      EXPECT_FALSE(o.ec) << o.ec.message();
      EXPECT_TRUE(o.acquired);
      EXPECT_EQ(o.on_replica, "1");
    }
  }
}

TEST(replica_sync, bad_settings_are_refused) {
  redis_server server;
  auto refused = [&](int replicas, std::chrono::milliseconds t) {
    config cfg = config_for(server);
    cfg.replica_sync = replicas;
    cfg.replica_sync_timeout = t;
    return code_of([&] { client c(cfg); });
  };
  EXPECT_EQ(refused(-2, 100ms), errc::invalid_argument);
  EXPECT_EQ(refused(config::all_connected_replicas, 0ms), errc::invalid_argument);
  EXPECT_EQ(refused(config::all_connected_replicas, 100ms), std::error_code{});
  EXPECT_EQ(refused(1001, 100ms), errc::invalid_argument);
  EXPECT_EQ(refused(1, 0ms), errc::invalid_argument);
  EXPECT_EQ(refused(1, config_for(server).timeout + 1ms), errc::invalid_argument);
  EXPECT_EQ(refused(0, 0ms), std::error_code{});  // off: the timeout is not used
  EXPECT_EQ(refused(2, 50ms), std::error_code{});
  for (const int tries : {0, 101}) {
    config cfg = config_for(server);
    cfg.replica_sync = 1;
    cfg.replica_sync_tries = tries;
    EXPECT_EQ(code_of([&] { client c(cfg); }), errc::invalid_argument) << tries;
  }
}

}  // namespace
}  // namespace rlock::test
