// Redisson's rule for replica acknowledgement (config::all_connected_replicas) without a
// server: reading the replica count off INFO, the census's staleness, and the verdict on a
// WAIT's reply.
#include "detail/replica_census.hpp"

#include <gtest/gtest.h>

#include <string>

#include "detail/replica_sync.hpp"

namespace rlock::detail {
namespace {

TEST(replica_census, the_count_is_read_off_info_replication) {
  const std::string master =
      "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n"
      "slave0:ip=127.0.0.1,port=7001,state=online,offset=42,lag=0\r\n"
      "slave1:ip=127.0.0.1,port=7002,state=online,offset=42,lag=1\r\nmaster_failover_state:"
      "no-failover\r\n";
  EXPECT_EQ(connected_replicas_in(master), 2);
  EXPECT_EQ(connected_replicas_in("connected_slaves:0\r\n"), 0);
  EXPECT_EQ(connected_replicas_in("# Replication\nconnected_slaves:7"), 7);
  // Only a whole line's field, with a whole number.
  EXPECT_EQ(connected_replicas_in("role:master\r\n"), std::nullopt);
  EXPECT_EQ(connected_replicas_in("x_connected_slaves:3\r\n"), std::nullopt);
  EXPECT_EQ(connected_replicas_in("connected_slaves:\r\n"), std::nullopt);
  EXPECT_EQ(connected_replicas_in("connected_slaves:-1\r\n"), std::nullopt);
  EXPECT_EQ(connected_replicas_in("connected_slaves:2x\r\n"), std::nullopt);
  EXPECT_EQ(connected_replicas_in(""), std::nullopt);
}

TEST(replica_census, a_count_is_taken_again_once_stale_by_one_recount_at_a_time) {
  replica_census c;
  EXPECT_EQ(c.count(), -1);
  c.counted(3);
  EXPECT_EQ(c.count(), 3);
  EXPECT_FALSE(c.begin_stale_recount()) << "just counted";
  replica_census old;  // counted at the clock's epoch: stale
  EXPECT_TRUE(old.begin_stale_recount());
  EXPECT_FALSE(old.begin_stale_recount()) << "one under way";
  old.recount_done();
  EXPECT_TRUE(old.begin_stale_recount());
  old.recount_done();
  old.forget();
  EXPECT_EQ(old.count(), -1);
}

exec_result waited(long long acked, long long connected) {
  exec_result r;
  r.replicas_acked = acked;
  r.replicas_connected = connected;
  return r;
}

TEST(replica_census, under_redissons_rule_one_acknowledgement_or_no_replica_confirms) {
  config cfg;
  cfg.replica_sync = config::all_connected_replicas;
  EXPECT_TRUE(replicas_confirmed(cfg, waited(1, 2)));
  EXPECT_TRUE(replicas_confirmed(cfg, waited(3, 2)));
  EXPECT_TRUE(replicas_confirmed(cfg, waited(0, 0)));     // a master without replicas
  EXPECT_FALSE(replicas_confirmed(cfg, waited(0, 2)));    // none of two connected
  EXPECT_FALSE(replicas_confirmed(cfg, waited(0, -1)));   // INFO refused: one was asked for
  EXPECT_TRUE(replicas_confirmed(cfg, waited(-1, 0)));    // WAIT refused, no replica to ask
  EXPECT_FALSE(replicas_confirmed(cfg, waited(-1, 1)));   // WAIT refused, a replica connected
  EXPECT_FALSE(replicas_confirmed(cfg, waited(-1, -1)));  // neither WAIT nor INFO
  // N: exactly N, whatever is connected.
  cfg.replica_sync = 2;
  EXPECT_FALSE(replicas_confirmed(cfg, waited(1, 2)));
  EXPECT_TRUE(replicas_confirmed(cfg, waited(2, -1)));
  cfg.replica_sync = 0;
  EXPECT_TRUE(replicas_confirmed(cfg, waited(-1, -1)));
}

// An acquire the replicas did not confirm is tried again as Redisson does: replica_sync_tries
// in all, each after its delay, never past the caller's deadline (halfway to it instead, or not
// at all with too little left).
TEST(replica_sync_retry, tries_are_bounded_by_replica_sync_tries_and_the_deadline) {
  using namespace std::chrono_literals;
  config cfg;
  cfg.replica_sync_tries = 3;
  const clock::time_point now = clock::time_point{} + 100s;
  const auto forever = clock::time_point::max();
  EXPECT_EQ(unconfirmed_retry_in(cfg, 1, now, forever, 1500ms), 1500ms);
  EXPECT_EQ(unconfirmed_retry_in(cfg, 2, now, forever, 1500ms), 1500ms);
  EXPECT_EQ(unconfirmed_retry_in(cfg, 3, now, forever, 1500ms), std::nullopt);
  EXPECT_EQ(unconfirmed_retry_in(cfg, 1, now, now + 2s, 1500ms), 1500ms);
  EXPECT_EQ(unconfirmed_retry_in(cfg, 1, now, now + 1s, 1500ms), 500ms);
  EXPECT_EQ(unconfirmed_retry_in(cfg, 1, now, now + 15ms, 1500ms), std::nullopt);
  EXPECT_EQ(unconfirmed_retry_in(cfg, 1, now, now, 1500ms), std::nullopt);
  cfg.replica_sync_tries = 1;
  EXPECT_EQ(unconfirmed_retry_in(cfg, 1, now, forever, 1500ms), std::nullopt);
  EXPECT_EQ(after_tries("acquired on the master, but ...", 1), "acquired on the master, but ...");
  EXPECT_EQ(after_tries("x", 3), "x; tried 3 times (config::replica_sync_tries)");
}

}  // namespace
}  // namespace rlock::detail
