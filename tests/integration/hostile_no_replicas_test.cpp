// A master with min-replicas-to-write and too few replicas connected: it refuses every write
// with NOREPLICAS, inside scripts too, until the replicas come back. Nothing ran, and the spell
// may pass, so each call retries until its own deadline (as Redisson does) and then says the
// server is busy, in the server's words; a call with time left gets through once writes are
// accepted again; a held lock is kept through a spell shorter than its lease, and its unlock,
// refused at first, releases it once the replicas are back.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <stop_token>
#include <string>

#include "common.hpp"
#include "hostile_common.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

// Writes are refused while fewer than one replica is connected, and this server has none.
void refuse_writes(const redis_server& server) {
  ASSERT_EQ(server.cli({"CONFIG", "SET", "min-replicas-to-write", "1"}), "OK");
  ASSERT_NE(server.cli({"SET", "probe", "x"}).find("NOREPLICAS"), std::string::npos)
      << "the server must refuse writes now";
}

void accept_writes(const redis_server& server) {
  ASSERT_EQ(server.cli({"CONFIG", "SET", "min-replicas-to-write", "0"}), "OK");
}

// How many NOREPLICAS error replies the server has sent (INFO errorstats), 0 before the first.
long long refusals(const redis_server& server) {
  const std::string info = server.cli({"INFO", "errorstats"});
  const std::string field = "errorstat_NOREPLICAS:count=";
  const auto at = info.find(field);
  return at == std::string::npos ? 0 : std::stoll(info.substr(at + field.size()));
}

TEST(hostile_no_replicas, every_kind_reports_server_busy_by_its_deadline_and_writes_nothing) {
  redis_server server;
  client c(redisson_delays(server));
  auto sem = c.get_semaphore("nr-sem");
  ASSERT_TRUE(sem.try_set_permits(1));
  auto latch = c.get_countdown_latch("nr-latch");
  ASSERT_TRUE(latch.try_set_count(1));
  const std::string before = server.cli({"DBSIZE"});
  refuse_writes(server);

  const auto wait = 1000ms;
  // Retried (halfway to the deadline) rather than given up at once, and no longer than that.
  auto check = [&](const char* what, const outcome& o) {
    expect_busy_until_deadline(what, o, wait, "NOREPLICAS");
  };
  auto l = c.get_lock("nr-lock");
  check("lock", run_bounded([&] { return l.try_lock(wait); }));
  auto fair = c.get_fair_lock("nr-fair");
  check("fair lock", run_bounded([&] { return fair.try_lock(wait); }));
  auto rw = c.get_read_write_lock("nr-rw");
  check("write lock", run_bounded([&] { return rw.try_lock_for(wait); }));
  check("semaphore", run_bounded([&] { return sem.try_acquire_for(wait); }));
  EXPECT_EQ(l.hold_count(), 0);
  // A call with no wait of its own retries within its request budget.
  const outcome down = run_bounded([&] { return latch.count_down() == 0; });
  EXPECT_EQ(down.ec, errc::server_busy) << down.what;
  EXPECT_NE(down.what.find("NOREPLICAS"), std::string::npos) << down.what;
  EXPECT_LT(down.took, retry_budget(redisson_delays(server)).count());

  accept_writes(server);
  EXPECT_EQ(server.cli({"DBSIZE"}), before) << "a refused script wrote something";
  EXPECT_EQ(server.cli({"GET", "nr-sem"}), "1");
  ASSERT_TRUE(l.try_lock());
  l.unlock_or_throw();
  ASSERT_TRUE(sem.try_acquire());
  sem.release();
  EXPECT_EQ(latch.count(), 1);
  EXPECT_EQ(latch.count_down(), 0);
}

TEST(hostile_no_replicas, an_acquire_with_time_left_gets_the_lock_once_writes_are_accepted) {
  redis_server server;
  client c(redisson_delays(server));
  c.execute({"PING"});
  refuse_writes(server);
  const long long seen = refusals(server);

  auto acquired = std::async(std::launch::async, [&] {
    auto l = c.get_lock("nr-late");
    outcome o = run_bounded([&] { return l.try_lock(20s); });
    if (o.value) l.unlock_or_throw();
    return o;
  });
  // The acquire has met the refusal at least once before writes are accepted again.
  ASSERT_TRUE(wait_until([&] { return refusals(server) > seen; }, 10s));
  accept_writes(server);
  const outcome o = acquired.get();
  EXPECT_TRUE(o.value) << o.what;
  // Its next attempt came after one retry delay (1-2 s), long before its deadline.
  EXPECT_LT(o.took, (config{}.retry_delay_max * 2 + slack).count());
  EXPECT_EQ(server.cli({"EXISTS", "nr-late"}), "0");
}

TEST(hostile_no_replicas, a_lock_held_through_a_spell_shorter_than_its_lease_is_kept) {
  redis_server server;
  config cfg = redisson_delays(server);
  cfg.lock_watchdog_timeout = 3s;  // renewed every second
  client c(cfg);
  auto l = c.get_lock("nr-held");
  l.lock();
  const std::stop_token lost = l.loss_token();
  refuse_writes(server);
  // A renewal meets the refusal; it is retried, and lands once writes are accepted, well inside
  // the 3 s lease.
  const long long seen = refusals(server);
  ASSERT_TRUE(wait_until([&] { return refusals(server) > seen; }, 5s))
      << "no renewal met the refusal";
  accept_writes(server);
  EXPECT_TRUE(wait_until([&] { return l.remain_time_to_live() > 2500ms; }, 3s))
      << "not renewed after the spell";
  EXPECT_FALSE(lost.stop_requested()) << "a spell shorter than the lease lost the lock";
  l.unlock_or_throw();
  EXPECT_EQ(server.cli({"EXISTS", "nr-held"}), "0");
}

TEST(hostile_no_replicas, a_refused_unlock_is_retried_and_releases_once_writes_are_back) {
  redis_server server;
  client c(redisson_delays(server));
  auto l = c.get_lock("nr-unlock");
  l.lock(30s);  // a lease: no renewals, so the only write refused is the unlock's
  refuse_writes(server);
  const long long seen = refusals(server);
  // Writes come back once the unlock has met the refusal (from another thread: the unlock must
  // run on the owner's thread).
  auto reopen = std::async(std::launch::async, [&] {
    const bool refused = wait_until([&] { return refusals(server) > seen; }, 10s);
    accept_writes(server);
    return refused;
  });
  const outcome o = run_bounded([&] {
    l.unlock_or_throw();
    return true;
  });
  EXPECT_TRUE(reopen.get()) << "the unlock never met the refusal";
  EXPECT_TRUE(o.value) << o.what;
  EXPECT_EQ(server.cli({"EXISTS", "nr-unlock"}), "0");
  EXPECT_FALSE(l.is_held_by_current_thread());
}

}  // namespace
}  // namespace rlock::test
