// rlock/config.hpp: client configuration, with Redisson's option names (in snake_case) and
// Redisson's defaults unless stated otherwise.
//
// Defines:
//   rlock::tls_options     certificates and verification for rediss:// connections
//   rlock::server_address  one parsed redis://, rediss:// or unix:// URL
//   rlock::credentials     a user and password (config::credentials_resolver's answer)
//   rlock::config          everything a rlock::client needs
//   rlock::parse_url       URL parsing, with a precise error for each malformed part
//
// All durations are std::chrono::milliseconds and are measured on std::chrono::steady_clock.
// Each is at most 100 years (client construction throws errc::invalid_argument beyond that):
// a steady_clock time point plus a longer duration would overflow.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "rlock/client_event.hpp"

namespace rlock {

using namespace std::chrono_literals;

/// TLS settings for rediss:// addresses. Verification of the server certificate is on by default;
/// turning it off is for tests only.
struct tls_options {
  /// PEM file of the CA(s) that sign the server certificate. Empty: the system's default store.
  std::string ca_file;
  /// PEM client certificate and key, for servers with tls-auth-clients yes.
  std::string cert_file;
  std::string key_file;
  /// Verify the server's certificate chain and its name (the URL host).
  bool verify_peer = true;
  /// Name checked against the server certificate (as an IP address if it is an IP literal,
  /// else as a DNS name, no partial wildcards) and sent as SNI (never an IP literal, RFC 6066).
  /// Empty: the URL host. A failed check names the reason in the error (OpenSSL's verify
  /// result, e.g. "hostname mismatch" or "self-signed certificate in certificate chain").
  std::string server_name;
};

/// One server address, as parsed from a URL by parse_url().
struct server_address {
  enum class scheme { redis, rediss, unix_socket };
  scheme kind = scheme::redis;
  std::string host = "127.0.0.1";  ///< host name or IP literal (no brackets); unused for unix
  std::uint16_t port = 6379;
  std::string path;  ///< unix socket path
  std::optional<std::string> username;
  std::optional<std::string> password;
  int database = 0;

