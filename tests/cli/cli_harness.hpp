// cli_harness: running the rlock executable in end-to-end tests.
//
// Guarantees:
//  - start_rlock() starts RLOCK_CLI with the given arguments as a child_process (stdout and
//    stderr captured separately; stdin /dev/null; killed with the test). $RLOCK_URL and
//    $RLOCK_PASSWORD of the test environment are cleared unless `env` sets them.
//  - run_rlock() also waits for the exit (at most `limit`, else the test fails and the process
//    is killed) and returns status, output and the elapsed time.
//  - fifo_marker is an event, not a poll: a command under test writes a line into the FIFO
//    (`echo held > PATH`) and read_line() returns it as soon as it is written, or std::nullopt
//    after `limit` (Linux: a FIFO opened non-blocking with no writer yet does not report
//    POLLHUP, so poll() sleeps until the first write; after the writers close it is reopened).
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace rlock::test {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

inline std::filesystem::path rlock_cli() {
  return RLOCK_CLI;
}

child_process start_rlock(std::vector<std::string> args, std::vector<std::string> env = {});

struct run_result {
  int status = -1;
  std::string out{};
  std::string err{};
  long long ms = 0;  ///< from start to exit
};

run_result run_rlock(std::vector<std::string> args, std::vector<std::string> env = {},
                     std::chrono::milliseconds limit = 30s);

/// Waits for `p` to exit (at most `limit`); -1 if it did not.
int exit_status(child_process& p, std::chrono::milliseconds limit = 30s);

class fifo_marker {
 public:
  explicit fifo_marker(std::filesystem::path path);
  ~fifo_marker();
  fifo_marker(const fifo_marker&) = delete;
  fifo_marker& operator=(const fifo_marker&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::optional<std::string> read_line(std::chrono::milliseconds limit);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::string buffer_{};
};

/// Milliseconds elapsed since `t0`.
inline long long ms_since(steady::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0).count();
}

/// The whole content of a file ("" if it does not exist).
std::string read_file(const std::filesystem::path& p);

}  // namespace rlock::test
