#include "bench_worker.hpp"

#include <limits.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <thread>
#include <vector>

#include "bench_options.hpp"
#include "command_error.hpp"
#include "connect.hpp"
#include "demo_events.hpp"
#include "demo_stats.hpp"
#include "demo_worker.hpp"
#include "duration_option.hpp"
#include "lock_before_end.hpp"

namespace rlock::cli {
namespace {

using clock = std::chrono::steady_clock;

/// Collects event lines and writes them in atomic chunks (whole lines, <= PIPE_BUF bytes).
class event_batch {
 public:
  ~event_batch() { flush(); }
  event_batch() = default;
  event_batch(const event_batch&) = delete;
  event_batch& operator=(const event_batch&) = delete;

  void add(const demo_event& e) {
    const std::string line = format_demo_event(e);
    if (buffer_.size() + line.size() > PIPE_BUF) flush();
    buffer_ += line;
  }
  void flush() {
    std::size_t done = 0;
    while (done < buffer_.size()) {
      const ssize_t n = ::write(demo_events_fd, buffer_.data() + done, buffer_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // the parent is gone: nothing left to tell
      done += static_cast<std::size_t>(n);
    }
    buffer_.clear();
  }

 private:
  std::string buffer_{};
};

struct thread_outcome {
  std::vector<critical_section> sections{};
  std::string error{};
};

void contend(rlock::client& client, rlock::lock l, const std::string& counter, int worker,
             std::chrono::milliseconds hold, long long start_ns, long long end_ns,
             thread_outcome& out) {
  const auto at = [](long long ns) { return clock::time_point(std::chrono::nanoseconds(ns)); };
  std::this_thread::sleep_until(at(start_ns));
  try {
    for (;;) {
      if (!lock_before_end(l, end_ns)) break;  // the run ended
      const long long acquired = steady_now_ns();
      if (acquired >= end_ns) {  // granted after the end instant: not counted (as for peers)
        l.unlock_or_throw();
        break;
      }
      const rlock::reply value = client.execute({"GET", counter});
      const long long n = value.is_nil() ? 0 : std::stoll(std::string(value.str()));
      client.execute({"SET", counter, std::to_string(n + 1)});
      std::this_thread::sleep_until(clock::now() + hold);
      out.sections.push_back({worker, acquired, steady_now_ns()});
      l.unlock_or_throw();
    }
  } catch (const std::exception& e) {
    out.error = e.what();
  }
}

}  // namespace

CLI::App* add_bench_worker_command(CLI::App& app, bench_worker_options& opts) {
  CLI::App* sub = app.add_subcommand("bench-worker", "internal: one worker of rlock bench");
  sub->group("");  // hidden
  sub->add_option("--id", opts.id)->required();
  sub->add_option("--name", opts.name)->required();
  sub->add_option("--parent", opts.parent)->required();
  sub->add_option("--threads", opts.threads)->check(CLI::Range(1, 1024));
  add_duration_option(*sub, "--hold", opts.hold, "work inside the critical section");
  add_duration_option(*sub, "--duration", opts.duration, "run time", duration_bound::positive);
  add_queue_option(*sub, opts.queue);
  add_connection_options(*sub, opts.connection);
  return sub;
}

int run_bench_worker(const bench_worker_options& o) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != static_cast<pid_t>(o.parent)) return exit_codes::software;
  event_batch events;
  try {
    rlock::config cfg = make_config(o.connection);
    cfg.lock_queue = o.queue == "on";
    rlock::client client = connect_checked(cfg);
    rlock::lock lock = client.get_lock(o.name);
    const std::string counter = o.name + ":counter";
    events.add({demo_event_kind::ready, o.id, 0, 0, {}});
    events.flush();
    const std::optional<long long> end_ns = read_go();
    if (!end_ns) return exit_codes::software;  // the parent went away before "go"
    const long long start_ns = *end_ns - std::chrono::nanoseconds(o.duration).count();

    std::vector<thread_outcome> outcomes(static_cast<std::size_t>(o.threads));
    {
      std::vector<std::jthread> threads;
      threads.reserve(outcomes.size());
      for (int t = 0; t < o.threads; ++t) {
        threads.emplace_back(contend, std::ref(client), lock, std::cref(counter),
                             o.id * o.threads + t, o.hold, start_ns, *end_ns,
                             std::ref(outcomes[static_cast<std::size_t>(t)]));
      }
    }
    int status = exit_codes::ok;
    for (int t = 0; t < o.threads; ++t) {
      const thread_outcome& out = outcomes[static_cast<std::size_t>(t)];
      const int worker = o.id * o.threads + t;
      long long seq = 0;
      for (const critical_section& cs : out.sections) {
        ++seq;
        events.add({demo_event_kind::acquired, worker, seq, cs.acquired_ns, {}});
        events.add({demo_event_kind::released, worker, seq, cs.released_ns, {}});
      }
      if (!out.error.empty()) {
        events.add({demo_event_kind::error, worker, 0, 0, out.error});
        status = exit_codes::software;
      }
      events.add({demo_event_kind::done, worker, seq, 0, {}});
    }
    return status;
  } catch (const command_error& e) {
    events.add({demo_event_kind::error, o.id * o.threads, 0, 0, e.what()});
    return e.code();
  } catch (const rlock::error& e) {
    events.add({demo_event_kind::error, o.id * o.threads, 0, 0, e.what()});
    return exit_code_for(e.code());
  }
}

}  // namespace rlock::cli
