#include "faults/worker_pool.hpp"

#include <signal.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "support/wait.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;

constexpr auto pump_interval = 4ms;

// The state letter of /proc/<pid>/stat ('T': stopped), or '?' if it cannot be read.
char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return '?';
  return text[paren + 2];
}

bool lock_event(event_kind k) {
  switch (k) {
    case event_kind::acquire_ok:
    case event_kind::read:
    case event_kind::read_fail:
    case event_kind::write_invoke:
    case event_kind::write_ok:
    case event_kind::write_fail:
    case event_kind::write_skip:
    case event_kind::release_invoke:
    case event_kind::acquire_invoke:
    case event_kind::acquire_fail:
      return true;
    default:
      return false;
  }
}

}  // namespace

struct worker_pool::worker {
  int id = 0;
  std::unique_ptr<test::child_process> process{};
  pid_t pid = -1;
  history_reader reader;
  std::string owner{};
  bool holding = false;
  std::int64_t holding_since = 0;
  bool stopped = false;
  bool idle = false;
  bool exited = false;
  bool killed_by_pool = false;
  bool terminated = false;

  explicit worker(std::filesystem::path history) : reader(std::move(history)) {}
};

worker_pool::worker_pool(worker_config config) : config_(std::move(config)) {}

worker_pool::~worker_pool() {
  for (auto& w : workers_) {
    if (w->process && w->stopped) w->process->kill(SIGCONT);
  }
  // child_process's destructor kills and reaps.
}

int worker_pool::spawn() {
  const int id = static_cast<int>(workers_.size()) + 1;
  const auto history = config_.dir / ("worker-" + std::to_string(id) + ".jsonl");
  auto w = std::make_unique<worker>(history);
  w->id = id;
  const auto ms = [](std::chrono::milliseconds d) { return std::to_string(d.count()); };
  std::vector<std::string> args;
  auto add = [&args](const char* key, std::string value) {
    args.emplace_back(key);
    args.push_back(std::move(value));
  };
  worker_placement where;
  if (config_.place) where = config_.place(id);
  std::filesystem::path program = config_.program;
  if (!where.prefix.empty()) {
    program = where.prefix.front();
    args.assign(where.prefix.begin() + 1, where.prefix.end());
    args.push_back(config_.program.string());
  }
  add("--id", std::to_string(id));
  add("--lock-url", where.lock_url.empty() ? config_.lock_url : where.lock_url);
  add("--register-url", where.register_url.empty() ? config_.register_url : where.register_url);
  add("--name", config_.name);
  add("--until-ns", std::to_string(config_.until_ns));
  add("--watchdog-ms", ms(config_.watchdog));
  add("--wait-ms", ms(config_.wait));
  add("--hold-ms", ms(config_.hold));
  add("--queue", config_.queue ? "1" : "0");
  add("--liveness-ms", ms(config_.liveness));
  add("--timeout-ms", ms(config_.timeout));
  add("--connect-timeout-ms", ms(config_.connect_timeout));
  add("--fenced", config_.fenced ? "1" : "0");
  add("--careless", config_.careless ? "1" : "0");
  test::child_options opts;
  opts.stdout_file = history;
  opts.capture_stderr = true;
  w->process = std::make_unique<test::child_process>(program, std::move(args), opts);
  w->pid = w->process->pid();
  workers_.push_back(std::move(w));
  return id;
}

worker_pool::worker* worker_pool::find(int id) const {
  if (id < 1 || static_cast<std::size_t>(id) > workers_.size()) return nullptr;
  return workers_[static_cast<std::size_t>(id) - 1].get();
}

