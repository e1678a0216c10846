// The load of the nemesis tests (hostile_nemesis_test.cpp, and the Sentinel failover under load
// in sentinel_failover_load_test.cpp): threads that take every kind of lock and semaphore, hold it
// briefly and let it go, checking as they go what each kind guarantees, whatever faults strike
// meanwhile.
//   - Exclusion: a lock, fair lock, spin lock, fenced lock, MultiLock and write lock have one
//     holder at a time; readers never meet a writer; a semaphore and a permit-expirable
//     semaphore of 2 never have 3. Each holder of the fenced lock has a greater token than the
//     holder before.
//   - Bounds: a waiting acquire returns by its wait plus the try in flight at its deadline; a
//     release within its retries (call_bounds).
//   - Errors: only those the faults may cause (tally's `expected`).
// The objects' names (nemesis_keys) start with "n-"; the semaphores need nemesis_permits set.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "hostile_common.hpp"

namespace rlock::test {

using std::chrono::milliseconds;

/// The keys of the exclusive kinds, each gone once nothing holds it.
inline const std::vector<std::string>& nemesis_keys() {
  static const std::vector<std::string> keys{"n-lock",   "n-fair", "n-spin", "n-rw",
                                             "n-fenced", "n-m1",   "n-m2"};
  return keys;
}

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
  /// `expected`: the error codes the faults may cause; any other is a finding.
  explicit tally(std::vector<errc> expected = link_and_deadline_faults())
      : expected_(std::move(expected)) {}

  /// Faults of the link or the deadline, which any nemesis may cause.
  static std::vector<errc> link_and_deadline_faults() {
    return {errc::timeout, errc::connection_lost, errc::not_connected, errc::subscription_timeout,
            errc::server_busy};
  }

  void violation(std::string what) { add(violations_, std::move(what)); }
  void late(const std::string& what, long long took_ms, long long bound_ms) {
    add(late_, what + " took " + std::to_string(took_ms) + " ms, bound " +
                   std::to_string(bound_ms) + " ms");
  }
  void failed(const std::string& op, const std::error_code& ec) {
    std::lock_guard lk(mu_);
    ++errors_[op + ": " + ec.message()];
    if (ec != errc::connection_refused && ec != errc::not_connected && ec != errc::server_busy &&
        ec != errc::subscription_timeout) {
      ++may_have_run_[op];
    }
    if (!expected(ec)) unexpected_.add(op + ": " + ec.message());
  }
  void release_failed() { failed_releases_.fetch_add(1); }
  void acquired() {
    {
      std::lock_guard lk(mu_);
      ++acquired_;
    }
    acquired_cv_.notify_all();
  }
  /// Waits up to `limit` until `n` acquires have been recorded in all; false if they have not.
  bool wait_for_acquired(int n, std::chrono::milliseconds limit) const {
    std::unique_lock lk(mu_);
    return acquired_cv_.wait_for(lk, limit, [&] { return acquired_ >= n; });
  }

  findings violations() const { return copy(violations_); }
  findings late_calls() const { return copy(late_); }
  findings unexpected_errors() const { return copy(unexpected_); }
  int failed_releases() const { return failed_releases_.load(); }
  /// The errors of operation `op` ("semaphore acquire") after which it may have run: all but
  /// those that prove it did not (refused or unsent connections, BUSY, a subscription that
  /// failed before the wait's try).
  int failures_that_may_have_run(const std::string& op) const {
    std::lock_guard lk(mu_);
    const auto it = may_have_run_.find(op);
    return it == may_have_run_.end() ? 0 : it->second;
  }
  int acquired_count() const {
    std::lock_guard lk(mu_);
    return acquired_;
  }
  std::string error_summary() const {
    std::lock_guard lk(mu_);
    std::string out;
    for (const auto& [what, n] : errors_) out += std::to_string(n) + "x " + what + "; ";
    return out;
  }

 private:
  bool expected(const std::error_code& ec) const {
    return std::any_of(expected_.begin(), expected_.end(), [&](errc c) { return ec == c; });
  }
  void add(findings& to, std::string what) {
    std::lock_guard lk(mu_);
    to.add(std::move(what));
  }
  findings copy(const findings& f) const {
    std::lock_guard lk(mu_);
    return f;
  }

  std::vector<errc> expected_;
  mutable std::mutex mu_;
  findings violations_;
  findings late_;
  findings unexpected_;
  std::map<std::string, int> errors_;
  std::map<std::string, int> may_have_run_;
  std::atomic<int> failed_releases_{0};
  int acquired_ = 0;  // guarded by mu_
  mutable std::condition_variable acquired_cv_;
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

/// The semaphores' permits, and the expirable permits' lease.
constexpr int nemesis_permits = 2;
constexpr milliseconds permit_lease{3000};

/// How long each call may take beyond its wait (slack, hostile_common.hpp, comes on top).
struct call_bounds {
  /// The try in flight at an acquire's deadline (the request timeout, and replica_sync_timeout
  /// with replica_sync).
  milliseconds per_try;
  /// A release, its retries and resends included.
  milliseconds release;

