// Every kind of lock and semaphore, taken by many threads of two clients while a nemesis
// kills their connections, pauses the server, blocks it and flushes its script cache: what
// each guarantees must hold through all of it.
//   - Exclusion: a lock, fair lock, spin lock, fenced lock, MultiLock and write lock have one
//     holder at a time; readers never meet a writer; a semaphore and a permit-expirable
//     semaphore of 2 never have 3. Each holder of the fenced lock has a greater token than the
//     holder before.
//   - Bounds: a waiting acquire returns by its wait plus one request timeout (the try in flight
//     at its deadline); a release within its retries (twice that after an acquire that gave
//     up, whose undo goes first).
//   - Errors name a fault of the link or the deadline, never the nemesis's side effects
//     (NOSCRIPT after SCRIPT FLUSH is recovered, not reported).
//   - Nothing is left: every hold ends (a release whose outcome stayed unknown with its lease),
//     and the semaphores come back to their permits (a permit-expirable semaphore's with its
//     leases; a plain semaphore's less at most the releases that failed).
// The nemesis's picks come from a fixed seed; the interleaving does not, so each run is a
// different schedule. It is bounded: the nemesis stops after 16 faults, then the workers.
//
// A longer soak by hand: RLOCK_NEMESIS_ROUNDS (each kind of fault that many times; 30 take
// about 2.5 min) and RLOCK_NEMESIS_THREADS scale it up, e.g.
//   RLOCK_NEMESIS_ROUNDS=30 RLOCK_NEMESIS_THREADS=24 build/tests/integration/rlock_hostile_tests
//   --gtest_filter='hostile_nemesis.*'
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hostile_common.hpp"
#include "support/raw_client.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

using std::chrono::milliseconds;

// One guarded resource: how many are inside, how many may be.
struct occupancy {
  explicit occupancy(int limit) : limit_(limit) {}
  // Enters; false when that made one too many.
  bool enter() { return inside_.fetch_add(1) + 1 <= limit_; }
  void leave() { inside_.fetch_sub(1); }

 private:
  std::atomic<int> inside_{0};
  int limit_;
};

// Findings of one kind: how many, and the text of the first few.
struct findings {
  int count = 0;
  std::vector<std::string> first;

  void add(std::string what) {
    if (++count <= 10) first.push_back(std::move(what));
  }
  // For a failed expectation: the count and the texts kept.
  std::string text() const {
    std::string out = std::to_string(count) + ":";
    for (const std::string& f : first) out += "\n  " + f;
    return out;
  }
};

// What the workers saw, shared between them.
class tally {
 public:
  void violation(std::string what) { add(violations_, std::move(what)); }
  void late(const std::string& what, long long took_ms, long long bound_ms) {
    add(late_, what + " took " + std::to_string(took_ms) + " ms, bound " +
                   std::to_string(bound_ms) + " ms");
  }
  void failed(const std::string& op, const std::error_code& ec) {
    std::lock_guard lk(mu_);
    ++errors_[op + ": " + ec.message()];
    if (!expected(ec)) unexpected_.add(op + ": " + ec.message());
  }
  void release_failed() { failed_releases_.fetch_add(1); }
  void acquired() { acquired_.fetch_add(1); }

  findings violations() const { return copy(violations_); }
  findings late_calls() const { return copy(late_); }
  findings unexpected_errors() const { return copy(unexpected_); }
  int failed_releases() const { return failed_releases_.load(); }
  int acquired_count() const { return acquired_.load(); }
  std::string error_summary() const {
    std::lock_guard lk(mu_);
    std::string out;
    for (const auto& [what, n] : errors_) out += std::to_string(n) + "x " + what + "; ";
    return out;
  }

 private:
  // Faults of the link or the deadline, which a nemesis may cause.
  static bool expected(const std::error_code& ec) {
    return ec == errc::timeout || ec == errc::connection_lost || ec == errc::not_connected ||
           ec == errc::subscription_timeout || ec == errc::server_busy;
  }
  void add(findings& to, std::string what) {
    std::lock_guard lk(mu_);
    to.add(std::move(what));
  }
  findings copy(const findings& f) const {
    std::lock_guard lk(mu_);
    return f;
  }

  mutable std::mutex mu_;
  findings violations_;
  findings late_;
  findings unexpected_;
  std::map<std::string, int> errors_;
  std::atomic<int> failed_releases_{0};
  std::atomic<int> acquired_{0};
};

