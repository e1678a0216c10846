// A worker process for the lock tests.
//
//   lock_worker count URL NAME THREADS ITERATIONS   contend: each thread takes the lock
//       ITERATIONS times and, inside, increments "<NAME>:counter" with a non-atomic GET then SET
//       and checks "<NAME>:inside" (INCR must return 1). Prints "acquisitions=A overlaps=O".
//   lock_worker spin-count URL NAME THREADS ITERATIONS   the same through the spin lock NAME.
//   lock_worker fair-count URL NAME THREADS ITERATIONS   the same through the fair lock NAME.
//   lock_worker hold URL NAME WATCHDOG_MS           take the lock with the watchdog, print
//       "held", then sleep (at most 120 s) until killed.
//   lock_worker try-hold URL NAME WATCHDOG_MS WAIT_MS   try_lock for WAIT_MS under the watchdog:
//       print "timeout" and exit with 3, or print "held", then "lost" if the hold is lost, and
//       sleep (at most 120 s) until killed.
//   lock_worker wait-hold URL NAME LEASE_MS LIVENESS_MS   print "waiting", take the lock with a
//       fixed lease, print "held", sleep (at most 120 s) until killed.
//   lock_worker ordered URL NAME PROCESS THREADS    thread t of process p has index
//       p * THREADS + t; it joins the queue only once the queue holds exactly `index` waiters
//       (so arrivals happen in index order), then on acquiring appends its index to
//       "<NAME>:order" and unlocks.
//   lock_worker barge URL NAME ITERATIONS           a Java Redisson client, simulated with
//       Redisson's own acquire/unlock scripts and polling: it takes the lock only when it is
//       free, increments "<NAME>:counter" with GET then SET inside, and checks "<NAME>:inside".
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <rlock/client.hpp>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

namespace {

// Redisson 4.7's RLock scripts, as a Java peer runs them (protocol reference §1.2, §1.3).
const char* const redisson_acquire = R"lua(
if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1]))lua";
const char* const redisson_unlock = R"lua(
local val = redis.call('get', KEYS[3])
if val ~= false then return tonumber(val) end
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
else
  redis.call('del', KEYS[1])
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  redis.call('set', KEYS[3], 1, 'px', ARGV[5])
  return 1
end)lua";

}  // namespace

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
  if (mode == "try-hold" && argc == 6) {
    cfg.lock_watchdog_timeout = std::chrono::milliseconds(std::stoi(argv[4]));
    rlock::client c(cfg);
    auto l = c.get_lock(name);
    if (!l.try_lock(std::chrono::milliseconds(std::stoi(argv[5])))) {
      std::printf("timeout\n");
      std::fflush(stdout);
      return 3;
    }
    std::printf("held\n");
    std::fflush(stdout);
    const std::stop_callback on_loss(l.loss_token(), [] {
      std::printf("lost\n");
      std::fflush(stdout);
    });
    std::this_thread::sleep_for(std::chrono::seconds(120));
    return 0;
  }
  if (mode == "wait-hold" && argc == 6) {
    cfg.lock_queue_liveness = std::chrono::milliseconds(std::stoi(argv[5]));
    rlock::client c(cfg);
    auto l = c.get_lock(name);
    std::printf("waiting\n");
    std::fflush(stdout);
    l.lock(std::chrono::milliseconds(std::stoi(argv[4])));
    std::printf("held\n");
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::seconds(120));
    return 0;
  }
  if (mode == "ordered" && argc == 6) {
    const int process = std::stoi(argv[4]);
    const int threads = std::stoi(argv[5]);
    rlock::client c(cfg);
    const std::string queue = "rlock_queue:{" + name + "}";
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const int index = process * threads + t;
        // Wait for this thread's turn to arrive: bounded, external state (the queue length).
        for (int i = 0; i < 30000 && c.execute({"ZCARD", queue}).integer() != index; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        auto l = c.get_lock(name);
        l.lock();
        c.execute({"RPUSH", name + ":order", std::to_string(index)});
        l.unlock_or_throw();
      });
    }
    for (auto& th : pool) th.join();
    return 0;
  }
  if (mode == "barge" && argc == 5) {
    const int iterations = std::stoi(argv[4]);
    rlock::client c(cfg);
    const rlock::script acquire{redisson_acquire};
    const rlock::script unlock{redisson_unlock};
    // Each Java peer has its own owner: "<uuid>:<thread id>" (the pid stands in for both).
    const std::string owner =
        "5a1f0e2c-7b3d-4e8f-9a6b-" + std::to_string(100000000000 + ::getpid()) + ":1";
    const std::string channel = "redisson_lock__channel:{" + name + "}";
    int acquisitions = 0;
    int overlaps = 0;
    for (int i = 0; i < iterations; ++i) {
      // Poll like a Java client whose pub/sub wake-ups we do not need to simulate.
      for (int tries = 0; !c.eval(acquire, {name}, {"30000", owner}).is_nil(); ++tries) {
        if (tries > 100000) return 2;
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
      if (c.execute({"INCR", name + ":inside"}).integer() != 1) ++overlaps;
      auto v = c.execute({"GET", name + ":counter"});
      const long long n = v.is_nil() ? 0 : std::stoll(std::string(v.str()));
      c.execute({"SET", name + ":counter", std::to_string(n + 1)});
      c.execute({"DECR", name + ":inside"});
      ++acquisitions;
      const std::string latch = "redisson_unlock_latch:{" + name +
                                "}:" + std::to_string(::getpid()) + "x" + std::to_string(i);
      c.eval(unlock, {name, channel, latch}, {"0", "30000", owner, "publish", "20000"});
    }
    std::printf("acquisitions=%d overlaps=%d\n", acquisitions, overlaps);
    return overlaps == 0 ? 0 : 1;
  }
  if ((mode == "count" || mode == "spin-count" || mode == "fair-count") && argc == 6) {
    const bool spin = mode == "spin-count";
    const bool fair = mode == "fair-count";
    const int threads = std::stoi(argv[4]);
    const int iterations = std::stoi(argv[5]);
    rlock::client c(cfg);
    std::atomic<int> acquisitions{0};
    std::atomic<int> overlaps{0};
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&] {
        auto l = spin ? c.get_spin_lock(name) : fair ? c.get_fair_lock(name) : c.get_lock(name);
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
