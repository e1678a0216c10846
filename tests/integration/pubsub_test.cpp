// Pub/sub: confirmed subscriptions, reference counting, resubscription after a reconnect.
#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "common.hpp"
#include "detail/connection.hpp"
#include "detail/core.hpp"
#include "support/misconf.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

/// Records what a listener receives; waits on it with a bound.
class inbox {
 public:
  detail::pubsub_listener listener() {
    return [this](const detail::pubsub_event& ev) {
      std::lock_guard lk(mu_);
      if (ev.what == detail::pubsub_event::kind::message) {
        messages_.emplace_back(ev.payload);
      } else {
        ++resubscribed_;
      }
      cv_.notify_all();
    };
  }
  std::optional<std::string> next(std::chrono::milliseconds limit = 3s) {
    std::unique_lock lk(mu_);
    if (!cv_.wait_for(lk, limit, [&] { return !messages_.empty(); })) return std::nullopt;
    auto m = messages_.front();
    messages_.pop_front();
    return m;
  }
  bool wait_resubscribed(int n, std::chrono::milliseconds limit = 5s) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, limit, [&] { return resubscribed_ >= n; });
  }
  bool empty() {
    std::lock_guard lk(mu_);
    return messages_.empty();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> messages_;
  int resubscribed_ = 0;
};

detail::subscription subscribe(client& c, const std::string& channel, inbox& box) {
  std::promise<std::pair<std::error_code, detail::subscription>> p;
  c.core()->subscribe(detail::channel_kind::classic, channel, channel, box.listener(),
                      steady::now() + 5s, [&](std::error_code ec, detail::subscription s) {
                        p.set_value({ec, std::move(s)});
                      });
  auto [ec, sub] = p.get_future().get();
  EXPECT_FALSE(ec) << ec.message();
  return std::move(sub);
}

long long numsub(const redis_server& server, const std::string& channel) {
  auto r = server.cli_reply({"PUBSUB", "NUMSUB", channel});
  return r.elements.at(1).integer;
}

TEST(pubsub, delivers_after_confirmation) {
  redis_server server;
  client c(config_for(server));
  inbox box;
  auto sub = subscribe(c, "ch", box);
  // Confirmed: a publish right after completion is delivered.
  EXPECT_EQ(server.cli({"PUBLISH", "ch", "0"}), "1");
  EXPECT_EQ(box.next(), "0");
}

TEST(pubsub, channels_are_reference_counted) {
  redis_server server;
  client c(config_for(server));
  inbox a;
  inbox b;
  auto sa = subscribe(c, "shared", a);
  auto sb = subscribe(c, "shared", b);
  EXPECT_EQ(numsub(server, "shared"), 1);  // one server subscription for two listeners
  server.cli({"PUBLISH", "shared", "x"});
  EXPECT_EQ(a.next(), "x");
  EXPECT_EQ(b.next(), "x");
  sa.reset();
  EXPECT_EQ(numsub(server, "shared"), 1);
  server.cli({"PUBLISH", "shared", "y"});
  EXPECT_EQ(b.next(), "y");
  EXPECT_FALSE(a.next(100ms).has_value());
  sb.reset();
  EXPECT_TRUE(wait_until([&] { return numsub(server, "shared") == 0; }, 3s));
  // One SUBSCRIBE and one UNSUBSCRIBE for the two listeners (client_stats).
  EXPECT_EQ(c.stats().subscribes, 1U);
  EXPECT_EQ(c.stats().unsubscribes, 1U);
}

TEST(pubsub, resubscribes_after_server_restart_and_tells_listeners) {
  redis_server server;
  client c(config_for(server));
  inbox box;
  auto sub = subscribe(c, "restart-ch", box);
  server.restart();
  ASSERT_TRUE(box.wait_resubscribed(1, 10s));
  EXPECT_EQ(numsub(server, "restart-ch"), 1);
  server.cli({"PUBLISH", "restart-ch", "again"});
  EXPECT_EQ(box.next(), "again");
}

