// exec_acquire.hpp: the waiting half of `rlock exec`: acquire a lock while showing progress and
// honouring SIGINT/SIGTERM/SIGHUP.
//
// Guarantees of acquire_for_exec():
//  - Returns acquired only when the lock is held by `owner` (watchdog lease, or `lease`).
//  - A SIGINT/SIGTERM/SIGHUP read from `signals` stops the wait through the acquire's
//    std::stop_token; the result is then interrupted and nothing is left held (if the acquire
//    won the race with the stop, the hold is released before returning).
//  - The status line is refreshed every 250 ms (terminal) or 5 s (log mode), starting 250 ms
//    into the wait (a free lock never flickers a line), and cleared before returning; the holder
//    queries behind it are bounded by holder_probe (at most two in flight).
//  - For a fenced lock (exec_lock_of(lock, true)) acquired comes with the hold's fencing token,
//    and a token that cannot be issued fails the acquire, nothing held.
//  - Other signals read meanwhile (SIGCHLD) are dropped: no child exists yet.
//  - A lock's key is read once at the start (HGETALL, answered while the acquire waits): a hash
//    without Redisson's lock fields stops the wait, and the result is not_a_lock with nothing
//    held. A failed read (for example an ACL user without HGETALL) is ignored. For a semaphore's
//    permit (exec_lock::lock_hash false) the line shows the permits taken and free instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <rlock/client.hpp>
#include <string>
#include <system_error>

#include "exec_lock.hpp"
#include "signal_channel.hpp"
#include "status_line.hpp"

namespace rlock::cli {

enum class acquire_outcome { acquired, not_acquired, interrupted, not_a_lock, failed };

struct acquire_result {
  acquire_outcome outcome = acquire_outcome::failed;
  int signal = 0;              ///< interrupted: the signal
  std::error_code error{};     ///< failed: the library's error
  std::string error_detail{};  ///< failed: the reply's text that explains it, if any
  std::chrono::milliseconds waited{0};
  std::optional<rlock::fencing_token> token{};  ///< acquired, a fenced lock: the hold's token
};

struct acquire_request {
  std::uint64_t owner = 0;
  std::optional<std::chrono::milliseconds> wait{};   ///< nullopt: until acquired
  std::optional<std::chrono::milliseconds> lease{};  ///< nullopt: watchdog
};

acquire_result acquire_for_exec(rlock::client& client, const exec_lock& lock,
                                const acquire_request& request, signal_channel& signals,
                                status_line& line);

}  // namespace rlock::cli
