// fault_worker: one contending process of the fault suite. Uses only rlock's public API.
//
//   rlock_fault_worker --id N --lock-url URL --register-url URL --name NAME --until-ns T
//       [--watchdog-ms 1500] [--wait-ms 2000] [--hold-ms 50] [--queue 1] [--liveness-ms 6000]
//       [--timeout-ms 1000] [--connect-timeout-ms 1000] [--fenced 0] [--careless 0]
//
// Until steady_clock reaches T (CLOCK_MONOTONIC nanoseconds, shared by all processes), it
// repeatedly takes the lock NAME on the lock server with try_lock(wait) and the watchdog lease,
// reads the register "<NAME>:register" on the register server (GET), holds for about hold-ms,
// writes read + 1 (SET) unless the lock's loss signal fired or valid_until() passed, and
// unlocks. With --fenced 1 it takes the lock as a fenced lock (rlock::fenced_lock) and reads
// and writes the register through scripts that refuse a token lower than the highest they have
// seen ("<NAME>:register:fence"), logging a refusal as read_fail / write_fail with the error
// "fenced". With --careless 1 it writes whatever its loss signal says (a holder that never
// checks: only fencing can stop its stale write). Both halves of the loss signal are logged as loss
// events when the worker sees them: the loss_token()'s stop callback ("loss_token"), and its own
// checks of valid_until() before the write and at release ("valid_until"). Every step is written to
// stdout as one JSON line (history.hpp) with a single write(2), so a SIGKILL never leaves half a
// line and never loses a line already logged. Then it logs "idle" and waits (at most 60 s) for
// SIGTERM before it logs "exit" and returns 0, so that the runner can check that idle clients send
// no renewals.
//
// Exit status: 0 after a normal run, 2 on bad arguments, 1 on an unexpected exception (its
// text on stderr).
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <rlock/client.hpp>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>

#include "faults/history.hpp"

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using rlock::faults::event;
using rlock::faults::event_kind;
using rlock::faults::now_ns;
using rlock::faults::to_ns;

struct worker_options {
  int id = 0;
  std::string lock_url{};
  std::string register_url{};
  std::string name{};
  std::int64_t until_ns = 0;
  int watchdog_ms = 1500;
  int wait_ms = 2000;
  int hold_ms = 50;
  bool queue = true;
  int liveness_ms = 6000;
  int timeout_ms = 1000;
  int connect_timeout_ms = 1000;
  bool fenced = false;
  bool careless = false;
};

worker_options parse_options(int argc, char** argv) {
  std::map<std::string, std::string> kv;
  for (int i = 1; i + 1 < argc; i += 2) kv[argv[i]] = argv[i + 1];
  if (argc % 2 != 1) throw std::invalid_argument("options come in --key value pairs");
  worker_options o;
  auto take = [&](const char* key, auto& field) {
    auto it = kv.find(key);
    if (it == kv.end()) return;
    using T = std::remove_reference_t<decltype(field)>;
    if constexpr (std::is_same_v<T, std::string>) {
      field = it->second;
    } else if constexpr (std::is_same_v<T, bool>) {
      field = it->second != "0";
    } else {
      field = static_cast<T>(std::stoll(it->second));
    }
    kv.erase(it);
  };
  take("--id", o.id);
  take("--lock-url", o.lock_url);
  take("--register-url", o.register_url);
  take("--name", o.name);
  take("--until-ns", o.until_ns);
  take("--watchdog-ms", o.watchdog_ms);
  take("--wait-ms", o.wait_ms);
  take("--hold-ms", o.hold_ms);
  take("--queue", o.queue);
  take("--liveness-ms", o.liveness_ms);
  take("--timeout-ms", o.timeout_ms);
  take("--connect-timeout-ms", o.connect_timeout_ms);
  take("--fenced", o.fenced);
  take("--careless", o.careless);
  if (!kv.empty()) throw std::invalid_argument("unknown option " + kv.begin()->first);
  if (o.id <= 0 || o.lock_url.empty() || o.register_url.empty() || o.name.empty() ||
      o.until_ns == 0) {
    throw std::invalid_argument("--id, --lock-url, --register-url, --name, --until-ns required");
  }
  return o;
}

