// Benchmark of rlock::lock against the Redis server's limit, in one run on one server.
//
//   rlock_lock_bench [--url redis://host:port] [--json]
//
// 1. Uncontended: one thread, lock() + unlock() on one name, N cycles. Ceiling:
//    redis-benchmark -c 1 EVALSHA of the acquire script, halved (a cycle is two scripts).
// 2. Contended: 8 processes x 1 thread on one lock for 4 s, each acquisition doing GET + SET
//    of a counter and holding 1 ms. Hand-off latency (one holder's release to the next one's
//    acquire, across processes, on steady_clock), utilisation, fairness (min/max acquisitions
//    per worker), overlaps. From INFO commandstats: EVALSHA calls = acquire scripts + unlock scripts; one
//    unlock message per acquisition. Reports acquire scripts per unlock message (the herd
//    bound is one per process, 8) and client requests per acquisition; checks the counter.
// Every loop is bounded by a count.
#include <rlock/client.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "redis_benchmark.hpp"
#include "throwaway_server.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

std::map<std::string, long> command_calls(rlock::client& c) {
  std::map<std::string, long> out;
  std::istringstream in{std::string(c.execute({"INFO", "commandstats"}).str())};
  std::string line;
  while (std::getline(in, line)) {
    // cmdstat_evalsha:calls=123,usec=...
    if (line.rfind("cmdstat_", 0) != 0) continue;
    const auto colon = line.find(':');
    const auto eq = line.find("calls=");
    if (colon == std::string::npos || eq == std::string::npos) continue;
    out[line.substr(8, colon - 8)] = std::stol(line.substr(eq + 6));
  }
  return out;
}

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             clock_type::now().time_since_epoch())
      .count();
}

