// A server busy running another client's slow script: it answers every other command with BUSY
// and runs nothing (a server LOADING its data after a restart answers the same way). Every call
// ends by its own deadline; a call with time left retries before its deadline instead of giving
// up at once; a client that connects during the spell says the server is busy, in the server's
// words; a lock held through a spell shorter than its lease is kept, and nothing is left behind.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

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

// One object of each kind that waits on a channel, on `c`: a semaphore with no permits and a
// latch at 1 (waits on them wait), a read-write lock and a permit-expirable semaphore. Once
// the set calls' request keys are deleted (answered: within 200 ms), the server holds 2 keys,
// the semaphore's and the latch's. (Counted before that, a DEL landing during a test would
// change the count.)
struct waiting_objects {
  waiting_objects(const client& c, const redis_server& server)
      : sem(c.get_semaphore("busy-sem")),
        latch(c.get_countdown_latch("busy-latch")),
        rw(c.get_read_write_lock("busy-rw")),
        pes(c.get_permit_expirable_semaphore("busy-pes")) {
    EXPECT_TRUE(sem.try_set_permits(0));
    EXPECT_TRUE(latch.try_set_count(1));
    EXPECT_TRUE(wait_until([&] { return server.cli({"DBSIZE"}) == "2"; }, 5s))
        << server.cli({"KEYS", "*"});
  }

  semaphore sem;
  countdown_latch latch;
  read_write_lock rw;
  permit_expirable_semaphore pes;
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
  waiting_objects w(c, server);

  busy_spell spell(server, 8s);
  const auto wait = 1000ms;
  const auto check = [&](const char* what, const outcome& o) {
    expect_busy_until_deadline(what, o, wait, "BUSY");
  };
  check("semaphore", run_bounded([&] { return w.sem.try_acquire_for(wait); }));
  check("write lock", run_bounded([&] { return w.rw.try_lock_for(wait); }));
  check("permit-expirable semaphore",
        run_bounded([&] { return w.pes.try_acquire_for(wait).has_value(); }));
  check("latch", run_bounded([&] { return w.latch.await_for(wait); }));
  spell.wait_end();
  EXPECT_EQ(server.cli({"DBSIZE"}), "2") << "nothing ran:\n" << server.cli({"KEYS", "*"});
}

// Scripts the server has run (EVAL and EVALSHA calls; commands it refused with BUSY are
// counted apart, as rejected_calls).
long long script_runs(const redis_server& server) {
  const std::string stats = server.cli({"INFO", "commandstats"});
  long long runs = 0;
  for (const char* command : {"cmdstat_eval:calls=", "cmdstat_evalsha:calls="}) {
    const auto at = stats.find(command);
    if (at != std::string::npos) runs += std::stoll(stats.substr(at + std::strlen(command)));
  }
  return runs;
}

// A BUSY reply proves that the command did not run, so a wait that ends on one has nothing to
// undo, and a lock's waiter is in no queue. An undo or leave sent anyway is retried until the
// spell is over and then runs: a release that finds nothing taken still leaves its request key.
// Here the spell outlasts the waits by twice the slack, and an undo would be retried for a
// whole request timeout (3 s) after them.
TEST(hostile_busy, a_wait_refused_by_a_busy_server_sends_no_undo_that_runs_after_the_spell) {
  redis_server server;
  config cfg = config_for(server);
  // Every request is retried every 50-100 ms until its deadline, into the time after the
  // spell. (Each try of these kinds has a whole request timeout for its reply.)
  cfg.retry_attempts = 1000;
  client c(cfg);
  // A lock's tries end by its deadline, so they must be few for none to be in flight then (its
  // outcome unknown, and so undone): the last of these is sent 60 ms before the deadline,
  // and an undo's retry comes 1-2 s after the first try, after the spell.
  client slow(redisson_delays(server));
  waiting_objects w(c, server);
  auto l = slow.get_lock("busy-lock");
  const long long runs = script_runs(server);

  const auto wait = 1000ms;
  busy_spell spell(server, wait + 2 * slack);
  // All at once, each on its own thread: every wait ends well inside the spell.
  std::vector<std::pair<const char*, std::future<outcome>>> waits;
  const auto start = [&](const char* what, auto f) {
    waits.emplace_back(what, std::async(std::launch::async, [f] { return run_bounded(f); }));
  };
  start("semaphore", [&] { return w.sem.try_acquire_for(wait); });
  start("write lock", [&] { return w.rw.try_lock_for(wait); });
  start("permit-expirable semaphore", [&] { return w.pes.try_acquire_for(wait).has_value(); });
  start("latch", [&] { return w.latch.await_for(wait); });
  start("lock", [&] { return l.try_lock(wait); });
  for (auto& [what, f] : waits) {
    const outcome o = f.get();
    EXPECT_FALSE(o.value) << what;
    EXPECT_EQ(o.ec, errc::server_busy) << what << ": " << o.what;
    EXPECT_LT(o.took, (wait + slack).count()) << what;
  }
  spell.wait_end();
  // An undo sent at a wait's end is in flight until it has run, after the spell.
  EXPECT_TRUE(wait_until(
      [&] { return c.stats().requests_in_flight + slow.stats().requests_in_flight == 0; }, 10s));
  EXPECT_EQ(script_runs(server), runs + 1) << "only the spell's script ran";
  EXPECT_EQ(server.cli({"DBSIZE"}), "2") << "nothing left behind:\n" << server.cli({"KEYS", "*"});
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
