#include "bench_contended.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <sstream>
#include <system_error>

#include "bench_commandstats.hpp"
#include "bench_keys.hpp"
#include "bench_latency.hpp"
#include "bench_options.hpp"
#include "command_error.hpp"
#include "connect.hpp"
#include "demo_event_log.hpp"
#include "demo_stats.hpp"
#include "demo_workers.hpp"
#include "duration.hpp"
#include "duration_option.hpp"

namespace rlock::cli {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

std::string ms_text(milliseconds d) {
  return std::to_string(d.count()) + "ms";
}

std::vector<std::string> worker_arguments(const std::string& name, const contended_options& o,
                                          const connection_options& c) {
  std::vector<std::string> a{"--name",     name,
                             "--parent",   std::to_string(::getpid()),
                             "--threads",  std::to_string(o.threads),
                             "--hold",     ms_text(o.hold),
                             "--duration", ms_text(o.duration),
                             "--queue",    o.queue};
  const std::vector<std::string> connection = connection_arguments(c);
  a.insert(a.end(), connection.begin(), connection.end());
  return a;
}

/// Polls the events pipe until `done()` or `until_ns`, reaping workers as they exit.
template <class Done>
void pump_until(event_reader& reader, demo_workers& workers, demo_record& record,
                long long until_ns, Done done) {
  while (!done() && steady_now_ns() < until_ns) {
    pollfd fd{reader.at_eof() ? -1 : reader.fd(), POLLIN, 0};
    const long long left_ms = (until_ns - steady_now_ns()) / 1'000'000 + 1;
    ::poll(&fd, 1, static_cast<int>(std::clamp<long long>(left_ms, 0, 50)));
    reader.pump([&](const demo_event& e) { record_event(record, e); });
    workers.reap();
  }
}

struct contended_figures {
  demo_stats stats{};
  // Hand-off figures come from stats.handoff_ns (a next holder in another worker). A worker
  // taking the lock straight back (stats.reacquire_ns) is no hand-off: counted apart, and only
  // in the mean gap.
  double gap_mean_ns = 0;  ///< every gap, re-acquisitions included (utilisation = H / (H + gap))
  double utilisation = 0;
  double fairness = 0;
};

contended_figures figures_of(std::vector<critical_section> sections, int workers) {
  contended_figures f;
  long long first = 0;
  long long last = 0;
  long long held = 0;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const critical_section& cs = sections[i];
    first = i == 0 ? cs.acquired_ns : std::min(first, cs.acquired_ns);
    last = i == 0 ? cs.released_ns : std::max(last, cs.released_ns);
    held += cs.released_ns - cs.acquired_ns;
  }
  f.utilisation = last > first ? static_cast<double>(held) / static_cast<double>(last - first) : 0;
  f.stats = compute_demo_stats(std::move(sections), workers);
  const std::size_t gaps = f.stats.handoff_ns.size() + f.stats.reacquire_ns.size();
  if (gaps > 0) {
    double sum = 0;
    for (const long long g : f.stats.handoff_ns) sum += static_cast<double>(g);
    for (const long long g : f.stats.reacquire_ns) sum += static_cast<double>(g);
    f.gap_mean_ns = sum / static_cast<double>(gaps);
  }
  const auto [lo, hi] = std::minmax_element(f.stats.per_worker.begin(), f.stats.per_worker.end());
  if (lo != f.stats.per_worker.end() && *hi > 0) {
    f.fairness = static_cast<double>(*lo) / static_cast<double>(*hi);
  }
  return f;
}

}  // namespace

void add_contended_options(CLI::App& sub, contended_options& opts) {
  add_count_option(sub, "--processes", opts.processes, "Worker processes (1 to 64)", "P", 64);
  add_count_option(sub, "--threads", opts.threads, "Threads per worker process (1 to 64)", "T", 64);
  add_duration_option(sub, "--hold", opts.hold, "Hold inside each critical section, after GET+SET");
  add_duration_option(sub, "--duration", opts.duration, "How long the workers contend",
                      duration_bound::positive);
  add_queue_option(sub, opts.queue);
  sub.footer(
      "Each worker (process x thread) loops: lock, GET a counter, SET counter+1, hold, unlock,\n"
      "from one common start to one common end instant. Utilisation: sum of holds / span from\n"
      "first acquire to last release. Hand-off: next acquire - previous release, when the next\n"
      "holder is another worker (a worker taking the lock straight back is a re-acquisition,\n"
      "counted apart). Fairness: min/max acquisitions per worker. Client requests per "
      "acquisition:\n"
      "INFO commandstats deltas of the commands rlock clients send themselves (scripts,\n"
      "pub/sub, connection upkeep), not those run inside scripts nor the GET/SET. Lost updates\n"
      "(acquisitions - counter) and overlapping critical sections must be 0. Server time in\n"
      "scripts: INFO commandstats usec of EVALSHA/EVAL (the server's wall clock in each script,\n"
      "the commands it runs included), per acquisition and per script.\n");
}

