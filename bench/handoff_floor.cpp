// The floor of a cross-process hand-off through one Redis server, on this machine.
//
//   rlock_handoff_floor [--port P] [--gap 1000] [--count 2000] [--json]
//
// Two single-threaded processes with one hiredis connection each, nothing else: the waiter is
// blocked in read() on its subscription; the holder, after `--gap` µs idle (a hold), sends one
// command that tells the waiter, with its CLOCK_MONOTONIC send time as the payload. The waiter
// notes when read() returns. Three series, each `--count` times:
//   publish           PUBLISH alone: the server's and the waiter's wake-ups and one command;
//   script            EVALSHA of the least a hand-off to a named waiter must do: delete the
//                     holder's entry, make the waiter the owner with a lease (HSET, PEXPIRE),
//                     PUBLISH to it;
//   script_io_thread  the same, received the way a client with an I/O thread receives it (rlock,
//                     and Redisson on Netty): a second thread of the waiter reads the message
//                     and wakes the waiting thread through a futex; the time is noted when the
//                     waiting thread runs. The difference to `script` is that hand-over's cost.
// Each series also reports the server's time per call of its command (INFO commandstats usec,
// the server's wall clock in the command, a script's commands included): what the hand-off
// costs the server itself, against which a lock library's scripts can be set.
// No lock library can hand a lock from one process to another through this server faster than
// `script`: it has no thread hop, no bookkeeping, no queue. With a mean hold H and this floor's
// mean F, the lock's utilisation (holds / wall time) is at most H / (H + F) on this machine
// (bench/compare reports it next to each contended row).
//
// Without --port it starts a throwaway redis-server on a free loopback port. Bounded: at most
// 100,000 hand-offs per command, every read times out after 5 s (a lost message is an error,
// exit 1), and the waiter dies with this process.
#include <hiredis/hiredis.h>
#include <linux/futex.h>  // FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli/bench_commandstats.hpp"
#include "futex_word.hpp"
#include "hiredis_session.hpp"
#include "throwaway_server.hpp"

namespace {

using rlock::bench::command;
using rlock::bench::connect;
using rlock::bench::context_ptr;
using rlock::bench::futex;
using rlock::bench::reply_ptr;
using clock_type = std::chrono::steady_clock;  // CLOCK_MONOTONIC: one clock for both processes

constexpr const char* channel = "rlock-floor:{f}:waiter";
constexpr const char* handoff_script =
    "redis.call('del', KEYS[1]) "
    "redis.call('hset', KEYS[1], ARGV[1], 1) "
    "redis.call('pexpire', KEYS[1], 30000) "
    "redis.call('publish', KEYS[2], ARGV[2]) "
    "return 1";

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch())
      .count();
}

bool write_all(int fd, const void* data, std::size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* data, std::size_t n) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

/// Reads one hand-off from the subscription: its send time (the payload).
long long read_handoff(redisContext* c) {
  void* raw = nullptr;
  if (redisGetReply(c, &raw) != REDIS_OK) {
    throw std::runtime_error(std::string("waiting for a hand-off: ") + c->errstr);
  }
  reply_ptr m(static_cast<redisReply*>(raw));
  if (m->type != REDIS_REPLY_ARRAY || m->elements != 3) {
    throw std::runtime_error("unexpected push on the subscription");
  }
  return std::stoll(m->element[2]->str);
}

/// Delays (receipt - send, ns) of `count` hand-offs read by this thread itself.
std::vector<long long> receive_direct(redisContext* c, int count) {
  std::vector<long long> delays(static_cast<std::size_t>(count));
  for (long long& d : delays) {
    const long long sent = read_handoff(c);
    d = now_ns() - sent;
  }
  return delays;
}

