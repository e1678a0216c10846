// Benchmark of the Redis core against redis-benchmark, on one server, in one run.
//
//   rlock_core_bench [--url redis://host:port] [--json]
//
// With no URL it starts a throwaway redis-server on a free loopback port. It measures:
//   1. the ceiling: redis-benchmark -c 1 PING p50, and EVALSHA of a Redisson-style lock script
//      on spread keys at -c 50 -P 16;
//   2. rlock: one thread's blocking PING round trip (p50, p99), and 32 threads each keeping 16
//      EVALSHA in flight over ONE connection (ops/s);
// and prints each figure with its ratio to the ceiling. Every loop is bounded by a count.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <random>
#include <rlock/client.hpp>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

#include "redis_benchmark.hpp"
#include "throwaway_server.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

// The acquire contract of Redisson's RLock (src/lua/lock_acquire.lua).
const char* const lock_script = R"lua(
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1]))lua";

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

std::string rand_key(std::minstd_rand& rng) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "key:%012d", static_cast<int>(rng() % 100000));
  return buf;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string url;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--url" && i + 1 < argc) {
      url = argv[++i];
    } else if (a == "--json") {
      json = true;
    } else {
      std::cerr << "usage: rlock_core_bench [--url redis://host:port] [--json]\n";
      return 64;
    }
  }
  std::optional<rlock::examples::throwaway_server> server;
  if (url.empty()) {
    server.emplace();
    url = server->url();
  }
  const rlock::server_address addr = rlock::parse_url(url);
  rlock::config cfg;
  cfg.address = url;
  rlock::client c(cfg);
  const rlock::script s{lock_script};
  const std::string sha(c.execute({"SCRIPT", "LOAD", std::string(s.text())}).str());

  // ---- ceilings ----
  const auto ping =
      rlock::tools::run_redis_benchmark(addr.host, addr.port, "-c 1 -n 50000 -t ping");
  const auto evalsha = rlock::tools::run_redis_benchmark(
      addr.host, addr.port,
      "-c 50 -P 16 -n 1000000 -r 100000 evalsha " + sha + " 1 key:__rand_int__ 30000 owner:1");

  // ---- rlock: one thread, blocking round trip ----
  constexpr int warmup = 2000;
  constexpr int samples = 50000;
  for (int i = 0; i < warmup; ++i) c.execute({"PING"});
  std::vector<double> rtt;
  rtt.reserve(samples);
  for (int i = 0; i < samples; ++i) {
    const auto t0 = clock_type::now();
    c.execute({"PING"});
    rtt.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
  }
  const double rtt_p50 = percentile(rtt, 0.50);
  const double rtt_p99 = percentile(rtt, 0.99);

  // ---- rlock: 32 threads x 16 in flight, EVALSHA over one connection ----
  constexpr int threads = 32;
  constexpr int window = 16;
  constexpr int per_thread = 1000000 / threads;
  std::atomic<long> errors{0};
  const auto t0 = clock_type::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::minstd_rand rng(static_cast<unsigned>(t + 1));
      std::counting_semaphore<window> slots(window);
      for (int i = 0; i < per_thread; ++i) {
        slots.acquire();
        c.async_eval(s, {rand_key(rng)}, {"30000", "owner:1"},
                     [&](std::error_code ec, const rlock::reply&) {
                       if (ec) errors.fetch_add(1, std::memory_order_relaxed);
                       slots.release();
                     });
      }
      for (int i = 0; i < window; ++i) slots.acquire();
    });
  }
  for (auto& th : pool) th.join();
  const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
  const double rlock_rps = threads * static_cast<double>(per_thread) / secs;

  const double rtt_ratio = rtt_p50 / ping.p50_ms;
  const double rps_ratio = rlock_rps / evalsha.rps;
  if (json) {
    std::printf(
        "{\"ceiling\":{\"ping_c1_p50_ms\":%.4f,\"evalsha_c50_p16_rps\":%.0f},"
        "\"rlock\":{\"rtt_p50_ms\":%.4f,\"rtt_p99_ms\":%.4f,\"evalsha_32t_rps\":%.0f,"
        "\"errors\":%ld},\"ratios\":{\"rtt_p50_vs_ping_p50\":%.3f,"
        "\"evalsha_rps_vs_ceiling\":%.3f}}\n",
        ping.p50_ms, evalsha.rps, rtt_p50, rtt_p99, rlock_rps, errors.load(), rtt_ratio, rps_ratio);
  } else {
    std::printf("server                          %s\n", url.c_str());
    std::printf("redis-benchmark -c 1 PING p50   %.4f ms\n", ping.p50_ms);
    std::printf("rlock 1-thread PING p50 / p99   %.4f / %.4f ms   ratio %.2fx (target <= 1.30x)\n",
                rtt_p50, rtt_p99, rtt_ratio);
    std::printf("redis-benchmark -c 50 -P 16 EVALSHA   %.0f ops/s\n", evalsha.rps);
    std::printf(
        "rlock 32 threads x 16 EVALSHA, 1 conn %.0f ops/s   ratio %.2fx (target >= 0.70x)\n",
        rlock_rps, rps_ratio);
    std::printf("errors                          %ld\n", errors.load());
  }
  return errors.load() == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "rlock_core_bench: " << e.what() << "\n";
  return 1;
}
