// The least a blocking client of many threads costs on this machine: the bare blocking client.
//
//   rlock_bare_blocking [--port P] [--threads 32] [--duration 3000] [--json]
//
// `--threads` threads each make blocking calls, back to back, for `--duration` ms. A call hands
// its command to one I/O thread and sleeps on a futex until that thread has its reply: the shape
// of every blocking API over one connection with an I/O thread (rlock's blocking calls, and
// Redisson's sync API on Netty), with nothing else. The I/O thread waits in poll() on the socket
// and an eventfd (written only when it sleeps), writes whatever is queued in one write, parses
// replies with hiredis's reader and wakes each caller. The command is the ceiling's: EVALSHA of
// bench/compare's small Redisson-style acquire script, a key per thread; a cycle is two calls,
// as a lock+unlock cycle is.
//
// No lock library, no lease, no bookkeeping, no polling before sleeping: what remains is the
// round trip and the two thread hand-offs of each call. bench/compare reports rlock's blocking
// 32-thread row against it, so what a row loses to the wake-ups of blocking threads (which an
// event loop of async chains never pays) is measured in the same run, not guessed.
//
// Figures: cycles/s, the client's CPU per cycle (getrusage, all threads), its context switches
// per cycle, and the server's main-thread CPU per cycle (INFO cpu before and after).
// Without --port it starts a throwaway redis-server on a free loopback port. Bounded: the run
// stops after --duration (at most 60 s); a reply not seen within 5 s is an error (exit 1).
#include <hiredis/hiredis.h>
#include <linux/futex.h>  // FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cli/bench_server_cpu.hpp"
#include "futex_word.hpp"
#include "hiredis_session.hpp"
#include "throwaway_server.hpp"

namespace {

using rlock::bench::command;
using rlock::bench::connect;
using rlock::bench::context_ptr;
using rlock::bench::futex;
using rlock::bench::reply_ptr;

// bench/compare_ceilings.py's ACQUIRE_SCRIPT (the ceiling's), byte for byte.
constexpr const char* ceiling_script =
    "if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) "
    "then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; end; return redis.call('pttl', KEYS[1]);";
constexpr int reply_timeout_ms = 5000;

/// For failures while the callers run: they may be asleep waiting for replies that will not
/// come, so the process ends at once.
[[noreturn]] void fail(const std::string& what) {
  std::cerr << "rlock_bare_blocking: " << what << "\n";
  std::_Exit(1);
}

/// The server main thread's CPU seconds so far (INFO cpu; the whole process on servers before
/// Redis 7), or negative when the server reports neither.
double server_cpu_s(redisContext* c) {
  const reply_ptr r = command(c, {"INFO", "cpu"});
  return rlock::cli::parse_server_cpu_seconds(std::string_view(r->str, r->len));
}

/// One blocking call's hand-over between its caller and the I/O thread.
struct call {
  static constexpr std::uint32_t empty = 0;
  static constexpr std::uint32_t ready = 1;
  static constexpr std::uint32_t sleeping = 2;
  std::atomic<std::uint32_t> state{empty};
  std::string bytes;  // the formatted command
  bool ok = false;    // the reply was the script's (nil or a TTL)
};

/// One connection driven by one I/O thread; any thread may submit().
class io_thread {
 public:
  explicit io_thread(int fd) : fd_(fd), efd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (efd_ < 0) fail("eventfd failed");
    reader_ = redisReaderCreate();
    thread_ = std::thread([this] { run(); });
  }
  ~io_thread() {
    stop_.store(true);
    poke();
    thread_.join();
    redisReaderFree(reader_);
    ::close(efd_);
  }
  io_thread(const io_thread&) = delete;
  io_thread& operator=(const io_thread&) = delete;

  /// Queues `c`; wakes the I/O thread only if it sleeps in poll().
  void submit(call& c) {
    {
      std::lock_guard lk(mu_);
      queue_.push_back(&c);
    }
    if (idle_.exchange(false)) poke();
  }

