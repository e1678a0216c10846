// An acquire's first attempt that would reach the server after its resend: stalled on a
// connection the client gave up on, while the resend went out on the next connection. By the
// time the stalled bytes move again the owner may have released the lock; run then, the first
// attempt would take the free lock for an owner that no longer waits for it (nobody renews or
// releases it: other clients wait for its whole lease). The resend closes the stalled connection
// on the server first (CLIENT KILL, server_client.hpp), so the late attempt never runs.
#include <gtest/gtest.h>

#include <cstdint>
#include <rlock/client.hpp>
#include <string>
#include <system_error>

#include "faults/fault_proxy.hpp"
#include "integration/common.hpp"
#include "support/client_list.hpp"
#include "support/fast_config.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;

bool has_client(const test::redis_server& server, const std::string& id) {
  for (const auto& c : test::client_list(server)) {
    if (auto it = c.find("id"); it != c.end() && it->second == id) return true;
  }
  return false;
}

// Both acquire scripts: with the wait queue (lock_acquire_queued.lua) and without.
void a_late_first_attempt_never_runs(bool lock_queue) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  config cfg = test::fast_config(proxy.url());
  cfg.timeout = 1000ms;
  cfg.connect_timeout = 1000ms;
  cfg.lock_queue = lock_queue;
  client c(cfg);
  rlock::lock l = c.get_lock("late");
  // The command connection (a pool of one) as the server knows it.
  const std::string stalled = std::to_string(c.execute({"CLIENT", "ID"}).integer());
  // The command connection and the subscriber's.
  constexpr std::uint64_t links = 2;
  ASSERT_TRUE(test::wait_until([&] { return proxy.stats().open == links; }, 5s));
  const long before = test::evalsha_calls(server);

  // The first attempt stalls on the connection it was written to. No reply for 1 s: the client
  // gives up on that connection and resends on a new one, which gets through.
  proxy.set_mode(proxy_mode::freeze_existing);
  ASSERT_TRUE(l.try_lock(5s, 60s));  // an explicit lease: no renewal scripts to count
  EXPECT_EQ(test::evalsha_calls(server), before + 1) << "only the resend has run";
  l.unlock_or_throw();
  ASSERT_EQ(server.cli({"EXISTS", "late"}), "0");
  EXPECT_FALSE(has_client(server, stalled))
      << "the connection the first attempt stalled on is still open on the server";

  // The stalled connection is relayed again; the server side of it is gone, so its bytes go
  // nowhere and the proxy closes it (the subscriber's connection, frozen too, carries on).
  proxy.set_mode(proxy_mode::pass);
  ASSERT_TRUE(test::wait_until([&] { return proxy.stats().open == links; }, 5s))
      << proxy.stats().open << " connections relayed";
  EXPECT_EQ(server.cli({"EXISTS", "late"}), "0") << "the late attempt took the released lock";
  EXPECT_EQ(test::evalsha_calls(server), before + 2) << "the late attempt ran";
  // The client is unharmed: the lock is taken and released as usual.
  ASSERT_TRUE(l.try_lock(1s, 60s));
  l.unlock_or_throw();
  EXPECT_EQ(server.cli({"EXISTS", "late"}), "0");
}

TEST(fault_late_acquire, a_first_attempt_overtaken_by_its_resend_never_runs) {
  a_late_first_attempt_never_runs(true);
}

TEST(fault_late_acquire, without_the_queue_a_first_attempt_overtaken_by_its_resend_never_runs) {
  a_late_first_attempt_never_runs(false);
}

// An acquire whose outcome is unknown when the caller's wait ends is undone: the undo (an unlock
// of exactly that acquire) goes out on the next connection. Run before the stalled attempt, it
// finds nothing to undo; the stalled attempt must not run after it.
TEST(fault_late_acquire, an_undo_is_not_overtaken_by_the_attempt_it_undoes) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  config cfg = test::fast_config(proxy.url());
  cfg.timeout = 1000ms;
  cfg.connect_timeout = 1000ms;
  client c(cfg);
  rlock::lock l = c.get_lock("late");
  const std::string stalled = std::to_string(c.execute({"CLIENT", "ID"}).integer());
  constexpr std::uint64_t links = 2;
  ASSERT_TRUE(test::wait_until([&] { return proxy.stats().open == links; }, 5s));

  // Nothing gets through: the first attempt stalls, its connection is given up after 1 s, and
  // the next one cannot set up before the caller's wait ends, so the resend never goes out.
  proxy.set_mode(proxy_mode::hang);
  std::error_code ec;
  bool held = false;
  try {
    held = l.try_lock(1500ms, 60s);
  } catch (const error& e) {
    ec = e.code();
  }
  EXPECT_FALSE(held);
  EXPECT_TRUE(ec == errc::timeout || ec == errc::connection_lost) << ec.message();
  // New connections get through (the stalled one stays stalled): the undo goes out.
  proxy.set_mode(proxy_mode::freeze_existing);
  // The owner's next acquire waits for the undo to land: once it is answered (here: the lock is
  // free, taken and released again), the undo has run.
  ASSERT_TRUE(l.try_lock(5s, 60s));
  l.unlock_or_throw();
  EXPECT_FALSE(has_client(server, stalled))
      << "the connection the first attempt stalled on is still open on the server";

  proxy.set_mode(proxy_mode::pass);
  ASSERT_TRUE(test::wait_until([&] { return proxy.stats().open == links; }, 5s))
      << proxy.stats().open << " connections relayed";
  EXPECT_EQ(server.cli({"EXISTS", "late"}), "0") << "the stalled attempt took the released lock";
}

}  // namespace
}  // namespace rlock::faults
