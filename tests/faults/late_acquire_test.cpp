// An acquire's first attempt that would reach the server after its resend: stalled on a
// connection the client gave up on, while the resend went out on the next connection. By the
// time the stalled bytes move again the owner may have released the lock; run then, the first
// attempt would take the free lock for an owner that no longer waits for it (nobody renews or
// releases it: other clients wait for its whole lease). The resend closes the stalled connection
// on the server first (CLIENT KILL, server_client.hpp), so the late attempt never runs.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
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

// A client through a proxy (1 s timeouts), its lock "late", and its command connection's id on
// the server: the connection the first attempt will stall on.
struct stalling {
  test::redis_server server;
  fault_proxy proxy{server.port()};
  std::unique_ptr<client> c;
  std::unique_ptr<rlock::lock> l;
  std::string stalled;
  // Relayed: the command connection and the subscriber's.
  static constexpr std::uint64_t links = 2;

  explicit stalling(bool lock_queue = true, int retry_attempts = 3) {
    config cfg = test::fast_config(proxy.url());
    cfg.timeout = 1000ms;
    cfg.connect_timeout = 1000ms;
    cfg.lock_queue = lock_queue;
    cfg.retry_attempts = retry_attempts;
    c = std::make_unique<client>(cfg);
    l = std::make_unique<rlock::lock>(c->get_lock("late"));
    stalled = std::to_string(c->execute({"CLIENT", "ID"}).integer());
  }
  bool settled() const {
    return test::wait_until([&] { return proxy.stats().open == links; }, 5s);
  }
  bool stalled_is_open() const {
    for (const auto& f : test::client_list(server)) {
      if (auto it = f.find("id"); it != f.end() && it->second == stalled) return true;
    }
    return false;
  }
  // try_lock(wait) for a given-up attempt: not held, with an unknown outcome.
  void try_lock_gives_up(std::chrono::milliseconds wait) {
    std::error_code ec;
    bool held = false;
    try {
      held = l->try_lock(wait, 60s);
    } catch (const error& e) {
      ec = e.code();
    }
    EXPECT_FALSE(held);
    EXPECT_TRUE(ec == errc::timeout || ec == errc::connection_lost || ec == errc::not_connected)
        << ec.message();
  }
  // The stalled connection is relayed again; its server side is gone (with the fix), so its
  // bytes go nowhere and the proxy closes it. The lock must be free.
  void thaw_and_check() {
    proxy.set_mode(proxy_mode::pass);
    ASSERT_TRUE(settled()) << proxy.stats().open << " connections relayed";
    EXPECT_EQ(server.cli({"EXISTS", "late"}), "0") << "the stalled attempt took the released lock";
  }
};

// Both acquire scripts: with the wait queue (lock_acquire_queued.lua) and without.
void a_late_first_attempt_never_runs(bool lock_queue) {
  stalling s(lock_queue);
  ASSERT_TRUE(s.settled());
  const long before = test::evalsha_calls(s.server);

  // The first attempt stalls on the connection it was written to. No reply for 1 s: the client
  // gives up on that connection and resends on a new one, which gets through.
  s.proxy.set_mode(proxy_mode::freeze_existing);
  ASSERT_TRUE(s.l->try_lock(5s, 60s));  // an explicit lease: no renewal scripts to count
  EXPECT_EQ(test::evalsha_calls(s.server), before + 1) << "only the resend has run";
  s.l->unlock_or_throw();
  ASSERT_EQ(s.server.cli({"EXISTS", "late"}), "0");
  EXPECT_FALSE(s.stalled_is_open())
      << "the connection the first attempt stalled on is still open on the server";

  s.thaw_and_check();
  EXPECT_EQ(test::evalsha_calls(s.server), before + 2) << "the late attempt ran";
  // The client is unharmed: the lock is taken and released as usual.
  ASSERT_TRUE(s.l->try_lock(1s, 60s));
  s.l->unlock_or_throw();
  EXPECT_EQ(s.server.cli({"EXISTS", "late"}), "0");
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
  stalling s;
  ASSERT_TRUE(s.settled());
  // Nothing gets through: the first attempt stalls, its connection is given up after 1 s, and
  // the next one cannot set up before the caller's wait ends, so the resend never goes out.
  s.proxy.set_mode(proxy_mode::hang);
  s.try_lock_gives_up(1500ms);
  // New connections get through (the stalled one stays stalled): the undo goes out.
  s.proxy.set_mode(proxy_mode::freeze_existing);
  // The owner's next acquire waits for the undo to land: once it is answered (here: the lock is
  // free, taken and released again), the undo has run.
  ASSERT_TRUE(s.l->try_lock(5s, 60s));
  s.l->unlock_or_throw();
  EXPECT_FALSE(s.stalled_is_open())
      << "the connection the first attempt stalled on is still open on the server";
  s.thaw_and_check();
}

// As above, but the undo itself is refused before it is sent (one attempt per request, and the
// client's connection is being replaced just then): it carries no kill to the server. The new
// connection closes the one it replaces before it sends anything else (its setup), so the
// stalled attempt still never runs.
TEST(fault_late_acquire, a_connection_given_up_on_is_closed_by_the_next_one) {
  stalling s(true, 1);
  ASSERT_TRUE(s.settled());
  const auto accepted = s.proxy.stats().accepted;
  s.proxy.set_mode(proxy_mode::freeze_existing);
  s.try_lock_gives_up(1500ms);
  // The client's next connection is set up (accepted after the stalled one was given up).
  ASSERT_TRUE(test::wait_until(
      [&] { return s.proxy.stats().accepted > accepted && s.c->status().connected; }, 5s));
  EXPECT_FALSE(s.stalled_is_open())
      << "the connection the first attempt stalled on is still open on the server";
  ASSERT_TRUE(s.l->try_lock(2s, 60s));
  s.l->unlock_or_throw();
  s.thaw_and_check();
}

}  // namespace
}  // namespace rlock::faults
