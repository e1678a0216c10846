// What an unlock reports when its reply is lost, reduced from the proxy scenario to a
// deterministic test (public API and the fault proxy only).
//
// error.hpp classifies not_connected, connection_refused, ... as "the outcome is known not to
// have happened" and timeout, connection_lost as "the outcome is unknown (the command may or may
// not have run on the server)". A caller decides from the code whether it still holds the lock.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <future>
#include <rlock/client.hpp>
#include <string>
#include <vector>

#include "faults/connections_settled.hpp"
#include "faults/fault_proxy.hpp"
#include "integration/common.hpp"
#include "support/fast_config.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;

// Through `proxy`, with 1 s request and connect timeouts and short retry delays.
config proxied_config(const fault_proxy& proxy) {
  config cfg = test::fast_config(proxy.url());
  cfg.timeout = 1000ms;
  cfg.connect_timeout = 1000ms;
  return cfg;
}

TEST(fault_unlock_outcome, an_unlock_applied_without_a_reply_is_not_reported_as_not_applied) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  client c(proxied_config(proxy));
  rlock::lock l = c.get_lock("applied");
  l.lock();
  ASSERT_EQ(server.cli({"EXISTS", "applied"}), "1");

  // The unlock reaches the server and runs; every reply is lost from now on.
  proxy.set_mode(proxy_mode::drop_replies);
  std::error_code ec;
  try {
    l.unlock_or_throw();
  } catch (const error& e) {
    ec = e.code();
  }
  proxy.set_mode(proxy_mode::pass);
  ASSERT_EQ(server.cli({"EXISTS", "applied"}), "0") << "the unlock was applied";
  ASSERT_TRUE(ec) << "no reply ever came back, so the unlock cannot have succeeded";
  // Applied, so its failure must not say "known not to have happened" (found: not_connected,
  // the error of the last retry, replaces the unknown outcome of the first attempt).
  EXPECT_TRUE(ec == errc::timeout || ec == errc::connection_lost)
      << "unlock reported '" << ec.message() << "' but it had been applied";
}

// The unlock latch (protocol reference §1.3) is what makes a resent unlock safe, so rlock deletes
// a latch early (in the lock's next unlock script) only when its unlock was answered on its only
// attempt. Here the first attempt runs and its reply is lost; the resent attempt is answered from
// the latch; that latch must then outlive the next unlock and keep its TTL.
TEST(fault_unlock_outcome, a_resent_unlock_is_answered_by_its_latch_which_keeps_its_ttl) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  client c(proxied_config(proxy));
  rlock::lock l = c.get_lock("resent");
  const auto latches = [&server] {
    std::vector<std::string> keys;
    for (const auto& k : server.cli_reply({"KEYS", "redisson_unlock_latch:{resent}:*"}).elements)
      keys.push_back(k.str);
    return keys;
  };
  l.lock();
  l.unlock_or_throw();  // answered on its only attempt: its latch goes with the lock's next unlock
  l.lock();
  const auto first = latches();
  ASSERT_EQ(first.size(), 1u);

  proxy.set_mode(proxy_mode::drop_one_reply);
  l.unlock_or_throw();  // runs, the reply is lost, the resent attempt reads the latch: released
  EXPECT_EQ(proxy.stats().replies_dropped, 1u);
  EXPECT_EQ(server.cli({"EXISTS", "resent"}), "0");
  const auto resent = latches();
  ASSERT_EQ(resent.size(), 1u) << "the first attempt ran: it deleted the spent latch";
  EXPECT_NE(resent[0], first[0]);

  l.lock();
  l.unlock_or_throw();  // the next unlock script of the lock: it must not delete the resent one's
                        // latch
  const auto after = latches();
  ASSERT_EQ(after.size(), 2u);
  ASSERT_TRUE(std::find(after.begin(), after.end(), resent[0]) != after.end());
  EXPECT_GT(server.cli_reply({"PTTL", resent[0]}).integer, 0);
  EXPECT_EQ(server.cli({"GET", resent[0]}), "1");
}

