#include "spawn.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <csignal>
#include <string_view>

#include "exit_codes.hpp"

extern char** environ;  // NOLINT: POSIX

namespace rlock::cli {
namespace {

std::string_view env_name(std::string_view entry) {
  return entry.substr(0, entry.find('='));
}

/// RAII for the posix_spawn attribute and file-action objects.
struct spawn_setup {
  posix_spawnattr_t attr{};
  posix_spawn_file_actions_t actions{};
  spawn_setup() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~spawn_setup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  spawn_setup(const spawn_setup&) = delete;
  spawn_setup& operator=(const spawn_setup&) = delete;
};

}  // namespace

pid_t spawn_process(const std::vector<std::string>& argv, const std::vector<std::string>& set_env,
                    const std::vector<std::pair<int, int>>& fd_map, int* error) {
  spawn_setup s;
  sigset_t empty;
  sigemptyset(&empty);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM}) {
    sigaddset(&defaults, sig);
  }
  posix_spawnattr_setsigmask(&s.attr, &empty);
  posix_spawnattr_setsigdefault(&s.attr, &defaults);
  posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  for (const auto& [from, to] : fd_map) posix_spawn_file_actions_adddup2(&s.actions, from, to);

  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    bool replaced = false;
    for (const auto& v : set_env) replaced = replaced || env_name(v) == env_name(entry);
    if (!replaced) env.emplace_back(entry);
  }
  for (const auto& v : set_env) {
    if (v.find('=') != std::string::npos) env.push_back(v);
  }

  std::vector<char*> cargv;
  cargv.reserve(argv.size() + 1);
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));  // NOLINT: POSIX API
  cargv.push_back(nullptr);
  std::vector<char*> cenv;
  cenv.reserve(env.size() + 1);
  for (auto& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);

  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, cargv[0], &s.actions, &s.attr, cargv.data(), cenv.data());
  if (rc != 0) {
    if (error != nullptr) *error = rc;
    return -1;
  }
  return pid;
}

int shell_status(int wait_status) noexcept {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return exit_codes::signal_base + WTERMSIG(wait_status);
  return exit_codes::software;
}

}  // namespace rlock::cli