TEST(pubsub, resubscribes_after_client_kill_type_pubsub) {
  redis_server server;
  client c(config_for(server));
  inbox box;
  inbox other;
  auto s1 = subscribe(c, "killed-ch", box);
  auto s2 = subscribe(c, "second-ch", other);
  EXPECT_NE(server.cli({"CLIENT", "KILL", "TYPE", "pubsub"}), "0");
  ASSERT_TRUE(box.wait_resubscribed(1));
  ASSERT_TRUE(other.wait_resubscribed(1));
  EXPECT_EQ(c.stats().subscribes, 4U) << "each channel, then each again";
  server.cli({"PUBLISH", "killed-ch", "back"});
  server.cli({"PUBLISH", "second-ch", "too"});
  EXPECT_EQ(box.next(), "back");
  EXPECT_EQ(other.next(), "too");
}

// A subscription connection reads nothing while nothing is published, so only a health check
// can find that it no longer answers (a partition, a NAT dropping an idle connection): every
// message sent meanwhile would be lost. Before the fix pub/sub connections were never pinged: a
// server that stopped answering for many ping periods left the old connection in place, and
// no listener heard of it.
TEST(pubsub, a_subscription_connection_that_stops_answering_is_replaced) {
  redis_server server;
  config cfg = config_for(server);
  cfg.ping_connection_interval = 100ms;
  cfg.timeout = 300ms;
  client c(cfg);
  inbox box;
  auto sub = subscribe(c, "health-ch", box);
  server.pause();
  // The fault lasts several ping periods plus the ping timeout: its duration, not a wait for
  // an outcome.
  std::this_thread::sleep_for(1500ms);
  server.resume();
  ASSERT_TRUE(box.wait_resubscribed(1, 10s)) << "the unanswered connection was kept";
  EXPECT_EQ(numsub(server, "health-ch"), 1);
  server.cli({"PUBLISH", "health-ch", "after"});
  EXPECT_EQ(box.next(), "after");
}

/// PINGs the server refused (INFO commandstats: rejected_calls of cmdstat_ping).
long long rejected_pings(const redis_server& server) {
  const std::string info = server.cli({"INFO", "commandstats"});
  const auto line = info.find("cmdstat_ping:");
  if (line == std::string::npos) return 0;
  const auto key = info.find("rejected_calls=", line);
  if (key == std::string::npos || key > info.find('\n', line)) return 0;
  return std::stoll(info.substr(key + 15));
}

// A server that cannot persist answers PING with MISCONF. On a subscription connection that
// error answers the keep-alive PING, not a SUBSCRIBE. Before the fix every error there went to
// the subscriber as a refused subscription (failing the oldest pending one with MISCONF), and
// the PING, left without its reply, stopped the keep-alive (or dropped the connection as hung).
TEST(pubsub, a_refused_keep_alive_ping_is_not_taken_for_a_refused_subscription) {
  temp_dir data("rlock-misconf-ping");
  redis_server server(misconf_options(data.path()));
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });
  detail::connection_options opts;
  opts.address.host = server.host();
  opts.address.port = server.port();
  opts.pubsub = true;
  opts.ping_interval = 50ms;
  opts.ping_timeout = 2s;
  std::atomic<int> errors{0};
  std::atomic<int> readies{0};
  std::atomic<int> downs{0};
  detail::connection::handlers h;
  h.on_ready = [&] { ++readies; };
  h.on_down = [&](std::error_code) { ++downs; };
  h.on_push = [&](rlock::reply r) {
    if (r.is_error()) ++errors;
  };
  auto conn = std::make_shared<detail::connection>(io, opts, h);
  conn->start();
  ASSERT_TRUE(wait_until([&] { return readies.load() == 1; }, 5s));
  ASSERT_TRUE(break_persistence(server, data.path()));
  // Only this connection PINGs the server: five refusals in a row are five keep-alive periods.
  const long long base = rejected_pings(server);
  EXPECT_TRUE(wait_until([&] { return rejected_pings(server) >= base + 5; }, 10s))
      << "the keep-alive stopped after a refused PING";
  EXPECT_EQ(errors.load(), 0) << "a refused PING was taken for a refused subscription";
  EXPECT_EQ(downs.load(), 0);
  EXPECT_EQ(readies.load(), 1);
  conn->close();
  work.reset();
  runner.join();
}

