// The read-write lock example: a cached configuration that many threads read together and one
// refresher rewrites alone, across threads (and, the same way, across processes and Java
// services using Redisson's getReadWriteLock("app-config")).
//
//   rlock_read_write_lock_example [redis://host:port]
//
// With no URL it starts a throwaway redis-server on a free loopback port.
#include <atomic>
#include <iostream>
#include <mutex>
#include <rlock/client.hpp>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "example_server.hpp"  // tools/

using namespace std::chrono_literals;

int main(int argc, char** argv) try {
  const rlock::examples::example_server server(argc, argv);  // argv[1], else a throwaway one
  rlock::config cfg;
  cfg.address = server.url();
  rlock::client client(cfg);

  // Redisson's RReadWriteLock: the hash "app-config" with "mode" = read|write; releases publish
  // on "redisson_rwlock:{app-config}". std::shared_lock takes the read half, std::unique_lock
  // the write half; both are renewed by the watchdog while held.
  rlock::read_write_lock config_lock = client.get_read_write_lock("app-config");

  // The "configuration" (atomics only so that the example's own check is race-free C++; the
  // lock is what keeps readers and the writer apart).
  std::atomic<int> version{0};
  std::atomic<int> writing{0};  // a writer is inside
  std::atomic<int> torn{0};     // a reader that found a writer inside
  std::vector<std::thread> threads;
  threads.reserve(7);
  for (int r = 0; r < 6; ++r) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        std::shared_lock read(config_lock);
        if (writing.load() != 0) ++torn;
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 5; ++i) {
      std::unique_lock write(config_lock);
      ++writing;
      ++version;  // ... rewrite the configuration
      std::this_thread::sleep_for(1ms);
      --writing;
    }
  });
  for (auto& t : threads) t.join();
  std::cout << "60 reads, 5 writes, version " << version.load() << ", torn reads " << torn.load()
            << "\n";
  return torn.load() == 0 && version.load() == 5 ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
