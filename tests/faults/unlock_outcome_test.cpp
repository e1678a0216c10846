// What an unlock reports when its reply is lost, reduced from the proxy scenario to a
// deterministic test (public API and the fault proxy only).
//
// error.hpp classifies not_connected, connection_refused, ... as "the outcome is known not to
// have happened" and timeout, connection_lost as "the outcome is unknown (the command may or may
// not have run on the server)". A caller decides from the code whether it still holds the lock.
#include <gtest/gtest.h>

#include <rlock/client.hpp>

#include "faults/fault_proxy.hpp"
#include "support/redis_server.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;

TEST(fault_unlock_outcome, an_unlock_applied_without_a_reply_is_not_reported_as_not_applied) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  config cfg;
  cfg.address = proxy.url();
  cfg.timeout = 1000ms;
  cfg.connect_timeout = 1000ms;
  cfg.retry_delay_base = 50ms;
  cfg.retry_delay_max = 100ms;
  cfg.reconnect_delay_min = 10ms;
  cfg.reconnect_delay_max = 100ms;
  client c(cfg);
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

}  // namespace
}  // namespace rlock::faults