// The errc's name as written in the enum (what the checker matches), else the message.
std::string code_name(std::error_code ec) {
  if (ec.category() != rlock::error_category()) return ec.message();
  switch (static_cast<rlock::errc>(ec.value())) {
    case rlock::errc::invalid_argument:
      return "invalid_argument";
    case rlock::errc::invalid_url:
      return "invalid_url";
    case rlock::errc::timeout:
      return "timeout";
    case rlock::errc::connection_lost:
      return "connection_lost";
    case rlock::errc::not_connected:
      return "not_connected";
    case rlock::errc::connection_refused:
      return "connection_refused";
    case rlock::errc::tls_error:
      return "tls_error";
    case rlock::errc::auth_failed:
      return "auth_failed";
    case rlock::errc::auth_required:
      return "auth_required";
    case rlock::errc::no_permission:
      return "no_permission";
    case rlock::errc::wrong_type:
      return "wrong_type";
    case rlock::errc::out_of_memory:
      return "out_of_memory";
    case rlock::errc::script_error:
      return "script_error";
    case rlock::errc::server_error:
      return "server_error";
    case rlock::errc::protocol_error:
      return "protocol_error";
    case rlock::errc::server_busy:
      return "server_busy";
    case rlock::errc::not_owner:
      return "not_owner";
    case rlock::errc::lock_lost:
      return "lock_lost";
    case rlock::errc::replication_not_confirmed:
      return "replication_not_confirmed";
    case rlock::errc::stopped:
      return "stopped";
    case rlock::errc::shutdown:
      return "shutdown";
    case rlock::errc::subscription_timeout:
      return "subscription_timeout";
    case rlock::errc::read_only:
      return "read_only";
    case rlock::errc::command_unavailable:
      return "command_unavailable";
    case rlock::errc::cluster_redirect:
      return "cluster_redirect";
  }
  return ec.message();
}

bool outcome_unknown(std::error_code ec) {
  return ec == rlock::errc::timeout || ec == rlock::errc::connection_lost;
}

// Appends events to stdout, one write(2) per line; callable from any thread.
class history_writer {
 public:
  explicit history_writer(int worker) : worker_(worker) {}

  void log(event e) {
    e.worker = worker_;
    if (e.t_ns == 0) e.t_ns = now_ns();
    std::string line = rlock::faults::to_json(e);
    line += '\n';
    std::lock_guard lk(mu_);
    std::size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(STDOUT_FILENO, line.data() + done, line.size() - done);
      if (n <= 0) return;  // nowhere to log: the runner will see a short history
      done += static_cast<std::size_t>(n);
    }
  }

 private:
  int worker_;
  std::mutex mu_;
};

event make(event_kind kind, const std::string& owner) {
  event e;
  e.kind = kind;
  e.owner = owner;
  return e;
}

std::int64_t valid_until_ns(const rlock::lock& l) {
  const auto v = l.valid_until();
  return v == steady::time_point::min() ? -1 : to_ns(v);
}

rlock::config lock_config(const worker_options& o) {
  rlock::config cfg;
  cfg.address = o.lock_url;
  cfg.lock_watchdog_timeout = std::chrono::milliseconds(o.watchdog_ms);
  cfg.lock_queue = o.queue;
  cfg.lock_queue_liveness = std::chrono::milliseconds(o.liveness_ms);
  cfg.timeout = std::chrono::milliseconds(o.timeout_ms);
  cfg.connect_timeout = std::chrono::milliseconds(o.connect_timeout_ms);
  // Short retry and reconnect delays, as the integration tests use: faults heal in seconds.
  cfg.retry_delay_base = 50ms;
  cfg.retry_delay_max = 100ms;
  cfg.reconnect_delay_min = 10ms;
  cfg.reconnect_delay_max = 100ms;
  return cfg;
}

// The fenced register (--fenced 1): KEYS[1] the register, KEYS[2] the highest token seen;
// ARGV[1] the holder's token (ARGV[2] the value to write). A token lower than the highest seen
// is refused ({0} / 0); otherwise it becomes the highest seen, and the read returns {1, value}
// (value absent: the register was never written), the write sets the value and returns 1.
const rlock::script& fenced_read() {
  static const rlock::script s{
      "if tonumber(ARGV[1]) < tonumber(redis.call('get', KEYS[2]) or '0') then return {0} end "
      "redis.call('set', KEYS[2], ARGV[1]) return {1, redis.call('get', KEYS[1])}"};
  return s;
}
const rlock::script& fenced_write() {
  static const rlock::script s{
      "if tonumber(ARGV[1]) < tonumber(redis.call('get', KEYS[2]) or '0') then return 0 end "
      "redis.call('set', KEYS[2], ARGV[1]) redis.call('set', KEYS[1], ARGV[2]) return 1"};
  return s;
}

// The register's value, or nullopt when a fenced register refused the token.
std::optional<long long> read_register(rlock::client& reg, const std::string& key,
                                       std::optional<rlock::fencing_token> token) {
  if (!token) {
    const rlock::reply r = reg.execute({"GET", key});
    return r.is_nil() ? 0 : std::stoll(std::string(r.str()));
  }
  const rlock::reply r = reg.eval(fenced_read(), {key, key + ":fence"}, {std::to_string(*token)});
  if (r[0].integer() == 0) return std::nullopt;
  return r[1].is_nil() ? 0 : std::stoll(std::string(r[1].str()));  // past the end: nil
}

// Whether the write was applied (false: a fenced register refused the token).
bool write_register(rlock::client& reg, const std::string& key,
                    std::optional<rlock::fencing_token> token, long long value) {
  if (!token) {
    reg.execute({"SET", key, std::to_string(value)});
    return true;
  }
  return reg.eval(fenced_write(), {key, key + ":fence"},
                  {std::to_string(*token), std::to_string(value)})
             .integer() == 1;
}

