// history: the events of a fault-test run, and their JSON-lines form.
//
// A history is what one worker process (one incarnation: a respawned worker is a new history)
// observed, one event per line, in the order it observed them. The runner adds its own events
// (faults it injected, processes it stopped, resumed or killed), addressed to the worker they
// affect. Times are steady_clock nanoseconds: on Linux that is CLOCK_MONOTONIC, which every
// process on the machine shares, so events of different processes can be compared.
//
// Guarantees:
//  - to_json() writes one line without a trailing newline, with every field that differs from
//    its default; parse_event() reads it back into an equal event (round trip), ignores
//    unknown keys, and returns std::nullopt for anything that is not such a line.
//  - history_reader returns only complete lines (ending in '\n'), so a reader running while
//    the writer appends, or after the writer was killed mid-line, never sees half an event.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::faults {

enum class event_kind {
  // ---- written by a worker ----
  start,           // the worker is up; owner = its lock owner field, detail = "pid=<pid>"
  acquire_invoke,  // try_lock(wait) called; deadline_ns = call time + wait budget
  acquire_ok,      // try_lock returned true; valid_until_ns = lock.valid_until(), token
  acquire_fail,    // returned false (error "not-acquired") or threw (error = errc name)
  read,            // GET of the register inside the critical section; value = what it read
  read_fail,       // the GET failed: nothing is written in this critical section (error
                   // "fenced": the register refused the holder's token as stale)
  write_invoke,    // SET of the register is sent; value = what it writes (read + 1)
  write_ok,        // the SET was acknowledged
  write_fail,      // the SET failed; indeterminate = the outcome is unknown (timeout, lost)
  write_skip,      // not written: the loss signal had fired or valid_until() had passed
  release_invoke,  // unlock() called; lost = loss_token() stopped, valid_until_ns as above
  release_ok,      // unlock() returned
  release_fail,    // unlock() threw; error = errc name (not_owner: the lock was lost)
  loss,            // the worker learned the hold is lost; detail says how (see below)
  idle,            // the worker finished its run and waits to be told to exit
  exit,            // the worker exits normally
  // ---- written by the runner (worker = the affected worker, 0 if none) ----
  fault_start,  // detail = the nemesis and what it did
  fault_end,    // the fault was healed
  stopped,      // SIGSTOP delivered (the process is in state T)
  resumed,      // SIGCONT sent
  killed,       // SIGKILL sent (the process was stopped first, so it did nothing after it)
};

/// The error of a read_fail or write_fail that a fenced register refused: the holder's token was
/// lower than one it had already seen.
inline constexpr std::string_view refused_by_fence = "fenced";

/// The detail of a loss event: the hold's loss_token() fired (logged from its stop callback),
/// or the worker itself saw steady_clock past lock.valid_until() (before writing, at release).
inline constexpr std::string_view loss_by_token = "loss_token";
inline constexpr std::string_view loss_by_deadline = "valid_until";

std::string_view to_string(event_kind k);
std::optional<event_kind> parse_event_kind(std::string_view s);

struct event {
  event_kind kind = event_kind::start;
  std::int64_t t_ns = 0;             // steady_clock, nanoseconds since its epoch
  int worker = 0;                    // worker id (1, 2, ...); 0 for runner events without a target
  std::string owner{};               // the lock owner field "<client-uuid>:<owner-id>"
  std::optional<long long> value{};  // register value read or written
  std::int64_t deadline_ns = 0;      // acquire_invoke: when the wait budget ends
  std::int64_t valid_until_ns = 0;   // acquire_ok, release_invoke: lock.valid_until()
  std::int64_t token = 0;            // acquire_ok of a fenced worker: its fencing token
  bool lost = false;                 // release_invoke: the loss signal had fired
  bool indeterminate = false;        // write_fail, acquire_fail: the outcome is unknown
  std::string error{};               // *_fail: errc name, "not-acquired", or exception text
  std::string detail{};              // free text (pid, nemesis description)

  bool operator==(const event&) const = default;
};

std::string to_json(const event& e);
std::optional<event> parse_event(std::string_view line);
/// Parses every complete line of `text`; lines that do not parse are counted in *malformed.
std::vector<event> parse_history(std::string_view text, std::size_t* malformed = nullptr);

/// steady_clock as nanoseconds (the clock of every event).
std::int64_t to_ns(std::chrono::steady_clock::time_point t);
std::int64_t now_ns();

/// Reads a history file as it grows (tail -f without the waiting): each poll() returns the
/// events of the complete lines appended since the previous poll.
class history_reader {
 public:
  explicit history_reader(std::filesystem::path path);
  std::vector<event> poll();
  std::size_t malformed() const { return malformed_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::uintmax_t offset_ = 0;
  std::string partial_{};
  std::size_t malformed_ = 0;
};

}  // namespace rlock::faults
