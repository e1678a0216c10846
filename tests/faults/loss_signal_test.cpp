// The holder's view of its lock in two situations the fault scenarios run into now and then,
// reduced to deterministic tests (public API only):
//  - the holder is starved (SIGSTOP, CPU) past its lease and unlocks before the client's I/O
//    thread notices the passed deadline (stop_holder_long);
//  - an unlock fails because the server is down, and the lock survives the restart
//    (server_restart_aof).
//
// lock.hpp promises: without a lease "the client's watchdog renews it every third of that while
// it is held"; loss_token() "is stopped ... when renewal could not reach Redis before
// valid_until()", and is "Stopped when the calling thread's hold is lost"; valid_until() is
// "send time of the last successful acquire or renewal plus the lease (time_point::min() if not
// held or lost)".
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <rlock/client.hpp>
#include <thread>

#include "support/fast_config.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

TEST(fault_loss_signal, token_is_stopped_when_the_lease_ran_out_before_the_unlock) {
  test::redis_server server;
  client c(test::fast_config(server.url()));  // one I/O thread (the default)
  rlock::lock l = c.get_lock("starved");
  l.lock(300ms);  // fixed lease: not renewed, its loss is reported when it runs out
  const std::stop_token lost = l.loss_token();
  ASSERT_FALSE(lost.stop_requested());
  const auto deadline = l.valid_until();

  // The client's only I/O thread is kept busy past the lease by slow user code in a completion
  // handler (what a SIGSTOP, or CPU starvation as in Redisson #2665, does to it).
  // (2 s: the unlock below must come while it is still busy, after the server's copy of the
  // lease has run out.)
  std::promise<void> busy;
  std::atomic<bool> io_free{false};
  c.async_execute({"PING"}, [&busy, &io_free](std::error_code, reply) {
    busy.set_value();
    std::this_thread::sleep_for(2000ms);
    io_free = true;
  });
  busy.get_future().wait();
  std::this_thread::sleep_until(deadline + 100ms);
  ASSERT_GE(steady::now(), l.valid_until()) << "the holder can see that its lease ran out";
  // And the server's copy has run out too. Its lease started when the server ran the acquire,
  // after the send that valid_until() counts from: once under TSan with 4 tests at once, the
  // key was still there 100 ms past valid_until(), and the unlock found it and released it.
  ASSERT_TRUE(test::wait_until([&] { return server.cli({"EXISTS", "starved"}) == "0"; }, 10s));
  ASSERT_FALSE(io_free) << "the I/O thread was free before the unlock: nothing to test";

  // The holder, which runs first, unlocks: the key expired, so the unlock reports not_owner.
  try {
    l.unlock_or_throw();
    ADD_FAILURE() << "unlock after the lease ran out must report not_owner";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::not_owner) << e.what();
  }
  // The deadline passed while the hold was held, and the hold was lost: its token must be
  // stopped, as it is when the I/O thread gets to the deadline first. (Found: unlock() drops the
  // hold from the watchdog before the deadline timer runs, and nothing stops the token.)
  EXPECT_TRUE(lost.stop_requested())
      << "loss_token() of a hold lost at its deadline never fired (unlock came first)";
}

TEST(fault_loss_signal, a_hold_whose_unlock_failed_is_still_renewed_or_reported_lost) {
  test::server_options so;
  so.persistence = true;  // the lock survives the restart, as every acknowledged write does
  test::redis_server server(so);
  config cfg = test::fast_config(server.url());
  cfg.lock_watchdog_timeout = 600ms;  // renewed every 200 ms
  client c(cfg);
  rlock::lock l = c.get_lock("unlock-failed");
  l.lock();
  const std::stop_token lost = l.loss_token();

  server.kill();
  EXPECT_THROW(l.unlock_or_throw(), error)
      << "the server is down: the unlock cannot have been applied";
  server.restart();
  ASSERT_EQ(server.cli({"EXISTS", "unlock-failed"}), "1") << "still held, as far as Redis knows";
  EXPECT_EQ(l.hold_count(), 1) << "still held, as far as the client knows";

  // Still held: either it is still renewed (a lease deadline ahead) or the holder is told it is
  // lost. (Found: the watchdog entry was dropped before the unlock was sent and is not restored
  // when the unlock fails: valid_until() is min() and the token stays live.)
  EXPECT_TRUE(l.valid_until() > steady::now() || lost.stop_requested())
      << "a hold that is still held is neither renewed nor reported lost";

  // The same thread locks again (a re-entry: count 2), with the watchdog lease, and holds it for
  // several leases. It must be renewed meanwhile, or reported lost.
  l.lock();
  const std::stop_token lost_again = l.loss_token();
  EXPECT_TRUE(l.valid_until() > steady::now()) << "a hold just acquired has a lease deadline";
  std::this_thread::sleep_for(3 * 600ms);  // observing renewals: three leases
  const bool still_held = server.cli({"EXISTS", "unlock-failed"}) == "1";
  EXPECT_TRUE(still_held || lost_again.stop_requested())
      << "the lock expired while held with the watchdog lease, and nobody was told";
  // What that means for exclusion: another client takes the lock this thread holds.
  client other(test::fast_config(server.url()));
  rlock::lock theirs = other.get_lock("unlock-failed");
  const bool taken = theirs.try_lock();
  EXPECT_TRUE(!taken || lost_again.stop_requested())
      << "another client acquired the lock while its holder was neither renewing nor told";
  if (taken) theirs.unlock_or_throw();
}

}  // namespace
}  // namespace rlock::faults