// A contending worker: until `until_ns` (steady_clock, shared by all processes of the machine),
// take the lock, GET + SET the counter, hold for `hold_us`, release. Each acquisition is
// reported on stdout as "<acquired ns> <released ns>" (released = just before unlock).
int worker(const std::string& url, long long until_ns, long long hold_us, bool queued) {
  rlock::config cfg;
  cfg.address = url;
  cfg.lock_queue = queued;
  rlock::client c(cfg);
  auto l = c.get_lock("bench:contended");
  std::string out;
  while (now_ns() < until_ns) {
    l.lock();
    const long long acquired = now_ns();
    auto v = c.execute({"GET", "bench:counter"});
    const long long n = v.is_nil() ? 0 : std::stoll(std::string(v.str()));
    c.execute({"SET", "bench:counter", std::to_string(n + 1)});
    const auto hold_end = clock_type::now() + std::chrono::microseconds(hold_us);
    while (clock_type::now() < hold_end) {
      std::this_thread::sleep_until(hold_end);
    }
    const long long released = now_ns();
    l.unlock();
    out += std::to_string(acquired) + " " + std::to_string(released) + "\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

struct hold_interval {
  long long acquired = 0;
  long long released = 0;
  int worker = 0;
};

}  // namespace

int main(int argc, char** argv) try {
  std::string url;
  bool json = false;
  bool plain = false;  // Redisson's waiting (lock_queue off) instead of the queued hand-off
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--worker" && i + 4 < argc) {
      return worker(argv[i + 1], std::stoll(argv[i + 2]), std::stoll(argv[i + 3]),
                    std::string(argv[i + 4]) == "queued");
    }
    if (a == "--url" && i + 1 < argc) {
      url = argv[++i];
    } else if (a == "--json") {
      json = true;
    } else if (a == "--plain") {
      plain = true;
    } else {
      std::cerr << "usage: rlock_lock_bench [--url redis://host:port] [--json] [--plain]\n";
      return 64;
    }
  }
  std::optional<rlock::examples::throwaway_server> server;
  if (url.empty()) {
    server.emplace();
    url = server->url();
  }
  const auto addr = rlock::parse_url(url);
  rlock::config cfg;
  cfg.address = url;
  cfg.lock_queue = !plain;
  rlock::client c(cfg);

  // ---- ceiling: EVALSHA of the acquire script at -c 1 ----
  const rlock::script acquire{R"lua(
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1]))lua"};
  const std::string sha(c.execute({"SCRIPT", "LOAD", std::string(acquire.text())}).str());
  const auto ceiling = rlock::tools::run_redis_benchmark(
      addr.host, addr.port,
      "-c 1 -n 50000 -r 100000 evalsha " + sha + " 1 ceil:__rand_int__ 30000 owner:1");

  // ---- uncontended ----
  auto l = c.get_lock("bench:uncontended");
  for (int i = 0; i < 2000; ++i) {
    l.lock();
    l.unlock();
  }
  constexpr int cycles = 30000;
  std::vector<double> lat;
  lat.reserve(cycles);
  const auto u0 = clock_type::now();
  for (int i = 0; i < cycles; ++i) {
    const auto t0 = clock_type::now();
    l.lock();
    l.unlock();
    lat.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
  }
  const double u_secs = std::chrono::duration<double>(clock_type::now() - u0).count();
  const double cycles_per_s = cycles / u_secs;
  std::sort(lat.begin(), lat.end());
  const double p50 = lat[lat.size() / 2];
  const double p99 = lat[lat.size() * 99 / 100];
  const double target = ceiling.rps / 2;

  // ---- contended: 8 processes, 1 ms hold, for a fixed time ----
  constexpr int processes = 8;
  constexpr long long hold_us = 1000;
  const bool queued = cfg.lock_queue;
  c.execute({"DEL", "bench:counter"});
  const auto before = command_calls(c);
  const long long start_ns = now_ns();
  const long long until_ns = start_ns + 4'000'000'000LL;
  std::vector<std::pair<pid_t, FILE*>> kids;
  for (int p = 0; p < processes; ++p) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      ::close(fds[1]);
      const std::string until = std::to_string(until_ns);
      const std::string hold = std::to_string(hold_us);
      ::execl(argv[0], argv[0], "--worker", url.c_str(), until.c_str(), hold.c_str(),
              queued ? "queued" : "plain", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    kids.emplace_back(pid, ::fdopen(fds[0], "r"));
  }
  std::vector<hold_interval> holds;
  std::vector<long> per_worker(processes, 0);
  int failed = 0;
  for (int p = 0; p < processes; ++p) {
    long long a = 0;
    long long r = 0;
    while (std::fscanf(kids[p].second, "%lld %lld", &a, &r) == 2) {
      holds.push_back({a, r, p});
      ++per_worker[p];
    }
    std::fclose(kids[p].second);
    int status = 0;
    ::waitpid(kids[p].first, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  const long long end_ns = now_ns();
  const auto after = command_calls(c);
  auto delta = [&](const std::string& cmd) {
    auto x = after.find(cmd);
    auto y = before.find(cmd);
    return (x == after.end() ? 0L : x->second) - (y == before.end() ? 0L : y->second);
  };
  std::sort(holds.begin(), holds.end(),
            [](const hold_interval& x, const hold_interval& y) { return x.acquired < y.acquired; });
  const long acquisitions = static_cast<long>(holds.size());
  long overlaps = 0;
  std::vector<double> handoff_ms;
  double held_ns = 0;
  for (std::size_t i = 0; i < holds.size(); ++i) {
    held_ns += static_cast<double>(holds[i].released - holds[i].acquired);
    if (i == 0) continue;
    const long long gap = holds[i].acquired - holds[i - 1].released;
    if (gap < 0) {
      ++overlaps;
    } else {
      handoff_ms.push_back(static_cast<double>(gap) / 1e6);
    }
  }
  std::sort(handoff_ms.begin(), handoff_ms.end());
  auto pct = [&](double q) {
    return handoff_ms.empty() ? 0.0 : handoff_ms[static_cast<std::size_t>(q * (handoff_ms.size() - 1))];
  };
  const double span_ns = holds.empty() ? 1.0 : static_cast<double>(holds.back().released -
                                                                   holds.front().acquired);
  const double utilisation = held_ns / span_ns;
  const long min_w = *std::min_element(per_worker.begin(), per_worker.end());
  const long max_w = *std::max_element(per_worker.begin(), per_worker.end());
  const double fairness = max_w == 0 ? 0.0 : static_cast<double>(min_w) / static_cast<double>(max_w);
  const double k_secs = static_cast<double>(end_ns - start_ns) / 1e9;
  const long evalsha = delta("evalsha") + delta("eval");
  const long acquire_scripts = evalsha - acquisitions;  // one unlock script per acquisition
  // Redis 7 counts the commands a script runs in commandstats too, so "client requests" are the
  // commands an rlock client issues itself: scripts, pub/sub and connection upkeep. (The lock
  // workers call nothing else; the workload's GET/SET are not counted.)
  long client_requests = 0;
  for (const char* cmd : {"evalsha", "eval", "subscribe", "unsubscribe", "ssubscribe",
                          "sunsubscribe", "ping", "script|load", "client|setname", "auth",
                          "select"}) {
    client_requests += delta(cmd);
  }
  const auto counter = c.execute({"GET", "bench:counter"});
  const long lost = acquisitions - (counter.is_nil() ? 0 : std::stol(std::string(counter.str())));
  const double per_acq = acquisitions == 0 ? 0.0 : 1.0 / static_cast<double>(acquisitions);

  if (json) {
    std::printf(
        "{\"ceiling\":{\"evalsha_c1_rps\":%.0f},\"uncontended\":{\"cycles_per_s\":%.0f,"
        "\"p50_ms\":%.4f,\"p99_ms\":%.4f,\"ratio_to_half_ceiling\":%.3f},"
        "\"contended\":{\"mode\":\"%s\",\"processes\":%d,\"hold_ms\":%.1f,"
        "\"acquisitions\":%ld,\"acquisitions_per_s\":%.0f,\"utilisation\":%.3f,"
        "\"handoff_p50_ms\":%.3f,\"handoff_p99_ms\":%.3f,\"handoff_max_ms\":%.3f,"
        "\"fairness_min_max\":%.3f,\"acquire_scripts_per_acquisition\":%.3f,"
        "\"client_requests_per_acquisition\":%.3f,\"lost_updates\":%ld,\"overlaps\":%ld,"
        "\"failed_workers\":%d}}\n",
        ceiling.rps, cycles_per_s, p50, p99, cycles_per_s / target, queued ? "queued" : "plain",
        processes, hold_us / 1000.0, acquisitions, acquisitions / k_secs, utilisation, pct(0.5),
        pct(0.99), handoff_ms.empty() ? 0.0 : handoff_ms.back(), fairness,
        static_cast<double>(acquire_scripts) * per_acq,
        static_cast<double>(client_requests) * per_acq, lost, overlaps, failed);
  } else {
    std::printf("server                               %s\n", url.c_str());
    std::printf("redis-benchmark -c 1 EVALSHA         %.0f ops/s (target: half = %.0f cycles/s)\n",
                ceiling.rps, target);
    std::printf("uncontended lock+unlock, 1 thread    %.0f cycles/s  ratio %.2fx  p50 %.3f ms  p99 %.3f ms\n",
                cycles_per_s, cycles_per_s / target, p50, p99);
    std::printf("contended (%s), %d processes, hold %.1f ms: %ld acquisitions in %.2f s (%.0f/s)\n",
                queued ? "queued hand-off" : "plain", processes, hold_us / 1000.0, acquisitions,
                k_secs, acquisitions / k_secs);
    std::printf("  utilisation %.3f  hand-off p50 %.3f ms  p99 %.3f ms  max %.3f ms  fairness %.3f\n",
                utilisation, pct(0.5), pct(0.99), handoff_ms.empty() ? 0.0 : handoff_ms.back(),
                fairness);
    std::printf("  acquire scripts per acquisition %.2f, client requests per acquisition %.2f\n",
                static_cast<double>(acquire_scripts) * per_acq,
                static_cast<double>(client_requests) * per_acq);
    std::printf("  lost updates %ld, overlaps %ld, failed workers %d\n", lost, overlaps, failed);
    std::printf("  commands run (including those inside scripts):");
    for (const auto& [cmd, calls] : after) {
      const long d = calls - (before.count(cmd) ? before.at(cmd) : 0);
      if (d > 0 && cmd.find('|') == std::string::npos && cmd != "info") {
        std::printf(" %s=%ld", cmd.c_str(), d);
      }
    }
    std::printf("\n");
  }
  return (lost == 0 && failed == 0 && overlaps == 0) ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "rlock_lock_bench: " << e.what() << "\n";
  return 1;
}
