// config::on_event against a real server: a link's changes are reported once per change (not
// once per connection of a pool, nor at each retry of a refused connect), a flushed script
// cache and a lost hold are reported, and the listener can neither stop the client nor block
// it.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <utility>

#include "common.hpp"
#include "support/client_list.hpp"
#include "support/event_recorder.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

/// The connections that the server has of the client named `name`: its command connections
/// and its pub/sub connection (config::subscription_connection_pool_size, 1).
std::size_t connections_of(const redis_server& server, const std::string& name) {
  return client_list(server, name).size();
}

/// Connections the server has accepted so far (INFO stats).
long long connections_received(const redis_server& server) {
  const std::string info = server.cli({"INFO", "stats"});
  const std::string field = "total_connections_received:";
  return std::stoll(info.substr(info.find(field) + field.size()));
}

/// A config for `server` whose events go to `rec`.
config recorded_config(const redis_server& server, event_recorder& rec) {
  config cfg = config_for(server);
  cfg.on_event = rec.handler();
  return cfg;
}

/// recorded_config() with `pool` command connections, named `name` on the server.
config pooled_config(const redis_server& server, event_recorder& rec, std::string name, int pool) {
  config cfg = recorded_config(server, rec);
  cfg.client_name = std::move(name);
  cfg.connection_pool_size = pool;
  return cfg;
}

TEST(client_events, one_connected_for_a_pool_and_none_for_shutdown) {
  redis_server server;
  event_recorder rec;
  client c(pooled_config(server, rec, "events-pool", 3));
  const auto up = rec.wait_for(client_event_kind::connected, 10s);
  ASSERT_TRUE(up) << rec.kinds();
  EXPECT_EQ(up->server, server.url());
  EXPECT_FALSE(up->error);
  EXPECT_EQ(describe(*up), "connected to " + server.url());
  // All three are set up, with the pub/sub one (external state), and the link was reported
  // once.
  ASSERT_TRUE(wait_until([&] { return connections_of(server, "events-pool") == 3 + 1; }, 10s));
  c.execute({"PING"});
  c.shutdown();
  EXPECT_EQ(rec.kinds(), "connected");
}

TEST(client_events, a_dropped_link_is_reported_down_and_up_again) {
  redis_server server;
  event_recorder rec;
  client c(pooled_config(server, rec, "events-drop", 2));
  ASSERT_TRUE(rec.wait_for(client_event_kind::connected, 10s));
  ASSERT_TRUE(wait_until([&] { return connections_of(server, "events-drop") == 2 + 1; }, 10s));
  // All closed by the server (the pub/sub one too: it has no subscription).
  server.cli({"CLIENT", "KILL", "TYPE", "normal"});
  const auto down = rec.wait_for(client_event_kind::disconnected, 10s);
  ASSERT_TRUE(down) << rec.kinds();
  EXPECT_EQ(down->server, server.url());
  EXPECT_TRUE(down->error) << describe(*down);
  EXPECT_TRUE(describe(*down).starts_with("disconnected from " + server.url() + ": "))
      << describe(*down);
  ASSERT_TRUE(wait_until([&] { return rec.count(client_event_kind::connected) == 2; }, 10s))
      << rec.kinds();
  EXPECT_EQ(c.execute({"PING"}).str(), "PONG");
  EXPECT_EQ(rec.kinds(), "connected disconnected connected");
}

// A pub/sub connection that serves a waiter reports its drop and its return (the command
// link, untouched, reports nothing), and the waiter, subscribed again, hears the unlock; one
// that serves nobody reports neither (the test above: its drop is not in the kinds).
TEST(client_events, a_pubsub_drop_under_a_waiter_is_reported_with_its_channels) {
  redis_server server;
  event_recorder rec;
  client c(recorded_config(server, rec));
  ASSERT_TRUE(rec.wait_for(client_event_kind::connected, 10s));
  client holder(config_for(server));
  auto held = holder.get_lock("events-pubsub");
  held.lock();
  auto waited = std::async(std::launch::async, [&] {
    auto l = c.get_lock("events-pubsub");
    const bool got = l.try_lock(30s);
    if (got) l.unlock();
    return got;
  });
  ASSERT_TRUE(wait_until([&] { return c.stats().channels == 1; }, 10s));
  // Only connections in pub/sub mode: the waiter's, not the command link.
  server.cli({"CLIENT", "KILL", "TYPE", "pubsub"});
  const auto down = rec.wait_for(client_event_kind::pubsub_disconnected, 10s);
  ASSERT_TRUE(down) << rec.kinds();
  EXPECT_EQ(down->server, server.url());
  EXPECT_TRUE(down->error) << describe(*down);
  EXPECT_NE(down->detail.find("1 channel carried"), std::string::npos) << describe(*down);
  EXPECT_TRUE(describe(*down).starts_with("pub/sub disconnected from " + server.url() + ": "))
      << describe(*down);
  const auto up = rec.wait_for(client_event_kind::pubsub_connected, 10s);
  ASSERT_TRUE(up) << rec.kinds();
  EXPECT_EQ(up->server, server.url());
  EXPECT_EQ(describe(*up), "pub/sub connected to " + server.url() + ": 1 channel subscribed again");
  ASSERT_TRUE(wait_until([&] { return c.stats().channels == 1; }, 10s));
  held.unlock();
  ASSERT_EQ(waited.wait_for(20s), std::future_status::ready);
  EXPECT_TRUE(waited.get());
  c.shutdown();
  EXPECT_EQ(rec.kinds(), "connected pubsub_disconnected pubsub_connected");
}

