// The counters behind client::stats() (rlock/client_stats.hpp): one set per client, shared by
// its core, connections, subscribers, watchdogs and permit keepers, each of which counts what it
// does. Relaxed atomics: a snapshot reads each on its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <system_error>

#include "rlock/client_stats.hpp"

namespace rlock::detail {

struct client_counters {
  using counter = std::atomic<std::uint64_t>;
  static void add(counter& c, std::uint64_t n = 1) noexcept {
    c.fetch_add(n, std::memory_order_relaxed);
  }

  /// A request's completion, as its result's code says.
  void completed(std::error_code ec) noexcept;
  /// The cumulative counters and requests_in_flight (the other gauges are the caller's).
  client_stats snapshot() const noexcept;

  // The three counted on every request, by different threads: a cache line each.
  alignas(64) counter requests{0};
  alignas(64) counter requests_completed{0};
  alignas(64) counter attempts{0};
  alignas(64) counter requests_failed{0};
  counter requests_timed_out{0};
  counter requests_unknown{0};
  counter scripts_reloaded{0};
  counter connects{0};
  counter connect_failures{0};
  counter disconnects{0};
  counter messages{0};
  counter subscribes{0};
  counter unsubscribes{0};
  counter writes_not_confirmed{0};
  counter renewals{0};
  counter renewals_failed{0};
  counter holds_lost{0};
};

}  // namespace rlock::detail
