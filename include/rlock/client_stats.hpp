// rlock/client_stats.hpp: counters of what a client has done, for metrics (client::stats()).
//
// Defines:
//   rlock::client_stats   a snapshot: cumulative counters since the client was made, and a few
//                         gauges of now
//
// Counters only grow (they wrap at 2^64); a rate is the difference of two snapshots over the
// time between them. Each field is read on its own, without stopping the client: a snapshot
// taken while requests complete may count a completion but not yet its request's last attempt,
// and so on, by at most the work in flight. Sentinel connections (asked where the master is)
// and the Cluster scan's own connections to its seeds are not counted.
//
// Taking a snapshot never blocks and sends nothing; after shutdown() it still reports the
// counts (the gauges of now are then 0). Counting costs one relaxed atomic increment per event.
#pragma once

#include <cstdint>

namespace rlock {

struct client_stats {
  // ---- Requests: commands the client sends for its objects (acquires, releases, renewals,
  // undos, the deletes of spent keys) and for client::execute / eval, counted once each
  // however many attempts it took. (Pub/sub (un)subscribes are counted apart, below;
  // connection setup is not counted.)

  /// Requests made.
  std::uint64_t requests = 0;
  /// Requests completed with an error of any kind: rlock::errc codes, the server's error
  /// replies (WRONGTYPE, OOM, NOPERM, ...) included. "Not acquired" is not an error.
  std::uint64_t requests_failed = 0;
  /// Of requests_failed: ended by their deadline with no reply (errc::timeout).
  std::uint64_t requests_timed_out = 0;
  /// Of requests_failed: written, and their connection lost before a reply came, so whether
  /// they ran is unknown (errc::connection_lost).
  std::uint64_t requests_unknown = 0;
  /// Sends of requests: first attempts, retries (Redisson's retry policy), the resends of
  /// Cluster redirections (MOVED, ASK, TRYAGAIN) and of a flushed script cache. attempts minus
  /// requests is what retrying cost.
  std::uint64_t attempts = 0;
  /// Resends of the library's scripts to a server that did not have them (NOSCRIPT: SCRIPT
  /// FLUSH, a restart, a failover; client_event_kind::script_reloaded).
  std::uint64_t scripts_reloaded = 0;

  // ---- Connections to Redis servers: command, replica-sync and pub/sub connections.

  /// Connections set up (connected, authenticated, scripts loaded), reconnects included.
  std::uint64_t connects = 0;
  /// Attempts to set up a connection that failed (refused, timed out, a wrong password, ...).
  std::uint64_t connect_failures = 0;
  /// Set-up connections that dropped (closed by the server, a failed ping, a reset, a
  /// failover), not counting those the client closed at shutdown.
  std::uint64_t disconnects = 0;

  // ---- Pub/sub.

  /// Messages received on the client's subscriptions (unlock notices, semaphore releases,
  /// latch counts, ...), each counted once however many local waiters it woke.
  std::uint64_t messages = 0;
  /// Channels subscribed to: SUBSCRIBE commands (SSUBSCRIBE for a Cluster's sharded
  /// channels), one per channel, for a channel's first local waiter and again for each
  /// channel still wanted when its connection is set up anew.
  std::uint64_t subscribes = 0;
  /// Channels unsubscribed from: UNSUBSCRIBE commands (SUNSUBSCRIBE), one per channel, once
  /// its last local waiter has gone (after the linger of `channels` below).
  std::uint64_t unsubscribes = 0;

  // ---- Replica acknowledgement (config::replica_sync).

  /// Writes that ran on the master and that the replicas had not acknowledged after their sends
  /// (client_event_kind::write_not_confirmed: unlocks, semaphore changes, permit releases),
  /// counted whether or not events are wanted. A failover may lose each of them.
  std::uint64_t writes_not_confirmed = 0;

  // ---- Holds the client renews or watches (locks, read-write lock holds, kept permits).

  /// Renewal scripts sent: a watchdog round sends one per batch of holds, not one per hold
  /// (config::lock_watchdog_batch_size); a permit_keeper one per renewal.
  std::uint64_t renewals = 0;
  /// Of renewals: failed (no reply in time, an error reply, a lost connection). Their holds are
  /// tried again (watchdog.hpp), so a failed renewal is not a lost hold.
  std::uint64_t renewals_failed = 0;
  /// Holds lost while the client held them (client_event_kind::lock_lost): found gone by a
  /// renewal, or their lease ended with no successful renewal, or a lease given explicitly ran
  /// out while still held.
  std::uint64_t holds_lost = 0;

  // ---- Gauges: now.

  /// Requests made and not yet completed.
  std::uint64_t requests_in_flight = 0;
  /// Holds the client keeps now: those of its locks and read-write locks that its watchdogs
  /// renew or watch until their lease ends, and the permits its permit_keepers keep.
  std::uint64_t holds_watched = 0;
  /// Channels subscribed now, as the servers confirmed them. A lock's channel stays
  /// subscribed for 10 s after its last local waiter has gone, for the next one.
  std::uint64_t channels = 0;
};

}  // namespace rlock
