#include "detail/client_counters.hpp"

#include "rlock/error.hpp"

namespace rlock::detail {

void client_counters::completed(std::error_code ec) noexcept {
  if (ec) {
    add(requests_failed);
    if (ec == errc::timeout) add(requests_timed_out);
    if (ec == errc::connection_lost) add(requests_unknown);
  }
  add(requests_completed);
}

client_stats client_counters::snapshot() const noexcept {
  constexpr auto relaxed = std::memory_order_relaxed;
  client_stats s;
  // Completions first: a request is counted before it is sent, so by the time its completion is
  // read its request is too, but the counts are relaxed, so the gauge is clamped at 0 anyway.
  const std::uint64_t done = requests_completed.load(relaxed);
  s.requests = requests.load(relaxed);
  s.requests_in_flight = s.requests >= done ? s.requests - done : 0;
  s.requests_failed = requests_failed.load(relaxed);
  s.requests_timed_out = requests_timed_out.load(relaxed);
  s.requests_unknown = requests_unknown.load(relaxed);
  s.attempts = attempts.load(relaxed);
  s.scripts_reloaded = scripts_reloaded.load(relaxed);
  s.connects = connects.load(relaxed);
  s.connect_failures = connect_failures.load(relaxed);
  s.disconnects = disconnects.load(relaxed);
  s.messages = messages.load(relaxed);
  s.subscribes = subscribes.load(relaxed);
  s.unsubscribes = unsubscribes.load(relaxed);
  s.writes_not_confirmed = writes_not_confirmed.load(relaxed);
  s.renewals = renewals.load(relaxed);
  s.renewals_failed = renewals_failed.load(relaxed);
  s.holds_lost = holds_lost.load(relaxed);
  return s;
}

}  // namespace rlock::detail
