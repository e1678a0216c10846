#include "support/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

namespace rlock::test {

namespace {

std::string errno_text(int err) {
  return std::generic_category().message(err);
}

// An owned file descriptor.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) : fd_(fd) {}
  ~unique_fd() { reset(); }
  unique_fd(unique_fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;

  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Runs fork() requests on one thread that is never joined and lives until the process exits, so
// that PR_SET_PDEATHSIG (which fires when the forking *thread* exits) means "the test process
// died". Deliberately leaked: no destructor may run while the thread waits on its members.
class spawner {
 public:
  static spawner& instance() {
    static spawner* const instance = new spawner();
    return *instance;
  }

  pid_t run(const std::function<pid_t()>& fork_fn) {
    std::packaged_task<pid_t()> task(fork_fn);
    std::future<pid_t> result = task.get_future();
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
    return result.get();
  }

 private:
  spawner() {
    std::thread([this] { loop(); }).detach();
  }

  [[noreturn]] void loop() {
    for (;;) {
      std::packaged_task<pid_t()> task;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return !tasks_.empty(); });
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<pid_t()>> tasks_;
};

// Everything the child needs between fork and exec, prepared beforehand: after fork only
// async-signal-safe calls are allowed.
struct exec_plan {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;  // -1: inherit
  int error_fd = -1;   // close-on-exec pipe: receives errno if exec fails
  pid_t parent_pid = 0;
  int max_fd = 1024;
};

void child_redirect(int from, int to) {
  if (from == to) {
    ::fcntl(to, F_SETFD, 0);  // keep it across exec
  } else {
    ::dup2(from, to);
  }
}

[[noreturn]] void child_fail(const exec_plan& plan, int err) {
  ssize_t ignored = ::write(plan.error_fd, &err, sizeof err);
  static_cast<void>(ignored);
  ::_exit(127);
}

[[noreturn]] void exec_child(const exec_plan& plan) noexcept {
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // NOLINT(concurrency-mt-unsafe): single thread
  static constexpr std::array reset_signals{SIGPIPE, SIGINT,  SIGTERM, SIGQUIT,
                                            SIGHUP,  SIGCHLD, SIGUSR1, SIGUSR2};
  // NOLINTNEXTLINE(concurrency-mt-unsafe): the child has a single thread
  for (int sig : reset_signals) std::signal(sig, SIG_DFL);

  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_fail(plan, errno);
  // The test process may have died before prctl took effect: then we were re-parented.
  if (::getppid() != plan.parent_pid) ::_exit(126);

  child_redirect(plan.stdin_fd, STDIN_FILENO);
  child_redirect(plan.stdout_fd, STDOUT_FILENO);
  if (plan.stderr_fd >= 0) child_redirect(plan.stderr_fd, STDERR_FILENO);

  // Do not leak the test's descriptors (sockets, pipes of other children) into the child.
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = 3; fd < plan.max_fd; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }

  ::execve(plan.path, plan.argv, plan.envp);
  child_fail(plan, errno);
}

int max_fd_hint() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    return static_cast<int>(std::min<rlim_t>(limit.rlim_cur, 1U << 20U));
  }
  return 65536;
}

std::vector<std::string> build_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string value(*entry);
    const bool overridden = std::any_of(extra.begin(), extra.end(), [&](const std::string& e) {
      return name_of(e) == name_of(value);
    });
    if (!overridden) env.push_back(std::move(value));
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> result;
  result.reserve(strings.size() + 1);
  for (auto& s : strings) result.push_back(s.data());
  result.push_back(nullptr);
  return result;
}

int decode_wait_status(int raw) {
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) return 128 + WTERMSIG(raw);
  return -1;
}

}  // namespace

struct child_process::state {
  std::filesystem::path program;
  pid_t pid = -1;

  mutable std::mutex mutex;  // guards status, output, error_output, eof
  std::optional<int> status;
  std::string output;
  std::string error_output;
  bool eof = true;
  std::condition_variable eof_cv;

  unique_fd out_fd;  // read end of the stdout capture pipe
  unique_fd err_fd;  // read end of the stderr capture pipe
  std::atomic<bool> stop_reader{false};
  std::thread reader;

