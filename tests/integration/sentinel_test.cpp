// Sentinel mode against real servers: a master, its replica and a Sentinel monitoring them, all
// redis-server processes of this test. The client finds the master through the Sentinel, moves
// to the new one after a failover, and says clearly when no Sentinel can name the master.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <stdexcept>
#include <string>

#include "common.hpp"
#include "sentinel_group.hpp"
#include "support/event_recorder.hpp"
#include "support/rotating_secret.hpp"
#include "support/server_monitor.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

/// Whether `l`'s holder finds its hold on the new master within 30 s of a failover (its client
/// reconnects through the Sentinel). External state: the reconnect has no event to wait on.
bool holds_once_reconnected(reentrant_lock& l) {
  return wait_until(
      [&] {
        try {
          return l.is_held_by_current_thread();
        } catch (const error&) {
          return false;  // still reconnecting
        }
      },
      30s, 50ms);
}

TEST(sentinel, a_lock_is_taken_on_the_master_the_sentinel_names_after_a_dead_sentinel) {
  sentinel_group g;
  redis_server dead;
  const std::string dead_url = dead.url();
  dead.kill();  // nothing listens on its port now
  client c(g.client_config({dead_url, g.sentinel->url()}));
  auto l = c.get_lock("through-sentinel");
  ASSERT_TRUE(l.try_lock(10s, 20s));
  EXPECT_EQ(g.master->cli({"EXISTS", "through-sentinel"}), "1");
  l.unlock_or_throw();
  EXPECT_EQ(g.master->cli({"EXISTS", "through-sentinel"}), "0");
}

// config::credentials_resolver in Sentinel mode: asked with the address of the master that the
// Sentinel named, never about the Sentinel itself (which has no such user: were it asked, the
// Sentinel would refuse the AUTH and name no master).
TEST(sentinel, a_credentials_resolver_is_asked_about_the_master_and_not_the_sentinels) {
  sentinel_group g;
  ASSERT_EQ(g.master->cli({"ACL", "SETUSER", "rot", "on", ">pw", "~*", "&*", "+@all"}), "OK");
  rotating_secret secret("pw");
  config cfg = g.client_config();
  cfg.client_name = "resolved";
  cfg.credentials_resolver = secret.resolver();
  client c(cfg);
  auto l = c.get_lock("resolved-sentinel");
  ASSERT_TRUE(l.try_lock(10s, 20s));
  EXPECT_EQ(g.master->cli({"EXISTS", "resolved-sentinel"}), "1");
  l.unlock_or_throw();
  EXPECT_EQ(secret.ports_asked(), std::set<std::uint16_t>{g.master->port()});
  const std::string list = g.master->cli({"CLIENT", "LIST"});
  const std::size_t at = list.find("name=resolved ");
  ASSERT_NE(at, std::string::npos) << list;
  EXPECT_NE(list.substr(at, list.find('\n', at) - at).find(" user=rot "), std::string::npos)
      << list;
}

// Sentinels of both schemes: the client makes its TLS context for a rediss:// one even when the
// first is redis:// (the first Sentinel's scheme alone used to decide, and a TLS connect without
// a context dereferenced null), and it reaches the master with the scheme of the Sentinel that
// named it (it used the first one's). The "TLS Sentinel" here is a plaintext port, so its
// handshake fails and the next Sentinel answers.
TEST(sentinel, sentinels_of_both_schemes_each_get_their_own_and_name_the_masters) {
  sentinel_group g;
  redis_server dead;
  const std::string dead_url = dead.url();
  dead.kill();
  const std::string plain_port_as_tls = "rediss://127.0.0.1:" + std::to_string(g.replica->port());
  config cfg = g.client_config({dead_url, plain_port_as_tls, g.sentinel->url()});
  cfg.connect_timeout = 2s;
  client c(cfg);
  auto l = c.get_lock("mixed-schemes");
  ASSERT_TRUE(l.try_lock(10s, 20s));
  EXPECT_EQ(g.master->cli({"EXISTS", "mixed-schemes"}), "1");
  l.unlock_or_throw();
}

