// A server that takes commands but no pub/sub connection: the client's subscriber was closed and
// the server, at maxclients, refuses its reconnects ("ERR max number of clients reached"), while
// the command connection stays. Every wait must still end: with errc::subscription_timeout
// after config::subscription_timeout when its own deadline is later, naming the pub/sub
// connection's failure (a wait without one used to hang for as long as the server was full: a
// semaphore's acquire(), a latch's await()), and with a plain "not acquired" at its deadline
// when that comes first (a lock's try_lock_for used to throw subscription_timeout instead, when
// the subscribe's timer fired before its own).
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "common.hpp"
#include "hostile_common.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

/// Takes `c`'s pub/sub connection away for as long as the server runs: lets no new connection
/// in (maxclients at the count without it), then closes it. `c` must have one command
/// connection and its subscriber, both named "starved" (starved_config), and no other client
/// that name.
void starve_subscriber(client& c) {
  const long long mine = c.execute({"CLIENT", "ID"}).integer();
  const std::string list(c.execute({"CLIENT", "LIST"}).str());
  std::istringstream lines(list);
  std::string line;
  long long subscriber = -1;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    const long long id = std::stoll(line.substr(line.find("id=") + 3));
    if (id != mine && line.find(" name=starved ") != std::string::npos) subscriber = id;
  }
  ASSERT_NE(subscriber, -1) << list;
  c.execute({"CONFIG", "SET", "maxclients", std::to_string(count - 1)});
  EXPECT_EQ(c.execute({"CLIENT", "KILL", "ID", std::to_string(subscriber)}).integer(), 1);
}

config starved_config(const redis_server& server) {
  config cfg = config_for(server);
  cfg.connection_pool_size = 1;
  cfg.subscription_timeout = 1s;
  cfg.client_name = "starved";
  return cfg;
}

/// `c`'s command connection is up, and so is its subscriber (set up at start).
void both_connected(client& c) {
  c.execute({"PING"});
  ASSERT_TRUE(wait_until(
      [&] {
        const std::string list(c.execute({"CLIENT", "LIST"}).str());
        return list.find(" name=starved ") != list.rfind(" name=starved ");
      },
      10s));
}

// Waits without a deadline (and with one later than subscription_timeout) fail with
// subscription_timeout once it has passed, naming it, for every kind that waits on a channel.
TEST(hostile_no_subscriber, waits_fail_with_subscription_timeout_after_it) {
  redis_server server;
  client holder(config_for(server));
  holder.get_lock("held").lock();
  holder.get_fair_lock("fair-held").lock();
  holder.get_read_write_lock("rw-held").lock();
  holder.get_semaphore("empty").try_set_permits(0);
  holder.get_permit_expirable_semaphore("empty-leases").try_set_permits(0);
  holder.get_countdown_latch("closed").try_set_count(1);
  const config cfg = starved_config(server);
  client c(cfg);
  both_connected(c);
  starve_subscriber(c);
  const auto bound = (cfg.subscription_timeout + cfg.timeout + slack).count();
  const auto check = [&](const char* what, const outcome& o) {
    EXPECT_EQ(o.ec, errc::subscription_timeout) << what << ": " << o.what;
    EXPECT_NE(o.what.find("subscription_timeout (1000 ms)"), std::string::npos)
        << what << ": " << o.what;
    // And why: the pub/sub connection's last failure.
    EXPECT_NE(o.what.find("the pub/sub connection is down: "), std::string::npos)
        << what << ": " << o.what;
    EXPECT_NE(o.what.find("max number of clients reached"), std::string::npos)
        << what << ": " << o.what;
    EXPECT_GE(o.took, cfg.subscription_timeout.count() - 5) << what;
    EXPECT_LT(o.took, bound) << what;
  };
  check("lock", run_bounded([&] {
          c.get_lock("held").lock();
          return true;
        }));
  check("fair lock", run_bounded([&] {
          c.get_fair_lock("fair-held").lock();
          return true;
        }));
  check("read lock", run_bounded([&] {
          c.get_read_write_lock("rw-held").lock_shared();
          return true;
        }));
  check("semaphore", run_bounded([&] {
          c.get_semaphore("empty").acquire();
          return true;
        }));
  check("semaphore, a longer wait",
        run_bounded([&] { return c.get_semaphore("empty").try_acquire_for(20s); }));
  check("permit-expirable semaphore", run_bounded([&] {
          (void)c.get_permit_expirable_semaphore("empty-leases").acquire();
          return true;
        }));
  check("countdown latch", run_bounded([&] {
          c.get_countdown_latch("closed").await();
          return true;
        }));
  // Nothing was taken on the way.
  EXPECT_EQ(c.execute({"GET", "empty"}).str(), "0");
  EXPECT_EQ(c.execute({"HLEN", "held"}).integer(), 1);
}

// A wait shorter than subscription_timeout ends at its deadline as any unmet wait does: false,
// no error. 20 times each: the lock's subscribe and its wait shared the deadline, and either
// timer could fire first.
TEST(hostile_no_subscriber, waits_shorter_than_subscription_timeout_end_unmet) {
  redis_server server;
  client holder(config_for(server));
  holder.get_lock("held").lock();
  holder.get_semaphore("empty").try_set_permits(0);
  holder.get_countdown_latch("closed").try_set_count(1);
  config cfg = starved_config(server);
  cfg.subscription_timeout = 20s;
  client c(cfg);
  both_connected(c);
  starve_subscriber(c);
  auto l = c.get_lock("held");
  auto sem = c.get_semaphore("empty");
  auto latch = c.get_countdown_latch("closed");
  // Longer than an attempt's round trip: a wait that got no answer at all ends with
  // errc::timeout instead (lock.hpp's try_lock). Under TSan with 4 tests at once, a round trip
  // once took more than 5 ms.
  constexpr auto wait = RLOCK_SANITIZER_SLOWDOWN == 1 ? 5ms : 50ms;
  for (int i = 0; i < 20; ++i) {
    const outcome locked = run_bounded([&] { return l.try_lock_for(wait); });
    EXPECT_FALSE(locked.value);
    EXPECT_FALSE(locked.ec) << "try " << i << ": " << locked.what;
    const outcome taken = run_bounded([&] { return sem.try_acquire_for(wait); });
    EXPECT_FALSE(taken.value);
    EXPECT_FALSE(taken.ec) << "try " << i << ": " << taken.what;
    const outcome awaited = run_bounded([&] { return latch.await_for(wait); });
    EXPECT_FALSE(awaited.value);
    EXPECT_FALSE(awaited.ec) << "try " << i << ": " << awaited.what;
  }
}

}  // namespace
}  // namespace rlock::test