/// The same, as a client with an I/O thread sees it: that thread reads each hand-off and wakes
/// this one, asleep on a futex, which notes the time when it runs.
std::vector<long long> receive_through_io_thread(redisContext* c, int count) {
  std::vector<long long> sent(static_cast<std::size_t>(count));
  std::atomic<std::uint32_t> received{0};  // hand-offs read so far; the futex word
  std::string error;
  std::thread io([&] {
    try {
      for (int i = 0; i < count; ++i) {
        sent[static_cast<std::size_t>(i)] = read_handoff(c);
        received.store(static_cast<std::uint32_t>(i + 1), std::memory_order_release);
        futex(received, FUTEX_WAKE_PRIVATE, 1);
      }
    } catch (const std::exception& e) {
      error = e.what();
      received.store(static_cast<std::uint32_t>(count) + 1, std::memory_order_release);
      futex(received, FUTEX_WAKE_PRIVATE, 1);
    }
  });
  std::vector<long long> delays(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    std::uint32_t n = 0;
    while ((n = received.load(std::memory_order_acquire)) <= static_cast<std::uint32_t>(i)) {
      futex(received, FUTEX_WAIT_PRIVATE, n);
    }
    if (n > static_cast<std::uint32_t>(count)) break;
    delays[static_cast<std::size_t>(i)] = now_ns() - sent[static_cast<std::size_t>(i)];
  }
  io.join();
  if (!error.empty()) throw std::runtime_error(error);
  return delays;
}

/// The waiter process: subscribes, says so on `ready_fd`, then receives `count` hand-offs and
/// writes the delay of each (ns, receipt - payload) to `out_fd`. Exit status 0, or 1.
int waiter(int port, int count, bool io_thread, int ready_fd, int out_fd) {
  try {
    context_ptr c = connect(port);
    command(c.get(), {"SUBSCRIBE", channel});
    if (!write_all(ready_fd, "r", 1)) return 1;
    const std::vector<long long> delays =
        io_thread ? receive_through_io_thread(c.get(), count) : receive_direct(c.get(), count);
    return write_all(out_fd, delays.data(), delays.size() * sizeof(long long)) ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "rlock_handoff_floor (waiter): " << e.what() << "\n";
    return 1;
  }
}

struct floor_result {
  std::string command;
  double mean_us = 0, p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;
  double server_us_per_call = 0;  // the server's time in the series' command (commandstats)
};

/// The server's µs per call of `name` between two INFO commandstats texts (0 if it ran none).
double us_per_call(const std::string& before, const std::string& after, const std::string& name) {
  using rlock::cli::commandstats_delta;
  using rlock::cli::commandstats_field;
  const rlock::cli::command_counts calls = commandstats_delta(before, after);
  const rlock::cli::command_counts usec =
      commandstats_delta(before, after, commandstats_field::usec);
  const auto c = calls.find(name);
  const auto u = usec.find(name);
  if (c == calls.end() || u == usec.end()) return 0;
  return static_cast<double>(u->second) / static_cast<double>(c->second);
}

