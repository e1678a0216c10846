// A fenced lock's token that the replicas did not acknowledge (config::replica_sync), with the
// acquire before it acknowledged: the replica's link to its master runs through a fault_proxy
// that stops the replication stream at the token's INCR (hang_on), so the acquire's WAIT is
// answered and the token's is not. As for an acquire the replicas did not confirm (Redisson's
// rule), the hold is released and the whole fenced acquire is tried again; before, it failed at
// once.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <rlock/client.hpp>
#include <string>

#include "faults/proxied_replica.hpp"
#include "support/replica_acks.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;

TEST(token_sync, a_token_the_replica_missed_is_tried_again_and_returned_once_it_has_it) {
  proxied_replica p;
  ASSERT_TRUE(test::wait_until_replicas_acknowledge(p.master, 20s));
  client c(p.client_config(4));
  auto f = c.get_fenced_lock("token-sync");
  test::server_monitor monitor(p.master);
  p.proxy.hang_on("redisson_lock_token");
  auto got = std::async(std::launch::async, [&] { return f.try_lock_and_get_token(20s, 0ms); });
  // The first try: the acquire (confirmed), the token (its INCR held by the proxy), then the
  // release of that hold, after the token's WAIT ran out.
  ASSERT_TRUE(monitor.next(client_script, 10s)) << "the acquire";
  ASSERT_TRUE(monitor.next(client_script, 10s)) << "the token";
  ASSERT_TRUE(monitor.next(client_script, 10s)) << "the release";
  EXPECT_EQ(p.proxy.mode(), proxy_mode::hang);
  p.proxy.set_mode(proxy_mode::pass);  // the replica catches up
  ASSERT_EQ(got.wait_for(20s), std::future_status::ready);
  const std::optional<fencing_token> token = got.get();
  ASSERT_TRUE(token);
  // The first try's token was issued and skipped: the one returned is a later one, and the
  // replica had it when it was returned.
  EXPECT_GE(*token, 2);
  EXPECT_EQ(p.replica.cli({"GET", "redisson_lock_token:{token-sync}"}), std::to_string(*token));
  EXPECT_EQ(p.replica.cli_reply({"HLEN", "token-sync"}).integer, 1);
  f.unlock();
}

TEST(token_sync, tries_used_up_end_with_the_error_and_no_hold) {
  proxied_replica p;
  ASSERT_TRUE(test::wait_until_replicas_acknowledge(p.master, 20s));
  client c(p.client_config(2));
  auto f = c.get_fenced_lock("token-sync-spent");
  p.proxy.hang_on("redisson_lock_token");
  // The first try's token is not confirmed; the second try's acquire is not either (the
  // replication stream stays stopped): two tries in all.
  try {
    (void)f.try_lock_and_get_token(20s, 0ms);
    ADD_FAILURE() << "a token the replica never acknowledged was returned";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::replication_not_confirmed) << e.what();
    EXPECT_NE(std::string(e.what()).find("tried 2 times"), std::string::npos) << e.what();
  }
  EXPECT_EQ(p.master.cli({"EXISTS", "token-sync-spent"}), "0");
  // A single try is tried once.
  p.proxy.set_mode(proxy_mode::pass);
  ASSERT_TRUE(test::wait_until_replicas_acknowledge(p.master, 20s));
  test::server_monitor monitor(p.master);
  p.proxy.hang_on("redisson_lock_token");
  EXPECT_THROW((void)f.try_lock_and_get_token(), error);
  int scripts = 0;
  while (monitor.next(client_script, 500ms)) ++scripts;
  EXPECT_EQ(scripts, 3) << "the acquire, the token and the release, once";
  EXPECT_EQ(p.master.cli({"EXISTS", "token-sync-spent"}), "0");
}

}  // namespace
}  // namespace rlock::faults
