#include "demo_worker.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <thread>

#include "command_error.hpp"
#include "connect.hpp"
#include "demo_events.hpp"
#include "duration_option.hpp"
#include "lock_before_end.hpp"

namespace rlock::cli {
namespace {

void emit(const demo_event& e) {
  const std::string line = format_demo_event(e);
  // One write of a line shorter than PIPE_BUF: atomic with respect to the other workers.
  for (;;) {
    const ssize_t n = ::write(demo_events_fd, line.data(), line.size());
    if (n >= 0 || errno != EINTR) return;
  }
}

}  // namespace

std::optional<long long> read_go() {
  std::string line;
  char c = 0;
  while (line.size() < 64) {
    const ssize_t n = ::read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    if (c == '\n') break;
    line += c;
  }
  if (!line.starts_with("go ")) return std::nullopt;
  try {
    return std::stoll(line.substr(3));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

CLI::App* add_demo_worker_command(CLI::App& app, demo_worker_options& opts) {
  CLI::App* sub = app.add_subcommand("demo-worker", "internal: one worker of rlock demo");
  sub->group("");  // hidden
  sub->add_option("--id", opts.id)->required();
  sub->add_option("--name", opts.name)->required();
  sub->add_option("--parent", opts.parent)->required();
  add_duration_option(*sub, "--hold", opts.hold, "work inside the critical section");
  add_connection_options(*sub, opts.connection);
  return sub;
}

int run_demo_worker(const demo_worker_options& o) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != static_cast<pid_t>(o.parent)) return exit_codes::software;
  try {
    rlock::client client = connect_checked(make_config(o.connection));
    rlock::lock lock = client.get_lock(o.name);
    const std::string counter = o.name + ":counter";
    emit({demo_event_kind::ready, o.id, 0, 0, {}});
    const std::optional<long long> end_ns = read_go();
    if (!end_ns) return exit_codes::software;  // the parent went away before "go"

    long long count = 0;
    for (;;) {
      if (!lock_before_end(lock, *end_ns)) break;  // the run ended
      emit({demo_event_kind::acquired, o.id, count + 1, steady_now_ns(), {}});
      const rlock::reply value = client.execute({"GET", counter});
      const long long n = value.is_nil() ? 0 : std::stoll(std::string(value.str()));
      std::this_thread::sleep_for(o.hold);  // the simulated work: widens any race window
      client.execute({"SET", counter, std::to_string(n + 1)});
      ++count;
      emit({demo_event_kind::released, o.id, count, steady_now_ns(), {}});
      lock.unlock_or_throw();
    }
    emit({demo_event_kind::done, o.id, count, 0, {}});
    return exit_codes::ok;
  } catch (const command_error& e) {
    emit({demo_event_kind::error, o.id, 0, 0, e.what()});
    return e.code();
  } catch (const rlock::error& e) {
    emit({demo_event_kind::error, o.id, 0, 0, e.what()});
    return exit_code_for(e.code());
  } catch (const std::exception& e) {  // e.g. a counter that is not a number
    emit({demo_event_kind::error, o.id, 0, 0, e.what()});
    return exit_codes::software;
  }
}

}  // namespace rlock::cli
