// rlock/error.hpp: error codes and the exception thrown by rlock's blocking API.
//
// Defines:
//   rlock::errc            every failure rlock reports, as an enum usable as std::error_code
//   rlock::error_category  the std::error_category for rlock::errc ("rlock")
//   rlock::error           the exception of the blocking API, derived from std::system_error
//
// Asynchronous operations complete with a std::error_code and never throw. Blocking operations
// throw rlock::error carrying the same code, plus the server's own text where there is one (for
// example the WRONGTYPE message) in what().
//
// Codes fall into four groups, and callers usually only need the group:
//   - the outcome is known not to have happened: invalid_argument, invalid_url, auth_failed,
//     auth_required, not_connected, connection_refused, tls_error, wrong_type, script_error,
//     server_error, out_of_memory, read_only, command_unavailable, cluster_redirect,
//     server_busy, not_owner, shutdown, stopped, subscription_timeout;
//   - the outcome is unknown (the command may or may not have run on the server): timeout,
//     connection_lost, and protocol_error for a command already written. rlock never resends
//     such a command unless it is idempotent;
//   - it ran, in part or unconfirmed: no_permission from a script (Redis refuses the command
//     the ACL forbids, not the writes before it, and does not roll them back; an unlock whose
//     PUBLISH is refused has released the lock), replication_not_confirmed (ran on the master,
//     not confirmed by the replicas asked for);
//   - lock liveness: lock_lost (the lock is no longer held by this owner).
#pragma once

#include <string>
#include <system_error>

namespace rlock {

/// Every error rlock reports. Values are stable; 0 is never used.
enum class errc {
  /// A caller-supplied value was out of range or malformed (name, duration, count).
  invalid_argument = 1,
  /// A connection URL could not be parsed; what() says which part and why.
  invalid_url,
  /// The deadline of the operation passed before it completed. Outcome unknown if the command
  /// was already written. Also reported, for commands certainly not run, while a connection
  /// whose last connect got no answer within connect_timeout waits to reconnect.
  timeout,
  /// The connection broke after the command was written and before its reply. Outcome unknown.
  connection_lost,
  /// No connection to the server could be used (it is reconnecting, or every attempt failed).
  not_connected,
  /// The server refused the TCP connection or could not be reached at all.
  connection_refused,
  /// The TLS handshake failed (certificate not trusted, hostname mismatch, protocol error).
  tls_error,
  /// AUTH was rejected: wrong password, unknown or disabled ACL user (Redis does not say which).
  auth_failed,
  /// The server requires a password and none was configured (NOAUTH).
  auth_required,
  /// The ACL user may not run a command rlock needs (NOPERM).
  no_permission,
  /// A key holds a value of another type than the operation expects (WRONGTYPE).
  wrong_type,
  /// The server is out of memory under a noeviction policy (OOM).
  out_of_memory,
  /// A Lua script raised an error, or returned a reply the caller did not expect.
  script_error,
  /// Any other error reply from the server; what() carries its text.
  server_error,
  /// The reply stream could not be parsed; the connection is closed and re-opened.
  protocol_error,
  /// The server is loading its data set, a script is busy, it has as many clients as its
  /// maxclients allows, or it is a master that refuses writes while fewer replicas than its
  /// min-replicas-to-write are connected (NOREPLICAS); retried until the deadline. Also
  /// reported while a connection whose setup met such an answer waits to reconnect. Nothing
  /// ran.
  server_busy,
  /// The calling owner does not hold the lock it tried to unlock or extend.
  not_owner,
  /// The lock was held by this owner but is now gone (expired, deleted, or renewal failed).
  lock_lost,
  /// An acquire (of a lock, a semaphore's permits, a read-write lock) or an unlock of a lock or
  /// read-write lock ran on the master, but fewer replicas than config::replica_sync asks for
  /// (config::all_connected_replicas: none, with one still connected) acknowledged it within
  /// config::replica_sync_timeout (or the master refused WAIT), on each of its tries
  /// (config::replica_sync_tries within the wait; one for a single try). An acquire has been undone
  /// (nothing is held, permits are given back); an unlock has released all the same.
  replication_not_confirmed,
  /// A stop was requested through the operation's std::stop_token; nothing is left held.
  stopped,
  /// The client is shutting down; pending work is failed with this code.
  shutdown,
  /// Subscribing to a channel did not complete within its deadline.
  subscription_timeout,
  /// The server is a read-only replica (READONLY): locks must be taken on the master. The
  /// write did not happen. Not retried: a replica stays one until it is promoted.
  read_only,
  /// The server does not know a command (ERR unknown command): it lacks it, or it was renamed
  /// away or disabled, as some managed services do with scripting. rlock needs EVALSHA and
  /// SCRIPT (see the README's Configuration section). Nothing ran. Not retried.
  command_unavailable,
  /// The server is a Redis Cluster node that does not serve the slot of the key (MOVED, ASK),
  /// or the keys of one command span slots (CROSSSLOT). In Cluster mode
  /// (config::cluster_addresses) MOVED and ASK are followed, and this is reported only past
  /// five redirections of one request; given a Cluster node as a single server
  /// (config::address), only locks whose slot that node serves work (a lock's keys share its
  /// name's slot), and the others fail with it at once. what() carries the server's reply,
  /// which names the node that serves the slot. Nothing ran. Not retried.
  cluster_redirect,
};

/// The category of rlock::errc. Its name() is "rlock".
const std::error_category& error_category() noexcept;

/// Makes a std::error_code from an rlock::errc (found by ADL).
inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// The exception thrown by the blocking API. code() is the same code the async form reports;
/// what() adds context (the server's message, the URL part that failed, the lock name).
class error : public std::system_error {
 public:
  explicit error(std::error_code ec) : std::system_error(ec) {}
  error(std::error_code ec, const std::string& what) : std::system_error(ec, what) {}
};

/// Throws rlock::error(ec, what) if ec is set.
inline void throw_if(std::error_code ec, const std::string& what = {}) {
  if (ec) {
    if (what.empty()) throw error(ec);
    throw error(ec, what);
  }
}

}  // namespace rlock

template <>
struct std::is_error_code_enum<rlock::errc> : std::true_type {};
