// exec_supervisor.hpp: the running half of `rlock exec`: start the command while the lock is
// held, forward signals to it, and stop it if the lock is lost.
//
// Guarantees of supervise_command():
//  - Returns only after the command has exited and been reaped (never leaves it running): its
//    status as a shell reports it (exit code, or 128 + N after signal N).
//  - SIGINT/SIGTERM/SIGHUP sent to rlock by a process are forwarded to the command; the same
//    signals from the terminal (Ctrl-C, hangup) are not, because the terminal already signals
//    the command, which shares rlock's process group.
//  - When `lost` is raised (the hold's loss token stopped), the command gets `loss_signal` once,
//    and SIGKILL `grace` later if it is still running; both are reported on stderr.
//  - Signals go to the command's process, not to processes it started (shell wrappers should
//    `exec` the real program or pass the signal on).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "event_flag.hpp"
#include "signal_channel.hpp"

namespace rlock::cli {

struct supervision {
  int loss_signal = 15;
  std::chrono::milliseconds grace{10000};
  std::string lock_name{};
  std::string loss_reason{};  ///< what to say when the lock is lost
  std::string held = "lock";  ///< what is held, for that message: "lock", "the permit of"
};

struct supervision_result {
  int status = 0;       ///< the command's status as a shell reports it
  bool lost = false;    ///< the lock was lost while the command ran
  bool killed = false;  ///< the command was still running at the end of the grace period
};

supervision_result supervise_command(pid_t pid, const supervision& how, signal_channel& signals,
                                     const event_flag& lost);

}  // namespace rlock::cli