struct guarded {
  occupancy lock{1};
  occupancy fair{1};
  occupancy spin{1};
  occupancy sem{2};
  occupancy pes{2};
  occupancy fenced{1};
  occupancy multi{1};
  std::atomic<int> readers{0};
  std::atomic<int> writers{0};
  // The fenced lock's last token (atomic so that a second holder, a failure, is no data race).
  std::atomic<fencing_token> last_token{0};
};

constexpr int permits = 2;

// A positive whole number from the environment, or `fallback` when it is unset or not one.
int from_env(const char* name, int fallback) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before any thread
  if (v == nullptr) return fallback;
  const int n = std::atoi(v);
  return n > 0 ? n : fallback;
}
constexpr milliseconds permit_lease{3000};

class nemesis_worker {
 public:
  nemesis_worker(client& c, const config& cfg, guarded& g, tally& t, unsigned seed)
      : lock_(c.get_lock("n-lock")),
        fair_(c.get_fair_lock("n-fair")),
        spin_(c.get_spin_lock("n-spin")),
        rw_(c.get_read_write_lock("n-rw")),
        sem_(c.get_semaphore("n-sem")),
        pes_(c.get_permit_expirable_semaphore("n-pes")),
        fenced_(c.get_fenced_lock("n-fenced")),
        multi_({c.get_lock("n-m1"), c.get_lock("n-m2")}),
        timeout_(cfg.timeout),
        release_bound_(2 * retry_budget(cfg)),
        g_(g),
        t_(t),
        rng_(seed) {}

  // One random operation: a bounded wait for one kind, a short hold, its release.
  void step() {
    const milliseconds wait{rng_() % 400};
    const auto hold = std::chrono::microseconds(rng_() % 3000);
    switch (rng_() % 9) {
      case 0:
        return exclusive(lock_, g_.lock, "lock", wait, hold);
      case 1:
        return exclusive(fair_, g_.fair, "fair lock", wait, hold);
      case 2:
        return exclusive(spin_, g_.spin, "spin lock", wait, hold);
      case 3:
        return read_write(rng_() % 3 == 0, wait, hold);
      case 4:
      case 5:
        return take_permit(wait, hold);
      case 6:
        return take_expirable_permit(wait, hold);
      case 7:
        return fenced(wait, hold);
      default:
        return exclusive(multi_, g_.multi, "multi-lock", wait, hold);
    }
  }

 private:
  // Runs an acquire, checks its bound (its wait, one request timeout for the try in flight at
  // its end, and `steps` more for steps after a hold is taken) and records its error; the
  // acquire's result, false when it threw.
  template <class F>
  bool timed_acquire(const char* what, milliseconds wait, F f, int steps = 0) {
    const auto t0 = steady::now();
    bool taken = false;
    try {
      taken = f();
    } catch (const error& e) {
      t_.failed(std::string(what) + " acquire", e.code());
    }
    check_bound(what, t0, wait + (1 + steps) * timeout_ + slack);
    if (taken) t_.acquired();
    return taken;
  }
  void check_bound(const std::string& what, steady::time_point t0, milliseconds bound) {
    const long long took = ms_since(t0);
    if (took > bound.count()) t_.late(what, took, bound.count());
  }

  template <class Lock>
  void exclusive(Lock& l, occupancy& o, const char* what, milliseconds wait,
                 std::chrono::microseconds hold) {
    if (!timed_acquire(what, wait, [&] { return l.try_lock_for(wait); })) return;
    if (!o.enter()) t_.violation(std::string("two holders of the ") + what);
    std::this_thread::sleep_for(hold);
    o.leave();
    unlock(l, what);
  }
  template <class Lock>
  void unlock(Lock& l, const char* what) {
    const auto t0 = steady::now();
    std::error_code ec;
    l.unlock(ec);
    if (ec) t_.failed(std::string(what) + " unlock", ec);
    check_bound(std::string(what) + " unlock", t0, release_bound_);
  }

  // A fenced lock: each holder's token is greater than every earlier holder's. Its token step
  // comes after the hold is taken (one more request timeout, fenced_lock.hpp).
  void fenced(milliseconds wait, std::chrono::microseconds hold) {
    fencing_token token = 0;  // tokens are positive: 0 is none
    timed_acquire(
        "fenced lock", wait,
        [&] {
          token = fenced_.try_lock_and_get_token(wait).value_or(0);
          return token != 0;
        },
        1);
    if (token == 0) return;
    if (!g_.fenced.enter()) t_.violation("two holders of the fenced lock");
    const fencing_token before = g_.last_token.exchange(token);
    if (token <= before) {
      t_.violation("fencing token " + std::to_string(token) + " after " + std::to_string(before));
    }
    std::this_thread::sleep_for(hold);
    g_.fenced.leave();
    unlock(fenced_, "fenced lock");
  }