 private:
  void poke() const {
    const std::uint64_t one = 1;
    if (::write(efd_, &one, sizeof one) < 0 && errno != EAGAIN) fail("eventfd write failed");
  }

  void run() {
    std::deque<call*> in_flight;
    std::string out;
    std::vector<call*> batch;
    char buf[65536];
    for (;;) {
      {
        std::lock_guard lk(mu_);
        batch.assign(queue_.begin(), queue_.end());
        queue_.clear();
      }
      for (call* c : batch) {
        out += c->bytes;
        in_flight.push_back(c);
      }
      while (!out.empty()) {
        const ssize_t n = ::send(fd_, out.data(), out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
        if (n <= 0) fail("write failed");
        out.erase(0, static_cast<std::size_t>(n));
      }
      if (stop_.load() && in_flight.empty() && out.empty()) return;
      // Sleep until a reply, room to write, or a submission (after checking for one: a
      // submitter that queued before idle_ was set did not poke).
      idle_.store(true);
      bool queued = false;
      {
        std::lock_guard lk(mu_);
        queued = !queue_.empty();
      }
      if (queued) {
        idle_.store(false);
      } else {
        pollfd fds[2] = {
            {fd_, static_cast<short>(POLLIN | (out.empty() ? 0 : POLLOUT)), 0},
            {efd_, POLLIN, 0},
        };
        const int n = ::poll(fds, 2, reply_timeout_ms);
        idle_.store(false);
        if (n < 0 && errno != EINTR) fail("poll failed");
        if (n == 0 && !in_flight.empty()) fail("no reply within 5 s");
        if ((fds[1].revents & POLLIN) != 0) {
          std::uint64_t v = 0;
          (void)::read(efd_, &v, sizeof v);
        }
        if ((fds[0].revents & (POLLERR | POLLHUP)) != 0) fail("connection lost");
        if ((fds[0].revents & POLLIN) == 0) continue;
      }
      // Read what has arrived and complete the calls it answers, in order.
      for (;;) {
        const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
        if (n <= 0) fail("connection lost");
        if (redisReaderFeed(reader_, buf, static_cast<std::size_t>(n)) != REDIS_OK) {
          fail("protocol error");
        }
        if (static_cast<std::size_t>(n) < sizeof buf) break;
      }
      void* raw = nullptr;
      while (redisReaderGetReply(reader_, &raw) == REDIS_OK && raw != nullptr) {
        const reply_ptr r(static_cast<redisReply*>(raw));
        if (in_flight.empty()) fail("a reply nobody asked for");
        call* c = in_flight.front();
        in_flight.pop_front();
        c->ok = r->type == REDIS_REPLY_NIL || r->type == REDIS_REPLY_INTEGER;
        if (c->state.exchange(call::ready) == call::sleeping) {
          futex(c->state, FUTEX_WAKE_PRIVATE, 1);
        }
        raw = nullptr;
      }
    }
  }

  const int fd_;
  const int efd_;
  redisReader* reader_ = nullptr;
  std::mutex mu_;
  std::vector<call*> queue_;
  std::atomic<bool> idle_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// Blocks until the I/O thread has the reply to `c`.
void wait(call& c) {
  std::uint32_t s = call::empty;
  if (c.state.compare_exchange_strong(s, call::sleeping)) s = call::sleeping;
  while (s != call::ready) {
    futex(c.state, FUTEX_WAIT_PRIVATE, call::sleeping);
    s = c.state.load();
  }
}

struct usage {
  double cpu_s;
  long switches;
};
usage process_usage() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return {static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
              static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6,
          ru.ru_nvcsw + ru.ru_nivcsw};
}

/// One measurement against 127.0.0.1:`port` (0: a throwaway server); prints it.
int run(int port, int threads, int duration_ms, bool json) {
  std::optional<rlock::examples::throwaway_server> server;
  if (port == 0) {
    server.emplace();
    port = server->port();
  }
  const context_ptr admin = connect(port);
  const reply_ptr loaded = command(admin.get(), {"SCRIPT", "LOAD", ceiling_script});
  const std::string sha(loaded->str, loaded->len);
  const context_ptr conn = connect(port);

  std::atomic<bool> stop{false};
  std::vector<long long> calls(static_cast<std::size_t>(threads), 0);
  std::vector<std::string> keys;
  const usage before = process_usage();
  const double server_before = server_cpu_s(admin.get());
  const auto start = std::chrono::steady_clock::now();
  {
    io_thread io(conn->fd);
    std::vector<std::thread> callers;
    callers.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) {
      callers.emplace_back([&, t] {
        call c;
        const std::string key = "rlock-bare:" + std::to_string(t);
        char* bytes = nullptr;
        const int len = redisFormatCommand(&bytes, "EVALSHA %s 1 %s 30000 bench-client:%d",
                                           sha.c_str(), key.c_str(), t);
        if (len < 0) fail("formatting the command failed");
        c.bytes.assign(bytes, static_cast<std::size_t>(len));
        redisFreeCommand(bytes);
        auto& mine = calls[static_cast<std::size_t>(t)];
        while (!stop.load(std::memory_order_relaxed)) {
          c.state.store(call::empty);
          io.submit(c);
          wait(c);
          if (!c.ok) fail("unexpected reply to the ceiling script");
          ++mine;
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(duration_ms));
    stop.store(true);
    for (auto& t : callers) t.join();
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const usage after = process_usage();
  const double server_after = server_cpu_s(admin.get());
  command(admin.get(), {"FLUSHDB"});

  long long total = 0;
  for (const long long n : calls) total += n;
  if (total < 2)
    throw std::runtime_error("no cycle completed in " + std::to_string(elapsed) + " s");
  const double cycles = static_cast<double>(total) / 2;
  const double cycles_per_s = cycles / elapsed;
  const double client_us = (after.cpu_s - before.cpu_s) * 1e6 / cycles;
  const double switches = static_cast<double>(after.switches - before.switches) / cycles;
  const double server_us = server_before < 0 ? -1 : (server_after - server_before) * 1e6 / cycles;
  if (json) {
    std::printf(
        "{\"threads\":%d,\"duration_s\":%.3f,\"calls\":%lld,\"cycles_per_s\":%.1f,"
        "\"client_cpu_us_per_cycle\":%.1f,\"context_switches_per_cycle\":%.2f,"
        "\"server_cpu_us_per_cycle\":%.1f}\n",
        threads, elapsed, total, cycles_per_s, client_us, switches, server_us);
  } else {
    std::printf(
        "bare blocking client, %d threads, %.1f s: %.0f cycles/s (2 calls each)\n"
        "  client %.1f µs CPU and %.2f context switches per cycle; server %.1f µs CPU per cycle\n",
        threads, elapsed, cycles_per_s, client_us, switches, server_us);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "The bare blocking client: threads that each wait on a futex for their reply from one "
      "I/O thread (hiredis's parser, no lock library)");
  int port = 0;
  int threads = 32;
  int duration_ms = 3000;
  bool json = false;
  app.add_option("--port", port, "Server on 127.0.0.1 (default: a throwaway redis-server)")
      ->check(CLI::Range(1, 65535));
  app.add_option("--threads", threads, "Calling threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--duration", duration_ms, "How long the threads call, in ms")
      ->capture_default_str()
      ->check(CLI::Range(100, 60000));
  app.add_flag("--json", json, "One JSON object on one line");
  CLI11_PARSE(app, argc, argv);

  // Setup and the final figures: a failure is an exception (the callers have not started, or
  // have all returned), which ends the run with exit status 1 after the server is stopped.
  try {
    return run(port, threads, duration_ms, json);
  } catch (const std::exception& e) {
    std::cerr << "rlock_bare_blocking: " << e.what() << "\n";
    return 1;
  }
}
