// rlock/client_event.hpp: what happened to a client's links to its servers and to the holds it
// renews, for logs, alerts and metrics (config::on_event).
//
// Defines:
//   rlock::client_event_kind  the kinds of event
//   rlock::client_event       one event: its kind, the server, the object, the error, a detail
//   rlock::to_string          a kind's name ("connected", "lock_lost", ...)
//   rlock::describe           an event as one line of text for a log
//
// Events report; they decide nothing. The client reconnects, resubscribes, reloads scripts and
// follows failovers by itself, whether or not anyone listens, and a holder learns of its own
// lock's loss from the lock (loss_token(), lock.hpp), which is the signal to act on. Delivery
// (one thread at a time, in order, never after shutdown) is config::on_event's.
#pragma once

#include <string>
#include <string_view>
#include <system_error>

namespace rlock {

/// The kinds of client_event. A server's link (connected, disconnected, connect_failed) is
/// judged by the client's command connections to it (config::connection_pool_size of them, plus
/// the replica_sync ones); its pub/sub connections report their own drops and returns
/// (pubsub_disconnected, pubsub_connected), each connection its own.
enum class client_event_kind {
  /// The first of the client's command connections to `server` is set up (connected, AUTH,
  /// SELECT, scripts loaded): at start, and again after `disconnected` or `connect_failed`.
  /// `detail` warns when the server's maxmemory-policy is not noeviction (INFO memory, asked
  /// only while events are wanted; a server that refuses INFO is not warned about): such a
  /// server may evict held locks under memory pressure (lock.hpp, "Memory"). Empty otherwise.
  connected,
  /// The last set-up command connection to `server` dropped (`error` and `detail`: why). Its
  /// requests awaiting a reply failed with errc::connection_lost (their outcome unknown); the
  /// client reconnects with back-off (config::reconnect_delay_min/max) by itself.
  disconnected,
  /// An attempt to connect to `server` failed while none of the client's command connections
  /// to it is set up (`error`, `detail`: why, e.g. errc::auth_failed and the server's text).
  /// Reported when the error code differs from the last one reported since `connected`: a
  /// wrong password or a refused port is reported once, not at each retry of the back-off.
  /// In Sentinel mode, `server` is empty when no Sentinel named the master (`detail` gives
  /// each Sentinel's reason).
  connect_failed,
  /// The client's connections to one server move to another: a Sentinel announced a new
  /// master, or in Cluster mode a replica took a dead master's slots. `server` is the new
  /// address; requests awaiting a reply on the old one fail with errc::connection_lost.
  master_switched,
  /// Cluster mode: a scan of the slots found a slot served by another master than before;
  /// also reported once when the first scan has settled. `detail` says how many masters serve
  /// the slots.
  topology_changed,
  /// `server` did not have one of the library's scripts, which every connection loads as it
  /// connects (SCRIPT FLUSH, a restart, a failover to a server that never loaded it: NOSCRIPT),
  /// so the request was sent again with the script's text, which loads it; nothing had run.
  /// `object` is the script's SHA1 (one event per script and server that lost it; requests
  /// racing the reload may add one each). Not reported for a caller's own scripts
  /// (client::eval), which meet NOSCRIPT on first use anyway.
  script_reloaded,
  /// A hold that the client renews or watches (reentrant, fair, spin and fenced locks, the
  /// read-write lock's holds, and a permit that a permit_keeper keeps) is no longer held: a
  /// renewal found it no longer this owner's (deleted, expired, force-unlocked, released by
  /// another, lost in a failover), or its lease ended with no successful renewal (the server
  /// unreachable or paused), or a lease given explicitly ran out while the owner still held
  /// it. `object` is the lock's (or the semaphore's) key, after config::name_mapper; `error`
  /// errc::lock_lost; `detail` which of these it was. The holder's loss_token() is stopped too.
  lock_lost,
  /// One of the client's pub/sub connections to `server` dropped while it served listeners
  /// (`error`, `detail`: why, and how many channels it carried; the drop of one that served
  /// none cost nobody a message and is not reported). Until it is back, waiters on those
  /// channels hear no unlock message: each wakes at its own bound instead (the lock's TTL, its
  /// queue entry's refresh, its deadline) and tries again, so a lock freed meanwhile is taken
  /// later, not never. Holds are not affected (renewals go on the command connections). The
  /// client reconnects with back-off by itself. Its failures to reconnect are not reported
  /// apart: the command connections to the same server report theirs (connect_failed).
  pubsub_disconnected,
  /// A pub/sub connection to `server` that dropped (pubsub_disconnected) is set up again, and
  /// the channels its waiters listen on are being subscribed again (`detail`: how many).
  pubsub_connected,
  /// With config::replica_sync: a write the client sends again until the replicas confirm it
  /// ran on the master at `server`, but the replicas had not acknowledged it after its sends
  /// (config::replica_sync_tries). A failover to a replica that missed it loses it. Reported
  /// for:
  ///  - a change that completes as it ran on the master whatever the replicas acknowledged (a
  ///    semaphore's release, try_set_permits, add_permits and drain_permits; a
  ///    permit-expirable semaphore's releases and count changes). Its caller is not told it
  ///    failed, since a caller told so would make it again, and a second release adds its
  ///    permits twice: this event is the only word of it;
  ///  - a caller's unlock of a lock (reentrant, fair, spin, fenced) or of a read-write lock's
  ///    hold, which also fails with errc::replication_not_confirmed (unlock(ec),
  ///    unlock_or_throw()); for unlock(), which ignores errors (a lock guard's), this event is
  ///    the only word of it. Not for the release of an acquire that is being undone.
  /// `object` is the semaphore's or lock's key, after config::name_mapper; `error`
  /// errc::replication_not_confirmed; `detail` what ran, how many replicas acknowledged it,
  /// and how many sends ran.
  write_not_confirmed,
};

/// One event. Fields that do not apply to a kind are empty.
struct client_event {
  client_event_kind kind = client_event_kind::connected;
  /// The server, as a URL without credentials (server_address::to_string()).
  std::string server;
  /// lock_lost: the lock's key; script_reloaded: the script's SHA1; write_not_confirmed: the
  /// semaphore's or lock's key.
  std::string object;
  /// disconnected, connect_failed: why; lock_lost: errc::lock_lost; write_not_confirmed:
  /// errc::replication_not_confirmed.
  std::error_code error;
  /// What the client knows beyond the code: the server's error text, the step that failed, how
  /// a hold was lost.
  std::string detail;
};

/// The kind's name as written above ("connected", "lock_lost", ...).
std::string_view to_string(client_event_kind kind);

/// The event as one line of text without a trailing newline, such as "connected to
/// redis://127.0.0.1:6379", "disconnected from redis://127.0.0.1:6379: server closed the
/// connection" or "cannot connect to redis://127.0.0.1:6379: authentication failed (wrong
/// password or unknown user) (WRONGPASS invalid username-password pair ...)". Names and texts
/// from the server are passed through as they are: a log that must stay one line per event
/// escapes control characters itself.
std::string describe(const client_event& event);

}  // namespace rlock
