// Bad input (issue #7), the cases lock_failure_test.cpp does not pin down: the exact error code
// of each refusal, durations at their extremes while the lock is contended (where an overflowed
// deadline would show), and that a refused call touches nothing in Redis.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>

#include "common.hpp"
#include "hostile_common.hpp"
#include "support/lock_listeners.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

using std::chrono::milliseconds;

TEST(hostile_input, an_empty_name_is_invalid_argument) {
  redis_server server;
  client c(config_for(server));
  try {
    (void)c.get_lock("");
    FAIL() << "an empty name was accepted";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
  }
  EXPECT_EQ(server.cli({"DBSIZE"}), "0");
}

TEST(hostile_input, binary_and_one_mib_names_are_kept_byte_for_byte_and_exclude_each_other) {
  redis_server server;
  client a(config_for(server));
  client b(config_for(server));
  for (const std::string& name : {std::string("a\0b\r\n\xff", 6), std::string(1 << 20, 'x')}) {
    auto la = a.get_lock(name);
    ASSERT_TRUE(la.try_lock());
    EXPECT_EQ(server.cli_reply({"HLEN", name}).integer, 1) << "the key is the name as given";
    EXPECT_FALSE(b.get_lock(name).try_lock()) << "another client is excluded";
    la.unlock_or_throw();
    EXPECT_EQ(server.cli_reply({"EXISTS", name}).integer, 0);
  }
  // A name that differs only after a NUL byte is another lock.
  auto l1 = a.get_lock(std::string("p\0q", 3));
  auto l2 = b.get_lock(std::string("p\0r", 3));
  ASSERT_TRUE(l1.try_lock());
  EXPECT_TRUE(l2.try_lock());
  l1.unlock_or_throw();
  l2.unlock_or_throw();
}

TEST(hostile_input, zero_and_negative_waits_make_one_attempt_on_a_held_lock) {
  redis_server server;
  config cfg = config_for(server);
  client a(cfg);
  client b(cfg);
  a.get_lock("held").lock();
  auto l = b.get_lock("held");
  for (const milliseconds wait : {milliseconds(0), milliseconds(-5000), milliseconds::min()}) {
    const outcome o = run_bounded([&] { return l.try_lock(wait); });
    EXPECT_FALSE(o.value) << wait.count() << " " << o.what;
    EXPECT_FALSE(o.ec) << wait.count() << " " << o.what;
    EXPECT_LT(o.took, (cfg.timeout + slack).count()) << "one attempt: " << wait.count();
  }
  EXPECT_EQ(lock_listeners(server, "held"), 0) << "no subscription left";
  EXPECT_EQ(server.cli({"EXISTS", "rlock_queue:{held}"}), "0") << "no queue entry left";
}

TEST(hostile_input, an_enormous_wait_on_a_held_lock_waits_instead_of_overflowing) {
  redis_server server;
  client a(config_for(server));
  client b(config_for(server));
  auto la = a.get_lock("big-wait");
  la.lock();
  auto lb = b.get_lock("big-wait");
  for (const milliseconds wait :
       {milliseconds::max(), milliseconds(std::chrono::hours(24 * 365 * 1000))}) {
    auto waiter = std::async(std::launch::async, [&] {
      return run_bounded([&] {
        const bool ok = lb.try_lock(wait);
        if (ok) lb.unlock_or_throw();
        return ok;
      });
    });
    // Still waiting (an overflowed deadline would have returned false at once).
    ASSERT_TRUE(wait_until([&] { return lock_listeners(server, "big-wait") == 1; }, 5s));
    la.unlock_or_throw();
    const outcome o = waiter.get();
    EXPECT_TRUE(o.value) << o.what;
    la.lock();
  }
  la.unlock_or_throw();
}