TEST(sentinel, after_the_master_dies_locks_are_taken_on_the_promoted_replica) {
  sentinel_group g;
  ASSERT_TRUE(g.wait_until_replica_known());
  client c(g.client_config());
  auto before = c.get_lock("before-failover");
  ASSERT_TRUE(before.try_lock(10s, 20s));
  before.unlock_or_throw();
  g.master->kill();
  // The Sentinel sees the master down after 1 s and promotes the replica. Until then the client
  // is refused by the dead master (a lock call fails with connection_refused once its attempts
  // are spent), and it asks the Sentinel again on every reconnect. External state: wait for the
  // promotion.
  ASSERT_TRUE(
      wait_until([&] { return g.named_port() == std::to_string(g.replica->port()); }, 60s, 50ms))
      << g.sentinel->log_tail();
  auto after = c.get_lock("after-failover");
  ASSERT_TRUE(after.try_lock(10s, 20s)) << g.sentinel->log_tail();
  EXPECT_EQ(g.replica->cli({"EXISTS", "after-failover"}), "1");
  EXPECT_EQ(g.replica->cli({"ROLE"}).substr(0, 6), "master");
  after.unlock_or_throw();
}

// With config::replica_sync a hold returns only once the replica has it: killed at once after
// the acquire, the master takes nothing the promoted replica lacks, and the holder still holds
// the lock there. (Without it the kill may come before the replication stream reaches the
// replica, and the lock be gone: replication is asynchronous.) The release that follows has no
// replica left to acknowledge it: it releases, and says so.
TEST(sentinel, a_hold_the_replica_acknowledged_survives_the_masters_death) {
  sentinel_group g;
  ASSERT_TRUE(g.wait_until_replica_acknowledges());
  config cfg = g.client_config();
  cfg.replica_sync = 1;
  cfg.replica_sync_timeout = 2000ms;
  client c(cfg);
  auto l = c.get_lock("kept-across-failover");
  ASSERT_TRUE(l.try_lock(10s));
  g.master->kill();
  ASSERT_TRUE(
      wait_until([&] { return g.named_port() == std::to_string(g.replica->port()); }, 60s, 50ms))
      << g.sentinel->log_tail();
  EXPECT_EQ(g.replica->cli({"HGET", "kept-across-failover",
                            c.id() + ":" + std::to_string(this_thread_owner_id())}),
            "1");
  // The holder's client finds the new master (its reconnects ask the Sentinel) and the hold
  // there.
  EXPECT_TRUE(holds_once_reconnected(l));
  EXPECT_FALSE(l.loss_token().stop_requested());
  client other(g.client_config());
  EXPECT_FALSE(other.get_lock("kept-across-failover").try_lock(200ms));
  EXPECT_EQ(code_of([&] { l.unlock_or_throw(); }), errc::replication_not_confirmed);
  EXPECT_EQ(g.replica->cli({"EXISTS", "kept-across-failover"}), "0");
}

// Redisson's rule (config::all_connected_replicas) in Sentinel mode: each WAIT asks for the
// replicas of the master it reaches. Before the failover that is the master's one replica (WAIT
// 1, and the promoted replica has the hold); after it, the promoted replica has none, so the
// release counts at once (WAIT 0), where N = 1 (above) reports it unconfirmed.
TEST(sentinel, under_redissons_rule_a_promoted_master_without_replicas_counts_writes) {
  sentinel_group g;
  ASSERT_TRUE(g.wait_until_replica_acknowledges());
  config cfg = g.client_config();
  cfg.replica_sync = config::all_connected_replicas;
  cfg.replica_sync_timeout = 2000ms;
  client c(cfg);
  const auto wait_count = [](server_monitor& watch) {
    const auto w = watch.next_named("WAIT", 10s);
    return w && w->args.size() == 3 ? w->args[1] : std::string();
  };
  auto l = c.get_lock("all-across-failover");
  {
    server_monitor on_master(*g.master);
    ASSERT_TRUE(l.try_lock(10s));
    EXPECT_EQ(wait_count(on_master), "1");
  }
  g.master->kill();
  ASSERT_TRUE(
      wait_until([&] { return g.named_port() == std::to_string(g.replica->port()); }, 60s, 50ms))
      << g.sentinel->log_tail();
  // Watched from here: the Sentinel closed the promoted replica's clients as it promoted it.
  server_monitor on_promoted(*g.replica);
  EXPECT_EQ(g.replica->cli({"HGET", "all-across-failover",
                            c.id() + ":" + std::to_string(this_thread_owner_id())}),
            "1");
  EXPECT_TRUE(holds_once_reconnected(l));
  EXPECT_EQ(code_of([&] { l.unlock_or_throw(); }), std::error_code{});
  EXPECT_EQ(wait_count(on_promoted), "0");
  EXPECT_EQ(g.replica->cli({"EXISTS", "all-across-failover"}), "0");
  EXPECT_TRUE(l.try_lock(10s));
  EXPECT_EQ(wait_count(on_promoted), "0");
  l.unlock_or_throw();
}

