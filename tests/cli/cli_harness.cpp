#include "cli_harness.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace rlock::test {

child_process start_rlock(std::vector<std::string> args, std::vector<std::string> env) {
  child_options opts;
  opts.capture_stderr = true;
  for (const char* cleared : {"RLOCK_URL", "RLOCK_PASSWORD"}) {
    const std::string prefix = std::string(cleared) + "=";
    const bool given = std::any_of(env.begin(), env.end(),
                                   [&](const std::string& e) { return e.starts_with(prefix); });
    if (!given) opts.extra_env.push_back(prefix);
  }
  opts.extra_env.insert(opts.extra_env.end(), env.begin(), env.end());
  return child_process(rlock_cli(), std::move(args), std::move(opts));
}

int exit_status(child_process& p, std::chrono::milliseconds limit) {
  const auto status = p.wait_for(limit);
  return status ? *status : -1;
}

run_result run_rlock(std::vector<std::string> args, std::vector<std::string> env,
                     std::chrono::milliseconds limit) {
  const auto t0 = steady::now();
  child_process p = start_rlock(std::move(args), std::move(env));
  run_result r;
  const auto status = p.wait_for(limit);
  r.ms = ms_since(t0);
  EXPECT_TRUE(status.has_value()) << "rlock did not exit within " << limit.count() << " ms";
  r.status = status ? *status : -1;
  r.out = p.output();
  r.err = p.error_output();
  return r;
}

fifo_marker::fifo_marker(std::filesystem::path path) : path_(std::move(path)) {
  if (::mkfifo(path_.c_str(), 0600) != 0) {
    throw std::runtime_error("mkfifo " + path_.string() + ": " +
                             std::system_category().message(errno));
  }
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0)
    throw std::runtime_error("open " + path_.string() + ": " +
                             std::system_category().message(errno));
}

fifo_marker::~fifo_marker() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<std::string> fifo_marker::read_line(std::chrono::milliseconds limit) {
  const auto deadline = steady::now() + limit;
  for (;;) {
    if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd pfd{fd_, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[256];
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n > 0) {
      buffer_.append(chunk, static_cast<std::size_t>(n));
    } else if (n == 0) {
      // Every writer has closed: reopen, so that poll() waits for the next writer instead of
      // reporting this hang-up again.
      ::close(fd_);
      fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd_ < 0)
        throw std::runtime_error("reopen " + path_.string() + ": " +
                                 std::system_category().message(errno));
    }
  }
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace rlock::test