// An unlock's first attempt can reach the server after its resend: stalled on a connection the
// client gave up on, while the resend went out on the next one (or on another connection of a
// pool). By then the resend has released the lock and the owner may hold it again; the late
// attempt must leave that new hold alone, not release it (which would let a second process into
// the critical section while the owner is still in it). Two protections, each tested alone:
//  - the resend closes the stalled connection on the server first (CLIENT KILL), so the late
//    attempt never runs;
//  - where the server refuses that (an ACL user without CLIENT KILL), the late attempt runs and
//    finds the resend's latch.
// Both unlock scripts: with the wait queue (lock_unlock_queued.lua) and without (lock_unlock.lua).
void a_late_first_attempt_leaves_the_next_hold_alone(bool lock_queue, bool kill_allowed) {
  test::server_options o;
  if (!kill_allowed) o.acl_users = {"app on >apppw ~* &* +@all -client|kill"};
  test::redis_server server(o);
  fault_proxy proxy(server.port());
  config cfg = proxied_config(proxy);
  cfg.lock_queue = lock_queue;
  if (!kill_allowed) {
    cfg.username = "app";
    cfg.password = "apppw";
  }
  client c(cfg);
  rlock::lock l = c.get_lock("late");
  const std::string owner = c.id() + ":" + std::to_string(this_thread_owner_id());
  const auto scripts = [&server] { return test::evalsha_calls(server); };
  constexpr std::uint64_t links = 2;  // the command connection and the subscriber's
  ASSERT_TRUE(test::wait_until([&] { return proxy.stats().open == links; }, 5s));
  ASSERT_TRUE(l.try_lock(1s, 60s));  // an explicit lease: no renewal scripts to count
  const long before = scripts();

  // The first attempt stalls on the connection it was written to. No reply for 1 s: the client
  // gives up on that connection and resends on a new one, which gets through.
  proxy.set_mode(proxy_mode::freeze_existing);
  l.unlock_or_throw();
  EXPECT_EQ(server.cli({"EXISTS", "late"}), "0") << "the resend released it";
  ASSERT_EQ(scripts(), before + 1) << "only the resend has run";
  ASSERT_TRUE(l.try_lock(1s, 60s)) << "the owner takes the lock again";
  ASSERT_EQ(server.cli({"HGET", "late", owner}), "1");

  // The stalled connection is relayed again.
  proxy.set_mode(proxy_mode::pass);
  if (kill_allowed) {
    // Closed on the server: its bytes go nowhere, and the proxy closes it.
    ASSERT_TRUE(test::wait_until([&] { return proxy.stats().open == links; }, 5s))
        << proxy.stats().open << " connections relayed";
    EXPECT_EQ(scripts(), before + 2) << "the late first attempt ran";
  } else {
    // Its first attempt runs now, after all that.
    ASSERT_TRUE(test::wait_until([&] { return scripts() == before + 3; }, 5s))
        << "the late first attempt did not reach the server: " << scripts() - before;
  }
  EXPECT_EQ(server.cli({"HGET", "late", owner}), "1") << "the late attempt released the new hold";
  EXPECT_FALSE(l.loss_token().stop_requested());
  l.unlock_or_throw();
  EXPECT_EQ(server.cli({"EXISTS", "late"}), "0");
}

TEST(fault_unlock_outcome, a_first_attempt_that_runs_after_its_resend_leaves_the_next_hold_alone) {
  a_late_first_attempt_leaves_the_next_hold_alone(true, false);
}

TEST(fault_unlock_outcome, without_the_queue_a_late_first_attempt_leaves_the_next_hold_alone) {
  a_late_first_attempt_leaves_the_next_hold_alone(false, false);
}

TEST(fault_unlock_outcome, a_first_attempt_overtaken_by_its_resend_never_runs) {
  a_late_first_attempt_leaves_the_next_hold_alone(true, true);
}

TEST(fault_unlock_outcome, without_the_queue_a_first_attempt_overtaken_by_its_resend_never_runs) {
  a_late_first_attempt_leaves_the_next_hold_alone(false, true);
}

