// An unlock that the replicas did not acknowledge (config::replica_sync): the replica's link to
// its master runs through a fault_proxy that stops the replication stream at the unlock's
// latch (hang_on), so the release runs on the master and its WAIT runs out. The unlock is sent
// again, whole, with its latch (Redisson resends it with the same request id): the replay finds
// the latch and returns the first run's result, and it writes (the latch's TTL), so that its
// WAIT, on whichever connection it goes, waits for the first run to reach the replica. Before,
// the first shortfall was the unlock's error. After the last send the unlock's error is
// errc::replication_not_confirmed, and the client reports client_event_kind::write_not_confirmed
// (for unlock(), which ignores errors, as a lock guard's does, the only word of it).
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <rlock/client.hpp>
#include <string>

#include "faults/proxied_replica.hpp"
#include "support/event_recorder.hpp"
#include "support/replica_acks.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;

/// The unlock latch a client's unlock script names ("" if none).
std::string unlock_latch_of(const test::monitored& m) {
  return faults::latch_of(m, "redisson_unlock_latch:");
}

TEST(unlock_sync, an_unlock_the_replica_missed_is_sent_again_and_confirmed_once_it_has_it) {
  recorded_replica r(4);
  proxied_replica& p = r.p;
  ASSERT_TRUE(test::wait_until_replicas_acknowledge(p.master, 20s));
  auto l = r.c.get_lock("unlock-sync");
  l.lock();
  test::server_monitor monitor(p.master);
  p.proxy.hang_on("redisson_unlock_latch");
  auto watched = watch_one_resend(p, monitor);
  EXPECT_NO_THROW(l.unlock_or_throw());
  ASSERT_EQ(watched.wait_for(20s), std::future_status::ready);
  const auto [first, again, hung] = watched.get();
  ASSERT_TRUE(first) << "the unlock";
  ASSERT_TRUE(again) << "the unlock, sent again";
  EXPECT_FALSE(unlock_latch_of(*first).empty());
  EXPECT_EQ(unlock_latch_of(*again), unlock_latch_of(*first));
  EXPECT_TRUE(hung);
  ASSERT_TRUE(test::wait_until_replicas_acknowledge(p.master, 20s));
  EXPECT_EQ(p.replica.cli({"EXISTS", "unlock-sync"}), "0");
  EXPECT_FALSE(l.is_held_by_current_thread());
  EXPECT_EQ(r.rec.count(client_event_kind::write_not_confirmed), 0U) << r.rec.kinds();
}

TEST(unlock_sync, tries_used_up_end_with_the_error_and_the_lock_released_on_the_master) {
  recorded_replica r(3);
  proxied_replica& p = r.p;
  ASSERT_TRUE(test::wait_until_replicas_acknowledge(p.master, 20s));
  auto l = r.c.get_lock("unlock-sync-spent");
  l.lock();
  test::server_monitor monitor(p.master);
  p.proxy.hang_on("redisson_unlock_latch");
  // Each send after the first goes to another of the client's connections for such requests,
  // which wrote nothing since the stream stopped: on a server that counts a connection's
  // offset at its writes only (Redis 7.2 on; 7.0 counts it at every command, so this test
  // cannot tell there), a replay that only read would be confirmed there at once, the first run
  // unacknowledged.
  try {
    l.unlock_or_throw();
    ADD_FAILURE() << "an unlock the replica never acknowledged was confirmed";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::replication_not_confirmed) << e.what();
    EXPECT_NE(std::string(e.what()).find("tried 3 times"), std::string::npos) << e.what();
  }
  const auto [scripts, latches] = sends_seen(monitor, "redisson_unlock_latch:");
  EXPECT_EQ(scripts, 3);
  EXPECT_EQ(latches.size(), 1U) << "one latch for the three sends";
  EXPECT_EQ(p.master.cli({"EXISTS", "unlock-sync-spent"}), "0");
  EXPECT_FALSE(l.is_held_by_current_thread());
  EXPECT_EQ(p.replica.cli({"EXISTS", "unlock-sync-spent"}), "1") << "the stream stayed stopped";
  const auto e = r.rec.wait_for(client_event_kind::write_not_confirmed, 5s);
  ASSERT_TRUE(e) << r.rec.kinds();
  EXPECT_EQ(e->object, "unlock-sync-spent");
  EXPECT_EQ(e->server, p.master.url());
  EXPECT_EQ(e->error, errc::replication_not_confirmed);
  EXPECT_NE(e->detail.find("released on the master, but acknowledged by 0 of the 1"),
            std::string::npos)
      << e->detail;
  EXPECT_NE(e->detail.find("tried 3 times"), std::string::npos) << e->detail;
  EXPECT_EQ(r.rec.count(client_event_kind::write_not_confirmed), 1U);
}

TEST(unlock_sync, a_lock_guards_unlock_that_is_not_confirmed_is_reported_as_an_event) {
  recorded_replica r(2);
  proxied_replica& p = r.p;
  ASSERT_TRUE(test::wait_until_replicas_acknowledge(p.master, 20s));
  auto l = r.c.get_lock("unlock-sync-guard");
  {
    const std::lock_guard guard(l);
    p.proxy.hang_on("redisson_unlock_latch");
  }  // unlock(), which ignores errors
  EXPECT_FALSE(l.is_held_by_current_thread());
  EXPECT_EQ(p.master.cli({"EXISTS", "unlock-sync-guard"}), "0");
  const auto e = r.rec.wait_for(client_event_kind::write_not_confirmed, 5s);
  ASSERT_TRUE(e) << r.rec.kinds();
  EXPECT_EQ(e->object, "unlock-sync-guard");
  EXPECT_NE(e->detail.find("tried 2 times"), std::string::npos) << e->detail;
  EXPECT_EQ(r.c.stats().writes_not_confirmed, 1U);
  EXPECT_EQ(p.replica.cli({"EXISTS", "unlock-sync-guard"}), "1") << "the stream stayed stopped";
}

TEST(unlock_sync, a_read_write_locks_unlock_is_sent_again_too) {
  recorded_replica r(2);
  proxied_replica& p = r.p;
  ASSERT_TRUE(test::wait_until_replicas_acknowledge(p.master, 20s));
  auto rw = r.c.get_read_write_lock("unlock-sync-rw");
  rw.lock();
  test::server_monitor monitor(p.master);
  p.proxy.hang_on("redisson_unlock_latch");
  std::error_code ec;
  rw.release(rw_mode::write, ec);
  EXPECT_EQ(ec, errc::replication_not_confirmed);
  int scripts = 0;
  while (monitor.next(client_script, 500ms)) ++scripts;
  EXPECT_EQ(scripts, 2);
  EXPECT_EQ(p.master.cli({"EXISTS", "unlock-sync-rw"}), "0");
  const auto e = r.rec.wait_for(client_event_kind::write_not_confirmed, 5s);
  ASSERT_TRUE(e) << r.rec.kinds();
  EXPECT_EQ(e->object, "unlock-sync-rw");
  EXPECT_NE(e->detail.find("tried 2 times"), std::string::npos) << e->detail;
  // Caught up, a second try's replay is confirmed (the first run reached the replica).
  p.proxy.set_mode(proxy_mode::pass);
  ASSERT_TRUE(test::wait_until_replicas_acknowledge(p.master, 20s));
  EXPECT_EQ(p.replica.cli({"EXISTS", "unlock-sync-rw"}), "0");
}

}  // namespace
}  // namespace rlock::faults
