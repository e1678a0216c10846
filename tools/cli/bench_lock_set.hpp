// bench_lock_set.hpp: many distinct locks of one client taken and released together with the
// asynchronous API, for the `rlock bench` watchdog and footprint scenarios.
//
// Guarantees:
//  - The names are "<prefix><tag>:<i>", i = 0..count-1, all held by one owner id (distinct
//    names: no reentrancy involved).
//  - acquire_all() keeps at most `window` operations in flight and returns by `deadline`
//    (plus scheduling slack) with the number of locks held; without a lease they are held
//    under the watchdog. release_all() unlocks every lock held and returns by `deadline` with
//    the number released. Neither throws for a failed lock operation: failures are counted in
//    failures() and the first error's message is kept in first_error().
//  - An operation still in flight at the deadline completes into shared state, never into a
//    destroyed object.
//  - Not thread-safe: one owner thread calls the members.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <rlock/client.hpp>
#include <string>
#include <vector>

namespace rlock::cli {

class bench_lock_set {
 public:
  using clock = std::chrono::steady_clock;

  bench_lock_set(const rlock::client& c, const std::string& prefix, const std::string& tag,
                 std::size_t count);
  std::size_t acquire_all(clock::time_point deadline,
                          std::optional<std::chrono::milliseconds> lease = std::nullopt,
                          std::size_t window = 1000);
  std::size_t release_all(clock::time_point deadline, std::size_t window = 1000);
  std::size_t size() const { return locks_.size(); }
  std::size_t failures() const;
  std::string first_error() const;

  /// The owner id of every hold of the set.
  static constexpr std::uint64_t owner_id = (1ULL << 62) + 1;

 private:
  struct shared_state;
  std::vector<rlock::lock> locks_;
  std::shared_ptr<shared_state> state_;
};

}  // namespace rlock::cli