  state() = default;
  state(const state&) = delete;
  state& operator=(const state&) = delete;

  ~state() {
    if (pid > 0) {
      bool reaped = false;
      {
        std::lock_guard lock(mutex);
        reaped = status.has_value();
        if (!reaped) ::kill(pid, SIGKILL);
      }
      if (!reaped) {
        int raw = 0;
        while (::waitpid(pid, &raw, 0) < 0 && errno == EINTR) {
        }
      }
    }
    stop_reader = true;
    if (reader.joinable()) reader.join();
  }

  // Reaps the child if it has exited. Returns its status once known.
  std::optional<int> try_reap() {
    std::lock_guard lock(mutex);
    if (status) return status;
    for (;;) {
      int raw = 0;
      const pid_t r = ::waitpid(pid, &raw, WNOHANG);
      if (r == pid) {
        status = decode_wait_status(raw);
      } else if (r < 0 && errno == EINTR) {
        continue;
      } else if (r < 0) {
        status = -1;  // ECHILD: someone else reaped it (SIGCHLD ignored?)
      }
      return status;
    }
  }

  // Drains the capture pipes until both reach end-of-file (or the object is destroyed).
  void read_loop() {
    std::array<char, 4096> buffer{};
    std::array<pollfd, 2> fds{pollfd{out_fd.get(), POLLIN, 0}, pollfd{err_fd.get(), POLLIN, 0}};
    std::array<std::string*, 2> sinks{&output, &error_output};
    while (!stop_reader && (fds[0].fd >= 0 || fds[1].fd >= 0)) {
      const int ready = ::poll(fds.data(), fds.size(), 50);  // negative fds are ignored
      if (ready < 0 && errno != EINTR) break;
      if (ready <= 0) continue;
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        const ssize_t n = ::read(fds[i].fd, buffer.data(), buffer.size());
        if (n > 0) {
          std::lock_guard lock(mutex);
          sinks[i]->append(buffer.data(), static_cast<std::size_t>(n));
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          fds[i].fd = -1;
        }
      }
    }
    {
      std::lock_guard lock(mutex);
      eof = true;
    }
    eof_cv.notify_all();
  }
};