  void read_write(bool write, milliseconds wait, std::chrono::microseconds hold) {
    const char* what = write ? "write lock" : "read lock";
    const bool taken = timed_acquire(
        what, wait, [&] { return write ? rw_.try_lock_for(wait) : rw_.try_lock_shared_for(wait); });
    if (!taken) return;
    if (write) {
      if (g_.writers.fetch_add(1) != 0 || g_.readers.load() != 0) t_.violation("writer not alone");
    } else {
      g_.readers.fetch_add(1);
      if (g_.writers.load() != 0) t_.violation("reader with a writer");
    }
    std::this_thread::sleep_for(hold);
    (write ? g_.writers : g_.readers).fetch_sub(1);
    const auto t0 = steady::now();
    std::error_code ec;
    rw_.release(write ? rw_mode::write : rw_mode::read, ec);
    if (ec) t_.failed(std::string(what) + " unlock", ec);
    check_bound(std::string(what) + " unlock", t0, release_bound_);
  }

  void take_permit(milliseconds wait, std::chrono::microseconds hold) {
    if (!timed_acquire("semaphore", wait, [&] { return sem_.try_acquire_for(wait); })) return;
    if (!g_.sem.enter()) t_.violation("a third permit of the semaphore");
    std::this_thread::sleep_for(hold);
    g_.sem.leave();
    const auto t0 = steady::now();
    try {
      sem_.release();
    } catch (const error& e) {
      t_.failed("semaphore release", e.code());
      t_.release_failed();
    }
    check_bound("semaphore release", t0, release_bound_);
  }

  void take_expirable_permit(milliseconds wait, std::chrono::microseconds hold) {
    std::optional<permit_expirable_semaphore::permit_id> id;
    timed_acquire("expirable permit", wait, [&] {
      id = pes_.try_acquire_for(wait, permit_lease);
      return id.has_value();
    });
    if (!id) return;
    if (!g_.pes.enter()) t_.violation("a third expirable permit");
    std::this_thread::sleep_for(hold);
    g_.pes.leave();
    const auto t0 = steady::now();
    try {
      // false: its lease ended first (a hold of 3 ms under a 3 s lease: not expected, but safe).
      if (!pes_.try_release(*id)) t_.failed("expirable release", make_error_code(errc::not_owner));
    } catch (const error& e) {
      t_.failed("expirable release", e.code());
    }
    check_bound("expirable release", t0, release_bound_);
  }

  reentrant_lock lock_;
  reentrant_lock fair_;
  reentrant_lock spin_;
  read_write_lock rw_;
  semaphore sem_;
  permit_expirable_semaphore pes_;
  fenced_lock fenced_;
  multi_lock multi_;
  milliseconds timeout_;
  milliseconds release_bound_;
  guarded& g_;
  tally& t_;
  std::mt19937 rng_;
};

enum class fault {
  kill_normal,
  kill_pubsub,
  script_flush,
  pause_writes,
  sleep,
  pause_all,
  kill_in_pause,
  kill_after_sleep,
};
constexpr int fault_kinds = 8;