TEST(pubsub, sharded_channels_use_ssubscribe_and_are_separate_from_classic_ones) {
  redis_server server;
  client c(config_for(server));
  inbox sharded;
  inbox classic;
  std::promise<std::pair<std::error_code, detail::subscription>> p;
  c.core()->subscribe(detail::channel_kind::sharded, "shard-ch", "shard-ch", sharded.listener(),
                      steady::now() + 5s, [&](std::error_code ec, detail::subscription s) {
                        p.set_value({ec, std::move(s)});
                      });
  auto [ec, ssub] = p.get_future().get();
  ASSERT_FALSE(ec) << ec.message();
  auto csub = subscribe(c, "shard-ch", classic);
  EXPECT_EQ(server.cli_reply({"PUBSUB", "SHARDNUMSUB", "shard-ch"}).elements.at(1).integer, 1);
  EXPECT_EQ(server.cli({"SPUBLISH", "shard-ch", "s"}), "1");
  EXPECT_EQ(server.cli({"PUBLISH", "shard-ch", "c"}), "1");
  EXPECT_EQ(sharded.next(), "s");
  EXPECT_EQ(classic.next(), "c");
  EXPECT_FALSE(sharded.next(100ms).has_value()) << "SPUBLISH and PUBLISH never cross";
  ssub.reset();
  EXPECT_TRUE(wait_until(
      [&] {
        return server.cli_reply({"PUBSUB", "SHARDNUMSUB", "shard-ch"}).elements.at(1).integer == 0;
      },
      3s));
}

/// Starts a subscription; the future has its outcome.
std::future<std::pair<std::error_code, detail::subscription>> subscribe_async(
    client& c, const std::string& channel, inbox& box, std::chrono::milliseconds within) {
  auto p = std::make_shared<std::promise<std::pair<std::error_code, detail::subscription>>>();
  auto f = p->get_future();
  c.core()->subscribe(detail::channel_kind::classic, channel, channel, box.listener(),
                      steady::now() + within, [p](std::error_code ec, detail::subscription s) {
                        p->set_value({ec, std::move(s)});
                      });
  return f;
}

/// A server with the ACL user "app" (password "apppw"), allowed the channels `channel_rules`.
server_options with_app_user(const std::string& channel_rules) {
  server_options o;
  o.acl_users = {"app on >apppw ~* " + channel_rules + " +@all"};
  return o;
}

/// A config that logs in to `server` as "app".
config as_app(const redis_server& server) {
  config cfg = config_for(server);
  cfg.address = "redis://app:apppw@127.0.0.1:" + std::to_string(server.port());
  return cfg;
}

/// Failed logins of `user` the server has logged (ACL LOG, reason auth).
long long failed_logins(const redis_server& server, const std::string& user) {
  long long n = 0;
  for (const auto& entry : server.cli_reply({"ACL", "LOG"}).elements) {
    std::map<std::string, std::string> fields;  // the string fields (count is an integer)
    for (std::size_t i = 0; i + 1 < entry.elements.size(); i += 2) {
      fields[entry.elements[i].str] = entry.elements[i + 1].str;
    }
    // `count` merges repeats of one entry: a refused login retried counts once per attempt.
    if (fields["reason"] == "auth" && fields["username"] == user) {
      for (std::size_t i = 0; i + 1 < entry.elements.size(); i += 2) {
        if (entry.elements[i].str == "count") n += entry.elements[i + 1].integer;
      }
    }
  }
  return n;
}