// A server that may evict keys under memory pressure may evict held locks (volatile-ttl: the
// shortest TTLs first, and a held lock's is short). The link's `connected` event says so; a
// server with noeviction (the default, in the tests above) gets no warning.
TEST(client_events, a_server_that_may_evict_locks_is_named_when_connected) {
  redis_server server(server_options{.extra_args = {"--maxmemory-policy", "volatile-ttl"}});
  event_recorder rec;
  client c(recorded_config(server, rec));
  const auto up = rec.wait_for(client_event_kind::connected, 10s);
  ASSERT_TRUE(up) << rec.kinds();
  EXPECT_NE(up->detail.find("maxmemory-policy is volatile-ttl"), std::string::npos) << up->detail;
  EXPECT_NE(up->detail.find("held locks"), std::string::npos) << up->detail;
  EXPECT_TRUE(describe(*up).starts_with("connected to " + server.url() + ": maxmemory-policy"))
      << describe(*up);
  // After a drop, the warning comes with the link's next `connected` too.
  server.cli({"CLIENT", "KILL", "TYPE", "normal"});
  ASSERT_TRUE(wait_until([&] { return rec.count(client_event_kind::connected) == 2; }, 10s))
      << rec.kinds();
  EXPECT_EQ(rec.events().back().detail, up->detail);
}

// The policy is read off INFO memory: an ACL user without @admin (no CONFIG), as most
// applications' users are, is warned too; one without INFO either is connected with no warning.
TEST(client_events, a_user_without_config_is_warned_of_eviction_too) {
  redis_server server(server_options{.extra_args = {"--maxmemory-policy", "allkeys-lru"}});
  ASSERT_EQ(server.cli({"ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-@admin"}),
            "OK");
  ASSERT_EQ(
      server.cli({"ACL", "SETUSER", "blind", "on", ">pw", "~*", "&*", "+@all", "-@admin", "-info"}),
      "OK");
  for (const std::string user : {"app", "blind"}) {
    event_recorder rec;
    config cfg = recorded_config(server, rec);
    cfg.username = user;
    cfg.password = "pw";
    client c(cfg);
    const auto up = rec.wait_for(client_event_kind::connected, 10s);
    ASSERT_TRUE(up) << user << ": " << rec.kinds();
    if (user == "app") {
      EXPECT_NE(up->detail.find("maxmemory-policy is allkeys-lru"), std::string::npos)
          << up->detail;
    } else {
      EXPECT_EQ(up->detail, "");
    }
    // Either way a lock works.
    auto l = c.get_lock("evictable-" + user);
    ASSERT_TRUE(l.try_lock(5s)) << user;
    l.unlock_or_throw();
  }
}

TEST(client_events, a_refused_password_is_reported_once_and_the_fix_is_seen) {
  redis_server server(server_options{.requirepass = "right"});
  event_recorder rec;
  config cfg = recorded_config(server, rec);
  cfg.password = "wrong";
  const long long before = connections_received(server);
  client c(cfg);
  const auto refused = rec.wait_for(client_event_kind::connect_failed, 10s);
  ASSERT_TRUE(refused) << rec.kinds();
  EXPECT_EQ(refused->error, errc::auth_failed) << describe(*refused);
  EXPECT_EQ(refused->server, server.url());
  EXPECT_TRUE(describe(*refused).starts_with("cannot connect to " + server.url() + ": "))
      << describe(*refused);
  // The client goes on trying (external state: connections the server accepted, for its
  // command connection and its pub/sub one, each retrying after 10-100 ms), each try refused
  // the same way, and that is not reported again.
  ASSERT_TRUE(wait_until([&] { return connections_received(server) >= before + 10; }, 10s));
  EXPECT_EQ(rec.kinds(), "connect_failed");
  // The password the client has becomes the right one: the next try succeeds and says so.
  server.cli({"CONFIG", "SET", "requirepass", "wrong"});
  ASSERT_TRUE(rec.wait_for(client_event_kind::connected, 10s)) << rec.kinds();
  EXPECT_EQ(rec.kinds(), "connect_failed connected");
}

