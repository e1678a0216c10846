// Replica acknowledgement of a lock's writes (config::replica_sync): whether a request that was
// followed by WAIT got the replicas it asked for, how a shortfall reads in an error, and how it
// turns a wait's take into a failure.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "detail/backoff.hpp"
#include "detail/channel_wait.hpp"
#include "detail/client_counters.hpp"
#include "detail/core.hpp"
#include "detail/exec_result.hpp"
#include "detail/retry_fsm.hpp"
#include "detail/thread_rng.hpp"
#include "rlock/client_event.hpp"
#include "rlock/error.hpp"

namespace rlock::detail {

/// True when `cfg` asks for replica acknowledgement of lock writes.
inline bool asks_replicas(const config& cfg) {
  return cfg.replica_sync != 0;
}

/// Asks `cfg`'s replica acknowledgement of a script request, if it asks for any.
inline void ask_replicas(const config& cfg, exec_options& opts) {
  if (!asks_replicas(cfg)) return;
  opts.sync_replicas = cfg.replica_sync;
  opts.sync_timeout = cfg.replica_sync_timeout;
}

/// ask_replicas for an unlock or a semaphore's change (of its count, or a permit's release),
/// which is sent again, whole, while the replicas do not confirm it
/// (exec_options::confirm_tries: config::replica_sync_tries sends in all). Only for a script
/// whose replay, its latch found, changes nothing but still writes (the latch's TTL), so that
/// the replay's WAIT covers the first run (lock_unlock.lua, rwlock_unlock.lua,
/// semaphore_release.lua, semaphore_set.lua, expirable_semaphore_release.lua).
inline void ask_replicas_until_confirmed(const config& cfg, exec_options& opts) {
  ask_replicas(cfg, opts);
  opts.confirm_tries = cfg.replica_sync_tries;
}

/// True when `r` needs no acknowledgement under `cfg`, or got enough of them: N of them, or
/// under config::all_connected_replicas one, or none with no replica connected (then whether
/// or not the server has WAIT: Redisson skips it where it is unknown, on serverless services).
inline bool replicas_confirmed(const config& cfg, const exec_result& r) {
  if (cfg.replica_sync == config::all_connected_replicas) {
    return r.replicas_acked >= 1 || r.replicas_connected == 0;
  }
  return cfg.replica_sync <= 0 || r.replicas_acked >= cfg.replica_sync;
}

/// The detail of errc::replication_not_confirmed for `r`, a request that ran on the master
/// (`what`: "acquired", "released") without the replicas `cfg` asks for.
inline std::string not_confirmed_detail(const config& cfg, const exec_result& r,
                                        const std::string& what) {
  std::string out = what + " on the master, but ";
  if (r.replicas_acked < 0) {
    out += "the master refused WAIT: " + r.detail;
  } else if (cfg.replica_sync == config::all_connected_replicas) {
    out += "acknowledged by none of the " +
           (r.replicas_connected >= 0 ? std::to_string(r.replicas_connected) + " replicas connected"
                                      : std::string("replicas (INFO refused: one asked for)")) +
           " within " + std::to_string(cfg.replica_sync_timeout.count()) +
           " ms (config::replica_sync: all_connected_replicas)";
  } else {
    out += "acknowledged by " + std::to_string(r.replicas_acked) + " of the " +
           std::to_string(cfg.replica_sync) + " replicas asked for within " +
           std::to_string(cfg.replica_sync_timeout.count()) + " ms (config::replica_sync)";
  }
  return out;
}

/// How long after `now` an acquire whose take the replicas did not confirm (and that is being
/// undone) is tried again, as Redisson retries it: `tries` of it have run,
/// config::replica_sync_tries run in all, each after `proposed` (config::retry_delay_base/max's
/// equal jitter). Bounded by the caller's `deadline` as a request's retries are (retry_fsm): when
/// the delay would pass it, halfway to it instead; with too little time left for that, or no tries
/// left, nullopt: the acquire fails with errc::replication_not_confirmed.
inline std::optional<std::chrono::milliseconds> unconfirmed_retry_in(
    const config& cfg, int tries, clock::time_point now, clock::time_point deadline,
    std::chrono::milliseconds proposed) {
  if (tries >= cfg.replica_sync_tries || now >= deadline) return std::nullopt;
  if (deadline - now > proposed) return proposed;
  const auto half = std::chrono::duration_cast<std::chrono::milliseconds>((deadline - now) / 2);
  if (half < retry_fsm::min_delay_before_deadline) return std::nullopt;
  return half;
}

/// unconfirmed_retry_in with the delay drawn from config::retry_delay_base/max's equal jitter
/// for the next try after `tries`.
inline std::optional<std::chrono::milliseconds> next_unconfirmed_try_in(
    const config& cfg, int tries, clock::time_point now, clock::time_point deadline) {
  const auto proposed =
      equal_jitter(cfg.retry_delay_base, cfg.retry_delay_max).delay(tries, thread_rng());
  return unconfirmed_retry_in(cfg, tries, now, deadline, proposed);
}

/// The detail of an acquire's final errc::replication_not_confirmed after `tries` tries.
inline std::string after_tries(std::string detail, int tries) {
  if (tries > 1) {
    detail += "; tried " + std::to_string(tries) + " times (config::replica_sync_tries)";
  }
  return detail;
}

/// Counts (client_stats::writes_not_confirmed) and reports client_event_kind::write_not_confirmed
/// for `object` (a key, after config::name_mapper), whose change `r` ran on the master (`what`:
/// "released", "changed the count") without the acknowledgements `c`'s config asks for after
/// its sends.
inline void emit_not_confirmed(core& c, const std::string& object, const exec_result& r,
                               const std::string& what) {
  client_counters::add(c.counters()->writes_not_confirmed);
  if (!c.events().wanted()) return;
  c.events().emit({.kind = client_event_kind::write_not_confirmed,
                   .server = r.synced_on,
                   .object = object,
                   .error = make_error_code(errc::replication_not_confirmed),
                   .detail = after_tries(not_confirmed_detail(c.cfg(), r, what), r.confirm_sends)});
}

/// `then`, wrapped for a change sent with ask_replicas_until_confirmed that completes as it ran on
/// the master whatever the replicas acknowledged (a semaphore's count, a permit's release: a
/// caller told that it failed would make it again): when it ran without the acknowledgements
/// `cfg` asks for after its sends, client_event_kind::write_not_confirmed is reported for
/// `object` first. `what` says what ran ("released", "changed").
/// Without replica_sync `then` is returned as it is: nothing is copied.
inline exec_callback report_unconfirmed(const std::shared_ptr<core>& c, const std::string& object,
                                        std::string_view what, exec_callback then) {
  if (!asks_replicas(c->cfg())) return then;
  return [c, object, what = std::string(what), then = std::move(then)](exec_result r) {
    if (!r.ec && !replicas_confirmed(c->cfg(), r)) emit_not_confirmed(*c, object, r, what);
    then(std::move(r));
  };
}

/// A wait's attempt (semaphore, permit-expirable semaphore, read-write lock) whose script took
/// what it waits for (`out.success`) without the replicas `cfg` asks for: the outcome becomes
/// errc::replication_not_confirmed, so that the wait ends with it and runs the attempt's undo
/// (which the caller must set for a take, as for one whose outcome is unknown).
inline void refuse_unconfirmed_take(const config& cfg, const exec_result& r, attempt_outcome& out) {
  if (!out.success || replicas_confirmed(cfg, r)) return;
  out.success = false;
  out.ec = make_error_code(errc::replication_not_confirmed);
  out.detail = not_confirmed_detail(cfg, r, "acquired");
}

}  // namespace rlock::detail