// The subscriber writes (un)subscribes only while its connection is up, and matches each
// confirmation to the oldest unanswered one. Changes made while the connection is down (a
// listener leaving, a new subscription) must be applied once it is back, from a fresh record
// of what is unanswered: the channels still wanted subscribed, the one left not, each pending
// subscription confirmed, and the confirmations after that still in step.
TEST(pubsub, changes_made_while_the_connection_is_down_apply_when_it_is_back) {
  redis_server server(with_app_user("&*"));
  client c(as_app(server));
  inbox kept;
  inbox dropped;
  auto s_kept = subscribe(c, "kept-ch", kept);
  auto s_dropped = subscribe(c, "dropped-ch", dropped);

  // Hold the subscription connection down: the user may no longer log in, then it is dropped.
  // Two refused logins since: the subscriber has seen its connection go.
  EXPECT_EQ(server.cli({"ACL", "SETUSER", "app", "off"}), "OK");
  EXPECT_NE(server.cli({"CLIENT", "KILL", "TYPE", "pubsub"}), "0");
  ASSERT_TRUE(wait_until([&] { return failed_logins(server, "app") >= 2; }, 10s));

  s_dropped.reset();  // the last listener leaves: nothing written while down
  inbox added;
  auto pending = subscribe_async(c, "added-ch", added, 20s);
  EXPECT_EQ(pending.wait_for(200ms), std::future_status::timeout);  // not confirmed while down

  EXPECT_EQ(server.cli({"ACL", "SETUSER", "app", "on"}), "OK");
  ASSERT_EQ(pending.wait_for(15s), std::future_status::ready);
  auto [ec, s_added] = pending.get();
  EXPECT_FALSE(ec) << ec.message();
  ASSERT_TRUE(kept.wait_resubscribed(1, 10s));
  EXPECT_EQ(numsub(server, "kept-ch"), 1);
  EXPECT_EQ(numsub(server, "added-ch"), 1);
  EXPECT_EQ(numsub(server, "dropped-ch"), 0);
  server.cli({"PUBLISH", "kept-ch", "k"});
  server.cli({"PUBLISH", "added-ch", "a"});
  EXPECT_EQ(kept.next(), "k");
  EXPECT_EQ(added.next(), "a");
  EXPECT_TRUE(dropped.empty());

  // Confirmations after the reconnect are matched in order: a new subscription completes and
  // receives, and one that leaves unsubscribes.
  inbox late;
  auto s_late = subscribe(c, "late-ch", late);
  server.cli({"PUBLISH", "late-ch", "l"});
  EXPECT_EQ(late.next(), "l");
  s_added.reset();
  EXPECT_TRUE(wait_until([&] { return numsub(server, "added-ch") == 0; }, 3s));
  EXPECT_EQ(numsub(server, "late-ch"), 1);
}

// A refusal (NOPERM) answers the oldest unanswered (un)subscribe on its connection. Those of a
// connection that was dropped are never answered on the next one: if they were still counted
// there, the next connection's first refusal would fail the wrong channel. Here two subscribes
// are written while the server is paused (CLIENT PAUSE ALL), the connection is dropped as hung
// (its keep-alive PING unanswered), and the new connection subscribes every wanted channel,
// the forbidden one first: the forbidden channel's subscription must fail with no_permission,
// and the allowed ones must be confirmed.
TEST(pubsub, a_refusal_after_a_reconnect_fails_the_refused_channel_not_one_left_unanswered) {
  redis_server server(with_app_user("resetchannels &ok-*"));
  config cfg = as_app(server);
  cfg.ping_connection_interval = 100ms;
  cfg.timeout = 300ms;
  client c(cfg);
  inbox kept;
  auto s_kept = subscribe(c, "ok-a", kept);

  EXPECT_EQ(server.cli({"CLIENT", "PAUSE", "1500", "ALL"}), "OK");
  inbox allowed;
  inbox forbidden;
  auto f_allowed = subscribe_async(c, "ok-b", allowed, 10s);  // written, unanswered
  auto f_forbidden = subscribe_async(c, "a-forbidden", forbidden, 10s);
  // The keep-alive finds the connection hung and replaces it; the new one gets through once
  // the pause ends, and the kept channel's listener hears of the resubscription.
  ASSERT_TRUE(kept.wait_resubscribed(1, 10s));

  ASSERT_EQ(f_forbidden.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(f_forbidden.get().first, errc::no_permission);
  ASSERT_EQ(f_allowed.wait_for(10s), std::future_status::ready);
  auto [ec, s_allowed] = f_allowed.get();
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(numsub(server, "ok-a"), 1);
  EXPECT_EQ(numsub(server, "ok-b"), 1);
  server.cli({"PUBLISH", "ok-b", "b"});
  EXPECT_EQ(allowed.next(), "b");
}

TEST(pubsub, subscribe_times_out_on_a_paused_server) {
  redis_server server;
  client c(config_for(server));
  c.execute({"PING"});
  server.pause();
  inbox box;
  std::promise<std::error_code> p;
  const auto t0 = steady::now();
  c.core()->subscribe(detail::channel_kind::classic, "paused", "paused", box.listener(),
                      steady::now() + 300ms,
                      [&](std::error_code ec, detail::subscription) { p.set_value(ec); });
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(2s), std::future_status::ready);
  EXPECT_EQ(f.get(), errc::subscription_timeout);
  EXPECT_LT(ms_since(t0), 600);
  server.resume();
}

}  // namespace
}  // namespace rlock::test
