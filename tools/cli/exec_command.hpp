// exec_command.hpp: `rlock exec NAME [options] -- CMD [ARGS...]`: run a command while holding a
// lock (issue #4).
//
// Guarantees:
//  - The command starts only after the lock is held, and the lock is released after the
//    command has ended, however it ended (exit, crash, signal, KILL after a loss). With
//    --permits N the "lock" is one permit of the permit-expirable semaphore NAME
//    (exec_permit.hpp): at most N commands hold one at once.
//  - rlock exits with the command's status (128 + N if it died of signal N), except:
//    --conflict-exit-code (75) when the lock was not acquired within --wait (the command never
//    started); 128 + N when SIGINT/SIGTERM/SIGHUP ended the wait (the command never started);
//    --lost-exit-code (76) when the lock was lost while the command ran or was found gone when
//    it ended; 126/127 when the command cannot be executed / is not found; 64 usage; 69 server
//    unavailable. Every status rlock chooses itself comes with one line on stderr.
//  - The command sees RLOCK_NAME=<name>. RLOCK_TOKEN is set only for locks with a fencing token
//    (none yet: the reentrant lock has none, and an inherited RLOCK_TOKEN is removed). It never
//    sees RLOCK_PASSWORD, nor an RLOCK_URL that holds a password (both are removed).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "connection_options.hpp"
#include "exit_codes.hpp"

namespace rlock::cli {

struct exec_options {
  std::string name{};
  std::vector<std::string> command{};
  std::optional<std::chrono::milliseconds> wait{};              ///< nullopt: wait forever
  std::optional<std::chrono::milliseconds> lease{};             ///< nullopt: watchdog renews
  std::optional<std::chrono::milliseconds> watchdog_timeout{};  ///< nullopt: 30 s
  std::string on_loss = "TERM";
  std::chrono::milliseconds grace{10000};
  int conflict_exit_code = exit_codes::conflict;
  int lost_exit_code = exit_codes::lost;
  bool verbose = false;
  /// Acquire as a fenced lock and pass the token in RLOCK_TOKEN.
  bool fenced = false;
  /// Take the spin lock NAME: wait by polling, release without publishing.
  bool spin = false;
  /// Take the fair lock NAME: queue in Redisson's RFairLock queue, served in arrival order.
  bool fair = false;
  /// Take the read half (shared) or the write half (exclusive) of the read-write lock NAME
  /// instead of the reentrant lock NAME.
  bool shared = false;
  bool exclusive = false;
  /// > 0: hold one permit of the permit-expirable semaphore NAME of this many permits instead
  /// of a lock (exec_permit.hpp).
  std::int64_t permits = 0;
  connection_options connection{};
};

CLI::App* add_exec_command(CLI::App& app, exec_options& opts);
int run_exec(const exec_options& opts);

}  // namespace rlock::cli
