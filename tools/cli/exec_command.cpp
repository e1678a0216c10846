#include "exec_command.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <stop_token>
#include <string>
#include <system_error>

#include "bounded_call.hpp"
#include "command_error.hpp"
#include "connect.hpp"
#include "duration.hpp"
#include "duration_option.hpp"
#include "event_flag.hpp"
#include "exec_acquire.hpp"
#include "exec_lock.hpp"
#include "exec_permit.hpp"
#include "exec_supervisor.hpp"
#include "lock_inspection.hpp"
#include "lock_release.hpp"
#include "rlock/client_stats.hpp"
#include "signal_channel.hpp"
#include "signal_names.hpp"
#include "spawn.hpp"
#include "status_line.hpp"
#include "terminal_text.hpp"

namespace rlock::cli {
namespace {

using std::chrono::milliseconds;

constexpr const char* exec_footer =
    "The command starts once the lock is held and the lock is released when it ends, also\n"
    "when it crashes. Without --lease the client's watchdog renews the lock every third of\n"
    "--watchdog-timeout while the command runs. The release waits at most twice --timeout\n"
    "for the server (and ends at once on SIGINT/SIGTERM/SIGHUP): if the server does not\n"
    "answer, rlock warns, exits with the command's status, and the lock ends with its lease.\n"
    "--wait 0s tries once, within one --timeout.\n"
    "\n"
    "Lock loss: when renewal finds the lock gone (deleted, force-unlocked, expired) or cannot\n"
    "renew it before its lease ends (with --lease: when the lease runs out), the command gets\n"
    "--on-loss, then SIGKILL after --grace, and rlock exits with --lost-exit-code.\n"
    "\n"
    "Signals: SIGINT/SIGTERM/SIGHUP sent to rlock are forwarded to the command (Ctrl-C from\n"
    "the terminal reaches it directly). While waiting they abort the wait (exit 130/143/129)\n"
    "and the command never starts. Signals go to the command's own process: a shell wrapper\n"
    "should `exec` the real program.\n"
    "\n"
    "Environment of the command: RLOCK_NAME=<NAME>; with --fenced RLOCK_TOKEN=<fencing token>,\n"
    "greater than every earlier holder's (Redisson's RFencedLock counter\n"
    "redisson_lock_token:{NAME}): pass it to the resource the command writes, which refuses a\n"
    "lower token than it has seen. Without --fenced RLOCK_TOKEN is removed. RLOCK_PASSWORD,\n"
    "and RLOCK_URL when it holds a password, are removed: the command does not get rlock's\n"
    "credentials.\n"
    "\n"
    "While waiting, a status line on a terminal's stderr shows the holder, its TTL and the time\n"
    "waited; with --verbose also when stderr is not a terminal (one line every 5 s). --verbose\n"
    "also logs the client's events on stderr: a server connected, disconnected or refusing\n"
    "connects (with the reason), a master switch, a script reloaded, the lock lost; and once\n"
    "the lock is released, what the client did (requests, attempts, connections, renewals).\n"
    "\n"
    "Shared and exclusive (as flock -s and -x): --shared takes the read half of Redisson's\n"
    "RReadWriteLock NAME (readers share it), --exclusive its write half (alone). Use one kind\n"
    "per name: a plain `rlock exec NAME` (the reentrant lock) waits while a read-write lock\n"
    "NAME is held, and --shared/--exclusive on a reentrant lock's key exit 65, leaving it.\n"
    "\n"
    "--spin takes the same reentrant lock NAME as a spin lock: the wait polls (1, 2, 4, ...\n"
    "up to 128 ms, never past the holder's TTL) and the release publishes nothing, so waiters\n"
    "of a plain `rlock exec NAME` are not woken by it (they retry when the TTL they saw ends).\n"
    "--fair takes it as Redisson's fair lock: waiters queue in redisson_lock_queue:{NAME} and\n"
    "are served in arrival order, Java RFairLock waiters included.\n"
    "\n"
    "--permits N runs at most N commands at once under NAME (a distributed `sem -j N`): each\n"
    "holds one permit of Redisson's RPermitExpirableSemaphore NAME (the count in the key NAME,\n"
    "leases in {NAME}:timeout), leased for --watchdog-timeout and renewed every third of it\n"
    "(or for --lease, not renewed). The first user sets N; a semaphore that exists keeps its\n"
    "count (rlock warns when it is not N). A crashed rlock's permit returns when its lease\n"
    "ends. Loss: a renewal finds the permit gone, or none is confirmed before the lease may\n"
    "have ended. Waiters are not served in order.\n"
    "\n"
    "Exit status: the command's (128+N if it died of signal N); 75 not acquired within --wait;\n"
    "76 lock lost; 126 command not executable; 127 command not found; 64 usage; 65 the key is\n"
    "not a lock; 66 a password or TLS file cannot be read; 69 server unavailable; 70 other\n"
    "server error; 77 the ACL user may not run a command rlock needs (NOPERM); 128+N\n"
    "interrupted by signal N while waiting. An ACL user without PUBLISH releases the lock\n"
    "but cannot notify its waiters: rlock warns and exits with the command's status.\n"
    "\n"
    "Durations: 250ms, 10s, 1.5s, 2m, 1h, 1h30m (units ms, s, m, h, each once and largest\n"
    "first; up to 3 decimals).\n";

/// RLOCK_NAME, RLOCK_TOKEN set or removed (an outer `rlock exec` may have set it), and rlock's
/// secrets removed: the command is not given the credentials rlock used.
std::vector<std::string> command_environment(const std::string& name,
                                             std::optional<rlock::fencing_token> token) {
  std::vector<std::string> env{"RLOCK_NAME=" + name,
                               token ? "RLOCK_TOKEN=" + std::to_string(*token) : "RLOCK_TOKEN"};
  for (std::string& secret : secret_environment_names()) env.push_back(std::move(secret));
  return env;
}

/// Whether `owner` of `client` still holds `name` on the server, read within `bound`; true when
/// the read fails (nothing is known).
bool still_holds(rlock::client& client, const exec_lock& lock, std::uint64_t owner,
                 milliseconds bound) {
  try {
    const lock_report now =
        call_within(client, bound, [&client, &lock] { return read_lock(client, lock.name); });
    const std::string field = client.id() + ":" + std::to_string(owner) + lock.field_suffix;
    return std::any_of(now.owners.begin(), now.owners.end(),
                       [&field](const owner_hold& h) { return h.owner == field; });
  } catch (const rlock::error&) {
    return true;
  }
}

/// The permit exec holds for --permits: the semaphore NAME of o.permits permits, set by its
/// first user (a semaphore that exists keeps its count: said on stderr when it is not N).
exec_lock permit_of(rlock::client& client, const exec_options& o, milliseconds watchdog_lease) {
  rlock::permit_expirable_semaphore semaphore = client.get_permit_expirable_semaphore(o.name);
  if (!semaphore.try_set_permits(o.permits)) {
    if (const std::int64_t total = semaphore.total_permits(); total != o.permits) {
      write_stderr("rlock: warning: semaphore '" + printable(o.name) + "' has " +
                   std::to_string(total) + " permits, not " + std::to_string(o.permits) +
                   " (its first user set them; rlock exec does not change them)\n");
    }
  }
  return exec_permit_of(client, semaphore, o.lease.value_or(watchdog_lease), !o.lease.has_value());
}

std::string loss_reason(const exec_options& o) {
  if (o.permits > 0) {
    return o.lease ? "its " + format_duration(*o.lease) + " lease ran out"
                   : "renewal found it gone (released, reclaimed or deleted), or no renewal was "
                     "confirmed before its lease could end";
  }
  if (o.lease) {
    return "its " + format_duration(*o.lease) +
           " lease ran out, or it was deleted or taken over meanwhile";
  }
  return "renewal found it gone (deleted, force-unlocked or expired), or could not renew it "
         "before its lease ended";
}

}  // namespace

CLI::App* add_exec_command(CLI::App& app, exec_options& opts) {
  CLI::App* sub = app.add_subcommand("exec", "Run a command while holding a lock");
  sub->add_option("name", opts.name, "Lock name")->required()->type_name("NAME");
  sub->add_option("command", opts.command, "The command and its arguments (after --)")
      ->type_name("CMD [ARGS...]");
  add_duration_option(*sub, "--wait", opts.wait,
                      "Give up (exit --conflict-exit-code) if not acquired within DUR; 0s tries "
                      "once (default: wait forever)");
  add_duration_option(*sub, "--lease", opts.lease,
                      "Hold the lock for at most DUR, not renewed (default: the watchdog renews "
                      "it while the command runs)",
                      duration_bound::positive);
  add_duration_option(*sub, "--watchdog-timeout", opts.watchdog_timeout,
                      "Watchdog lease, renewed every third of it (default 30s)",
                      duration_bound::positive);
  sub->add_option("--on-loss", opts.on_loss,
                  "Signal for the command when the lock is lost (name or number)")
      ->type_name("SIGNAL")
      ->capture_default_str();
  add_duration_option(*sub, "--grace", opts.grace,
                      "After the loss signal, wait this long before SIGKILL");
  sub->add_option("--conflict-exit-code", opts.conflict_exit_code,
                  "Exit status when not acquired within --wait")
      ->type_name("CODE")
      ->check(CLI::Range(0, 255).description(""))
      ->capture_default_str();
  sub->add_option("--lost-exit-code", opts.lost_exit_code,
                  "Exit status when the lock is lost while the command runs")
      ->type_name("CODE")
      ->check(CLI::Range(0, 255).description(""))
      ->capture_default_str();
  auto* fenced = sub->add_flag("--fenced", opts.fenced,
                               "Take it as a fenced lock: each acquire issues a fencing token, "
                               "passed to the command in RLOCK_TOKEN");
  auto* shared = sub->add_flag("-s,--shared", opts.shared,
                               "Take the read half of the read-write lock NAME (Redisson's "
                               "RReadWriteLock), shared with other --shared holders");
  auto* exclusive = sub->add_flag("-x,--exclusive", opts.exclusive,
                                  "Take the write half of the read-write lock NAME: alone, "
                                  "excluding --shared and --exclusive holders");
  auto* spin = sub->add_flag("--spin", opts.spin,
                             "Take the spin lock NAME (Redisson's RSpinLock): wait by polling "
                             "(1 ms doubling to 128 ms), release without publishing");
  auto* fair = sub->add_flag("--fair", opts.fair,
                             "Take the fair lock NAME (Redisson's RFairLock): wait in its queue, "
                             "served in arrival order");
  auto* permits =
      sub->add_option("--permits", opts.permits,
                      "Hold one of N permits of the permit-expirable semaphore NAME "
                      "(Redisson's RPermitExpirableSemaphore) instead of a lock: at "
                      "most N commands run at once")
          ->type_name("N")
          ->check(CLI::Range(std::int64_t{1}, std::int64_t{2147483647}).description(""));
  permits->excludes(fenced)->excludes(shared)->excludes(exclusive)->excludes(spin)->excludes(fair);
  shared->excludes(exclusive)->excludes(fenced)->excludes(spin)->excludes(fair);
  exclusive->excludes(shared)->excludes(fenced)->excludes(spin)->excludes(fair);
  spin->excludes(fair);
  sub->add_flag("-v,--verbose", opts.verbose,
                "Report progress on stderr also when it is not a terminal, and log the "
                "client's events there (connects, drops, failovers, a lost lock)");
  add_connection_options(*sub, opts.connection);
  sub->footer(exec_footer);
  return sub;
}

namespace {

// --verbose: the client's events (config::on_event), one line each on stderr. On a terminal the
// line starts by erasing the status line, which the next update draws again.
void log_event(const rlock::client_event& e) {
  static const bool terminal = progress_mode_for(false) == progress_mode::terminal;
  write_stderr(std::string(terminal ? "\r\x1b[K" : "") + "rlock: " + printable(rlock::describe(e)) +
               "\n");
}

// --verbose, at the end: what the client did (client::stats()), one line on stderr.
std::string stats_line(const rlock::client_stats& s) {
  const auto n = [](std::uint64_t v) { return std::to_string(v); };
  return "rlock: client: " + n(s.requests) + " requests (" + n(s.requests_failed) + " failed, " +
         n(s.requests_timed_out) + " timed out, " + n(s.requests_unknown) +
         " of unknown outcome), " + n(s.attempts) + " attempts, " + n(s.connects) +
         " connections set up, " + n(s.connect_failures) + " failed, " + n(s.disconnects) +
         " dropped, " + n(s.messages) + " messages on " + n(s.subscribes) + " subscribes, " +
         n(s.renewals) + " renewals (" + n(s.renewals_failed) + " failed), " + n(s.holds_lost) +
         " holds lost, " + n(s.writes_not_confirmed) + " writes not confirmed\n";
}

}  // namespace

int run_exec(const exec_options& o) {
  const std::optional<int> loss_signal = parse_signal(o.on_loss);
  if (!loss_signal) throw usage_error("--on-loss: unknown signal '" + o.on_loss + "'");
  if (o.command.empty()) throw usage_error("no command given (rlock exec NAME -- CMD [ARGS...])");
  if (o.name.empty()) throw usage_error("the lock name must not be empty");
  rlock::config cfg = make_config(o.connection);
  if (o.verbose) cfg.on_event = log_event;
  if (o.watchdog_timeout) {
    if (*o.watchdog_timeout < milliseconds(3))
      throw usage_error("--watchdog-timeout must be at least 3ms");
    cfg.lock_watchdog_timeout = *o.watchdog_timeout;
  }

  // Before the client starts its threads: they inherit the mask, so these signals are only
  // ever read from the descriptor.
  signal_channel signals{SIGINT, SIGTERM, SIGHUP, SIGCHLD};
  rlock::client client = connect_checked(cfg, &signals);
  const exec_lock lock = o.permits > 0 ? permit_of(client, o, cfg.lock_watchdog_timeout)
                         : o.shared || o.exclusive
                             ? exec_lock_of(client.get_read_write_lock(o.name),
                                            o.shared ? rlock::rw_mode::read : rlock::rw_mode::write)
                             : exec_lock_of(o.spin   ? client.get_spin_lock(o.name)
                                            : o.fair ? client.get_fair_lock(o.name)
                                                     : client.get_lock(o.name),
                                            o.fenced);
  const std::string held = o.permits > 0 ? "a permit of '" + o.name + "'" : "lock '" + o.name + "'";
  const std::uint64_t owner = rlock::this_thread_owner_id();

  status_line line(progress_mode_for(o.verbose));
  const acquire_result acquired =
      acquire_for_exec(client, lock, {owner, o.wait, o.lease}, signals, line);
  switch (acquired.outcome) {
    case acquire_outcome::acquired:
      break;
    case acquire_outcome::not_acquired:
      throw command_error(o.conflict_exit_code,
                          o.wait.value_or(milliseconds(0)).count() <= 0
                              ? (o.permits > 0 ? "no permit of '" + o.name + "' is free"
                                               : "lock '" + o.name + "' is held") +
                                    " (--wait 0s: one attempt); the command was not run"
                              : held + " not acquired within " + format_duration(*o.wait) +
                                    "; the command was not run");
    case acquire_outcome::interrupted:
      throw command_error(exit_codes::signal_base + acquired.signal,
                          "interrupted by " + signal_name(acquired.signal) +
                              " while waiting for '" + o.name + "'; the command was not run");
    case acquire_outcome::not_a_lock:
      throw command_error(exit_codes::data_error,
                          "'" + o.name +
                              "' is a Redis hash without a lock's fields, not a lock: left "
                              "untouched; the command was not run");
    case acquire_outcome::failed:
      throw command_error(exit_code_for(acquired.error),
                          "cannot acquire '" + o.name + "': " + acquired.error.message() +
                              (acquired.error == rlock::errc::command_unavailable
                                   ? " (rlock needs EVALSHA and SCRIPT; see 'man rlock')"
                                   : "") +
                              (acquired.error_detail.empty() ? "" : "; " + acquired.error_detail));
  }
  if (o.verbose) {
    write_stderr("rlock: acquired " + printable(held) + " after " +
                 format_duration(acquired.waited) + "\n");
  }

  // From here on the lock is held: every path releases it, waiting for the server at most
  // two request timeouts (one resend), so that a hung server cannot keep rlock from exiting.
  const milliseconds release_bound = 2 * cfg.timeout;
  event_flag lost;
  std::stop_callback on_loss(lock.loss_token(owner), [&lost] { lost.raise(); });
  if (lost.clear()) {  // already lost (a lease shorter than the way here): do not start
    [[maybe_unused]] const std::error_code ec = release_hold(lock, owner, release_bound, signals);
    throw command_error(o.lost_exit_code,
                        "lost " + held + " before the command started; it was not run");
  }
  int spawn_error = 0;
  const pid_t pid =
      spawn_process(o.command, command_environment(o.name, acquired.token), {}, &spawn_error);
  if (pid < 0) {
    [[maybe_unused]] const std::error_code ec =
        release_hold(lock, owner, release_bound, signals);  // nothing ran
    throw command_error(
        spawn_error == ENOENT ? exit_codes::not_found : exit_codes::cannot_execute,
        "cannot run '" + o.command.front() + "': " + std::system_category().message(spawn_error));
  }
  const supervision_result ran = supervise_command(
      pid,
      {*loss_signal, o.grace, o.name, loss_reason(o), o.permits > 0 ? "the permit of" : "lock"},
      signals, lost);

  const std::error_code released = release_hold(lock, owner, release_bound, signals);
  if (o.verbose) write_stderr(stats_line(client.stats()));
  if (ran.lost) {
    write_stderr("rlock: the command ended with status " + std::to_string(ran.status) + " after " +
                 (o.permits > 0 ? "the permit" : "the lock") + " was lost; exiting with " +
                 std::to_string(o.lost_exit_code) + "\n");
    return o.lost_exit_code;
  }
  if (released == rlock::errc::not_owner) {
    write_stderr("rlock: " + printable(held) +
                 " was no longer held when the command ended (deleted or expired while it ran, "
                 "before renewal noticed); exiting with " +
                 std::to_string(o.lost_exit_code) + "\n");
    return o.lost_exit_code;
  }
  // Redis keeps what a script did before the ACL refused a command: the unlock's DEL (and a
  // hand-over) come before its PUBLISH.
  if (released == rlock::errc::no_permission && lock.lock_hash &&
      !still_holds(client, lock, owner, cfg.timeout)) {
    write_stderr("rlock: warning: released lock '" + printable(o.name) +
                 "', but its waiters could not be notified: the ACL user lacks PUBLISH (or "
                 "permission for the lock's channels)\n");
  } else if (released) {
    write_stderr("rlock: warning: could not release " + printable(held) + ": " +
                 released.message() + "; it expires when its lease ends\n");
  } else if (o.verbose) {
    write_stderr("rlock: released " + printable(held) + "; the command exited with status " +
                 std::to_string(ran.status) + "\n");
  }
  return ran.status;
}

}  // namespace rlock::cli
