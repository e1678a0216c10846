// Benchmark of rlock::lock against the Redis server's limit, in one run on one server.
//
//   rlock_lock_bench [--url redis://host:port] [--json]
//
// 1. Uncontended: one thread, lock() + unlock() on one name, N cycles. Ceiling:
//    redis-benchmark -c 1 EVALSHA of the acquire script, halved (a cycle is two scripts).
// 2. Contended: 8 processes x 1 thread on one lock, each acquisition doing GET + SET of a
//    counter. From INFO commandstats: EVALSHA calls = acquire scripts + unlock scripts; one
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
#include <string>
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

int worker(const std::string& url, int iterations) {
  rlock::config cfg;
  cfg.address = url;
  rlock::client c(cfg);
  auto l = c.get_lock("bench:contended");
  for (int i = 0; i < iterations; ++i) {
    l.lock();
    auto v = c.execute({"GET", "bench:counter"});
    const long long n = v.is_nil() ? 0 : std::stoll(std::string(v.str()));
    c.execute({"SET", "bench:counter", std::to_string(n + 1)});
    l.unlock();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string url;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--worker" && i + 2 < argc) return worker(argv[i + 1], std::stoi(argv[i + 2]));
    if (a == "--url" && i + 1 < argc) {
      url = argv[++i];
    } else if (a == "--json") {
      json = true;
    } else {
      std::cerr << "usage: rlock_lock_bench [--url redis://host:port] [--json]\n";
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

  // ---- contended: 8 processes ----
  constexpr int processes = 8;
  constexpr int per_process = 500;
  c.execute({"DEL", "bench:counter"});
  const auto before = command_calls(c);
  const auto k0 = clock_type::now();
  std::vector<pid_t> kids;
  for (int p = 0; p < processes; ++p) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const std::string n = std::to_string(per_process);
      ::execl(argv[0], argv[0], "--worker", url.c_str(), n.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    kids.push_back(pid);
  }
  int failed = 0;
  for (pid_t k : kids) {
    int status = 0;
    ::waitpid(k, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  const double k_secs = std::chrono::duration<double>(clock_type::now() - k0).count();
  const auto after = command_calls(c);
  auto delta = [&](const std::string& cmd) {
    auto a = after.find(cmd);
    auto b = before.find(cmd);
    return (a == after.end() ? 0L : a->second) - (b == before.end() ? 0L : b->second);
  };
  const long acquisitions = long{processes} * per_process;
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

  if (json) {
    std::printf(
        "{\"ceiling\":{\"evalsha_c1_rps\":%.0f},\"uncontended\":{\"cycles_per_s\":%.0f,"
        "\"p50_ms\":%.4f,\"p99_ms\":%.4f,\"ratio_to_half_ceiling\":%.3f},"
        "\"contended\":{\"processes\":%d,\"acquisitions\":%ld,\"acquisitions_per_s\":%.0f,"
        "\"acquire_scripts_per_unlock\":%.3f,\"client_requests_per_acquisition\":%.3f,"
        "\"lost_updates\":%ld,\"failed_workers\":%d}}\n",
        ceiling.rps, cycles_per_s, p50, p99, cycles_per_s / target, processes, acquisitions,
        acquisitions / k_secs, static_cast<double>(acquire_scripts) / acquisitions,
        static_cast<double>(client_requests) / acquisitions, lost, failed);
  } else {
    std::printf("server                               %s\n", url.c_str());
    std::printf("redis-benchmark -c 1 EVALSHA         %.0f ops/s (target: half = %.0f cycles/s)\n",
                ceiling.rps, target);
    std::printf("uncontended lock+unlock, 1 thread    %.0f cycles/s  ratio %.2fx  p50 %.3f ms  p99 %.3f ms\n",
                cycles_per_s, cycles_per_s / target, p50, p99);
    std::printf("contended, %d processes              %ld acquisitions in %.2f s (%.0f/s)\n",
                processes, acquisitions, k_secs, acquisitions / k_secs);
    std::printf("  acquire scripts per unlock message %.2f (bound: 1 per process = %d)\n",
                static_cast<double>(acquire_scripts) / acquisitions, processes);
    std::printf("  client requests per acquisition    %.2f (excluding the workload's GET/SET)\n",
                static_cast<double>(client_requests) / acquisitions);
    std::printf("  lost updates %ld, failed workers %d\n", lost, failed);
    std::printf("  commands run (including those inside scripts):");
    for (const auto& [cmd, calls] : after) {
      const long d = calls - (before.count(cmd) ? before.at(cmd) : 0);
      if (d > 0 && cmd.find('|') == std::string::npos && cmd != "info") {
        std::printf(" %s=%ld", cmd.c_str(), d);
      }
    }
    std::printf("\n");
  }
  return (lost == 0 && failed == 0) ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "rlock_lock_bench: " << e.what() << "\n";
  return 1;
}