void run(const worker_options& o, history_writer& out) {
  rlock::client locks(lock_config(o));
  rlock::config reg_cfg;
  reg_cfg.address = o.register_url;
  rlock::client reg(reg_cfg);
  rlock::fenced_lock fenced = locks.get_fenced_lock(o.name);
  rlock::lock& l = fenced.as_lock();
  const std::string key = o.name + ":register";
  const std::string owner = locks.id() + ":" + std::to_string(rlock::this_thread_owner_id());
  std::mt19937 rng(static_cast<unsigned>(::getpid()));
  std::uniform_int_distribution<int> hold(o.hold_ms / 2, o.hold_ms * 3 / 2);
  const auto wait = std::chrono::milliseconds(o.wait_ms);

  event started = make(event_kind::start, owner);
  started.detail = "pid=" + std::to_string(::getpid());
  out.log(started);

  while (now_ns() < o.until_ns) {
    event invoke = make(event_kind::acquire_invoke, owner);
    invoke.t_ns = now_ns();
    invoke.deadline_ns = invoke.t_ns + std::chrono::nanoseconds(wait).count();
    out.log(invoke);
    bool acquired = false;
    std::optional<rlock::fencing_token> token;
    std::string error;
    try {
      if (o.fenced) {
        token = fenced.try_lock_and_get_token(wait);
        acquired = token.has_value();
      } else {
        acquired = l.try_lock(wait);
      }
    } catch (const rlock::error& e) {
      error = code_name(e.code());
    }
    if (!acquired) {
      event fail = make(event_kind::acquire_fail, owner);
      fail.error = error.empty() ? "not-acquired" : error;
      out.log(fail);
      // After an error (server down, connection refused) do not spin on it.
      if (!error.empty()) std::this_thread::sleep_for(20ms);
      continue;
    }
    const std::stop_token lost = l.loss_token();
    event ok = make(event_kind::acquire_ok, owner);
    ok.valid_until_ns = valid_until_ns(l);
    ok.token = token.value_or(0);
    out.log(ok);
    std::stop_callback on_loss(lost, [&out, &owner] {
      event e = make(event_kind::loss, owner);
      e.detail = rlock::faults::loss_by_token;
      out.log(e);
    });
    // The other half of the loss signal: the local lease deadline, checked by the holder itself.
    bool deadline_seen = false;
    auto past_deadline = [&] {
      if (lost.stop_requested()) return true;  // already logged by the callback
      if (steady::now() < l.valid_until()) return false;
      if (!deadline_seen) {
        deadline_seen = true;
        event e = make(event_kind::loss, owner);
        e.detail = rlock::faults::loss_by_deadline;
        out.log(e);
      }
      return true;
    };

    std::optional<long long> value;
    try {
      value = read_register(reg, key, token);
      if (value) {
        event read = make(event_kind::read, owner);
        read.value = value;
        out.log(read);
      } else {
        event refused = make(event_kind::read_fail, owner);
        refused.error = rlock::faults::refused_by_fence;
        out.log(refused);
      }
    } catch (const rlock::error& e) {
      event fail = make(event_kind::read_fail, owner);
      fail.error = code_name(e.code());
      out.log(fail);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(hold(rng)));
    if (value) {
      // A careful holder does not write once it knows, or must assume, the lock is gone; a
      // careless one writes anyway.
      if (!o.careless && past_deadline()) {
        event skip = make(event_kind::write_skip, owner);
        skip.lost = lost.stop_requested();
        out.log(skip);
      } else {
        event write = make(event_kind::write_invoke, owner);
        write.value = *value + 1;
        out.log(write);
        try {
          if (write_register(reg, key, token, *value + 1)) {
            out.log(make(event_kind::write_ok, owner));
          } else {
            event refused = make(event_kind::write_fail, owner);
            refused.error = rlock::faults::refused_by_fence;
            out.log(refused);
          }
        } catch (const rlock::error& e) {
          event fail = make(event_kind::write_fail, owner);
          fail.error = code_name(e.code());
          fail.indeterminate = outcome_unknown(e.code());
          out.log(fail);
        }
      }
    }
    event release = make(event_kind::release_invoke, owner);
    release.lost = past_deadline();
    release.valid_until_ns = valid_until_ns(l);
    out.log(release);
    try {
      l.unlock_or_throw();
      out.log(make(event_kind::release_ok, owner));
    } catch (const rlock::error& e) {
      event fail = make(event_kind::release_fail, owner);
      fail.error = code_name(e.code());
      out.log(fail);
    }
  }
  out.log(make(event_kind::idle, owner));
  // Idle but connected: the runner checks that no renewal is sent now, then sends SIGTERM.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  const timespec limit{60, 0};
  sigtimedwait(&set, nullptr, &limit);
  out.log(make(event_kind::exit, owner));
}

}  // namespace

int main(int argc, char** argv) {
  // SIGTERM is taken with sigtimedwait at the end of the run: block it in every thread (the
  // client's threads inherit this mask).
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  worker_options o;
  try {
    o = parse_options(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rlock_fault_worker: %s\n", e.what());
    return 2;
  }
  history_writer out(o.id);
  try {
    run(o, out);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rlock_fault_worker %d: %s\n", o.id, e.what());
    return 1;
  }
}
