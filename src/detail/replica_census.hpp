// replica_census: the replicas connected to one server, as the connections that WAIT on it
// last counted them (config::all_connected_replicas: each WAIT asks for that many), shared by
// those connections.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string_view>

#include "detail/info_field.hpp"
#include "detail/whole_number.hpp"

namespace rlock::detail {

/// The `connected_slaves:<n>` line of an INFO (replication) reply: n, or nullopt when the text
/// has no such line or its value is no whole number.
inline std::optional<long long> connected_replicas_in(std::string_view info) {
  const auto value = info_field(info, "connected_slaves");
  if (!value) return std::nullopt;
  return parse_whole_number(*value, 0, 1'000'000);
}

/// Thread-safe. A count serves until it is `recount_after` old; one recount at a time is
/// started for that (a WAIT that met a replica gone needs its own, at once).
class replica_census {
 public:
  using clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds recount_after{1000};

  /// The last count; -1 when there is none (not counted yet, or the server refused INFO).
  long long count() const {
    std::lock_guard lk(mu_);
    return count_;
  }
  /// A count taken now (INFO's answer).
  void counted(long long n) {
    std::lock_guard lk(mu_);
    count_ = n;
    at_ = clock::now();
  }
  /// The server would not tell (INFO refused): no count.
  void forget() {
    std::lock_guard lk(mu_);
    count_ = -1;
    at_ = clock::now();
  }
  /// True, and a recount marked under way, when the count is stale and no recount is under
  /// way: the caller then counts and reports with recount_done().
  bool begin_stale_recount() {
    std::lock_guard lk(mu_);
    if (recounting_ || clock::now() - at_ < recount_after) return false;
    recounting_ = true;
    return true;
  }
  void recount_done() {
    std::lock_guard lk(mu_);
    recounting_ = false;
  }

 private:
  mutable std::mutex mu_;
  long long count_ = -1;
  clock::time_point at_{};
  bool recounting_ = false;
};

}  // namespace rlock::detail
