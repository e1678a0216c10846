// demo_events.hpp: the line protocol from `rlock demo` workers to the demo parent.
//
// One event per line, written with a single write(2) to a pipe (lines are far below PIPE_BUF, so
// lines of different workers never interleave):
//   ready W              worker W has connected and waits for "go"
//   acquired W SEQ NS    worker W acquired the lock for its SEQ-th time at NS
//   released W SEQ NS    ... and is about to release it at NS (before the unlock is sent)
//   done W COUNT         worker W stopped after COUNT critical sections
//   error W TEXT         worker W failed (TEXT: one line)
// NS is std::chrono::steady_clock nanoseconds (CLOCK_MONOTONIC: comparable across processes
// of one machine). The parent tells workers to start with "go END_NS\n" on their stdin.
//
// Guarantees: parse_demo_event(format_demo_event(e)) == e for every valid event; malformed
// lines give std::nullopt. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rlock::cli {

enum class demo_event_kind { ready, acquired, released, done, error };

struct demo_event {
  demo_event_kind kind = demo_event_kind::ready;
  int worker = 0;
  long long seq = 0;   ///< acquired/released: sequence number; done: count
  long long ns = 0;    ///< acquired/released: steady_clock nanoseconds
  std::string text{};  ///< error: the message
  bool operator==(const demo_event&) const = default;
};

/// The event as one line, ending in '\n'.
std::string format_demo_event(const demo_event& e);
/// One line without its '\n'.
std::optional<demo_event> parse_demo_event(std::string_view line);

/// steady_clock::now() in nanoseconds.
long long steady_now_ns();

}  // namespace rlock::cli
