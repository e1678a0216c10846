// The lock example: the blocking API with std::lock_guard, a lease, the loss signal, with_lock,
// the async API from a coroutine with an explicit owner id, and the client's counters.
//
//   rlock_lock_example [redis://host:port]
//
// With no URL it starts a throwaway redis-server on a free loopback port.
#include <asio/awaitable.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>
#include <iostream>
#include <mutex>
#include <rlock/client.hpp>

#include "example_server.hpp"  // tools/

using namespace std::chrono_literals;

int main(int argc, char** argv) try {
  const rlock::examples::example_server server(argc, argv);  // argv[1], else a throwaway one
  rlock::config cfg;
  cfg.address = server.url();
  rlock::client client(cfg);

  // 1. A std::mutex-like lock shared with any Redisson (Java) client using the same name.
  rlock::lock orders = client.get_lock("orders");
  {
    // Watchdog lease: renewed every 10 s while held. unlock() never throws (BasicLockable), so
    // the guard is safe; a lock lost before or during the release stops the loss token.
    std::lock_guard guard(orders);
    std::cout << "holding 'orders'; TTL " << orders.remain_time_to_live().count() << " ms\n";
    // Know when the lock is gone, and until when it is certainly still ours.
    std::stop_token lost = orders.loss_token();
    std::cout << "lost: " << std::boolalpha << lost.stop_requested() << ", valid for another "
              << std::chrono::duration_cast<std::chrono::milliseconds>(
                     orders.valid_until() - std::chrono::steady_clock::now())
                     .count()
              << " ms\n";
  }

  // 2. try_lock with a wait budget and a fixed lease (not renewed).
  if (orders.try_lock(500ms, 10s)) {
    std::cout << "got 'orders' with a 10 s lease\n";
    orders.unlock();
  }

  // 3. Run a function under the lock; released even if it throws.
  const int total = client.with_lock("report", {}, [] { return 6 * 7; });
  std::cout << "with_lock returned " << total << "\n";

  // 4. Async, from a coroutine: the owner is an explicit id, not the thread (rlock::new_owner_id()
  //    gives one that no thread of the blocking API has; ids the caller picks stay below
  //    rlock::reserved_owner_ids).
  asio::io_context io;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const std::uint64_t job = rlock::new_owner_id();
        co_await orders.async_lock(job, asio::use_awaitable);
        const long long holds = co_await orders.async_hold_count(job, asio::use_awaitable);
        std::cout << "coroutine owner " << job << " holds 'orders' " << holds << " time(s)\n";
        co_await orders.async_unlock(job, asio::use_awaitable);
      },
      asio::detached);
  io.run();
  std::cout << "'orders' locked now: " << orders.is_locked() << "\n";

  // 5. What the client did, for metrics: counters since it was made, and gauges of now.
  const rlock::client_stats s = client.stats();
  std::cout << s.requests << " requests (" << s.requests_failed << " failed), " << s.attempts
            << " attempts, " << s.connects << " connections set up, " << s.holds_watched
            << " hold(s) watched now\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "rlock_lock_example: " << e.what() << "\n";
  return 1;
}