  /// The address as a URL without credentials, for messages and logs.
  std::string to_string() const;
};

/// A user and a password for one connection (config::credentials_resolver). Sent as for
/// config::username and config::password: no password and no user, no AUTH; a user without a
/// password, AUTH with an empty password.
struct credentials {
  std::optional<std::string> username;
  std::optional<std::string> password;
};

/// Parses `redis://[user[:password]@]host[:port][/db]`, `rediss://...` (TLS) and
/// `unix:///path/to/socket[?db=N]`. User and password may be percent-encoded; IPv6 hosts go in
/// brackets. The port defaults to 6379 and the database to 0.
/// On failure returns errc::invalid_url and sets *why (if given) to a one-line reason.
std::optional<server_address> parse_url(std::string_view url, std::error_code& ec,
                                        std::string* why = nullptr);

/// Parses a URL or throws rlock::error(errc::invalid_url) naming the bad part.
server_address parse_url(std::string_view url);

/// Cluster mode's pub/sub (Redisson's ClusterServersConfig shardedSubscriptionMode).
enum class sharded_subscription_mode {
  /// Sharded when the cluster's servers know it (PUBSUB SHARDNUMSUB answers, Redis 7 and
  /// later), as Redisson's AUTO decides; classic otherwise.
  automatic,
  /// Always sharded: SSUBSCRIBE and SPUBLISH (Redis 7 and later).
  on,
  /// Always classic: SUBSCRIBE and PUBLISH, which a cluster delivers to every node.
  off,
};

/// Client configuration. The names follow Redisson's Config/BaseConfig so that settings carry
/// over; defaults are Redisson 4.7's unless the comment says "rlock default".
struct config {
  // ---- topology: a single server, a master found through Redis Sentinel, or a Cluster ----
  /// The server's URL. Credentials in the URL override username/password below. No Cluster
  /// redirection is followed here: given a Redis Cluster node, locks whose slot that node serves
  /// work, and the others fail on their first attempt with errc::cluster_redirect (use
  /// cluster_addresses). Unused in Sentinel and Cluster mode.
  std::string address = "redis://127.0.0.1:6379";
  /// The master's (in Sentinel mode) or the server's user and password.
  std::optional<std::string> username;
  std::optional<std::string> password;
  /// Redisson's credentialsResolver. When set, it is asked for the user and password of every
  /// connection to a data server (the single server, the master found through the Sentinels,
  /// each Cluster node; command and pub/sub connections alike) each time one connects, and its
  /// answer replaces username and password above and those in the URLs. For credentials that
  /// change while the client runs: a password rotated with ACL SETUSER, a cloud provider's
  /// short-lived auth token.
  /// Guarantees:
  ///   - connections already set up stay as they are (Redis checks credentials at AUTH only);
  ///     every reconnect asks again, so a client whose connects fail with errc::auth_failed
  ///     (the old password removed) works again at the first reconnect after the resolver
  ///     answers with the new one (reconnects back off up to reconnect_delay_max);
  ///   - an exception it throws fails that connect with errc::auth_failed, its what() in the
  ///     error's text, before anything is sent; the connection tries again later, as after a
  ///     refused AUTH, and asks again then;
  ///   - the Sentinels' own connections are not asked about: they use sentinel_username and
  ///     sentinel_password.
  /// Called with the server's address (without credentials) on a thread the client starts for
  /// it (one per client, asking about one connect at a time, in order), never on an I/O
  /// thread: a resolver that takes its time (a vault or a cloud provider asked over the
  /// network) holds up only the connects that wait for its answer, while the I/O threads carry
  /// every other request, renewals of held locks included (a dropped connection's reconnect
  /// does not cost a held lock its lease). The time it takes counts against connect_timeout: a
  /// connect that timed out meanwhile drops its answer and asks again at its next try. A
  /// blocking call of this client made from it throws errc::invalid_argument. At shutdown a
  /// resolver still running after 200 ms is left to return on its thread, its answer dropped:
  /// what it uses must outlive it.
  std::function<credentials(const server_address& server)> credentials_resolver;
  int database = 0;
  /// Sentinel mode (Redisson's SentinelServersConfig), when not empty: the name of the master
  /// the Sentinels in sentinel_addresses monitor. Every connection, on every (re)connect, asks
  /// the Sentinels for the master's address (the one that answered last first, then the others
  /// in turn, each within connect_timeout), connects there and checks with ROLE that the server
  /// is a master; a server that is not (a failover under way) fails that connect, and the next
  /// one asks again. The client subscribes to "+switch-master" on every Sentinel (one more
  /// connection per Sentinel): when one announces a new address of this master, every
  /// connection moves there at once (requests awaiting a reply on a connection that moves fail
  /// as on any lost connection: outcome unknown, retried by the usual policy). A command
  /// answered READONLY (the master was demoted under the connection) closes the connection
  /// too, so the next command goes to the new master.
  /// What holds across a failover: Redis replicates asynchronously, so a lock acquired on the old
  /// master just before it failed may be missing on the new one; its holder learns that at its
  /// next renewal (errc::lock_lost, through the lock's loss notification), and another client
  /// may take the lock meanwhile. An old master that is still running keeps taking writes until
  /// Sentinel demotes it (about 10 s after the switch with Sentinel's defaults): a client that
  /// missed the announcement (no Sentinel reachable then, or an ACL user without the channel)
  /// keeps using it until then. Use fencing tokens (fenced_lock) where this matters.
  std::string master_name;
  /// The Sentinels' URLs (redis:// or rediss://; credentials in a URL are the Sentinel's, and
  /// override sentinel_username/sentinel_password). The master is reached with the scheme of
  /// the Sentinel that named it, the tls options, username/password and database above.
  std::vector<std::string> sentinel_addresses;
  std::optional<std::string> sentinel_username;
  std::optional<std::string> sentinel_password;
  /// Cluster mode (Redisson's ClusterServersConfig nodeAddresses), when not empty: URLs of some
  /// nodes of a Redis Cluster (redis:// or rediss://, one scheme for all; credentials in the URLs
  /// must agree, and override username/password above for every node). The client learns which
  /// master serves each of the 16384 slots (CLUSTER SLOTS) from these, then from the masters, every
  /// cluster_scan_interval and soon after a MOVED reply or a failed connection; it keeps
  /// connection_pool_size command connections and subscription_connection_pool_size subscribers
  /// per master, and sends each request to the master of its key's slot. Every key and channel
  /// of one object shares the object name's slot, so each script runs on one node. MOVED and ASK
  /// replies are followed (they prove nothing ran), at most 5 times per request; TRYAGAIN (a
  /// multi-key script in a slot being migrated) is sent again every 50 ms within the call's
  /// deadline, at most 5 s. Pub/sub follows cluster_sharded_subscription. database must be 0.
  /// What holds across a failover: as in Sentinel mode, replication is asynchronous, so a lock
  /// taken on a master just before it died may be missing on the replica promoted in its place;
  /// the holder learns at its next renewal (errc::lock_lost). Requests written to the dead
  /// master fail as on any lost connection; the client moves that master's connections and
  /// subscriptions to the promoted replica once a scan names it (the cluster's
  /// cluster-node-timeout, then at most about one scan).
  std::vector<std::string> cluster_addresses;
  /// How often the slot map is read again in Cluster mode (Redisson's scanInterval).
  std::chrono::milliseconds cluster_scan_interval = 5000ms;
  /// Cluster mode's pub/sub. Java Redisson peers of a lock must use the same kind (sharded
  /// and classic subscribers never hear each other's messages), as must every rlock client:
  /// with both on Redisson's and rlock's default (automatic) they agree. Sharded, each channel
  /// is subscribed on the master of its slot and the library's scripts SPUBLISH; classic, the
  /// scripts PUBLISH (the cluster carries each message to every node). Decided by the first
  /// slot-map scan: requests and subscriptions made before it wait for it (within their
  /// deadlines). If that scan fails (no seed reachable), they go ahead classic, and a later
  /// scan's answer holds from then on.
  sharded_subscription_mode cluster_sharded_subscription = sharded_subscription_mode::automatic;
  /// Sent as CLIENT SETNAME on every connection when not empty.
  std::string client_name;
  tls_options tls;

