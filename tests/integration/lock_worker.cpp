// A worker process for the lock tests.
//
//   lock_worker count URL NAME THREADS ITERATIONS   contend: each thread takes the lock
//       ITERATIONS times and, inside, increments "<NAME>:counter" with a non-atomic GET then SET
//       and checks "<NAME>:inside" (INCR must return 1). Prints "acquisitions=A overlaps=O".
//   lock_worker hold URL NAME WATCHDOG_MS           take the lock with the watchdog, print
//       "held", then sleep (at most 120 s) until killed.
#include <rlock/client.hpp>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) try {
  if (argc < 4) return 64;
  const std::string mode = argv[1];
  rlock::config cfg;
  cfg.address = argv[2];
  const std::string name = argv[3];
  if (mode == "hold" && argc == 5) {
    cfg.lock_watchdog_timeout = std::chrono::milliseconds(std::stoi(argv[4]));
    rlock::client c(cfg);
    auto l = c.get_lock(name);
    l.lock();
    std::printf("held\n");
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::seconds(120));
    return 0;
  }
  if (mode == "count" && argc == 6) {
    const int threads = std::stoi(argv[4]);
    const int iterations = std::stoi(argv[5]);
    rlock::client c(cfg);
    std::atomic<int> acquisitions{0};
    std::atomic<int> overlaps{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&] {
        auto l = c.get_lock(name);
        for (int i = 0; i < iterations; ++i) {
          std::lock_guard guard(l);
          if (c.execute({"INCR", name + ":inside"}).integer() != 1) ++overlaps;
          auto v = c.execute({"GET", name + ":counter"});
          const long long n = v.is_nil() ? 0 : std::stoll(std::string(v.str()));
          c.execute({"SET", name + ":counter", std::to_string(n + 1)});
          c.execute({"DECR", name + ":inside"});
          ++acquisitions;
        }
      });
    }
    for (auto& th : pool) th.join();
    std::printf("acquisitions=%d overlaps=%d\n", acquisitions.load(), overlaps.load());
    return overlaps.load() == 0 ? 0 : 1;
  }
  return 64;
} catch (const std::exception& e) {
  std::fprintf(stderr, "lock_worker: %s\n", e.what());
  return 1;
}
