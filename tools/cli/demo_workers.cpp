#include "demo_workers.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "command_error.hpp"
#include "demo_worker.hpp"
#include "spawn.hpp"

namespace rlock::cli {

demo_workers::demo_workers(int count, const std::vector<std::string>& args,
                           const std::vector<std::string>& env, int events_fd,
                           const std::string& command) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw command_error(exit_codes::software, "cannot find the rlock executable: " + ec.message());
  for (int id = 0; id < count; ++id) {
    int in[2];
    if (::pipe2(in, O_CLOEXEC) != 0) {
      throw command_error(exit_codes::software,
                          std::string("pipe: ") + std::system_category().message(errno));
    }
    std::vector<std::string> argv{self.string(), command, "--id", std::to_string(id)};
    argv.insert(argv.end(), args.begin(), args.end());
    int error = 0;
    const pid_t pid =
        spawn_process(argv, env, {{in[0], STDIN_FILENO}, {events_fd, demo_events_fd}}, &error);
    ::close(in[0]);
    if (pid < 0) {
      ::close(in[1]);
      throw command_error(
          exit_codes::software,
          "cannot start a demo worker: " + std::string(std::system_category().message(error)));
    }
    pids_.push_back(pid);
    stdin_fds_.push_back(in[1]);
    status_.emplace_back();
  }
}

demo_workers::~demo_workers() {
  for (int fd : stdin_fds_) {
    if (fd >= 0) ::close(fd);
  }
  for (std::size_t i = 0; i < pids_.size(); ++i) {
    if (status_[i]) continue;
    ::kill(pids_[i], SIGKILL);
    ::waitpid(pids_[i], nullptr, 0);
  }
}

void demo_workers::go(long long end_ns) {
  const std::string line = "go " + std::to_string(end_ns) + "\n";
  for (int& fd : stdin_fds_) {
    // A worker that already died makes this fail with EPIPE (SIGPIPE is ignored): its exit
    // status tells the rest.
    [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
    ::close(fd);
    fd = -1;
  }
}

void demo_workers::reap() {
  for (std::size_t i = 0; i < pids_.size(); ++i) {
    int wait_status = 0;
    if (!status_[i] && ::waitpid(pids_[i], &wait_status, WNOHANG) == pids_[i]) {
      status_[i] = shell_status(wait_status);
    }
  }
}

void demo_workers::signal_all(int sig) {
  for (std::size_t i = 0; i < pids_.size(); ++i) {
    if (!status_[i]) ::kill(pids_[i], sig);
  }
}

std::size_t demo_workers::running() const {
  std::size_t n = 0;
  for (const auto& s : status_) n += s ? 0 : 1;
  return n;
}

}  // namespace rlock::cli
