// The semaphore example: at most three workers call a rate-limited service at once, across
// threads (and, the same way, across processes and Java services using Redisson's
// getSemaphore("partner-api")).
//
//   rlock_semaphore_example [redis://host:port]
//
// With no URL it starts a throwaway redis-server on a free loopback port.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <rlock/client.hpp>
#include <thread>
#include <vector>

#include "example_server.hpp"  // tools/

using namespace std::chrono_literals;

int main(int argc, char** argv) try {
  const rlock::examples::example_server server(argc, argv);  // argv[1], else a throwaway one
  rlock::config cfg;
  cfg.address = server.url();
  rlock::client client(cfg);

  // Redisson's RSemaphore: the count is the string key "partner-api"; releases publish the new
  // count on "redisson_sc:{partner-api}", where waiters sleep until then.
  rlock::semaphore api = client.get_semaphore("partner-api");
  api.try_set_permits(3);  // only the first caller sets it; later ones keep the count there is

  std::atomic<int> calling{0};
  std::atomic<int> most{0};
  std::atomic<bool> starved{false};
  std::vector<std::thread> workers;
  for (int w = 0; w < 8; ++w) {
    workers.emplace_back([&] {
      for (int call = 0; call < 5; ++call) {
        if (!api.try_acquire_for(10s)) {  // false: no permit within 10 s
          starved = true;
          return;
        }
        const int now = ++calling;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(2ms);  // ... the call to the service
        --calling;
        api.release();  // not owned: give back exactly what was taken
      }
    });
  }
  for (auto& t : workers) t.join();
  std::cout << "40 calls, at most " << most.load() << " at once; permits left "
            << api.available_permits() << "\n";
  api.drain_permits();
  return !starved && most.load() <= 3 && api.available_permits() == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