/// Runs one series: a waiter process, `count` hand-offs sent `gap` apart by this one.
floor_result measure(int port, const std::string& what, int count, std::chrono::microseconds gap) {
  const bool io_thread = what == "script_io_thread";
  int ready[2];
  int out[2];
  if (::pipe(ready) != 0 || ::pipe(out) != 0) throw std::runtime_error("pipe failed");
  std::cout.flush();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(ready[0]);
    ::close(out[0]);
    ::_exit(waiter(port, count, io_thread, ready[1], out[1]));
  }
  ::close(ready[1]);
  ::close(out[1]);
  struct read_ends {  // this process's ends of the two pipes, closed on every way out
    int ready, out;
    ~read_ends() {
      ::close(ready);
      ::close(out);
    }
  } const from_waiter{ready[0], out[0]};
  const auto reap = [pid](bool kill) {
    if (kill) ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  };
  std::vector<long long> delays(static_cast<std::size_t>(count));
  double server_us_per_call = 0;
  try {
    char byte = 0;
    if (!read_all(from_waiter.ready, &byte, 1)) {
      throw std::runtime_error("the waiter did not subscribe");
    }
    context_ptr c = connect(port);
    const std::string sha = command(c.get(), {"SCRIPT", "LOAD", handoff_script})->str;
    const std::string counted = what == "publish" ? "publish" : "evalsha";
    const std::string stats_before = command(c.get(), {"INFO", "commandstats"})->str;
    for (int i = 0; i < count; ++i) {
      std::this_thread::sleep_for(gap);
      const std::string sent = std::to_string(now_ns());
      if (what == "publish") {
        command(c.get(), {"PUBLISH", channel, sent});
      } else {
        command(c.get(), {"EVALSHA", sha, "2", "rlock-floor:{f}", channel, "waiter:1", sent});
      }
    }
    server_us_per_call =
        us_per_call(stats_before, command(c.get(), {"INFO", "commandstats"})->str, counted);
    command(c.get(), {"DEL", "rlock-floor:{f}"});
    if (!read_all(from_waiter.out, delays.data(), delays.size() * sizeof(long long))) {
      throw std::runtime_error("the waiter missed a hand-off (see its error above)");
    }
  } catch (...) {
    reap(true);
    throw;
  }
  if (!reap(false)) throw std::runtime_error("the waiter failed");

  std::sort(delays.begin(), delays.end());
  const auto at = [&](double q) {
    return static_cast<double>(
               delays[static_cast<std::size_t>(q * static_cast<double>(delays.size() - 1))]) /
           1e3;
  };
  floor_result r;
  r.command = what;
  r.mean_us = static_cast<double>(std::accumulate(delays.begin(), delays.end(), 0LL)) /
              static_cast<double>(delays.size()) / 1e3;
  r.p50_us = at(0.5);
  r.p90_us = at(0.9);
  r.p99_us = at(0.99);
  r.max_us = at(1.0);
  r.server_us_per_call = server_us_per_call;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "The floor of a cross-process hand-off through one Redis server (hiredis, "
      "no lock library)");
  int port = 0;
  int gap_us = 1000;
  int count = 2000;
  bool json = false;
  app.add_option("--port", port, "Server on 127.0.0.1 (default: a throwaway redis-server)")
      ->check(CLI::Range(1, 65535));
  app.add_option("--gap", gap_us, "Idle µs before each hand-off (the hold)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  app.add_option("--count", count, "Hand-offs per command")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_flag("--json", json, "One JSON object on one line");
  CLI11_PARSE(app, argc, argv);

  try {
    std::optional<rlock::examples::throwaway_server> server;
    if (port == 0) {
      server.emplace();
      port = server->port();
    }
    std::vector<floor_result> results;
    for (const char* what : {"publish", "script", "script_io_thread"}) {
      results.push_back(measure(port, what, count, std::chrono::microseconds(gap_us)));
    }
    if (json) {
      std::printf("{\"gap_us\":%d,\"count\":%d", gap_us, count);
      for (const auto& r : results) {
        std::printf(
            ",\"%s\":{\"mean_us\":%.1f,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,"
            "\"max_us\":%.1f,\"server_us_per_call\":%.1f}",
            r.command.c_str(), r.mean_us, r.p50_us, r.p90_us, r.p99_us, r.max_us,
            r.server_us_per_call);
      }
      std::printf("}\n");
    } else {
      std::printf("hand-off floor, %d µs idle before each, %d each:\n", gap_us, count);
      for (const auto& r : results) {
        std::printf(
            "  %-16s mean %.1f µs  p50 %.1f  p90 %.1f  p99 %.1f  max %.1f  (server %.1f µs per "
            "call)\n",
            r.command.c_str(), r.mean_us, r.p50_us, r.p90_us, r.p99_us, r.max_us,
            r.server_us_per_call);
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "rlock_handoff_floor: " << e.what() << "\n";
    return 1;
  }
}