  // ---- connections ----
  /// Connections per node that carry commands. They are multiplexed and pipelined, so a small
  /// number serves many threads (rlock default 1; Redisson's pool default is 64). With many
  /// operations in flight, 2 let the server work on one connection's batch while the client
  /// reads and writes the other: measured on a 2-core VM, 32 async lock+unlock chains went from
  /// 40k to 58k cycles/s (the server's main thread from 73% to 97% busy), 32 blocking threads
  /// from 30k to 33k; a single thread is unchanged (`rlock bench uncontended --connections`).
  int connection_pool_size = 1;
  /// Dedicated pub/sub connections per node (rlock default 1; Redisson's pool default is 50).
  /// Channels are reference-counted across all local listeners, so one connection carries
  /// any number of locks.
  int subscription_connection_pool_size = 1;
  /// Threads that run the client's I/O (rlock default 1).
  int io_threads = 1;
  /// How long a blocking call polls for its result before it sleeps (rlock only). On a plain
  /// (not TLS) connection whose awaited replies are all blocking callers', each look reads the
  /// socket itself, so the reply is taken as it lands, with no thread woken (a GET 1 ms after
  /// the previous one: p50 72-83 µs against 117-166 µs through the I/O thread, on a 2-core VM).
  /// Otherwise the poll yields the CPU between looks, so the I/O thread can run on the poller's
  /// core. Polling saves the wake-up of a sleeping thread (measured: loopback PING p50 halves on
  /// a 2-core VM) at the price of up to this much CPU time per blocking call. Only a blocking
  /// call that is the only one of the process in flight polls; while others are in flight, a
  /// lock's blocking calls post their work to the I/O thread and every call sleeps at once
  /// (README, Benchmarks: 32 threads' lock+unlock cycles ran 1.06-1.81x as fast, with a p99 of
  /// 3.1-3.4 ms against 4.6-5.8 ms, on a 2-core VM). While half of a process's latest 16 polls
  /// miss (a loaded machine, a distant server), its blocking calls sleep at once for a while.
  /// 0 turns polling off. (100 µs rather than 50: on a 2-core VM one thread's lock+unlock p99
  /// fell from about 0.21 ms to 0.14 ms.)
  std::chrono::microseconds blocking_spin{100};

