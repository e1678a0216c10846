// A semaphore's release that the replicas did not acknowledge (config::replica_sync): the
// replica's link to its master runs through a fault_proxy that stops the replication stream at
// the release's write (hang_on), so the release runs on the master and its WAIT runs out. The
// release is sent again, whole, with its latch: the replay finds the latch and returns the
// first run's count, adding no permit, and it writes (the latch's TTL), so that its WAIT, on
// whichever connection it goes, waits for the first run to reach the replica. After the last
// send the release completes all the same (a caller told it failed would release again, adding
// its permits twice) and the client reports client_event_kind::write_not_confirmed.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <rlock/client.hpp>
#include <rlock/permit_expirable_semaphore.hpp>
#include <rlock/semaphore.hpp>
#include <set>
#include <string>

#include "faults/proxied_replica.hpp"
#include "support/event_recorder.hpp"
#include "support/replica_acks.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;

/// The semaphore latch a client's script names ("" if none).
std::string semaphore_latch_of(const test::monitored& m) {
  return faults::latch_of(m, "rlock_semaphore_latch:");
}

/// Sets `key` to `count` on the master, and waits until the replica has it. By hand, not by the
/// client: on a server that counts a connection's offset at its writes only (Redis 7.2 on; 7.0
/// counts it at every command), the client's own requests would leave it connections that
/// wrote nothing since, or spent latches to delete with its next request, and either would let
/// a replay that only read be confirmed.
void set_by_hand(proxied_replica& p, const std::string& key, const std::string& count) {
  ASSERT_EQ(p.master.cli({"SET", key, count}), "OK");
  ASSERT_TRUE(test::wait_until_replicas_acknowledge(p.master, 20s));
}

TEST(semaphore_sync, a_release_the_replica_missed_is_sent_again_and_confirmed_once_it_has_it) {
  recorded_replica r(4);
  proxied_replica& p = r.p;
  test::event_recorder& rec = r.rec;
  ASSERT_TRUE(test::wait_until_replicas_acknowledge(p.master, 20s));
  auto sem = r.c.get_semaphore("sem-sync");
  set_by_hand(p, "sem-sync", "0");
  test::server_monitor monitor(p.master);
  p.proxy.hang_on("incrby");
  auto watched = watch_one_resend(p, monitor);
  EXPECT_EQ(sem.release(), 1) << "the first run's count, returned by the replay";
  ASSERT_EQ(watched.wait_for(20s), std::future_status::ready);
  const auto [first, again, hung] = watched.get();
  ASSERT_TRUE(first) << "the release";
  ASSERT_TRUE(again) << "the release, sent again";
  EXPECT_FALSE(semaphore_latch_of(*first).empty());
  EXPECT_EQ(semaphore_latch_of(*again), semaphore_latch_of(*first));
  EXPECT_TRUE(hung);
  // Confirmed when it returned: on the replica, once.
  EXPECT_EQ(p.replica.cli({"GET", "sem-sync"}), "1");
  EXPECT_EQ(p.master.cli({"GET", "sem-sync"}), "1");
  EXPECT_EQ(rec.count(client_event_kind::write_not_confirmed), 0U);
}

TEST(semaphore_sync, sends_used_up_complete_the_release_and_report_it) {
  recorded_replica r(3);
  proxied_replica& p = r.p;
  test::event_recorder& rec = r.rec;
  ASSERT_TRUE(test::wait_until_replicas_acknowledge(p.master, 20s));
  auto sem = r.c.get_semaphore("sem-sync-spent");
  set_by_hand(p, "sem-sync-spent", "0");
  test::server_monitor monitor(p.master);
  p.proxy.hang_on("incrby");
  // Each send after the first goes to another of the client's connections for such requests,
  // which wrote nothing before (set_by_hand): on Redis 7.2 on, a replay that only read would be
  // confirmed there at once, the first run unacknowledged, and nothing reported.
  EXPECT_EQ(sem.release(2), 2) << "completed as it ran on the master";
  const auto e = rec.wait_for(client_event_kind::write_not_confirmed, 5s);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->object, "sem-sync-spent");
  EXPECT_EQ(e->server, p.master.url());
  EXPECT_EQ(e->error, errc::replication_not_confirmed);
  EXPECT_NE(e->detail.find("released on the master, but acknowledged by 0 of the 1 replicas"),
            std::string::npos)
      << e->detail;
  EXPECT_NE(e->detail.find("tried 3 times"), std::string::npos) << e->detail;
  const auto [scripts, latches] = sends_seen(monitor, "rlock_semaphore_latch:");
  EXPECT_EQ(scripts, 3);
  EXPECT_EQ(latches.size(), 1U) << "one latch for the three sends";
  EXPECT_EQ(p.master.cli({"GET", "sem-sync-spent"}), "2") << "the permits added once";
  EXPECT_EQ(p.replica.cli({"GET", "sem-sync-spent"}), "0") << "the stream stayed stopped";
  EXPECT_EQ(rec.count(client_event_kind::write_not_confirmed), 1U);
}

TEST(semaphore_sync, a_permits_release_is_sent_again_and_reported_too) {
  recorded_replica r(2);
  proxied_replica& p = r.p;
  test::event_recorder& rec = r.rec;
  ASSERT_TRUE(test::wait_until_replicas_acknowledge(p.master, 20s));
  auto pes = r.c.get_permit_expirable_semaphore("pes-sync");
  // A permit that never expires, taken by hand: Redisson's layout keeps the id's 16 bytes.
  const permit_expirable_semaphore::permit_id id("4142434445464748494a4b4c4d4e4f50");
  ASSERT_EQ(p.master.cli({"ZADD", "{pes-sync}:timeout", "922337203685477", "ABCDEFGHIJKLMNOP"}),
            "1");
  set_by_hand(p, "pes-sync", "0");
  test::server_monitor monitor(p.master);
  p.proxy.hang_on("zrem");
  EXPECT_TRUE(pes.try_release(id));
  const auto e = rec.wait_for(client_event_kind::write_not_confirmed, 5s);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->object, "pes-sync");
  EXPECT_NE(e->detail.find("tried 2 times"), std::string::npos) << e->detail;
  const auto [scripts, latches] = sends_seen(monitor, "rlock_semaphore_latch:");
  EXPECT_EQ(scripts, 2);
  EXPECT_EQ(latches.size(), 1U);
  EXPECT_EQ(p.master.cli({"GET", "pes-sync"}), "1");
  EXPECT_EQ(p.master.cli({"ZCARD", "{pes-sync}:timeout"}), "0");
  // Caught up, the replica has the release, once.
  p.proxy.set_mode(proxy_mode::pass);
  ASSERT_TRUE(test::wait_until_replicas_acknowledge(p.master, 20s));
  EXPECT_EQ(p.replica.cli({"GET", "pes-sync"}), "1");
  EXPECT_EQ(p.replica.cli({"ZCARD", "{pes-sync}:timeout"}), "0");
}

}  // namespace
}  // namespace rlock::faults
