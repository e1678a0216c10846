#include "exec_supervisor.hpp"

#include <poll.h>
#include <sys/wait.h>

#include <optional>

#include "duration.hpp"
#include "signal_names.hpp"
#include "spawn.hpp"
#include "status_line.hpp"
#include "terminal_text.hpp"

namespace rlock::cli {
namespace {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

}  // namespace

supervision_result supervise_command(pid_t pid, const supervision& how, signal_channel& signals,
                                     const event_flag& lost) {
  supervision_result out;
  std::optional<clock::time_point> kill_at;
  for (;;) {
    int wait_status = 0;
    // SIGCHLD is blocked and read from `signals`: a child exiting after this check makes the
    // poll below return, so the exit is never missed.
    if (::waitpid(pid, &wait_status, WNOHANG) == pid) {
      out.status = shell_status(wait_status);
      return out;
    }
    int timeout_ms = -1;
    if (kill_at) {
      const auto left = std::chrono::ceil<milliseconds>(*kill_at - clock::now());
      timeout_ms = static_cast<int>(std::max<long long>(0, left.count()));
    }
    pollfd fds[2] = {{signals.fd(), POLLIN, 0}, {lost.fd(), POLLIN, 0}};
    ::poll(fds, 2, timeout_ms);
    while (auto info = signals.next()) {
      const int sig = static_cast<int>(info->ssi_signo);
      if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP) && !sent_by_terminal(*info)) {
        ::kill(pid, sig);
      }
    }
    if (lost.clear() && !out.lost) {
      out.lost = true;
      ::kill(pid, how.loss_signal);
      write_stderr(
          "rlock: lost " + how.held + " '" + printable(how.lock_name) +
          "' while the command ran (" + how.loss_reason + "); sent " +
          signal_name(how.loss_signal) + " to the command (pid " + std::to_string(pid) + ")" +
          (how.grace.count() > 0 ? ", SIGKILL follows in " + format_duration(how.grace) + "\n"
                                 : "\n"));
      kill_at = clock::now() + how.grace;
    }
    if (kill_at && clock::now() >= *kill_at) {
      kill_at.reset();
      if (::waitpid(pid, &wait_status, WNOHANG) == pid) {
        out.status = shell_status(wait_status);
        return out;
      }
      ::kill(pid, SIGKILL);
      out.killed = true;
      write_stderr("rlock: the command (pid " + std::to_string(pid) + ") outlived the " +
                   format_duration(how.grace) + " grace period; sent SIGKILL\n");
    }
  }
}

}  // namespace rlock::cli
