// demo_workers.hpp: the worker processes of `rlock demo` and `rlock bench contended` (rlock
// re-executed as a hidden worker command, `demo-worker` or `bench-worker`), owned by the parent.
//
// Guarantees:
//  - The constructor starts `count` workers from /proc/self/exe as `rlock COMMAND --id I`
//    followed by the given arguments; each gets `events_fd` as its descriptor 3 and a private pipe
//    as stdin, and no other descriptor of the parent. On failure it throws command_error and leaves
//    no worker.
//  - go() writes "go END_NS" to every worker's stdin and closes it; a worker whose parent
//    dies before that sees EOF and exits (and PR_SET_PDEATHSIG kills it in any case).
//  - The destructor SIGKILLs and reaps every worker still running: none outlives the demo.
//  - Not thread-safe: one owner thread.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace rlock::cli {

class demo_workers {
 public:
  demo_workers(int count, const std::vector<std::string>& args, const std::vector<std::string>& env,
               int events_fd, const std::string& command = "demo-worker");
  ~demo_workers();
  demo_workers(const demo_workers&) = delete;
  demo_workers& operator=(const demo_workers&) = delete;

  void go(long long end_ns);
  /// Reaps the workers that have exited, without blocking.
  void reap();
  /// Sends `sig` to every worker still running.
  void signal_all(int sig);
  std::size_t running() const;
  /// Exit status of each worker (as a shell reports it) once reaped.
  const std::vector<std::optional<int>>& statuses() const { return status_; }

 private:
  std::vector<pid_t> pids_;
  std::vector<int> stdin_fds_;
  std::vector<std::optional<int>> status_;
};

}  // namespace rlock::cli
