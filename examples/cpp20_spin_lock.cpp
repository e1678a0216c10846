// The spin lock example: many short-lived locks (one per cache entry) whose waiters poll
// instead of subscribing, so that neither a release nor a waiter costs any pub/sub traffic.
// Redisson's getSpinLock("cache:<n>") peers share them.
//
//   rlock_spin_lock_example [redis://host:port]
//
// With no URL it starts a throwaway redis-server on a free loopback port.
#include <iostream>
#include <rlock/client.hpp>
#include <string>
#include <thread>
#include <vector>

#include "example_server.hpp"  // tools/

using namespace std::chrono_literals;

int main(int argc, char** argv) try {
  const rlock::examples::example_server server(argc, argv);  // argv[1], else a throwaway one
  rlock::config cfg;
  cfg.address = server.url();
  rlock::client client(cfg);

  // Four threads refresh 16 entries, each under the spin lock of its entry: the same hash, owner
  // field and watchdog as get_lock's, but a waiter sleeps 1, 2, 4, ... up to 32 ms between tries
  // (never longer than the holder's TTL it saw) and a release publishes nothing.
  constexpr int entries = 16;
  const rlock::spin_backoff backoff{1ms, 32ms, 2};
  constexpr int threads = 4;
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int w = 0; w < threads; ++w) {
    workers.emplace_back([&client, backoff] {
      for (int round = 0; round < 10; ++round) {
        for (int e = 0; e < entries; ++e) {
          const std::string name = "cache:" + std::to_string(e);
          rlock::lock entry = client.get_spin_lock(name, backoff);
          std::lock_guard guard(entry);  // blocks; renewed by the watchdog while held
          // ... the critical section: a non-atomic read-modify-write of the entry
          const rlock::reply v = client.execute({"GET", name + ":refreshes"});
          const long long n = v.is_nil() ? 0 : std::stoll(std::string(v.str()));
          client.execute({"SET", name + ":refreshes", std::to_string(n + 1)});
        }
      }
    });
  }
  for (auto& t : workers) t.join();

  long long total = 0;
  for (int e = 0; e < entries; ++e) {
    const rlock::reply v = client.execute({"GET", "cache:" + std::to_string(e) + ":refreshes"});
    total += std::stoll(std::string(v.str()));
  }
  std::cout << "640 refreshes under 16 spin locks, counted " << total << "\n";
  return total == static_cast<long long>(threads) * 10 * entries ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "rlock_spin_lock_example: " << e.what() << "\n";
  return 1;
}