  // ---- deadlines and retries ----
  /// Per-attempt timeout: from the moment a command is queued to its reply. A request that
  /// certainly did not reach the server is tried again (retry_attempts, below), each attempt
  /// with its own timeout; a lock's operations stop at their wait budget whatever is left.
  std::chrono::milliseconds timeout = 3000ms;
  /// Bound on establishing one connection (TCP, TLS, AUTH, SELECT, script loading).
  std::chrono::milliseconds connect_timeout = 10000ms;
  /// Bound on subscribing to a channel. A waiting acquire or await of any kind whose
  /// subscription the server has not confirmed within it (the pub/sub connection cannot be set
  /// up: the server at maxclients, a proxy that passes commands only) fails with
  /// errc::subscription_timeout, nothing taken, also when it has no deadline of its own; one
  /// whose own deadline comes first ends at that deadline, unmet and without error.
  std::chrono::milliseconds subscription_timeout = 7500ms;
  /// How often at the least a waiting semaphore, permit-expirable semaphore, countdown latch or
  /// read-write lock acquire looks again without a message (each time a random time from half
  /// of this to all of it): a change that nobody announced (a count set or a key deleted by
  /// hand, a latch key that expired, a peer that does not publish) is seen within it. 0: only
  /// at messages and resubscriptions, as with Redisson, whose waiters then wait on. (A lock's
  /// waiters look again at least when the holder's TTL ends.)
  std::chrono::milliseconds wait_recheck_interval = 10000ms;
  /// Attempts per request in all (Redisson's retryAttempts). A request whose outcome is unknown
  /// is never resent unless it is idempotent.
  int retry_attempts = 4;
  /// Equal-jitter delay between attempts: attempt k waits half of min(base * 2^k, max) plus a
  /// random amount up to that half (Redisson's EqualJitterDelay(1000 ms, 2 s)). A call with a
  /// deadline (try_lock(wait), an acquire's deadline) never starts an attempt at or after it:
  /// when the delay would pass the deadline, the next attempt starts halfway between now and
  /// the deadline instead, or, with less than 20 ms left, the call fails with the last error.
  /// (A server LOADING or BUSY for a moment does not fail a try_lock(1s) at once.)
  std::chrono::milliseconds retry_delay_base = 1000ms;
  std::chrono::milliseconds retry_delay_max = 2000ms;
  /// Interval of PING health checks on idle connections, subscription connections included; a
  /// PING unanswered within `timeout` drops the connection as hung (subscriptions are then
  /// renewed on a new one and their listeners told). 0 turns them off.
  std::chrono::milliseconds ping_connection_interval = 30000ms;
  /// Back-off bounds for reconnecting (rlock defaults): after a failed connect, doubling from
  /// min to max with jitter, and after a connection dropped within a second of its setup. One
  /// that had been up for longer (closed by CLIENT KILL, by a server or proxy, by a failover
  /// demoting the master) is connected again at once, and requests not yet written wait for it
  /// within their deadlines instead of failing with errc::not_connected and waiting out a
  /// retry delay; requests written and unanswered fail as their outcome is unknown.
  std::chrono::milliseconds reconnect_delay_min = 50ms;
  std::chrono::milliseconds reconnect_delay_max = 2000ms;