// A client that misses the announcement (below) still leaves an old master that is still
// running: when the Sentinel demotes it, about 10 s after the switch, and closes its clients (a
// READONLY reply would close the connection too). Its Sentinel user may not use channels, so
// the client's subscription to "+switch-master" is refused, while it may still ask where the
// master is.
TEST(sentinel, a_client_that_missed_the_announcement_moves_when_the_old_master_is_demoted) {
  sentinel_group g;
  ASSERT_TRUE(g.wait_until_replica_known());
  ASSERT_EQ(g.sentinel->cli({"ACL", "SETUSER", "deaf", "on", ">pw", "+@all", "resetchannels"}),
            "OK");
  config cfg = g.client_config();
  cfg.sentinel_username = "deaf";
  cfg.sentinel_password = "pw";
  client c(cfg);
  auto l = c.get_lock("demoted");
  ASSERT_TRUE(l.try_lock(10s, 20s));
  l.unlock_or_throw();
  ASSERT_EQ(g.sentinel->cli({"SENTINEL", "FAILOVER", "mymaster"}), "OK");
  ASSERT_TRUE(wait_until([&] { return g.announced_switch(); }, 60s, 20ms))
      << g.sentinel->log_tail();
  // Deaf to it: the old master, not yet demoted, still takes the lock.
  ASSERT_TRUE(l.try_lock(10s, 20s));
  EXPECT_EQ(g.master->cli({"EXISTS", "demoted"}), "1");
  EXPECT_EQ(g.master->cli({"ROLE"}).substr(0, 6), "master");
  l.unlock_or_throw();
  // The Sentinel demotes it once it looks at it again, and closes its clients then. External
  // state: wait for that.
  // (A ROLE in flight as the demotion closes the connections is reset: not demoted yet.)
  ASSERT_TRUE(wait_until(
      [&] {
        try {
          return g.master->cli({"ROLE"}).starts_with("slave");
        } catch (const std::runtime_error&) {
          return false;
        }
      },
      60s, 50ms))
      << g.sentinel->log_tail();
  ASSERT_TRUE(l.try_lock(30s, 20s));
  EXPECT_EQ(g.replica->cli({"EXISTS", "demoted"}), "1");
  l.unlock_or_throw();
}

