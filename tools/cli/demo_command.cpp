#include "demo_command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <random>
#include <system_error>

#include "command_error.hpp"
#include "connect.hpp"
#include "demo_event_log.hpp"
#include "demo_events.hpp"
#include "demo_stats.hpp"
#include "demo_timeline.hpp"
#include "demo_workers.hpp"
#include "duration.hpp"
#include "duration_option.hpp"
#include "signal_channel.hpp"
#include "signal_names.hpp"
#include "throwaway_server.hpp"  // tools/

namespace rlock::cli {
namespace {

using std::chrono::milliseconds;

std::string random_suffix() {
  std::random_device rd;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
  return buf;
}

std::string ms_text(milliseconds d) {
  return std::to_string(d.count()) + "ms";
}

/// The worker's command line after "--id I": the lock, the work and the connection.
std::vector<std::string> worker_arguments(const std::string& name, const demo_options& o,
                                          const connection_options& c) {
  std::vector<std::string> a{"--name", name,           "--parent", std::to_string(::getpid()),
                             "--hold", ms_text(o.hold)};
  const std::vector<std::string> connection = connection_arguments(c);
  a.insert(a.end(), connection.begin(), connection.end());
  return a;
}

int poll_timeout_ms(long long until_ns) {
  const long long left = until_ns - steady_now_ns();
  if (left <= 0) return 0;
  return static_cast<int>(std::min<long long>(left / 1'000'000 + 1, 60'000));
}

}  // namespace

CLI::App* add_demo_command(CLI::App& app, demo_options& opts) {
  CLI::App* sub = app.add_subcommand(
      "demo", "Worker processes contend for one lock: live timeline and checked summary");
  sub->add_option("url", opts.url_argument,
                  "Redis server (same as --url; default: a throwaway redis-server)")
      ->type_name("URL");
  sub->add_option("--workers", opts.workers, "Worker processes (1 to 64)")
      ->type_name("N")
      ->check(CLI::Range(1, 64).description(""))
      ->capture_default_str();
  add_duration_option(*sub, "--duration", opts.duration, "How long the workers contend",
                      duration_bound::positive);
  add_duration_option(*sub, "--hold", opts.hold,
                      "Simulated work inside each critical section, between GET and SET");
  add_connection_options(*sub, opts.connection);
  sub->footer(
      "Each worker loops: acquire the lock, GET a counter, sleep --hold, SET counter+1,\n"
      "release. Lost updates or overlapping critical sections would show in the summary:\n"
      "the counter must equal the acquisitions and overlaps must be 0. Hand-off latency is the\n"
      "time from one worker's release to the next worker's acquire, across processes\n"
      "(steady_clock timestamps are comparable between processes of one machine).\n"
      "Without a URL ($RLOCK_URL or --url) the demo starts a throwaway redis-server.\n"
      "\n"
      "Exit status: 0 all checks passed; 1 a check failed; 64 usage; 69 server unavailable;\n"
      "130/143 interrupted.\n");
  return sub;
}

int run_demo(const demo_options& o) {
  connection_options conn = o.connection;
  if (!o.url_argument.empty()) {
    if (!conn.url.empty()) throw usage_error("give the URL once: as an argument or with --url");
    conn.url = o.url_argument;
  }
  std::optional<rlock::examples::throwaway_server> server;
  const char* env_url = std::getenv("RLOCK_URL");  // NOLINT(concurrency-mt-unsafe): no setenv
  if (conn.url.empty() && (env_url == nullptr || *env_url == '\0')) {
    try {
      server.emplace();  // before any thread or blocked signal: redis-server inherits neither
    } catch (const std::exception& e) {
      throw command_error(exit_codes::unavailable, e.what());
    }
    conn.url = server->url();
    std::cout << "rlock demo: started a throwaway redis-server on " << conn.url << "\n";
  }
  // conn.url stays empty for a URL from $RLOCK_URL: it may hold a password, which an option
  // must not (make_config refuses it, and the workers' options show in ps); the workers inherit
  // the environment.
  const rlock::config cfg = make_config(conn);
  const std::optional<std::string> password = resolve_password(conn);

  signal_channel signals{SIGINT, SIGTERM, SIGCHLD};
  rlock::client client = connect_checked(cfg, &signals);
  const std::string name = "rlock-demo:" + random_suffix();
  const std::string counter = name + ":counter";
  const auto redis = [&](const std::vector<std::string>& args) {
    try {
      return client.execute(args);
    } catch (const rlock::error& e) {
      throw command_error(exit_code_for(e.code()), e.what());
    }
  };
  redis({"DEL", name, counter});

  int events[2];
  if (::pipe2(events, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw command_error(exit_codes::software,
                        std::string("pipe: ") + std::system_category().message(errno));
  }
  // The workers' copies are their fd 3 (without O_NONBLOCK: set on the read end only).
  ::fcntl(events[1], F_SETFL, 0);
  std::vector<std::string> env;
  if (password) env.push_back("RLOCK_PASSWORD=" + *password);
  event_reader reader(events[0]);
  std::optional<demo_workers> workers;
  try {
    workers.emplace(o.workers, worker_arguments(name, o, conn), env, events[1]);
  } catch (...) {
    ::close(events[0]);
    ::close(events[1]);
    throw;
  }
  ::close(events[1]);  // EOF on events[0] once every worker has exited

  std::cout << "rlock demo: " << o.workers << " worker processes contend for lock '" << name
            << "' on "
            << (conn.master_name.empty() ? rlock::parse_url(resolve_url(conn)).to_string()
                                         : "master '" + conn.master_name + "'")
            << " for " << format_duration(o.duration) << " (hold " << format_duration(o.hold)
            << ")\n"
            << std::flush;

  demo_record record;
  int interrupted_by = 0;
  const auto handle_signals = [&] {
    while (auto info = signals.next()) {
      const int sig = static_cast<int>(info->ssi_signo);
      if (sig == SIGCHLD) continue;
      if (interrupted_by == 0) interrupted_by = sig;
      workers->signal_all(SIGTERM);
    }
    workers->reap();
  };

  // 1. Every worker connected and ready (bounded by the connect timeout).
  const long long ready_deadline =
      steady_now_ns() + std::chrono::nanoseconds(cfg.connect_timeout).count() + 5'000'000'000LL;
  while (record.ready < o.workers && interrupted_by == 0) {
    if (workers->running() < static_cast<std::size_t>(o.workers) || reader.at_eof()) break;
    if (steady_now_ns() >= ready_deadline) break;
    pollfd fds[2] = {{reader.fd(), POLLIN, 0}, {signals.fd(), POLLIN, 0}};
    ::poll(fds, 2, poll_timeout_ms(ready_deadline));
    reader.pump([&](const demo_event& e) { record_event(record, e); });
    handle_signals();
  }
  if (record.ready < o.workers) {
    for (const auto& e : record.errors) std::cerr << "rlock demo: " << e << "\n";
    if (interrupted_by != 0) {
      throw command_error(exit_codes::signal_base + interrupted_by,
                          "interrupted by " + signal_name(interrupted_by));
    }
    throw command_error(exit_codes::check_failed, "only " + std::to_string(record.ready) + " of " +
                                                      std::to_string(o.workers) +
                                                      " workers became ready");
  }

  // 2. Contend until the end, then wait for the workers (bounded by the grace period).
  const long long start_ns = steady_now_ns();
  const long long end_ns = start_ns + std::chrono::nanoseconds(o.duration).count();
  const milliseconds grace = o.hold + 2 * conn.timeout + milliseconds(2000);
  const long long kill_ns = end_ns + std::chrono::nanoseconds(grace).count();
  const milliseconds interval =
      std::max(milliseconds(1000), milliseconds((o.duration.count() / 20 + 999) / 1000 * 1000));
  demo_timeline timeline(std::cout, o.workers, start_ns, interval);
  workers->go(end_ns);
  bool killed = false;
  while (!reader.at_eof() || workers->running() > 0) {
    long long wake_ns = killed ? steady_now_ns() + 1'000'000'000LL : kill_ns;
    if (timeline.next_tick_ns() <= end_ns) wake_ns = std::min(wake_ns, timeline.next_tick_ns());
    pollfd fds[2] = {{reader.at_eof() ? -1 : reader.fd(), POLLIN, 0}, {signals.fd(), POLLIN, 0}};
    ::poll(fds, 2, poll_timeout_ms(wake_ns));
    reader.pump([&](const demo_event& e) {
      record_event(record, e);
      timeline.on_event(e);
    });
    handle_signals();
    const long long now = steady_now_ns();
    timeline.tick(std::min(now, end_ns));
    if (!killed && now >= kill_ns && workers->running() > 0) {
      std::cerr << "rlock demo: " << workers->running() << " worker(s) still running "
                << format_duration(grace) << " after the end; killing them\n";
      workers->signal_all(SIGKILL);
      killed = true;
    }
  }
  ::close(events[0]);
  const long long finished_ns = steady_now_ns();
  timeline.finish(std::min(finished_ns, end_ns));

  // 3. The checks.
  const rlock::reply counter_reply = redis({"GET", counter});
  const long long counter_value =
      counter_reply.is_nil() ? 0 : std::atoll(std::string(counter_reply.str()).c_str());
  redis({"DEL", name, counter});
  const demo_stats stats = compute_demo_stats(record.sections, o.workers);
  const std::size_t incomplete = record.open.size();
  std::size_t failed_workers = 0;
  for (const auto& s : workers->statuses()) failed_workers += (s && *s == 0) ? 0 : 1;

  const double seconds = static_cast<double>(std::min(finished_ns, end_ns) - start_ns) / 1e9;
  const bool counter_ok = counter_value == static_cast<long long>(stats.acquisitions);
  std::cout << "summary\n";
  std::cout << "  acquisitions  " << stats.acquisitions << " in " << format_duration(o.duration)
            << " ("
            << static_cast<long long>(static_cast<double>(stats.acquisitions) /
                                      std::max(seconds, 1e-3))
            << "/s) by " << o.workers << " workers\n";
  std::cout << "  per worker   ";
  for (std::size_t w = 0; w < stats.per_worker.size(); ++w) {
    std::cout << " w" << w << " " << stats.per_worker[w];
  }
  std::cout << "\n";
  std::cout << "  counter       " << counter_value
            << " (must equal acquisitions): " << (counter_ok ? "ok" : "MISMATCH") << "\n";
  std::cout << "  overlaps      " << stats.overlaps
            << " (must be 0): " << (stats.overlaps == 0 ? "ok" : "FAILED") << "\n";
  std::cout << "  hand-offs     " << stats.handoff_ns.size() << " between workers: p50 "
            << format_latency_ns(percentile(stats.handoff_ns, 50)) << "  p99 "
            << format_latency_ns(percentile(stats.handoff_ns, 99)) << "  max "
            << format_latency_ns(stats.handoff_ns.empty() ? 0 : stats.handoff_ns.back()) << "\n";
  if (!stats.reacquire_ns.empty()) {
    std::cout << "  re-acquired   " << stats.reacquire_ns.size() << " by the same worker: p50 "
              << format_latency_ns(percentile(stats.reacquire_ns, 50)) << "  p99 "
              << format_latency_ns(percentile(stats.reacquire_ns, 99)) << "\n";
  }
  if (incomplete > 0)
    std::cout << "  incomplete    " << incomplete << " critical sections never released\n";
  for (const auto& e : record.errors) std::cout << "  error         " << e << "\n";
  std::cout << "acquisitions=" << stats.acquisitions << " counter=" << counter_value
            << " overlaps=" << stats.overlaps << " incomplete=" << incomplete << "\n";

  std::string failures;
  const auto fail = [&failures](const std::string& what) {
    failures += (failures.empty() ? "" : ", ") + what;
  };
  if (!counter_ok) fail("counter != acquisitions");
  if (stats.overlaps > 0) fail("overlapping critical sections");
  if (incomplete > 0) fail("unfinished critical sections");
  if (failed_workers > 0) fail(std::to_string(failed_workers) + " worker(s) failed");
  if (interrupted_by != 0) fail("interrupted by " + signal_name(interrupted_by));
  std::cout << (failures.empty() ? "result: ok" : "result: FAILED (" + failures + ")") << std::endl;
  if (interrupted_by != 0) return exit_codes::signal_base + interrupted_by;
  return failures.empty() ? exit_codes::ok : exit_codes::check_failed;
}

}  // namespace rlock::cli