// Blocks the server for 200 ms and has a kill of every connection wait behind the requests
// that came in meanwhile: the server runs them, then the kill drops their replies. Each such
// request ran, and its client cannot know it (resent, or undone, at most once).
void kill_after_sleep(const redis_server& server) {
  raw_client sleeper(server.host(), server.port());
  raw_client killer(server.host(), server.port());
  sleeper.send({"DEBUG", "SLEEP", "0.2"});
  (void)sleeper.read(0ms);             // written
  std::this_thread::sleep_for(100ms);  // the clients' requests queue up behind it
  // Written after theirs, so read after theirs: Linux's epoll reports sockets in the order
  // they became readable, and Redis writes replies only after it has read and run them all.
  killer.send({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  (void)killer.read(5s);
}

// One fault on the server: a kill of every connection of one type, a pause of writes or of
// everything, a blocked server, a flushed script cache, a kill in a pause of writes, which
// cuts every acquire and release written in the pause before it ran, or a kill right after a
// blocked spell, which cuts them after they ran (both: outcome unknown to the client; resent,
// or undone).
void strike(const redis_server& server, fault f) {
  switch (f) {
    case fault::kill_normal:
      server.cli({"CLIENT", "KILL", "TYPE", "normal"});
      break;
    case fault::kill_pubsub:
      server.cli({"CLIENT", "KILL", "TYPE", "pubsub"});
      break;
    case fault::script_flush:
      server.cli({"SCRIPT", "FLUSH"});
      break;
    case fault::pause_writes:
      server.cli({"CLIENT", "PAUSE", "300", "WRITE"});
      break;
    case fault::sleep:
      server.cli({"DEBUG", "SLEEP", "0.2"});
      break;
    case fault::pause_all:
      server.cli({"CLIENT", "PAUSE", "200", "ALL"});
      break;
    case fault::kill_in_pause:
      server.cli({"CLIENT", "PAUSE", "300", "WRITE"});
      server.cli({"CLIENT", "KILL", "TYPE", "normal"});
      break;
    case fault::kill_after_sleep:
      kill_after_sleep(server);
      break;
  }
}

TEST(hostile_nemesis, every_kind_keeps_its_exclusion_bounds_and_permits_under_faults) {
  redis_server server;
  config cfg = config_for(server);
  cfg.timeout = 1s;
  cfg.retry_delay_base = 100ms;
  cfg.retry_delay_max = 200ms;
  cfg.lock_watchdog_timeout = 3s;  // a hold whose release failed ends soon
  const int threads = from_env("RLOCK_NEMESIS_THREADS", 8);
  const int rounds = from_env("RLOCK_NEMESIS_ROUNDS", 2);
  client a(cfg);
  client b(cfg);
  ASSERT_TRUE(a.get_semaphore("n-sem").try_set_permits(permits));
  ASSERT_TRUE(a.get_permit_expirable_semaphore("n-pes").try_set_permits(permits));

  guarded g;
  tally t;
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&, i] {
      nemesis_worker w(i % 2 == 0 ? a : b, cfg, g, t, 1000U + static_cast<unsigned>(i));
      while (!stop.load()) w.step();
    });
  }
  // Every kind of fault `rounds` times, in an order of a fixed seed.
  std::vector<fault> faults;
  for (int k = 0; k < fault_kinds; ++k) faults.insert(faults.end(), rounds, static_cast<fault>(k));
  std::mt19937 rng(99);
  std::shuffle(faults.begin(), faults.end(), rng);
  for (const fault f : faults) {
    std::this_thread::sleep_for(milliseconds(300 + rng() % 400));  // the load runs meanwhile
    strike(server, f);
  }
  stop.store(true);
  for (auto& w : workers) w.join();

  // The faults reached the clients: each of the kills (3 kinds) dropped a connection at least.
  const client_stats sa = a.stats();
  const client_stats sb = b.stats();
  EXPECT_GE(sa.disconnects + sb.disconnects, 3U * static_cast<unsigned>(rounds));
  EXPECT_GE(sa.scripts_reloaded + sb.scripts_reloaded, 1U);
  RecordProperty("disconnects", std::to_string(sa.disconnects + sb.disconnects));
  RecordProperty("holds_lost", std::to_string(sa.holds_lost + sb.holds_lost));
  EXPECT_GT(t.acquired_count(), 0);
  EXPECT_EQ(t.violations().count, 0) << t.violations().text();
  EXPECT_EQ(t.late_calls().count, 0) << t.late_calls().text();
  EXPECT_EQ(t.unexpected_errors().count, 0) << t.unexpected_errors().text() << "\n"
                                            << t.error_summary();
  RecordProperty("acquired", t.acquired_count());
  RecordProperty("errors", t.error_summary());

  // Nothing held any more: a release whose outcome stayed unknown ends with its 3 s lease.
  for (const char* key : {"n-lock", "n-fair", "n-spin", "n-rw", "n-fenced", "n-m1", "n-m2"}) {
    EXPECT_TRUE(wait_until(
        [&] {
          return server.cli({"EXISTS", key}) == "0";
        },
        10s, 20ms))
        << key << " is still held";
  }
  // Every permit back: the expirable ones at the latest when their leases end; the plain
  // semaphore's less at most one per release that failed, and never more than it had.
  auto pes = a.get_permit_expirable_semaphore("n-pes");
  EXPECT_TRUE(wait_until([&] { return pes.available_permits() == permits; }, 10s, 20ms))
      << pes.available_permits();
  auto sem = a.get_semaphore("n-sem");
  EXPECT_TRUE(wait_until([&] { return sem.available_permits() >= permits - t.failed_releases(); },
                         10s, 20ms))
      << sem.available_permits() << " of " << permits << ", " << t.failed_releases()
      << " releases failed";
  EXPECT_LE(sem.available_permits(), permits);
}

}  // namespace
}  // namespace rlock::test