// A failover with the old master left running (SENTINEL FAILOVER, or an old master that comes
// back): the Sentinel announces the new master on "+switch-master" and demotes the old one only
// when it next looks at it, about 10 s later. The client hears the announcement and moves at
// once: a lock taken after it lands on the new master while the old one still says it is a
// master (and would have taken it: a client deaf to the announcement stays there until the
// demotion, as the test above shows).
TEST(sentinel, an_announced_switch_moves_the_client_before_the_old_master_is_demoted) {
  sentinel_group g;
  ASSERT_TRUE(g.wait_until_replica_known());
  event_recorder rec;
  config cfg = g.client_config();
  cfg.on_event = rec.handler();
  client c(cfg);
  auto l = c.get_lock("announced");
  ASSERT_TRUE(l.try_lock(10s, 20s));
  l.unlock_or_throw();
  EXPECT_EQ(g.master->cli({"ROLE"}).substr(0, 6), "master");
  ASSERT_EQ(g.sentinel->cli({"SENTINEL", "FAILOVER", "mymaster"}), "OK");
  ASSERT_TRUE(wait_until([&] { return g.announced_switch(); }, 60s, 20ms))
      << g.sentinel->log_tail();
  // The client hears the same announcement; its connections move within a reconnect (tens of
  // ms). A lock taken in that moment may still land on the old master: each attempt is undone
  // and made again until one lands on the new master.
  bool on_new = false;
  std::string old_role;
  for (int attempt = 0; attempt < 200 && !on_new; ++attempt) {
    ASSERT_TRUE(l.try_lock(10s, 20s));
    on_new = g.replica->cli({"EXISTS", "announced"}) == "1";
    old_role = g.master->cli({"ROLE"});
    std::error_code ec;
    l.unlock(ec);
    // A hold taken on the old master just before the client moved is not on the new one: its
    // unlock, sent there, finds no hold (not_owner), as any hold lost in a failover.
    if (ec) {
      EXPECT_TRUE(!on_new && ec == errc::not_owner) << ec.message();
    }
  }
  ASSERT_TRUE(on_new) << g.sentinel->log_tail();
  // The lock landed on the new master while the old one still took writes as a master.
  EXPECT_TRUE(old_role.starts_with("master")) << old_role << "\n" << g.sentinel->log_tail();
  // config::on_event: the link was up on the master the Sentinel named, and the move was
  // reported with the new master's address.
  const auto up = rec.wait_for(client_event_kind::connected, 1s);
  ASSERT_TRUE(up) << rec.kinds();
  EXPECT_EQ(up->server, g.master->url());
  const auto moved = rec.wait_for(client_event_kind::master_switched, 10s);
  ASSERT_TRUE(moved) << rec.kinds();
  EXPECT_EQ(moved->server, g.replica->url());
  EXPECT_NE(moved->detail.find("a Sentinel announced that master 'mymaster' is now at"),
            std::string::npos)
      << moved->detail;
}

TEST(sentinel, a_master_name_no_sentinel_knows_fails_with_that_reason) {
  sentinel_group g;
  event_recorder rec;
  config cfg = g.client_config();
  cfg.master_name = "no-such-master";
  cfg.retry_attempts = 1;
  cfg.on_event = rec.handler();
  client c(cfg);
  auto l = c.get_lock("x");
  try {
    (void)l.try_lock(2s, 10s);
    FAIL() << "acquired without a master";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("monitors no master named 'no-such-master'"),
              std::string::npos)
        << e.what();
  }
  // config::on_event: the connect failed with no server to name; the detail says why.
  const auto failed = rec.wait_for(client_event_kind::connect_failed, 1s);
  ASSERT_TRUE(failed) << rec.kinds();
  EXPECT_EQ(failed->server, "");
  EXPECT_NE(failed->detail.find("monitors no master named 'no-such-master'"), std::string::npos)
      << failed->detail;
}

TEST(sentinel, no_sentinel_up_fails_within_the_wait_and_names_them) {
  redis_server dead;
  const std::string dead_url = dead.url();
  dead.kill();
  config cfg = fast_config("redis://127.0.0.1:1");
  cfg.master_name = "mymaster";
  cfg.sentinel_addresses = {dead_url};
  client c(cfg);
  auto l = c.get_lock("x");
  const auto t0 = steady::now();
  try {
    (void)l.try_lock(1s, 10s);
    FAIL() << "acquired without a master";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::connection_refused)) << e.what();
    EXPECT_NE(std::string(e.what()).find("no Sentinel named the address of master 'mymaster'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(ms_since(t0), 5000);
}

TEST(sentinel, a_master_name_without_sentinels_is_refused) {
  config cfg;
  cfg.master_name = "mymaster";
  try {
    client c(cfg);
    FAIL() << "constructed";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
  }
}

}  // namespace
}  // namespace rlock::test