// A forced unlock is not resent when its reply is lost: with queued waiters its script hands the
// lock to the first one, and a resend would take it from that waiter and hand it to the next
// (two processes in the critical section). The operator learns that the outcome is unknown.
TEST(fault_unlock_outcome, a_forced_unlock_whose_reply_is_lost_is_not_resent) {
  test::redis_server server;
  client holder(test::fast_config(server.url()));
  client w1(test::fast_config(server.url()));
  client w2(test::fast_config(server.url()));
  holder.get_lock("forced").lock();
  const auto queued = [&server] {
    return server.cli_reply({"ZCARD", "rlock_queue:{forced}"}).integer;
  };
  std::promise<std::error_code> got1;
  std::promise<std::error_code> got2;
  rlock::lock l1 = w1.get_lock("forced");
  rlock::lock l2 = w2.get_lock("forced");
  l1.async_lock(1, [&got1](std::error_code ec) { got1.set_value(ec); });
  ASSERT_TRUE(test::wait_until([&] { return queued() == 1; }, 10s));
  l2.async_lock(2, [&got2](std::error_code ec) { got2.set_value(ec); });
  ASSERT_TRUE(test::wait_until([&] { return queued() == 2; }, 10s));

  fault_proxy proxy(server.port());
  config cfg = proxied_config(proxy);
  cfg.client_name = "op";
  client op(cfg);
  // Both of op's connections through the proxy (commands, pub/sub) have finished their setup,
  // whose last command is a PING, and the server has written its replies: else the reply
  // dropped below could be the pub/sub connection's (under load it sets up later).
  ASSERT_TRUE(test::wait_until([&server] { return connections_settled(server, "op", 2); }, 10s));
  // The proxy relays what is ready in order: once this reply is through, so is the pub/sub
  // connection's last setup reply, written before it.
  ASSERT_EQ(op.execute({"PING"}).str(), "PONG");
  rlock::lock forced = op.get_lock("forced");
  EXPECT_FALSE(op.get_lock("other").force_unlock());  // loads the script: no NOSCRIPT below
  proxy.set_mode(proxy_mode::drop_one_reply);
  std::error_code ec;
  try {
    forced.force_unlock();
  } catch (const error& e) {
    ec = e.code();
  }
  EXPECT_EQ(proxy.stats().replies_dropped, 1u);
  EXPECT_TRUE(ec == errc::timeout || ec == errc::connection_lost) << ec.message();

  // The first waiter got the lock, once; the second still waits behind it.
  auto f1 = got1.get_future();
  ASSERT_EQ(f1.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(f1.get());
  const auto fields = server.cli_reply({"HGETALL", "forced"}).as_map();
  ASSERT_EQ(fields.size(), 1u);
  EXPECT_EQ(fields.begin()->first, w1.id() + ":1");
  EXPECT_EQ(queued(), 1);
  auto f2 = got2.get_future();
  l1.async_unlock(1, [](std::error_code) {});
  ASSERT_EQ(f2.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(f2.get());
}

// A partial unlock (holds remain) whose outcome is unknown and which in fact did not run: the
// owner's final unlock must still release the lock. Before, the local count stayed, the final
// unlock only decremented the server's count, and the watchdog renewed the lock for as long as
// the client ran, although its owner had released every hold.
TEST(fault_unlock_outcome, a_partial_unlock_lost_before_the_server_does_not_keep_the_lock) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  config cfg = proxied_config(proxy);
  cfg.timeout = 300ms;
  client c(cfg);
  rlock::lock l = c.get_lock("partial");
  l.lock();
  l.lock();
  const std::string field = c.id() + ":" + std::to_string(this_thread_owner_id());
  ASSERT_EQ(server.cli({"HGET", "partial", field}), "2");
  proxy.set_mode(proxy_mode::hang);  // the unlock is written, held by the proxy, never relayed
  std::error_code ec;
  try {
    l.unlock_or_throw();
  } catch (const error& e) {
    ec = e.code();
  }
  EXPECT_TRUE(ec == errc::timeout || ec == errc::connection_lost) << ec.message();
  proxy.set_mode(proxy_mode::reset);  // what it held is dropped, not relayed late
  proxy.set_mode(proxy_mode::pass);
  ASSERT_EQ(server.cli({"HGET", "partial", field}), "2") << "the partial unlock did not run";
  l.unlock_or_throw();  // the owner's last hold, as far as it knows
  EXPECT_EQ(server.cli({"EXISTS", "partial"}), "0");
}

}  // namespace
}  // namespace rlock::faults
