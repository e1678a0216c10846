// A failover that would lose a write the replica never received (config::replica_sync): a
// Sentinel group whose replica's link to the master runs through a fault_proxy, which stops the
// replication stream at the write (hang_on). The write runs on the master, which is killed while
// the client waits for the replica's acknowledgement; the Sentinel promotes the replica, which
// lacks it. On loopback the stream otherwise reaches the replica within a millisecond, so a
// kill never lands between a write's reply and its replication (the other failover tests pass
// without WAIT at all); here it always does.
//
// With WAIT, the write's reply is lost with the connection, and the write, idempotent by its
// latch, is sent again to the promoted replica, where no latch is: it runs there once. Without
// it (replica_sync off), the call returns with the write on the master only, and the failover
// loses it: an unlock that leaves the lock held, a release whose permit is gone for good.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <rlock/client.hpp>
#include <rlock/semaphore.hpp>
#include <string>
#include <system_error>

#include "faults/fault_proxy.hpp"
#include "faults/proxied_replica.hpp"
#include "support/event_recorder.hpp"
#include "support/fast_config.hpp"
#include "support/redis_server.hpp"
#include "support/replica_acks.hpp"
#include "support/server_monitor.hpp"
#include "support/wait.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;

/// A master, a replica of it through a fault_proxy, and a Sentinel monitoring the master as
/// "mymaster" (quorum 1, down after 1 s). The Sentinel knows the replica by its own port (the
/// replica announces it), so it promotes the replica itself, not the proxy.
struct proxied_sentinel_group {
  std::unique_ptr<test::redis_server> master = std::make_unique<test::redis_server>(
      test::server_options{.extra_args = {"--repl-diskless-sync-delay", "0"}});
  fault_proxy proxy{master->port()};
  test::redis_server replica{test::server_options{
      .extra_args = {"--replicaof", "127.0.0.1", std::to_string(proxy.port())}}};
  test::redis_server sentinel{test::server_options{
      .extra_args = {"--sentinel", "monitor", "mymaster", "127.0.0.1",
                     std::to_string(master->port()), "1", "--sentinel", "down-after-milliseconds",
                     "mymaster", "1000", "--sentinel", "failover-timeout", "mymaster", "10000"}}};

  /// Until the Sentinel knows the replica and the replica acknowledges the master's stream (a
  /// failover needs the first, a WAIT sent now is answered by the second). External state: no
  /// event to wait on.
  bool wait_until_ready() const {
    const std::string port = std::to_string(replica.port());
    return test::wait_until(
               [&] {
                 return sentinel.cli({"SENTINEL", "REPLICAS", "mymaster"}).find(port) !=
                        std::string::npos;
               },
               20s, 50ms) &&
           test::wait_until_replicas_acknowledge(*master, 20s);
  }

