// A server busy running another client's slow script: it answers every other command with BUSY
// and runs nothing (a server LOADING its data after a restart answers the same way). Every call
// ends by its own deadline; a call with time left retries before its deadline instead of giving
// up at once; a client that connects during the spell says the server is busy, in the server's
// words; a lock held through a spell shorter than its lease is kept, and nothing is left behind.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <stop_token>
#include <string>

#include "common.hpp"
#include "hostile_common.hpp"
#include "support/raw_client.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

// Busy-waits on the server's own clock for ARGV[1] milliseconds; only reads (TIME), so SCRIPT
// KILL can end it.
constexpr const char* busy_script =
    "local t = redis.call('TIME') "
    "local start = t[1] * 1000000 + t[2] "
    "local limit = tonumber(ARGV[1]) * 1000 "
    "while true do "
    "  local n = redis.call('TIME') "
    "  if n[1] * 1000000 + n[2] - start >= limit then return 1 end "
    "end";

// One busy spell: a script that keeps the server busy for `length` of server time, on its own
// connection. The constructor returns once the server answers others with BUSY.
class busy_spell {
 public:
  busy_spell(const redis_server& server, std::chrono::milliseconds length)
      : runner_(server.host(), server.port(), length + 10s), server_(server) {
    // Other clients get BUSY once a script has run this long (Redis' default is 5 s).
    EXPECT_EQ(server.cli({"CONFIG", "SET", "lua-time-limit", "20"}), "OK");
    runner_.send({"EVAL", busy_script, "0", std::to_string(length.count())});
    EXPECT_EQ(runner_.read(0ms), std::nullopt);  // flushes the EVAL; the reply comes at the end
    raw_client probe(server.host(), server.port(), 5s);
    const bool busy = wait_until(
        [&] { return probe.command({"PING"}).text().find("BUSY") != std::string::npos; }, 5s);
    EXPECT_TRUE(busy) << "the server never answered BUSY";
  }
  busy_spell(const busy_spell&) = delete;
  busy_spell& operator=(const busy_spell&) = delete;

  /// Waits for the script's reply: the spell is over.
  void wait_end() {
    if (ended_) return;
    ended_ = true;
    const auto r = runner_.read(runner_.timeout());
    ASSERT_TRUE(r.has_value()) << "the busy script did not end";
    EXPECT_EQ(r->text(), "1");
  }

  ~busy_spell() {
    if (ended_) return;
    ended_ = true;
    server_.cli({"SCRIPT", "KILL"});
  }

 private:
  raw_client runner_;
  const redis_server& server_;
  bool ended_ = false;
};

// Tests with redisson_delays: its 1-2 s between attempts are longer than their waits, so only
// the deadline rule can fit a retry into them.

TEST(hostile_busy, an_acquire_with_time_left_retries_before_its_deadline_and_gets_the_lock) {
  redis_server server;
  client c(redisson_delays(server));
  auto l = c.get_lock("busy");
  c.execute({"PING"});

  busy_spell spell(server, 300ms);
  // The first attempt meets BUSY. The policy's next delay (1-2 s) would pass the deadline, so
  // the retry comes halfway to it (500 ms), after the spell.
  const auto wait = 1000ms;
  const outcome o = run_bounded([&] { return l.try_lock(wait); });
  EXPECT_TRUE(o.value) << o.what;
  EXPECT_FALSE(o.ec) << o.what;
  EXPECT_LT(o.took, (wait + slack).count());
  spell.wait_end();
  if (o.value) l.unlock_or_throw();
  EXPECT_EQ(server.cli({"EXISTS", "busy"}), "0");
}

TEST(hostile_busy, a_wait_that_ends_while_the_server_is_busy_reports_server_busy_by_its_deadline) {
  redis_server server;
  client c(redisson_delays(server));
  auto l = c.get_lock("busy");
  c.execute({"PING"});

  busy_spell spell(server, 3s);
  const auto wait = 1000ms;
  expect_busy_until_deadline("lock", run_bounded([&] { return l.try_lock(wait); }), wait,
                             "BUSY Redis is busy running a script");
  spell.wait_end();
  EXPECT_EQ(server.cli({"DBSIZE"}), "0") << "nothing ran";
  ASSERT_TRUE(l.try_lock());
  l.unlock_or_throw();
}

