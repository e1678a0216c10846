// config::credentials_resolver: asked at every connect of every command and pub/sub connection;
// a password rotated on the server is used from the next reconnect on, so a client whose
// connects were refused recovers by itself; a resolver that throws fails the connect with
// auth_failed and its reason, before anything is sent.
#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common.hpp"
#include "support/client_list.hpp"
#include "support/lock_listeners.hpp"
#include "support/rotating_secret.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

server_options with_rotating_user() {
  server_options o;
  o.requirepass = "s3cret";  // a connection without AUTH gets nothing (NOAUTH)
  o.acl_users = {"rot on >one ~* &* +@all"};
  return o;
}

// True once a PING on `c` is answered (errors, while it reconnects, are retried).
bool answers(client& c) {
  return wait_until(
      [&] {
        try {
          return c.execute({"PING"}).str() == "PONG";
        } catch (const error&) {
          return false;
        }
      },
      10s);
}

std::error_code ping_error(client& c, std::string* what = nullptr) {
  try {
    c.execute({"PING"});
  } catch (const error& e) {
    if (what != nullptr) *what = e.what();
    return e.code();
  }
  return {};
}

TEST(credentials, a_password_rotated_on_the_server_is_used_from_the_next_reconnect) {
  redis_server server(with_rotating_user());
  rotating_secret secret("one");
  config cfg = config_for(server);
  cfg.password = "not-this";  // the resolver's answer replaces it
  cfg.credentials_resolver = secret.resolver();
  client c(cfg);
  EXPECT_EQ(c.execute({"ACL", "WHOAMI"}).str(), "rot");
  ASSERT_FALSE(secret.asked().empty());
  for (const server_address& a : secret.asked()) {
    EXPECT_EQ(a.port, server.port());
    EXPECT_FALSE(a.username.has_value()) << "the resolver is given no credentials";
    EXPECT_FALSE(a.password.has_value()) << "the resolver is given no credentials";
  }

  // A waiter woken by an unlock: its pub/sub connection authenticated through the resolver too
  // (without AUTH it could not subscribe, and the wait would end at its deadline instead).
  client other(cfg);
  auto held = other.get_lock("rot-lock");
  held.lock();
  auto l = c.get_lock("rot-lock");
  auto got = try_lock_then_unlock_async(l, 20s);
  ASSERT_TRUE(wait_until([&] { return lock_listeners(server, "rot-lock") > 0; }, 10s))
      << "the waiter never subscribed";
  const auto t0 = steady::now();
  held.unlock_or_throw();
  EXPECT_TRUE(got.get());
  EXPECT_LT(ms_since(t0), 5000);

  // The password changes on the server: connections set up stay authenticated.
  ASSERT_EQ(server.cli({"ACL", "SETUSER", "rot", "resetpass", ">two"}), "OK");
  EXPECT_EQ(c.execute({"PING"}).str(), "PONG");
  // Dropped, they reconnect with what the resolver says: the old password, refused.
  const std::size_t before = secret.asked().size();
  server.cli({"CLIENT", "KILL", "USER", "rot"});
  EXPECT_TRUE(wait_until([&] { return ping_error(c) == errc::auth_failed; }, 10s));
  EXPECT_GT(secret.asked().size(), before) << "the reconnect did not ask the resolver";
  // Once it answers with the new one, the next reconnect gets through.
  secret.set("two");
  EXPECT_TRUE(answers(c));
  EXPECT_EQ(c.execute({"ACL", "WHOAMI"}).str(), "rot");
  ASSERT_TRUE(l.try_lock());
  l.unlock_or_throw();
}

TEST(credentials, a_resolver_that_throws_fails_the_connect_with_auth_failed_and_its_reason) {
  redis_server server(with_rotating_user());
  rotating_secret secret("one");
  secret.set("one", "vault unreachable");
  config cfg = config_for(server);
  cfg.credentials_resolver = secret.resolver();
  client c(cfg);
  std::string what;
  const auto t0 = steady::now();
  EXPECT_EQ(ping_error(c, &what), errc::auth_failed) << what;
  EXPECT_LT(ms_since(t0), 1000) << "not retried: the resolver's failure is sticky, like AUTH's";
  EXPECT_NE(what.find("credentials_resolver failed"), std::string::npos) << what;
  EXPECT_NE(what.find("vault unreachable"), std::string::npos) << what;
  // Nothing was sent: the server saw no failed AUTH.
  EXPECT_EQ(server.cli({"INFO", "errorstats"}).find("WRONGPASS"), std::string::npos);
  // It asks again at each reconnect, and the client works once it answers.
  secret.set("one");
  EXPECT_TRUE(answers(c));
  EXPECT_GE(secret.asked().size(), 2U);
}

// A resolver that takes its time (a vault asked over the network) holds up only the connect that
// waits for it, not the client's I/O: with one I/O thread, a held lock's renewals go on on the
// other connection while a dropped one waits for the resolver, which is asked on a thread of its
// own; that connect completes once it answers.
TEST(credentials, a_slow_resolver_holds_up_its_connect_and_not_the_renewals) {
  redis_server server;
  std::mutex mu;
  std::condition_variable cv;
  bool slow = false;
  bool entered = false;
  bool released = false;
  const auto release = [&] {
    std::lock_guard lk(mu);
    released = true;
    cv.notify_all();
  };
  config cfg = config_for(server);
  cfg.io_threads = 1;
  cfg.connection_pool_size = 2;
  cfg.client_name = "slow-resolver";
  cfg.lock_watchdog_timeout = 1500ms;  // renewed every 500 ms
  cfg.connect_timeout = 20s;
  cfg.credentials_resolver = [&](const server_address&) {
    std::unique_lock lk(mu);
    if (slow) {
      entered = true;
      cv.notify_all();
      cv.wait_for(lk, 10s, [&] { return released; });
    }
    return credentials{};
  };
  {
    client c(cfg);
    // Released before the client closes, also after a failed assertion: it waits for the
    // resolver only briefly as it closes, and the resolver uses this test's locals.
    const std::shared_ptr<void> release_at_exit(nullptr, [&](void*) { release(); });
    auto l = c.get_lock("renewed-meanwhile");
    l.lock();
    {
      std::lock_guard lk(mu);
      slow = true;
    }
    const auto conns = client_list(server, "slow-resolver");
    ASSERT_GE(conns.size(), 2U);
    server.cli({"CLIENT", "KILL", "ID", conns.front().at("id")});
    {
      std::unique_lock lk(mu);
      ASSERT_TRUE(cv.wait_for(lk, 10s, [&] { return entered; }));
    }
    const long before = evalsha_calls(server);
    EXPECT_TRUE(wait_until([&] { return evalsha_calls(server) >= before + 2; }, 5s))
        << "no renewal while the resolver was asked";
    EXPECT_FALSE(l.loss_token().stop_requested());
    release();
    EXPECT_TRUE(wait_until([&] { return client_list(server, "slow-resolver").size() >= 2; }, 10s));
    l.unlock_or_throw();
  }
}

}  // namespace
}  // namespace rlock::test