TEST(client_events, a_flushed_script_cache_is_reported_with_the_script) {
  redis_server server;
  event_recorder rec;
  client c(recorded_config(server, rec));
  auto l = c.get_lock("events-script");
  l.lock();
  l.unlock_or_throw();
  // A caller's own script meets NOSCRIPT on its first use: that is no reload, and not reported.
  const script own{"return 'own'"};
  EXPECT_EQ(c.eval(own, {}, {}).str(), "own");
  EXPECT_EQ(rec.count(client_event_kind::script_reloaded), 0U) << rec.kinds();
  server.cli({"SCRIPT", "FLUSH"});
  l.lock();  // NOSCRIPT, then the acquire script's text
  const auto reloaded = rec.wait_for(client_event_kind::script_reloaded, 10s);
  ASSERT_TRUE(reloaded) << rec.kinds();
  EXPECT_EQ(reloaded->server, server.url());
  ASSERT_EQ(reloaded->object.size(), 40U);
  EXPECT_NE(reloaded->object, own.sha1());
  // The script the event names is loaded on the server again.
  EXPECT_EQ(server.cli({"SCRIPT", "EXISTS", reloaded->object}), "1");
  l.unlock_or_throw();
}

TEST(client_events, a_hold_deleted_under_its_holder_is_reported_lost) {
  redis_server server;
  event_recorder rec;
  config cfg = recorded_config(server, rec);
  cfg.lock_watchdog_timeout = 300ms;
  client c(cfg);
  auto l = c.get_lock("events-deleted");
  l.lock();
  server.cli({"DEL", "events-deleted"});
  const auto lost = rec.wait_for(client_event_kind::lock_lost, 10s);
  ASSERT_TRUE(lost) << rec.kinds();
  EXPECT_EQ(lost->object, "events-deleted");
  EXPECT_EQ(lost->error, errc::lock_lost);
  EXPECT_EQ(lost->detail, "a renewal found it no longer held by this owner");
  EXPECT_TRUE(l.loss_token().stop_requested());
  EXPECT_EQ(describe(*lost),
            "lost lock 'events-deleted': " + make_error_code(errc::lock_lost).message() +
                " (a renewal found it no longer held by this owner)");
}

TEST(client_events, a_lease_that_runs_out_and_a_paused_server_are_reported) {
  redis_server server;
  event_recorder rec;
  config cfg = recorded_config(server, rec);
  cfg.lock_watchdog_timeout = 600ms;
  cfg.timeout = 200ms;
  client c(cfg);
  auto leased = c.get_lock("events-leased");
  ASSERT_TRUE(leased.try_lock(0ms, 200ms));
  const auto ran_out = rec.wait_for(client_event_kind::lock_lost, 10s);
  ASSERT_TRUE(ran_out) << rec.kinds();
  EXPECT_EQ(ran_out->object, "events-leased");
  EXPECT_EQ(ran_out->detail, "its lease ran out while it was held");
  // Under the watchdog, with the server paused: no renewal succeeds before the lease ends.
  auto renewed = c.get_lock("events-renewed");
  renewed.lock();
  server.pause();
  const auto unrenewed = rec.wait_for(
      [](const client_event& e) {
        return e.kind == client_event_kind::lock_lost && e.object == "events-renewed";
      },
      10s);
  server.resume();
  ASSERT_TRUE(unrenewed) << rec.kinds();
  EXPECT_EQ(unrenewed->detail, "its lease ended with no successful renewal");
}

TEST(client_events, a_listener_that_throws_or_calls_a_blocking_api_stops_nothing) {
  redis_server server;
  std::atomic<client*> self{nullptr};
  std::promise<std::error_code> refused;
  std::atomic<int> calls{0};
  event_recorder rec;
  config cfg = config_for(server);
  cfg.client_name = "events-throwing";
  const auto record = rec.handler();
  cfg.on_event = [&](const client_event& e) {
    record(e);
    if (calls.fetch_add(1) == 1) {
      // The second event (the drop below): a blocking call of this client, refused.
      try {
        self.load()->execute({"PING"});
        refused.set_value({});
      } catch (const error& err) {
        refused.set_value(err.code());
      }
    }
    throw std::runtime_error("a listener's own failure");
  };
  client c(cfg);
  self = &c;
  ASSERT_TRUE(rec.wait_for(client_event_kind::connected, 10s));
  EXPECT_EQ(c.execute({"PING"}).str(), "PONG");
  server.cli({"CLIENT", "KILL", "TYPE", "normal"});
  auto code = refused.get_future();
  ASSERT_EQ(code.wait_for(10s), std::future_status::ready) << rec.kinds();
  EXPECT_EQ(code.get(), errc::invalid_argument);
  // The events after the throws are still delivered, and the client still serves.
  ASSERT_TRUE(wait_until([&] { return rec.count(client_event_kind::connected) == 2; }, 10s))
      << rec.kinds();
  EXPECT_EQ(c.execute({"PING"}).str(), "PONG");
}

}  // namespace
}  // namespace rlock::test
