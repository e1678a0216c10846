// What an unlock reports when its reply is lost, reduced from the proxy scenario to a
// deterministic test (public API and the fault proxy only).
//
// error.hpp classifies not_connected, connection_refused, ... as "the outcome is known not to
// have happened" and timeout, connection_lost as "the outcome is unknown (the command may or may
// not have run on the server)". A caller decides from the code whether it still holds the lock.
#include <gtest/gtest.h>

#include <rlock/client.hpp>

#include "faults/fault_proxy.hpp"
#include "support/fast_config.hpp"
#include "support/redis_server.hpp"

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
    l.unlock();
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
// a latch early (in the lock's next script) only when its unlock was answered on its only
// attempt. Here the first attempt runs and its reply is lost; the resent attempt is answered from
// the latch; that latch must then outlive the next acquire and keep its TTL.
TEST(fault_unlock_outcome, a_resent_unlock_is_answered_by_its_latch_which_keeps_its_ttl) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  client c(proxied_config(proxy));
  rlock::lock l = c.get_lock("resent");
  l.lock();
  l.unlock();  // answered on its only attempt: its latch goes with the next script of the lock
  l.lock();
  EXPECT_EQ(server.cli_reply({"KEYS", "redisson_unlock_latch:{resent}:*"}).elements.size(), 0u);

  proxy.set_mode(proxy_mode::drop_one_reply);
  l.unlock();  // runs, the reply is lost, the resent attempt reads the latch: released
  EXPECT_EQ(proxy.stats().replies_dropped, 1u);
  EXPECT_EQ(server.cli({"EXISTS", "resent"}), "0");

  l.lock();  // the next script of the lock: it must not delete the resent unlock's latch
  const auto latches = server.cli_reply({"KEYS", "redisson_unlock_latch:{resent}:*"});
  ASSERT_EQ(latches.elements.size(), 1u);
  EXPECT_GT(server.cli_reply({"PTTL", latches.elements[0].str}).integer, 0);
  EXPECT_EQ(server.cli({"GET", latches.elements[0].str}), "1");
  l.unlock();
}

}  // namespace
}  // namespace rlock::faults