  /// Until the Sentinel names the replica as the master. External state: no event to wait on.
  bool wait_until_promoted() const {
    const std::string port = std::to_string(replica.port());
    return test::wait_until(
        [&] {
          const auto r = sentinel.cli_reply({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"});
          return r.is_array() && r.elements.size() == 2 && r.elements[1].str == port;
        },
        30s, 50ms);
  }

  /// A client that finds the master through the Sentinel and waits for every connected
  /// replica's acknowledgement (Redisson's rule: the promoted replica, which has none, counts
  /// writes at once), sending a write `tries` times. Its requests outlast the failover: 30
  /// attempts 200-400 ms apart.
  config client_config(test::event_recorder& rec, int tries) const {
    config cfg = test::fast_config("redis://127.0.0.1:1");  // unused in Sentinel mode
    cfg.master_name = "mymaster";
    cfg.sentinel_addresses = {sentinel.url()};
    cfg.replica_sync = config::all_connected_replicas;
    cfg.replica_sync_timeout = 300ms;
    cfg.replica_sync_tries = tries;
    cfg.retry_attempts = 30;
    cfg.retry_delay_base = 200ms;
    cfg.retry_delay_max = 400ms;
    cfg.on_event = rec.handler();
    return cfg;
  }
};

/// Kills `g`'s master from another thread once `monitor` has seen a client's script and then the
/// `waits`-th WAIT after it (the script ran: a connection's commands run in order), or after
/// 5 s without them (a client that sends no WAIT, or fewer). Its result: whether they were seen,
/// and the proxy held the write's chunk of the stream (hang_on). The proxy's thread may read
/// that chunk after MONITOR shows the WAIT (the likely cause of one failure under TSan, where
/// the mode was sampled once): it is waited for, the kill after it, so that the replica never
/// has the write.
std::future<bool> kill_at_wait(proxied_sentinel_group& g, test::server_monitor& monitor,
                               int waits) {
  return std::async(std::launch::async, [&g, &monitor, waits] {
    bool seen = monitor.next(client_script, 5s).has_value();
    for (int i = 0; seen && i < waits; ++i) seen = monitor.next_named("WAIT", 5s).has_value();
    // External state: the proxy's mode has no event to wait on.
    const bool hung = test::wait_until([&] { return g.proxy.mode() == proxy_mode::hang; }, 5s, 1ms);
    g.master->kill();
    return seen && hung;
  });
}

TEST(failover_sync, an_unlock_the_promoted_replica_missed_is_sent_to_it_and_releases_the_lock) {
  proxied_sentinel_group g;
  ASSERT_TRUE(g.wait_until_ready()) << g.sentinel.log_tail();
  test::event_recorder rec;
  client c(g.client_config(rec, 4));
  auto l = c.get_lock("failover-sync");
  ASSERT_TRUE(l.try_lock(10s));
  ASSERT_EQ(g.replica.cli({"EXISTS", "failover-sync"}), "1") << "the acquire was confirmed";
  test::server_monitor monitor(*g.master);
  g.proxy.hang_on("redisson_unlock_latch");
  auto killed = kill_at_wait(g, monitor, 1);
  std::error_code ec;
  l.unlock(ec);
  EXPECT_TRUE(killed.get()) << "the unlock and its WAIT, with the stream stopped";
  ASSERT_TRUE(g.wait_until_promoted()) << g.sentinel.log_tail();
  EXPECT_EQ(ec, std::error_code{}) << ec.message();
  EXPECT_EQ(g.replica.cli({"EXISTS", "failover-sync"}), "0")
      << "the unlock the promoted replica had missed";
  EXPECT_FALSE(l.is_held_by_current_thread());
  EXPECT_EQ(rec.count(client_event_kind::write_not_confirmed), 0U) << rec.kinds();
  // Another client takes the lock on the promoted replica at once: nothing holds it.
  test::event_recorder other_rec;
  client other(g.client_config(other_rec, 4));
  EXPECT_TRUE(other.get_lock("failover-sync").try_lock(0ms));
}

// Killed at the second WAIT: the release ran on the master, its WAIT ran out, and it was sent
// again (its replay found the latch there). The send after the kill goes to the promoted
// replica, where no latch is, and the permit is released there once.
TEST(failover_sync, a_release_sent_again_reaches_the_promoted_replica_once) {
  proxied_sentinel_group g;
  ASSERT_TRUE(g.wait_until_ready()) << g.sentinel.log_tail();
  // Set by hand, not by the client (see semaphore_sync_test.cpp's set_by_hand).
  ASSERT_EQ(g.master->cli({"SET", "failover-sync-sem", "0"}), "OK");
  ASSERT_TRUE(test::wait_until_replicas_acknowledge(*g.master, 20s));
  test::event_recorder rec;
  client c(g.client_config(rec, 4));
  auto sem = c.get_semaphore("failover-sync-sem");
  test::server_monitor monitor(*g.master);
  g.proxy.hang_on("incrby");
  auto killed = kill_at_wait(g, monitor, 2);
  std::int64_t after = -1;
  EXPECT_NO_THROW(after = sem.release());
  EXPECT_TRUE(killed.get()) << "the release, its WAIT and the WAIT of its replay";
  ASSERT_TRUE(g.wait_until_promoted()) << g.sentinel.log_tail();
  EXPECT_EQ(g.replica.cli({"GET", "failover-sync-sem"}), "1")
      << "the release the promoted replica had missed, once";
  EXPECT_EQ(after, 1) << "the count after the release (the first run's, or the promoted's)";
  EXPECT_EQ(sem.available_permits(), 1);
  EXPECT_EQ(rec.count(client_event_kind::write_not_confirmed), 0U) << rec.kinds();
}

}  // namespace
}  // namespace rlock::faults
