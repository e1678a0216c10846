// signal_channel.hpp: process signals delivered as readable events on a file descriptor
// (signalfd), so that a poll loop can wait for a signal, a child's exit and library events at
// once, without async-signal-safety concerns.
//
// Guarantees:
//  - The constructor blocks the given signals in the calling thread. Construct it on the main
//    thread before any other thread exists (in particular before an rlock::client), so every
//    thread inherits the mask and the signals stay pending for the descriptor instead of running
//    their default action.
//  - The destructor discards the signals still pending (rlock is about to exit with a status
//    of its own choosing), closes the descriptor and restores the previous mask.
//  - Child processes must be started with an empty mask (spawn_command does this).
//  - Not thread-safe: one owner thread.
#pragma once

#include <sys/signalfd.h>

#include <csignal>
#include <initializer_list>
#include <optional>

namespace rlock::cli {

class signal_channel {
 public:
  explicit signal_channel(std::initializer_list<int> signals);
  ~signal_channel();
  signal_channel(const signal_channel&) = delete;
  signal_channel& operator=(const signal_channel&) = delete;

  /// The descriptor to poll for POLLIN.
  int fd() const noexcept { return fd_; }
  /// The next pending signal, or std::nullopt if none is pending (never blocks).
  std::optional<signalfd_siginfo> next();

 private:
  int fd_ = -1;
  sigset_t previous_{};
};

/// true when `info` was sent by the kernel on behalf of a terminal (Ctrl-C, hangup), which
/// signals the whole foreground process group, rather than by a process with kill().
bool sent_by_terminal(const signalfd_siginfo& info) noexcept;

}  // namespace rlock::cli
