#include "bench_footprint.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <thread>

#include "bench_keys.hpp"
#include "bench_lock_set.hpp"
#include "bench_options.hpp"
#include "bench_process_stats.hpp"
#include "connect.hpp"

namespace rlock::cli {
namespace {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// The waiting threads and what became of them.
struct waiter_pool {
  std::mutex mu;
  std::condition_variable cv;
  int entered = 0;
  int acquired = 0;
  int failed = 0;
  std::string first_error{};

  void wait(rlock::lock l, milliseconds budget) {
    bool ok = false;
    std::string error;
    {
      std::lock_guard g(mu);
      ++entered;
    }
    cv.notify_all();
    try {
      ok = l.try_lock_for(budget);
      if (ok) l.unlock_or_throw();
      if (!ok) error = "not acquired within " + std::to_string(budget.count()) + "ms";
    } catch (const std::exception& e) {
      error = e.what();
    }
    std::lock_guard g(mu);
    (ok ? acquired : failed) += 1;
    if (!ok && first_error.empty()) first_error = error;
  }
};

json_object usage_json(const process_status& s) {
  json_object j;
  j.add("rss_kib", s.rss_kib).add("threads", s.threads);
  return j;
}

}  // namespace

void add_footprint_options(CLI::App& sub, footprint_options& opts) {
  add_count_option(sub, "--locks", opts.locks, "Locks held in phase (b)", "N", 1'000'000);
  add_count_option(sub, "--waiters", opts.waiters, "Threads waiting on one held lock in phase (c)",
                   "W", 10'000);
  sub.footer(
      "RSS and threads of this process (/proc/self/status): idle with a connected client,\n"
      "holding N locks (released afterwards), and with W threads blocked in try_lock_for on one\n"
      "held lock. library_threads = threads - W - 1 (main). Then the waiters take the lock in\n"
      "turn; nothing may be left on the server.\n");
}

bench_report run_footprint(const footprint_options& o, const connection_options& conn) {
  const rlock::config cfg = make_config(conn);
  rlock::client client = connect_checked(cfg);
  const std::string prefix = bench_prefix();
  bench_report report;

  // (a) Idle, connected.
  const process_status idle = read_process_status();

  // (b) Holding the locks.
  process_status holding;
  {
    bench_lock_set locks(client, prefix, "f", static_cast<std::size_t>(o.locks));
    const milliseconds bound = milliseconds(60'000) + milliseconds(o.locks);
    const std::size_t held = locks.acquire_all(clock::now() + bound);
    holding = read_process_status();
    const std::size_t released = locks.release_all(clock::now() + bound);
    report.check(held == locks.size(),
                 "only " + std::to_string(held) + " of " + std::to_string(o.locks) +
                     " locks taken" +
                     (locks.first_error().empty() ? "" : ": " + locks.first_error()));
    report.check(released == held, "only " + std::to_string(released) + " of " +
                                       std::to_string(held) + " locks released");
  }

  // (c) Waiters blocked on one held lock.
  rlock::lock contended = client.get_lock(prefix + "waited");
  contended.lock();
  waiter_pool pool;
  std::vector<std::thread> threads;
  const milliseconds budget = milliseconds(60'000) + milliseconds(20) * o.waiters;
  std::string start_error;
  try {
    for (int i = 0; i < o.waiters; ++i) {
      threads.emplace_back([&pool, &contended, budget] { pool.wait(contended, budget); });
    }
  } catch (const std::system_error& e) {
    start_error = e.what();
  }
  const auto started = static_cast<int>(threads.size());
  {
    std::unique_lock lk(pool.mu);
    pool.cv.wait_until(lk, clock::now() + milliseconds(30'000),
                       [&] { return pool.entered == started; });
  }
  std::this_thread::sleep_for(milliseconds(200));  // settle: each is inside try_lock_for
  const process_status waiting = read_process_status();
  contended.unlock_or_throw();
  for (auto& t : threads) t.join();
  report.check(start_error.empty(), "could not start every waiter: " + start_error);
  report.check(pool.failed == 0,
               std::to_string(pool.failed) + " waiter(s) failed: " + pool.first_error);

  const run_leftovers left = clean_up_run(client, prefix);
  report.check(left.keys == 0, std::to_string(left.keys) + " key(s) left on the server");

  const long long library_threads = waiting.threads - started - 1;
  report.json.add("scenario", "footprint")
      .add("library", "rlock")
      .add("idle", usage_json(idle))
      .add("held_locks", json_object()
                             .add("count", o.locks)
                             .add("rss_kib", holding.rss_kib)
                             .add("threads", holding.threads))
      .add("waiters", json_object()
                          .add("count", started)
                          .add("rss_kib", waiting.rss_kib)
                          .add("threads", waiting.threads)
                          .add("library_threads", library_threads)
                          .add("acquired", pool.acquired))
      .add("keys_left", left.keys)
      .add("unlock_latches_left", left.unlock_latches);

  std::ostringstream text;
  text << "footprint of this process (one client)\n"
       << "  idle, connected         RSS " << idle.rss_kib << " KiB, " << idle.threads
       << " threads\n"
       << "  holding " << o.locks << " locks    RSS " << holding.rss_kib << " KiB, "
       << holding.threads << " threads\n"
       << "  " << started << " threads waiting  RSS " << waiting.rss_kib << " KiB, "
       << waiting.threads << " threads (" << library_threads << " of the library)\n"
       << "  waiters that got the lock afterwards " << pool.acquired << "; keys left " << left.keys
       << "\n";
  report.text = text.str();
  return report;
}

}  // namespace rlock::cli