// The waits of the other kinds give each try a whole request timeout (3 s) for its reply, so
// that its outcome is known; their retries used to run on to that too: a 1 s wait on a busy
// server took 2.7-2.9 s. No try starts after the wait's own deadline now.
TEST(hostile_busy, every_kind_of_wait_ends_by_its_deadline_while_the_server_is_busy) {
  redis_server server;
  client c(redisson_delays(server));
  auto sem = c.get_semaphore("busy-sem");
  ASSERT_TRUE(sem.try_set_permits(0));
  auto latch = c.get_countdown_latch("busy-latch");
  ASSERT_TRUE(latch.try_set_count(1));
  auto rw = c.get_read_write_lock("busy-rw");
  auto pes = c.get_permit_expirable_semaphore("busy-pes");
  const std::string keys = server.cli({"DBSIZE"});
  const std::string names = server.cli({"KEYS", "*"});

  busy_spell spell(server, 8s);
  const auto wait = 1000ms;
  const auto check = [&](const char* what, const outcome& o) {
    expect_busy_until_deadline(what, o, wait, "BUSY");
  };
  check("semaphore", run_bounded([&] { return sem.try_acquire_for(wait); }));
  check("write lock", run_bounded([&] { return rw.try_lock_for(wait); }));
  check("permit-expirable semaphore",
        run_bounded([&] { return pes.try_acquire_for(wait).has_value(); }));
  check("latch", run_bounded([&] { return latch.await_for(wait); }));
  spell.wait_end();
  EXPECT_EQ(server.cli({"DBSIZE"}), keys) << "nothing ran; keys before:\n"
                                          << names << "\nafter:\n"
                                          << server.cli({"KEYS", "*"});
}

TEST(hostile_busy, a_client_that_connects_during_a_spell_says_the_server_is_busy) {
  redis_server server;
  busy_spell spell(server, 3s);
  config cfg = config_for(server);
  client c(cfg);
  // Every attempt meets the spell: the connection's setup is answered with BUSY, and attempts
  // made while it waits to reconnect report that reason too, not "not connected".
  const outcome o = run_bounded([&] { return c.execute({"PING"}).str() == "PONG"; });
  EXPECT_EQ(o.ec, errc::server_busy) << o.what;
  EXPECT_NE(o.what.find("BUSY"), std::string::npos) << o.what;
  EXPECT_LT(o.took, retry_budget(cfg).count());

  spell.wait_end();
  // The connection comes back by itself (reconnect delays of at most 100 ms here).
  EXPECT_TRUE(wait_until(
      [&] {
        try {
          return c.execute({"PING"}).str() == "PONG";
        } catch (const error&) {
          return false;
        }
      },
      5s));
}

TEST(hostile_busy, a_lock_held_through_a_spell_shorter_than_its_lease_is_kept) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_watchdog_timeout = 3s;  // renewed every second
  client c(cfg);
  auto l = c.get_lock("busy");
  l.lock();
  const std::stop_token lost = l.loss_token();

  {
    // The renewal due during the spell meets BUSY; it is retried and lands after the spell,
    // well inside the 3 s lease.
    busy_spell spell(server, 1500ms);
    spell.wait_end();
  }
  EXPECT_FALSE(lost.stop_requested()) << "a busy spell shorter than the lease lost the lock";
  EXPECT_TRUE(l.is_held_by_current_thread());
  // Renewed after the spell: the lease goes on past the first one's end.
  EXPECT_TRUE(wait_until([&] { return l.remain_time_to_live() > 2500ms; }, 3s));
  l.unlock_or_throw();
  EXPECT_FALSE(lost.stop_requested());
  EXPECT_EQ(server.cli({"EXISTS", "busy"}), "0");
}

}  // namespace
}  // namespace rlock::test
