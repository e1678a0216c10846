// Redisson's rule for replica acknowledgement (config::all_connected_replicas) against a real
// master and its replicas: each lock write's WAIT asks for every replica connected to the master
// (seen with MONITOR), the write counts once one of them acknowledged it or when none is
// connected, and the count follows replicas that leave or join.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "rlock/read_write_lock.hpp"
#include "rlock/semaphore.hpp"
#include "support/replica_acks.hpp"
#include "support/server_monitor.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

/// A master and `n` replicas of it (a full sync at once: no diskless-sync delay).
struct replicated_servers {
  explicit replicated_servers(int n) {
    for (int i = 0; i < n; ++i) add_replica();
  }

  void add_replica() {
    replicas.push_back(std::make_unique<redis_server>(server_options{
        .extra_args = {"--replicaof", "127.0.0.1", std::to_string(master->port())}}));
  }

  bool wait_until_synced() const {
    return wait_until_replicas_acknowledge(*master, 20s, static_cast<int>(replicas.size()));
  }

  /// A client of the master with Redisson's rule, waiting `sync_timeout` for the replicas.
  config client_config(std::chrono::milliseconds sync_timeout) const {
    config c = config_for(*master);
    c.replica_sync = config::all_connected_replicas;
    c.replica_sync_timeout = sync_timeout;
    return c;
  }

  std::unique_ptr<redis_server> master = std::make_unique<redis_server>(
      server_options{.extra_args = {"--repl-diskless-sync-delay", "0"}});
  std::vector<std::unique_ptr<redis_server>> replicas;
};

/// The replica count of the next WAIT `watch` sees ("" when none comes within 10 s).
std::string next_wait_count(server_monitor& watch) {
  const auto w = watch.next_named("WAIT", 10s);
  return w && w->args.size() == 3 ? w->args[1] : std::string();
}

TEST(replica_sync_all, a_write_waits_for_every_connected_replica_and_counts_once_one_acked) {
  replicated_servers s(2);
  ASSERT_TRUE(s.wait_until_synced());
  client c(s.client_config(1000ms));
  server_monitor watch(*s.master);
  auto l = c.get_lock("all-synced");
  l.lock();
  EXPECT_EQ(next_wait_count(watch), "2");
  EXPECT_TRUE(exists_on(*s.replicas[0], "all-synced"));
  EXPECT_TRUE(exists_on(*s.replicas[1], "all-synced"));
  l.unlock_or_throw();
  EXPECT_EQ(next_wait_count(watch), "2");

  // One replica stalled: its WAIT runs out, with the other's acknowledgement: the acquire
  // counts (exactly 2 would fail; exactly 1 would not have waited).
  s.replicas[1]->pause();
  const auto t0 = steady::now();
  EXPECT_TRUE(l.try_lock(5s, 10s));
  EXPECT_GE(ms_since(t0), 1000);
  EXPECT_TRUE(exists_on(*s.replicas[0], "all-synced"));
  l.unlock_or_throw();
  s.replicas[1]->resume();
}

TEST(replica_sync_all, a_write_no_connected_replica_acknowledged_is_undone_and_says_so) {
  replicated_servers s(2);
  ASSERT_TRUE(s.wait_until_synced());
  client c(s.client_config(300ms));
  auto l = c.get_lock("all-stalled");
  for (auto& r : s.replicas) r->pause();
  const auto [code, what] = thrown_by([&] { (void)l.try_lock(5s, 10s); });
  EXPECT_EQ(code, errc::replication_not_confirmed) << what;
  EXPECT_NE(what.find("acknowledged by none of the 2 replicas connected within 300 ms"),
            std::string::npos)
      << what;
  EXPECT_FALSE(l.is_held_by_current_thread());
  // Taken on the master, then undone there, well before its 10 s lease.
  EXPECT_TRUE(wait_until([&] { return !exists_on(*s.master, "all-stalled"); }, 3s));
  for (auto& r : s.replicas) r->resume();
}

TEST(replica_sync_all, a_master_without_replicas_confirms_every_write_at_once) {
  redis_server server;
  config cfg = config_for(server);
  cfg.replica_sync = config::all_connected_replicas;
  cfg.replica_sync_timeout = 2000ms;
  client c(cfg);
  server_monitor watch(server);
  auto l = c.get_lock("all-alone");
  for (int i = 0; i < 5; ++i) {
    l.lock();
    EXPECT_EQ(next_wait_count(watch), "0") << "round " << i;
    l.unlock_or_throw();
    EXPECT_EQ(next_wait_count(watch), "0") << "round " << i;
  }
  // The other kinds, through the same WAITs.
  auto rw = c.get_read_write_lock("all-alone-rw");
  EXPECT_TRUE(rw.try_lock());
  rw.unlock();
  auto sem = c.get_semaphore("all-alone-sem");
  ASSERT_TRUE(sem.try_set_permits(1));
  EXPECT_TRUE(sem.try_acquire());
  (void)sem.release();
}

