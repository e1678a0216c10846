// A failover under load: the whole family of locks and semaphores taken by threads of two
// clients (nemesis_load.hpp) while the master is killed and the Sentinel promotes its replica.
// With Redisson's replica rule (config::all_connected_replicas), an acquire returns only once
// the replica has it, so the promoted replica has every hold that was returned:
//   - exclusion and the fencing tokens' order hold through the failover (nemesis_load.hpp);
//   - every call returns within its bound while the master is dead and the clients look for
//     the new one: its wait plus the try in flight (a request timeout and its WAIT), a release
//     within its retries and unconfirmed sends;
//   - errors are those of a dead master, a lost link or a deadline, and of writes the replica
//     did not confirm;
//   - the load goes on on the promoted replica, and every hold ends there. The expirable
//     permits come back (their leases end). A plain semaphore's come back but for those a
//     failover may lose: a release that failed, one the client reported as not confirmed
//     (client_event_kind::write_not_confirmed), and the undo of an acquire that failed (not
//     waited for). A release whose WAIT the kill cut short is sent again with its latch to
//     the promoted replica, where it runs unless it had reached it. No permit is made from
//     nothing.
#include <gtest/gtest.h>

#include <string>

#include "nemesis_load.hpp"
#include "sentinel_group.hpp"
#include "support/event_recorder.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

TEST(sentinel_failover_load, every_kind_keeps_its_exclusion_and_bounds_through_a_failover) {
  sentinel_group g;
  ASSERT_TRUE(g.wait_until_replica_acknowledges());
  event_recorder rec;  // before the clients, which report to it
  config cfg = g.client_config();
  cfg.on_event = rec.handler();
  cfg.replica_sync = config::all_connected_replicas;
  cfg.replica_sync_timeout = 500ms;
  cfg.timeout = 1s;
  cfg.retry_delay_base = 100ms;
  cfg.retry_delay_max = 200ms;
  cfg.lock_watchdog_timeout = 3s;  // a hold whose release failed ends soon
  client a(cfg);
  client b(cfg);
  ASSERT_TRUE(a.get_semaphore("n-sem").try_set_permits(nemesis_permits));
  ASSERT_TRUE(a.get_permit_expirable_semaphore("n-pes").try_set_permits(nemesis_permits));

  std::vector<errc> expected = tally::link_and_deadline_faults();
  expected.push_back(errc::connection_refused);         // the dead master, until the promotion
  expected.push_back(errc::replication_not_confirmed);  // written as the master died
  tally t(expected);
  const auto sync_sends = cfg.replica_sync_tries * (cfg.replica_sync_timeout + cfg.retry_delay_max);
  const call_bounds bounds{.per_try = cfg.timeout + cfg.replica_sync_timeout,
                           .release = 2 * (retry_budget(cfg) + sync_sends)};
  {
    nemesis_load load(a, b, bounds, t, 6);
    ASSERT_TRUE(t.wait_for_acquired(200, 20s)) << t.error_summary();  // running on the master
    g.master->kill();
    // The Sentinel sees the master down after 1 s and promotes the replica. External state:
    // wait for the promotion.
    ASSERT_TRUE(
        wait_until([&] { return g.named_port() == std::to_string(g.replica->port()); }, 60s, 50ms))
        << g.sentinel->log_tail();
    const int at_promotion = t.acquired_count();
    // The load goes on on the promoted replica.
    EXPECT_TRUE(t.wait_for_acquired(at_promotion + 200, 30s)) << t.error_summary();
    load.stop();
    RecordProperty("acquired_after_promotion", t.acquired_count() - at_promotion);
  }
  expect_clean(t);

  // Nothing held any more on the new master: a release whose outcome stayed unknown ends with
  // its 3 s lease.
  for (const std::string& key : nemesis_keys()) {
    EXPECT_TRUE(wait_until(
        [&] {
          return g.replica->cli({"EXISTS", key}) == "0";
        },
        10s, 20ms))
        << key << " is still held";
  }
  auto pes = a.get_permit_expirable_semaphore("n-pes");
  EXPECT_TRUE(wait_until([&] { return pes.available_permits() == nemesis_permits; }, 10s, 20ms))
      << pes.available_permits();
  const auto unconfirmed = static_cast<int>(rec.count([](const client_event& e) {
    return e.kind == client_event_kind::write_not_confirmed && e.object == "n-sem";
  }));
  const int may_be_lost =
      t.failed_releases() + unconfirmed + t.failures_that_may_have_run("semaphore acquire");
  auto sem = a.get_semaphore("n-sem");
  EXPECT_TRUE(wait_until([&] { return sem.available_permits() >= nemesis_permits - may_be_lost; },
                         10s, 20ms))
      << sem.available_permits() << " of " << nemesis_permits << "; releases failed "
      << t.failed_releases() << ", not confirmed " << unconfirmed << "; acquires failed "
      << t.failures_that_may_have_run("semaphore acquire");
  const std::int64_t left = sem.available_permits();
  EXPECT_LE(left, nemesis_permits);
  RecordProperty("semaphore_permits_left", std::to_string(left));
  RecordProperty("semaphore_permits_may_be_lost", std::to_string(may_be_lost));
}

}  // namespace
}  // namespace rlock::test
