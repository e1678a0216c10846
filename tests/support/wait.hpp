// wait_until: poll a condition on *external* state until it holds or a time limit passes.
//
// Use it only for state a test cannot get an event for, e.g. a key appearing in Redis or a
// server-side client count changing. Prefer events (futures, callbacks, condition variables,
// child_process::wait_for, raw_client::read) wherever the code under test offers one: polling
// makes tests slower and hides ordering bugs.
//
// Guarantees: `p` is evaluated at least once, and once more at or after the deadline, so a
// condition that becomes true within `limit` is seen; returns true as soon as `p()` is true,
// false if it is still false after `limit`. Sleeps `step` between evaluations (less near the
// deadline). Exceptions from `p` propagate.
#pragma once

#include <algorithm>
#include <chrono>
#include <concepts>
#include <thread>

namespace rlock::test {

template <class Pred>
requires std::predicate<Pred&>
bool wait_until(Pred p, std::chrono::milliseconds limit,
                std::chrono::milliseconds step = std::chrono::milliseconds(5)) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + limit;
  for (;;) {
    if (p()) return true;
    const auto now = clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(std::min<clock::duration>(step, deadline - now));
  }
}

}  // namespace rlock::test