child_process::child_process(std::filesystem::path program, std::vector<std::string> args,
                             child_options options)
    : state_(std::make_unique<state>()) {
  state_->program = std::move(program);
  const std::string path = state_->program.string();

  std::vector<std::string> argv_strings;
  argv_strings.reserve(args.size() + 1);
  argv_strings.push_back(path);
  for (auto& a : args) {
    if (a.find('\0') != std::string::npos) {
      throw std::invalid_argument("child_process: argument contains a NUL byte");
    }
    argv_strings.push_back(std::move(a));
  }
  std::vector<char*> argv = pointers_to(argv_strings);
  std::vector<std::string> env_strings;
  std::vector<char*> envp;
  if (!options.extra_env.empty()) {
    env_strings = build_environment(options.extra_env);
    envp = pointers_to(env_strings);
  }

  unique_fd stdin_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (stdin_fd.get() < 0) throw std::runtime_error("child_process: cannot open /dev/null");

  unique_fd out_write;
  if (options.stdout_file) {
    out_write = unique_fd(
        ::open(options.stdout_file->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (out_write.get() < 0) {
      throw std::runtime_error("child_process: cannot open " + options.stdout_file->string() +
                               ": " + errno_text(errno));
    }
  } else {
    std::array<int, 2> fds{};
    if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
      throw std::runtime_error("child_process: pipe2 failed: " + errno_text(errno));
    }
    state_->out_fd = unique_fd(fds[0]);
    out_write = unique_fd(fds[1]);
  }

  unique_fd err_write;
  if (options.capture_stderr) {
    std::array<int, 2> fds{};
    if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
      throw std::runtime_error("child_process: pipe2 failed: " + errno_text(errno));
    }
    state_->err_fd = unique_fd(fds[0]);
    err_write = unique_fd(fds[1]);
  }

  std::array<int, 2> error_pipe{};
  if (::pipe2(error_pipe.data(), O_CLOEXEC) != 0) {
    throw std::runtime_error("child_process: pipe2 failed: " + errno_text(errno));
  }
  unique_fd error_read(error_pipe[0]);
  unique_fd error_write(error_pipe[1]);

  exec_plan plan;
  plan.path = path.c_str();
  plan.argv = argv.data();
  plan.envp = envp.empty() ? environ : envp.data();
  plan.stdin_fd = stdin_fd.get();
  plan.stdout_fd = out_write.get();
  plan.stderr_fd = options.capture_stderr ? err_write.get()
                   : options.merge_stderr ? out_write.get()
                                          : -1;
  plan.error_fd = error_write.get();
  plan.parent_pid = ::getpid();
  plan.max_fd = max_fd_hint();

  int fork_errno = 0;
  const pid_t pid = spawner::instance().run([&plan, &fork_errno]() -> pid_t {
    const pid_t child = ::fork();
    if (child == 0) exec_child(plan);
    if (child < 0) fork_errno = errno;
    return child;
  });
  if (pid < 0) throw std::runtime_error("child_process: fork failed: " + errno_text(fork_errno));
  state_->pid = pid;

  // Close the child's ends here, then learn whether exec succeeded (EOF) or failed (errno).
  stdin_fd.reset();
  out_write.reset();
  err_write.reset();
  error_write.reset();
  int exec_errno = 0;
  ssize_t n = 0;
  do {
    n = ::read(error_read.get(), &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    int raw = 0;
    while (::waitpid(pid, &raw, 0) < 0 && errno == EINTR) {
    }
    state_->pid = -1;
    throw std::runtime_error("child_process: cannot execute " + path + ": " +
                             errno_text(exec_errno));
  }

  if (state_->out_fd.get() >= 0 || state_->err_fd.get() >= 0) {
    state_->eof = false;
    state* s = state_.get();
    s->reader = std::thread([s] { s->read_loop(); });
  }
}

child_process::~child_process() = default;
child_process::child_process(child_process&&) noexcept = default;
child_process& child_process::operator=(child_process&&) noexcept = default;

pid_t child_process::pid() const {
  return state_ ? state_->pid : -1;
}

void child_process::kill(int sig) {
  if (!state_ || state_->pid <= 0) return;
  std::lock_guard lock(state_->mutex);
  if (!state_->status) ::kill(state_->pid, sig);
}

std::optional<int> child_process::wait_for(std::chrono::milliseconds limit) {
  if (!state_ || state_->pid <= 0) return -1;
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + limit;
  std::chrono::microseconds backoff(200);
  for (;;) {
    if (auto status = state_->try_reap()) {
      std::unique_lock lock(state_->mutex);
      state_->eof_cv.wait_for(lock, std::chrono::seconds(1), [this] { return state_->eof; });
      return status;
    }
    const auto now = clock::now();
    if (now >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::min<clock::duration>(backoff, deadline - now));
    backoff = std::min<std::chrono::microseconds>(backoff * 2, std::chrono::milliseconds(10));
  }
}

bool child_process::running() const {
  return state_ && state_->pid > 0 && !state_->try_reap().has_value();
}

std::string child_process::output() const {
  if (!state_) return {};
  std::lock_guard lock(state_->mutex);
  return state_->output;
}

std::string child_process::error_output() const {
  if (!state_) return {};
  std::lock_guard lock(state_->mutex);
  return state_->error_output;
}

std::filesystem::path find_program(std::string_view name, const std::filesystem::path& fallback) {
  if (name.find('/') != std::string_view::npos) return std::filesystem::path(name);
  const char* path_env = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): no setenv
  std::string_view dirs = path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    const auto colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    dirs = colon == std::string_view::npos ? std::string_view{} : dirs.substr(colon + 1);
    if (dir.empty()) continue;
    std::filesystem::path candidate = std::filesystem::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) {
      return candidate;
    }
  }
  std::error_code ec;
  if (!fallback.empty() && std::filesystem::is_regular_file(fallback, ec)) return fallback;
  throw std::runtime_error("find_program: " + std::string(name) + " not found on PATH");
}

}  // namespace rlock::test