bench_report run_contended(const contended_options& o, const connection_options& conn) {
  const rlock::config cfg = make_config(conn);
  const std::optional<std::string> password = resolve_password(conn);
  rlock::client client = connect_checked(cfg);
  const std::string prefix = bench_prefix();
  const std::string name = prefix + "contended";

  int events[2];
  if (::pipe2(events, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw command_error(exit_codes::software,
                        std::string("pipe: ") + std::system_category().message(errno));
  }
  ::fcntl(events[1], F_SETFL, 0);  // the workers' end blocks
  std::vector<std::string> env;
  if (password) env.push_back("RLOCK_PASSWORD=" + *password);
  event_reader reader(events[0]);
  std::optional<demo_workers> workers;
  try {
    workers.emplace(o.processes, worker_arguments(name, o, conn), env, events[1], "bench-worker");
  } catch (...) {
    ::close(events[0]);
    ::close(events[1]);
    throw;
  }
  ::close(events[1]);  // EOF on events[0] once every worker has exited

  // 1. Every worker connected (bounded by the connect timeout).
  demo_record record;
  pump_until(reader, *workers, record,
             steady_now_ns() + nanoseconds(cfg.connect_timeout).count() + 5'000'000'000LL, [&] {
               return record.ready == o.processes || reader.at_eof() ||
                      workers->running() < static_cast<std::size_t>(o.processes);
             });
  if (record.ready < o.processes) {
    ::close(events[0]);
    std::string why = record.errors.empty() ? "" : ": " + record.errors.front();
    throw command_error(exit_codes::check_failed, "only " + std::to_string(record.ready) + " of " +
                                                      std::to_string(o.processes) +
                                                      " workers became ready" + why);
  }

  // 2. Contend from a common start to a common end, then collect the records.
  const std::string before = read_commandstats_info(client);
  const long long start_ns = steady_now_ns() + 50'000'000LL;
  const long long end_ns = start_ns + nanoseconds(o.duration).count();
  workers->go(end_ns);
  const milliseconds grace = o.hold + 2 * conn.timeout + milliseconds(2000);
  pump_until(reader, *workers, record, end_ns + nanoseconds(grace).count(),
             [&] { return reader.at_eof() && workers->running() == 0; });
  const bool killed = workers->running() > 0;
  if (killed) workers->signal_all(SIGKILL);
  pump_until(reader, *workers, record, steady_now_ns() + 5'000'000'000LL,
             [&] { return reader.at_eof() && workers->running() == 0; });
  ::close(events[0]);
  const std::string after = read_commandstats_info(client);
  const command_counts delta = commandstats_delta(before, after);
  const command_counts usec_delta = commandstats_delta(before, after, commandstats_field::usec);

  // 3. Checks and figures.
  const rlock::reply counter_reply = client.execute({"GET", name + ":counter"});
  const long long counter =
      counter_reply.is_nil() ? 0 : std::atoll(std::string(counter_reply.str()).c_str());
  delete_run_keys(client, prefix);
  std::size_t failed_workers = 0;
  for (const auto& s : workers->statuses()) failed_workers += (s && *s == 0) ? 0 : 1;
  const int worker_count = o.processes * o.threads;
  const contended_figures f = figures_of(record.sections, worker_count);
  const auto acquisitions = static_cast<long long>(f.stats.acquisitions);
  const long long lost = acquisitions - counter;
  const double seconds = static_cast<double>(o.duration.count()) / 1e3;
  const long long requests = client_requests(delta);
  const double per_acquisition =
      acquisitions > 0 ? static_cast<double>(requests) / static_cast<double>(acquisitions) : 0.0;
  // The server's time in the scripts, per acquisition and per script (INFO commandstats usec).
  const long long scripts = scripts_run(delta);
  const long long script_usec = scripts_run(usec_delta);
  const double script_us_per_acquisition =
      acquisitions > 0 ? static_cast<double>(script_usec) / static_cast<double>(acquisitions) : 0.0;
  const double us_per_script =
      scripts > 0 ? static_cast<double>(script_usec) / static_cast<double>(scripts) : 0.0;
  const std::vector<long long>& handoff_ns = f.stats.handoff_ns;      // sorted
  const std::vector<long long>& reacquire_ns = f.stats.reacquire_ns;  // sorted
  const long long max_handoff = handoff_ns.empty() ? 0 : handoff_ns.back();

  bench_report report;
  report.check(lost == 0, std::to_string(lost) + " lost update(s)");
  report.check(f.stats.overlaps == 0, std::to_string(f.stats.overlaps) + " overlap(s)");
  report.check(record.open.empty(),
               std::to_string(record.open.size()) + " unfinished critical section(s)");
  report.check(failed_workers == 0, std::to_string(failed_workers) + " worker(s) failed");
  report.check(!killed, "workers still running after the grace period were killed");
  for (const auto& e : record.errors) report.failures.push_back(e);

  json_object handoff;
  handoff.add_us("p50", percentile(handoff_ns, 50))
      .add_us("p99", percentile(handoff_ns, 99))
      .add_us("max", max_handoff);
  json_object commands;
  for (const auto& [cmd, calls] : delta) commands.add(cmd, calls);
  std::vector<long long> per_worker(f.stats.per_worker.begin(), f.stats.per_worker.end());
  report.json.add("scenario", "contended")
      .add("library", "rlock")
      .add("mode", queue_mode_name(o.queue))
      .add("processes", o.processes)
      .add("threads", o.threads)
      .add("hold_us", static_cast<long long>(o.hold.count()) * 1000)
      .add("duration_s", seconds)
      .add("acquisitions", acquisitions)
      .add("acquisitions_per_s", static_cast<double>(acquisitions) / seconds, 1)
      .add("utilisation", f.utilisation, 4)
      .add("handoff_us", handoff)
      .add_us("handoff_samples_us", uniform_subsample(handoff_ns, report_max_samples, 0x4a7d))
      .add("fairness", f.fairness, 4)
      .add("per_worker", per_worker)
      .add("client_requests_per_acquisition", per_acquisition, 3)
      .add("client_requests", requests)
      .add("server_script_us_per_acquisition", script_us_per_acquisition, 1)
      .add("server_us_per_script", us_per_script, 1)
      .add("commands", commands)
      .add("lost_updates", lost)
      .add("overlaps", static_cast<long long>(f.stats.overlaps))
      .add("failed_workers", static_cast<long long>(failed_workers))
      .add("gap_mean_us", f.gap_mean_ns / 1e3, 1)
      .add("reacquisitions", static_cast<long long>(reacquire_ns.size()))
      .add_us("reacquire_p50_us", percentile(reacquire_ns, 50))
      .add("incomplete", static_cast<long long>(record.open.size()));

  std::ostringstream text;
  text << "contended: " << o.processes << " process(es) x " << o.threads
       << " thread(s) on one lock (" << queue_mode_name(o.queue) << "), hold "
       << format_duration(o.hold) << ", " << format_duration(o.duration) << "\n"
       << "  acquisitions  " << acquisitions << " ("
       << static_cast<long long>(static_cast<double>(acquisitions) / seconds) << "/s)\n"
       << "  utilisation   " << json_number(f.utilisation, 3) << "\n"
       << "  hand-off      p50 " << format_latency_ns(percentile(handoff_ns, 50)) << "  p99 "
       << format_latency_ns(percentile(handoff_ns, 99)) << "  max "
       << format_latency_ns(max_handoff) << " (" << handoff_ns.size() << " between workers)\n"
       << "  re-acquired   " << reacquire_ns.size() << " time(s) by the worker that released"
       << (reacquire_ns.empty() ? std::string()
                                : ", p50 " + format_latency_ns(percentile(reacquire_ns, 50)))
       << "\n"
       << "  fairness      " << json_number(f.fairness, 3) << " (min/max per worker:";
  for (const long long n : per_worker) text << " " << n;
  text << ")\n"
       << "  client requests per acquisition " << json_number(per_acquisition, 2) << " ("
       << requests << " requests)\n"
       << "  server time in scripts " << json_number(script_us_per_acquisition, 1)
       << " µs per acquisition (" << json_number(us_per_script, 1) << " µs per script)\n"
       << "  lost updates  " << lost << ", overlaps " << f.stats.overlaps << ", failed workers "
       << failed_workers << "\n"
       << "  commands run (including those inside scripts):";
  for (const auto& [cmd, calls] : delta) text << " " << cmd << "=" << calls;
  text << "\n";
  report.text = text.str();
  return report;
}

}  // namespace rlock::cli