// A replica that leaves: the WAIT that still asked for it runs out with no acknowledgement, the
// replicas are counted again (none connected), and the write counts; the next WAITs ask for 0.
TEST(replica_sync_all, a_replica_that_left_is_counted_out) {
  replicated_servers s(1);
  ASSERT_TRUE(s.wait_until_synced());
  client c(s.client_config(500ms));
  server_monitor watch(*s.master);
  auto l = c.get_lock("all-left");
  l.lock();
  EXPECT_EQ(next_wait_count(watch), "1");
  l.unlock_or_throw();
  EXPECT_EQ(next_wait_count(watch), "1");
  s.replicas[0]->kill();
  ASSERT_TRUE(wait_until(
      [&] {
        return s.master->cli({"INFO", "replication"}).find("connected_slaves:0") !=
               std::string::npos;
      },
      10s));
  EXPECT_TRUE(l.try_lock(5s, 10s));
  EXPECT_EQ(next_wait_count(watch), "1");
  EXPECT_TRUE(watch.next_named("INFO", 10s).has_value());  // the recount
  l.unlock_or_throw();
  EXPECT_EQ(next_wait_count(watch), "0");
}

// A replica that joins: WAIT 0 answers at once whatever the replicas did, so the count is taken
// again once it is a second old; from then on the WAITs ask for the new replica too.
TEST(replica_sync_all, a_replica_that_joins_is_counted_in_within_a_second) {
  replicated_servers s(0);
  client c(s.client_config(2000ms));
  auto l = c.get_lock("all-joined");
  l.lock();
  l.unlock_or_throw();
  s.add_replica();
  ASSERT_TRUE(s.wait_until_synced());
  server_monitor watch(*s.master);
  // Each round's WAIT asks for the count at hand; a recount comes within a second or so.
  bool counted_in = false;
  for (int i = 0; i < 100 && !counted_in; ++i) {
    l.lock();
    counted_in = next_wait_count(watch) == "1";
    l.unlock_or_throw();
    counted_in = next_wait_count(watch) == "1" || counted_in;
  }
  EXPECT_TRUE(counted_in);
  // Then each write is on the replica when it returns.
  l.lock();
  EXPECT_TRUE(exists_on(*s.replicas[0], "all-joined"));
  l.unlock_or_throw();
}

// A server that will not tell its replicas (an ACL without INFO): WAIT asks for one, so a
// write counts once a replica acknowledged it, and fails on a master without replicas.
TEST(replica_sync_all, a_server_that_refuses_info_is_asked_for_one_replica) {
  replicated_servers s(1);
  ASSERT_TRUE(s.wait_until_synced());
  s.master->cli({"ACL", "SETUSER", "no-info", "on", ">pw", "~*", "&*", "+@all", "-info"});
  config cfg = s.client_config(300ms);
  cfg.username = "no-info";
  cfg.password = "pw";
  client c(cfg);
  server_monitor watch(*s.master);
  auto l = c.get_lock("all-no-info");
  l.lock();
  EXPECT_EQ(next_wait_count(watch), "1");
  l.unlock_or_throw();

  redis_server lone;
  lone.cli({"ACL", "SETUSER", "no-info", "on", ">pw", "~*", "&*", "+@all", "-info"});
  config lone_cfg = config_for(lone);
  lone_cfg.replica_sync = config::all_connected_replicas;
  lone_cfg.replica_sync_timeout = 300ms;
  lone_cfg.username = "no-info";
  lone_cfg.password = "pw";
  client alone(lone_cfg);
  auto al = alone.get_lock("all-no-info");
  const auto [code, what] = thrown_by([&] { (void)al.try_lock(); });
  EXPECT_EQ(code, errc::replication_not_confirmed) << what;
  EXPECT_NE(what.find("INFO refused: one asked for"), std::string::npos) << what;
  EXPECT_TRUE(wait_until([&] { return !exists_on(lone, "all-no-info"); }, 3s));
}

// A server without WAIT (renamed away; serverless services have none, and Redisson skips it
// there): its writes count while it has no replica connected, and fail once one is.
TEST(replica_sync_all, a_server_without_wait_counts_writes_only_while_it_has_no_replica) {
  redis_server master(server_options{
      .extra_args = {"--repl-diskless-sync-delay", "0", "--rename-command", "WAIT", ""}});
  config cfg = config_for(master);
  cfg.replica_sync = config::all_connected_replicas;
  cfg.replica_sync_timeout = 300ms;
  {
    client c(cfg);
    auto l = c.get_lock("all-no-wait");
    EXPECT_TRUE(l.try_lock());
    l.unlock_or_throw();
  }
  redis_server replica(
      server_options{.extra_args = {"--replicaof", "127.0.0.1", std::to_string(master.port())}});
  ASSERT_TRUE(wait_until_replicas_acknowledge(master, 20s));
  client c(cfg);
  auto l = c.get_lock("all-no-wait");
  const auto [code, what] = thrown_by([&] { (void)l.try_lock(); });
  EXPECT_EQ(code, errc::replication_not_confirmed) << what;
  EXPECT_NE(what.find("the master refused WAIT: ERR unknown command"), std::string::npos) << what;
  EXPECT_TRUE(wait_until([&] { return !exists_on(master, "all-no-wait"); }, 3s));
}

}  // namespace
}  // namespace rlock::test