TEST(hostile_input, leases_zero_negative_and_enormous) {
  redis_server server;
  config cfg = config_for(server);
  client c(cfg);
  auto l = c.get_lock("lease");
  const long long watchdog = cfg.lock_watchdog_timeout.count();
  // Zero and negative leases mean "the watchdog lease", through every entry point.
  for (const milliseconds lease : {milliseconds(0), milliseconds(-1), milliseconds::min()}) {
    ASSERT_TRUE(l.try_lock(0ms, lease)) << lease.count();
    const long long pttl = server.cli_reply({"PTTL", "lease"}).integer;
    EXPECT_GT(pttl, watchdog - 5000) << lease.count();
    EXPECT_LE(pttl, watchdog) << lease.count();
    l.unlock_or_throw();
    l.lock(lease);
    EXPECT_GT(server.cli_reply({"PTTL", "lease"}).integer, watchdog - 5000) << lease.count();
    l.unlock_or_throw();
  }
  // Enormous leases are refused before anything is sent, through every entry point.
  for (const milliseconds lease :
       {milliseconds::max(), milliseconds(std::chrono::hours(24 * 365 * 1000))}) {
    const outcome timed = run_bounded([&] { return l.try_lock(1s, lease); });
    EXPECT_EQ(timed.ec, errc::invalid_argument) << timed.what;
    const outcome plain = run_bounded([&] {
      l.lock(lease);
      return true;
    });
    EXPECT_EQ(plain.ec, errc::invalid_argument) << plain.what;
  }
  EXPECT_EQ(server.cli({"EXISTS", "lease"}), "0");
}

TEST(hostile_input, unlock_from_a_thread_that_never_locked_is_not_owner_and_touches_nothing) {
  redis_server server;
  client c(config_for(server));
  auto l = c.get_lock("nt");
  l.lock();
  const auto before = server.cli_reply({"HGETALL", "nt"});
  const outcome other = std::async(std::launch::async, [&] {
                          return run_bounded([&] {
                            l.unlock_or_throw();
                            return true;
                          });
                        }).get();
  EXPECT_EQ(other.ec, errc::not_owner) << other.what;
  EXPECT_EQ(server.cli_reply({"HGETALL", "nt"}), before);
  EXPECT_GT(server.cli_reply({"PTTL", "nt"}).integer, 0);
  EXPECT_EQ(l.hold_count(), 1);
  // The same through the async API with an owner id that never locked anything.
  std::promise<std::error_code> p;
  l.async_unlock(this_thread_owner_id() + 1000, [&p](std::error_code ec) { p.set_value(ec); });
  EXPECT_EQ(p.get_future().get(), errc::not_owner);
  EXPECT_EQ(server.cli_reply({"HGETALL", "nt"}), before);
  l.unlock_or_throw();
  // A lock nobody holds: not_owner as well, and nothing is created.
  const outcome free_lock = run_bounded([&] {
    l.unlock_or_throw();
    return true;
  });
  EXPECT_EQ(free_lock.ec, errc::not_owner) << free_lock.what;
  EXPECT_EQ(server.cli({"EXISTS", "nt"}), "0");
}

TEST(hostile_input, a_string_or_list_key_is_wrong_type_at_once_whatever_the_wait) {
  redis_server server;
  server.cli({"SET", "str", "v"});
  server.cli({"RPUSH", "list", "a", "b"});
  config cfg = config_for(server);
  client c(cfg);
  for (const char* name : {"str", "list"}) {
    auto l = c.get_lock(name);
    const outcome timed = run_bounded([&] { return l.try_lock(10s); });
    EXPECT_EQ(timed.ec, errc::wrong_type) << name << " " << timed.what;
    EXPECT_LT(timed.took, (cfg.timeout + slack).count()) << "not retried until the wait ends";
    const outcome forever = run_bounded([&] {
      l.lock();
      return true;
    });
    EXPECT_EQ(forever.ec, errc::wrong_type) << name << " " << forever.what;
    EXPECT_LT(forever.took, (cfg.timeout + slack).count());
    const outcome count = run_bounded([&] { return l.hold_count() == 0; });
    EXPECT_EQ(count.ec, errc::wrong_type) << name << " " << count.what;
    const outcome unlock = run_bounded([&] {
      l.unlock_or_throw();
      return true;
    });
    EXPECT_TRUE(unlock.ec == errc::wrong_type || unlock.ec == errc::not_owner)
        << name << " " << unlock.what;
    EXPECT_EQ(lock_listeners(server, name), 0);
  }
  EXPECT_EQ(server.cli({"GET", "str"}), "v");
  EXPECT_EQ(server.cli({"TTL", "str"}), "-1");
  EXPECT_EQ(server.cli_reply({"LRANGE", "list", "0", "-1"}).elements.size(), 2U);
  EXPECT_EQ(server.cli({"TTL", "list"}), "-1");
  EXPECT_EQ(server.cli({"DBSIZE"}), "2") << "nothing else was created";
}

}  // namespace
}  // namespace rlock::test
