// child_process: spawn a helper executable for a test and control it.
//
// Guarantees:
//  - The child is started with fork + execve (no shell, no PATH search: `program` must be a path;
//    use find_program() to resolve a bare name). If exec fails, the constructor throws
//    std::runtime_error and no process is left behind.
//  - The child gets PR_SET_PDEATHSIG(SIGKILL): if the test process dies, so does the child.
//    All forks happen on one internal thread that lives until the test process exits, because the
//    kernel sends the parent-death signal when the *thread* that forked exits, not the process;
//    spawning from a short-lived std::thread is therefore safe.
//  - The child starts with an empty signal mask, default dispositions for the usual signals, stdin
//    on /dev/null, and none of the test process's other file descriptors (all descriptors >= 3
//    are close-on-exec in the child), so it cannot keep the test's sockets open.
//  - stdout (and stderr if merge_stderr) is captured through a pipe into a string that output()
//    returns, or written to a file if stdout_file is set; with capture_stderr, stderr has its own
//    pipe and error_output(). Pipes are drained continuously by a reader thread, so a chatty
//    child never blocks on a full pipe.
//  - The destructor sends SIGKILL (if the child has not been reaped yet) and reaps it. It never
//    throws. After the child has been reaped, kill() is a no-op, so a recycled pid is never hit.
//  - All member functions may be called from several threads at once.
//  - The child is reaped only by this object: do not set SIGCHLD to SIG_IGN in tests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::test {

struct child_options {
  // When set, the child's stdout goes to this file (created or truncated) instead of a pipe.
  std::optional<std::filesystem::path> stdout_file{};
  // true: stderr goes where stdout goes; false: stderr is inherited from the test process.
  bool merge_stderr = false;
  // true: stderr is captured separately through its own pipe (see error_output()); overrides
  // merge_stderr.
  bool capture_stderr = false;
  // "NAME=value" entries added to the test process's environment (replacing same-named ones).
  std::vector<std::string> extra_env{};
};

class child_process {
 public:
  // Starts `program` with argv = {program, args...}. Throws std::runtime_error if it cannot be
  // started.
  child_process(std::filesystem::path program, std::vector<std::string> args,
                child_options options = {});
  ~child_process();

  child_process(child_process&&) noexcept;
  child_process& operator=(child_process&&) noexcept;
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  pid_t pid() const;

  // Sends `sig` to the child. No-op once the child has been reaped.
  void kill(int sig);

  // Waits up to `limit` for the child to exit and reaps it. Returns its exit status (0-255), or
  // 128 + signal number if it was killed by a signal; std::nullopt if it is still running after
  // `limit` (0ms = just check). Once reaped, returns the same status immediately. In pipe mode it
  // also waits (at most 1 s) until the pipe reaches end-of-file, so output() is complete after a
  // status is returned (unless a grandchild keeps the pipe open).
  std::optional<int> wait_for(std::chrono::milliseconds limit);

  // true until the child has exited (reaps it if it has).
  bool running() const;

  // What the child wrote to stdout (plus stderr with merge_stderr) so far. Empty when
  // stdout_file is used.
  std::string output() const;

  // What the child wrote to stderr so far, with capture_stderr; empty otherwise.
  std::string error_output() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

// Resolves `name` on $PATH (a name containing '/' is returned as is). Returns `fallback` if it
// is not found there and `fallback` is an existing file; otherwise throws std::runtime_error.
std::filesystem::path find_program(std::string_view name,
                                   const std::filesystem::path& fallback = {});

}  // namespace rlock::test