void worker_pool::pump() {
  for (auto& w : workers_) {
    for (auto& e : w->reader.poll()) {
      if (e.kind == event_kind::start) w->owner = e.owner;
      if (e.kind == event_kind::idle) w->idle = true;
      if (lock_event(e.kind)) {
        w->holding = e.kind != event_kind::release_invoke && e.kind != event_kind::acquire_invoke &&
                     e.kind != event_kind::acquire_fail;
      }
      if (e.kind == event_kind::acquire_ok) w->holding_since = e.t_ns;
      events_.push_back(std::move(e));
    }
    if (w->exited || !w->process) continue;
    const auto status = w->process->wait_for(0ms);
    if (!status) continue;
    w->exited = true;
    for (auto& e : w->reader.poll()) events_.push_back(std::move(e));
    const bool expected = w->killed_by_pool || (w->terminated && *status == 0);
    if (!expected) {
      std::ostringstream out;
      out << "worker " << w->id << " exited with status " << *status << ": "
          << w->process->error_output();
      crashes_.push_back(out.str());
    }
  }
}

void worker_pool::pump_for(std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  for (;;) {
    pump();
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(pump_interval, until - now));
  }
}

std::vector<int> worker_pool::holders() const {
  std::vector<int> out;
  for (const auto& w : workers_) {
    if (!w->exited && !w->stopped && w->holding) out.push_back(w->id);
  }
  return out;
}

bool worker_pool::is_holding(int id) const {
  const worker* w = find(id);
  return w && !w->exited && w->holding;
}

std::int64_t worker_pool::holding_since(int id) const {
  const worker* w = find(id);
  return w && w->holding ? w->holding_since : 0;
}

std::string worker_pool::owner_of(int id) const {
  const worker* w = find(id);
  return w ? w->owner : std::string();
}

pid_t worker_pool::pid_of(int id) const {
  const worker* w = find(id);
  return w ? w->pid : -1;
}

bool worker_pool::stop(int id) {
  worker* w = find(id);
  if (!w || w->exited || !w->process) return false;
  if (w->stopped) return true;
  w->process->kill(SIGSTOP);
  // External state: the kernel's view of the process (there is no event for "stopped").
  if (!test::wait_until([&] { return process_state(w->pid) == 'T'; }, 2s, 1ms)) return false;
  event e;
  e.kind = event_kind::stopped;
  e.t_ns = now_ns();
  e.worker = id;
  events_.push_back(e);
  w->stopped = true;
  pump();  // its history is complete up to the stop now
  return true;
}

std::int64_t worker_pool::resume(int id) {
  worker* w = find(id);
  if (!w || !w->stopped || !w->process) return now_ns();
  event e;
  e.kind = event_kind::resumed;
  e.t_ns = now_ns();
  e.worker = id;
  events_.push_back(e);
  w->process->kill(SIGCONT);
  w->stopped = false;
  return e.t_ns;
}

void worker_pool::kill(int id, const std::string& why) {
  worker* w = find(id);
  if (!w || w->exited || !w->process) return;
  stop(id);
  event e;
  e.kind = event_kind::killed;
  e.t_ns = now_ns();
  e.worker = id;
  e.detail = why;
  events_.push_back(e);
  w->killed_by_pool = true;
  w->process->kill(SIGKILL);
  w->process->wait_for(5s);
  w->stopped = false;
  pump();
}

bool worker_pool::wait_all_idle(std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    pump();
    bool all = true;
    for (const auto& w : workers_) {
      if (!w->exited && !w->idle) all = false;
    }
    if (all) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(pump_interval);
  }
}

void worker_pool::terminate_all(std::chrono::milliseconds limit) {
  for (auto& w : workers_) {
    if (w->exited || !w->process) continue;
    if (w->stopped) resume(w->id);
    w->terminated = true;
    w->process->kill(SIGTERM);
  }
  const auto until = std::chrono::steady_clock::now() + limit;
  for (auto& w : workers_) {
    if (w->exited || !w->process) continue;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (!w->process->wait_for(std::max(left, 0ms))) kill(w->id, "did not exit");
  }
  pump();
}

void worker_pool::record(event e) {
  if (e.t_ns == 0) e.t_ns = now_ns();
  events_.push_back(std::move(e));
}

std::size_t worker_pool::malformed_lines() const {
  std::size_t n = 0;
  for (const auto& w : workers_) n += w->reader.malformed();
  return n;
}

}  // namespace rlock::faults