  // ---- locks ----
  /// Lease of a lock taken without an explicit lease; renewed every third of it while held.
  std::chrono::milliseconds lock_watchdog_timeout = 30000ms;
  /// A fair lock's wait time for an acquire without a wait (lock()) (Redisson's
  /// fairLockWaitTimeout, its threadWaitTime): a queued waiter that stops trying (crashed)
  /// blocks the queue, once it is the head, until its eviction time: about this long after its
  /// last try (later when it joined behind longer times). A live rlock waiter tries at least
  /// three times per wait time and is not evicted (lock.hpp); a Java waiter is, once it has
  /// waited this long in all (Redisson #3004), and then queues again at the tail.
  std::chrono::milliseconds fair_lock_wait_timeout = 300000ms;
  /// Locks renewed per renewal script. A renewal round's scripts are spread over the first
  /// half of the renewal period, most urgent lease first.
  int lock_watchdog_batch_size = 100;
  /// Queued hand-off (rlock only, on by default): waiters join a queue in Redis in arrival
  /// order, and an unlock hands the lock straight to the first live waiter, which learns it
  /// holds the lock from a message without running a script. Java Redisson clients on the same
  /// lock still work: they take the lock only when it is free, and never break exclusion; but
  /// while rlock waiters keep the queue busy the lock is never free, and they can starve.
  /// With the queue on, the client's id (client::id()) is an RFC 9562 version-8 UUID: waiters
  /// behind such a holder wait for its hand-off alone, on their process's own channel, and are
  /// not woken by other unlocks; behind a version-4 holder (Java Redisson, or rlock with the
  /// queue off) they also listen for the "0" on the Redisson channel (from the next refresh on,
  /// if such a holder takes the lock after they queued).
  /// Off: Redisson's behaviour (waiters race for a freed lock; at most one per process).
  bool lock_queue = true;
  /// How long a queued waiter's entry stays valid without a refresh; a crashed waiter is
  /// skipped once it expires, but until then it may be handed the lock, which then stays taken
  /// until that entry's deadline (never for the dead waiter's whole lease). Waiting processes
  /// refresh every third of it, in one script per lock for all their waiters. Measured on the
  /// Redis server's clock.
  std::chrono::milliseconds lock_queue_liveness = 6000ms;
  /// Replica acknowledgement of lock writes (Redisson's checkLockSyncedSlaves and
  /// slavesSyncTimeout, made explicit). 0, the default: none asked for. N > 0: each write below
  /// is followed, in the same write and on the same connection, by WAIT N replica_sync_timeout,
  /// and counts only once N replicas have acknowledged it:
  ///   - every acquire of a reentrant, fenced, spin or fair lock, and every try of a
  ///     semaphore's, permit-expirable semaphore's or read-write lock's acquire: one that took
  ///     what it asked for on the master, acknowledged by fewer within the timeout, is undone
  ///     (released or given back in the background, like a take whose outcome is unknown) and
  ///     tried again, as Redisson does: replica_sync_tries in all, each after retry_delay's
  ///     equal jitter (a lock's try again starts once its undo has landed; messages do not cut
  ///     a back-off short), within the caller's wait (halfway to its deadline when the delay
  ///     would pass it, as for a request). A single try (try_lock(), try_acquire() without a
  ///     wait) is tried once. After the last try the acquire fails with
  ///     errc::replication_not_confirmed, whose text says how many tries ran (lock() and
  ///     try_lock() throw it; nothing is held). A lagging replica that catches up within the
  ///     tries costs the caller the tries' WAITs and delays, not a failure;
  ///   - a fenced lock's token: a token not acknowledged is not returned (the hold is released
  ///     and the whole fenced acquire is tried again within the same tries, as above; each try
  ///     that ran skipped its token);
  ///   - a lock handed over by the wait queue (lock_queue), which the unlock that hands it
  ///     writes (whether or not that client asks for acknowledgements): the new holder confirms
  ///     it with an attempt of its own (the count-checked acquire finds the lock its owner's and
  ///     writes its lease) followed by WAIT before its acquire returns; not acknowledged, the
  ///     handed lock is released and the acquire tried again (it queues anew) as above;
  ///   - every unlock of those locks and of a read-write lock: one that ran on the master,
  ///     acknowledged by fewer, is sent again, whole, with its latch (Redisson resends it with
  ///     the same request id): the replay returns the first run's result and changes nothing
  ///     but the latch's TTL, a write, so that its WAIT covers the first run on whichever
  ///     connection it goes (WAIT counts a connection's own writes). replica_sync_tries sends in
  ///     all, each after retry_delay's equal jitter; the first acknowledged confirms the unlock.
  ///     After the last, it has released all the same and reports
  ///     errc::replication_not_confirmed, whose text says how many sends ran (unlock_or_throw()
  ///     throws it; unlock() ignores it), and the client reports it as
  ///     client_event_kind::write_not_confirmed. A blocking unlock waits for these sends: with
  ///     a replica down, replica_sync_tries times (replica_sync_timeout + the delay). A fenced
  ///     lock's release of a hold it will not return (its token not acknowledged) is sent once;
  ///   - every change of a semaphore's count (release, try_set_permits, add_permits,
  ///     drain_permits) and every release of a permit-expirable semaphore's permits (and its
  ///     try_set_permits, add_permits): sent again, whole, with its latch, as an unlock is
  ///     (replica_sync_tries sends in all; a blocking call waits for them). After the last, it
  ///     completes as it ran on the master, with its result and no error, since a caller told
  ///     that a release failed would release again and add its permits twice; the client
  ///     reports client_event_kind::write_not_confirmed instead.
  /// Not waited for: the undo of an acquire (given back in the background), a permit-expirable
  /// semaphore's set_permits and lease updates, countdown latches, force-unlocks and renewals.
  /// What it buys: an acquire that returned was on N replicas then, so a failover to one of
  /// them keeps it; asynchronous replication still loses a renewal or a release made after
  /// that, and WAIT is no consensus: the replica promoted need not be one that acknowledged
  /// (use fencing tokens where that matters). What it costs: WAIT holds back every later
  /// request on its connection until it returns (Redis serves a connection's commands in
  /// order), so these requests go on command connections of their own (four more per server,
  /// opened only with replica_sync): renewals and every other request never queue behind a
  /// WAIT, but more than four of these in flight queue behind each other's, each adding a
  /// replication round trip, and with a replica down or lagging each waits the timeout and
  /// fails (those queued behind it longer than their own timeout fail with errc::timeout).
  /// N asks for exactly N, which the caller chooses. all_connected_replicas (below) is
  /// Redisson's rule instead. At most 1,000; the timeout at least 1 ms and at most timeout (the
  /// per-attempt timeout, which is extended by it for these requests).
  int replica_sync = 0;
  std::chrono::milliseconds replica_sync_timeout = 1000ms;
  /// replica_sync's value for Redisson's rule (its default outside single-server mode,
  /// checkLockSyncedSlaves): the WAIT that follows each write above asks for as many replicas
  /// as are connected to the master it goes to, and the write counts once at least one of them
  /// acknowledged it, or when none is connected (a master without replicas). The connections
  /// that WAIT count the master's replicas with INFO replication when they connect, and count
  /// them again after a WAIT that got another count than it asked for (a replica lagging, gone
  /// or new) or with a count over a second old: a write that no replica acknowledged fails only
  /// if a replica is still connected after the WAIT. A replica that is connected but stalled
  /// (paused, or behind a partition the master has not noticed yet) holds each such write the
  /// whole replica_sync_timeout, as in Redisson. A server that refuses INFO (an ACL without
  /// it) is asked for one replica: its writes count once one acknowledged them, and fail when
  /// it has none. A server without WAIT (renamed away; serverless services, where Redisson
  /// skips it) counts writes while it has no replica connected, and fails them once it has.
  /// An acquire that no replica acknowledged is undone and tried again, as for N (and as
  /// Redisson does).
  static constexpr int all_connected_replicas = -1;
  /// Tries of an acquire that the replicas did not confirm (replica_sync, above), the first
  /// included, and sends of an unlock they did not confirm; 1: none again, the acquire fails
  /// (the unlock reports it) at its first shortfall. Redisson counts these
  /// with retryAttempts (4); rlock keeps them apart from retry_attempts, which bounds the
  /// resends of requests that never reached the server, so that raising it to ride out a long
  /// reconnect does not make a replica that is down cost that many WAITs. From 1 to 100.
  int replica_sync_tries = 4;
  /// Maps user-visible names to key names (Redisson's NameMapper). Identity when empty. Every
  /// key and channel of an object derives from the mapped name, so Java and C++ peers sharing a
  /// lock must map names the same way.
  std::function<std::string(std::string_view)> name_mapper;

  // ---- observation ----
  /// Called with each client_event (client_event.hpp: servers connected, disconnected or
  /// refusing connects, master switches, Cluster topology changes, scripts reloaded, holds
  /// lost), for logs, alerts and metrics. Empty, the default: no event is made.
  /// Guarantees:
  ///   - called on one of the client's I/O threads, never on two at once, in the order the
  ///     client saw the events;
  ///   - client::shutdown() (and the destructor) first waits for the events made before it
  ///     began to be delivered, at most 250 ms, and from then on it is never called: events not
  ///     delivered by then are dropped (shutdown's own closing of connections makes none);
  ///   - an exception it throws is caught and dropped, and the next event is delivered.
  /// Invalid: blocking in it. While it runs, the client's I/O on that thread waits (with one
  /// I/O thread, all of it: replies, renewals, reconnects). A blocking call of this client made
  /// from it throws errc::invalid_argument; its asynchronous calls are allowed.
  std::function<void(const client_event&)> on_event;
};

}  // namespace rlock
