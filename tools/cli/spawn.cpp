#include "spawn.hpp"

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <string>
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

/// Where a PATH search finds `name` (as execvp would: the first executable regular file), or
/// `name` itself when it has a '/'.
std::string resolve_command(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): no setenv in rlock
  std::string_view dirs = path != nullptr ? path : "/bin:/usr/bin";
  while (true) {
    const auto colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (colon == std::string_view::npos) return name;
    dirs.remove_prefix(colon + 1);
  }
}

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
  int rc = ::posix_spawnp(&pid, cargv[0], &s.actions, &s.attr, cargv.data(), cenv.data());
  if (rc == ENOEXEC) {
    // An executable file without a #! line: run it with /bin/sh, as execvp, env(1), flock(1)
    // and shells do (glibc's posix_spawnp does not).
    std::string file = resolve_command(argv.front());
    std::string shell = "/bin/sh";
    std::vector<char*> sh_argv{shell.data(), file.data()};
    sh_argv.insert(sh_argv.end(), cargv.begin() + 1, cargv.end());  // the rest and the nullptr
    rc = ::posix_spawn(&pid, shell.c_str(), &s.actions, &s.attr, sh_argv.data(), cenv.data());
  }
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