  /// For `cfg` without replica_sync: one request timeout per try; a release within twice its
  /// retries (after an acquire that gave up, its undo goes first).
  static call_bounds of(const config& cfg) { return {cfg.timeout, 2 * retry_budget(cfg)}; }
};

/// One thread's load: each step() takes one of the objects, holds it briefly and lets it go,
/// recording into `t` what it saw. Made and used on the thread that runs it (lock owners are
/// threads).
class nemesis_worker {
 public:
  nemesis_worker(client& c, call_bounds bounds, guarded& g, tally& t, unsigned seed)
      : lock_(c.get_lock("n-lock")),
        fair_(c.get_fair_lock("n-fair")),
        spin_(c.get_spin_lock("n-spin")),
        rw_(c.get_read_write_lock("n-rw")),
        sem_(c.get_semaphore("n-sem")),
        pes_(c.get_permit_expirable_semaphore("n-pes")),
        fenced_(c.get_fenced_lock("n-fenced")),
        multi_({c.get_lock("n-m1"), c.get_lock("n-m2")}),
        per_try_(bounds.per_try),
        release_bound_(bounds.release),
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
    check_bound(what, t0, wait + (1 + steps) * per_try_ + slack);
    if (taken) t_.acquired();
    return taken;
  }
  // Runs a release (`f` returns its error, {} when released), checks its bound and records its
  // error; returns the error.
  template <class F>
  std::error_code timed_release(const std::string& what, F f) {
    const auto t0 = steady::now();
    const std::error_code ec = f();
    if (ec) t_.failed(what, ec);
    check_bound(what, t0, release_bound_ + slack);
    return ec;
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
    timed_release(std::string(what) + " unlock", [&] {
      std::error_code ec;
      l.unlock(ec);
      return ec;
    });
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
    timed_release(std::string(what) + " unlock", [&] {
      std::error_code ec;
      rw_.release(write ? rw_mode::write : rw_mode::read, ec);
      return ec;
    });
  }

  void take_permit(milliseconds wait, std::chrono::microseconds hold) {
    if (!timed_acquire("semaphore", wait, [&] { return sem_.try_acquire_for(wait); })) return;
    if (!g_.sem.enter()) t_.violation("a third permit of the semaphore");
    std::this_thread::sleep_for(hold);
    g_.sem.leave();
    if (timed_release("semaphore release", [&] { return code_of([&] { sem_.release(); }); })) {
      t_.release_failed();
    }
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
    timed_release("expirable release", [&] {
      bool released = false;
      const std::error_code ec = code_of([&] { released = pes_.try_release(*id); });
      // false: its lease ended first (a hold of 3 ms under a 3 s lease: not expected, but safe).
      return ec || released ? ec : make_error_code(errc::not_owner);
    });
  }

  reentrant_lock lock_;
  reentrant_lock fair_;
  reentrant_lock spin_;
  read_write_lock rw_;
  semaphore sem_;
  permit_expirable_semaphore pes_;
  fenced_lock fenced_;
  multi_lock multi_;
  milliseconds per_try_;
  milliseconds release_bound_;
  guarded& g_;
  tally& t_;
  std::mt19937 rng_;
};

/// `threads` nemesis_workers, alternately on `a` and `b`, from construction until stop().
class nemesis_load {
 public:
  nemesis_load(client& a, client& b, call_bounds bounds, tally& t, int threads) {
    workers_.reserve(static_cast<std::size_t>(threads));
    for (int i = 0; i < threads; ++i) {
      workers_.emplace_back([this, &c = i % 2 == 0 ? a : b, bounds, &t, i] {
        nemesis_worker w(c, bounds, guarded_, t, 1000U + static_cast<unsigned>(i));
        while (!stop_.load()) w.step();
      });
    }
  }
  nemesis_load(const nemesis_load&) = delete;
  nemesis_load& operator=(const nemesis_load&) = delete;
  ~nemesis_load() { stop(); }

  /// Ends the load: each worker finishes its step (bounded: call_bounds) and returns.
  void stop() {
    stop_.store(true);
    for (auto& w : workers_) {
      if (w.joinable()) w.join();
    }
  }

 private:
  guarded guarded_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

/// Checks what `t` recorded: some acquires, and no violation, late call or unexpected error.
inline void expect_clean(const tally& t) {
  EXPECT_GT(t.acquired_count(), 0);
  EXPECT_EQ(t.violations().count, 0) << t.violations().text();
  EXPECT_EQ(t.late_calls().count, 0) << t.late_calls().text();
  EXPECT_EQ(t.unexpected_errors().count, 0) << t.unexpected_errors().text() << "\n"
                                            << t.error_summary();
  testing::Test::RecordProperty("acquired", t.acquired_count());
  testing::Test::RecordProperty("errors", t.error_summary());
}

}  // namespace rlock::test
