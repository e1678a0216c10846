// The client's engine: I/O threads, nodes (command connections and subscribers), routing of
// requests by key, retries with Redisson's policy, and EVALSHA with NOSCRIPT recovery.
//
// Topology: a single server (in Sentinel mode the master the Sentinels name), or in Cluster
// mode the master of the key's slot (cluster_router), following MOVED and ASK redirections.
#pragma once

#include <asio.hpp>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "detail/client_counters.hpp"
#include "detail/cluster_router.hpp"
#include "detail/connection.hpp"
#include "detail/event_sink.hpp"
#include "detail/fork_epoch.hpp"
#include "detail/node.hpp"
#include "detail/sentinel_watch.hpp"
#include "detail/server_client.hpp"
#include "detail/spent_keys.hpp"
#include "detail/subscriber.hpp"
#include "rlock/config.hpp"
#include "rlock/connection_status.hpp"
#include "rlock/script.hpp"

namespace rlock::detail {

struct exec_options {
  /// Bounds every attempt and every delay between attempts.
  clock::time_point deadline = clock::time_point::max();
  /// When before `deadline`: no attempt starts at or after it (retry_fsm's start_by). For a
  /// wait whose every try gets a whole request timeout for its reply (so that its outcome is
  /// known) but whose retries must not outlast the wait itself.
  clock::time_point start_by = clock::time_point::max();
  /// The command may be sent again when its outcome is unknown.
  bool idempotent = false;
  /// Attempts at most, the first included; 0 means the configured `retry_attempts`. 1: never
  /// sent again, not even when an attempt certainly did not run (not connected, say).
  int max_attempts = 0;
  /// The key that decides the node (empty: any node).
  std::string_view route_key;
  /// Per-attempt timeout; 0 means the configured `timeout`.
  std::chrono::milliseconds timeout{0};
  /// The callback may run on the thread that waits for it (a blocking call reading its own
  /// reply, connection::poll_replies), not only on an I/O thread: it must be thread-safe, quick
  /// and must not block.
  bool completes_on_caller = false;
  /// A resend first closes, on the server, the connections that earlier attempts of this
  /// request were written to and may still run on (CLIENT KILL in the same write, ahead of it;
  /// server_client.hpp): a late earlier attempt never runs after its resend. For requests whose
  /// late run would do harm (a lock acquire, an unlock).
  bool close_unknown = false;
  /// Connections to close on the server ahead of this request's first attempt (and of its
  /// resends): where an earlier request that this one must not be overtaken by may still run
  /// (exec_result::unknown_on of an acquire, for its undo).
  std::vector<server_client> fence;
  /// eval only: when above 0, the script is followed in the same write by WAIT sync_replicas
  /// sync_timeout, whose count the result carries (exec_result::replicas_acked); each attempt's
  /// timeout is extended by sync_timeout. config::all_connected_replicas (below 0): WAIT asks
  /// for the replicas connected to the server it is sent to, which its connection counts
  /// (exec_result::replicas_connected).
  int sync_replicas = 0;
  std::chrono::milliseconds sync_timeout{0};
  /// With sync_replicas: sends in all, the first included, while the replicas acknowledge fewer
  /// than asked (replicas_confirmed): the request is sent again, whole (its WAIT with it; on the
  /// next of the node's connections for such requests), after retry_delay's equal jitter for
  /// the resends so far, never starting at or after start_by. Only for a script whose resend
  /// changes nothing once it has run and still writes (an unlock's latch: a WAIT counts a
  /// connection's writes only, so a resend that only read could be confirmed on another
  /// connection without the first run). The result is the last answered attempt's; a resend
  /// that fails (or the client's shutdown before it) leaves the last answered one, unconfirmed,
  /// as the result. 1: never sent again for this.
  int confirm_tries = 1;
};

class core : public std::enable_shared_from_this<core> {
 public:
  /// Validates the configuration (throws rlock::error on a bad URL or value), starts the I/O
  /// threads and begins connecting. `scripts` are loaded on every connection at connect time.
  core(config cfg, const std::vector<const script*>& scripts);
  ~core();
  core(const core&) = delete;
  core& operator=(const core&) = delete;

  /// Sends one command. The callback runs on an I/O thread.
  void exec(std::span<const std::string_view> args, const exec_options& opts, exec_callback cb);
  /// Runs a script by EVALSHA; on NOSCRIPT sends it once more by EVAL. `s` must outlive the
  /// call's completion.
  void eval(const script& s, std::span<const std::string_view> keys,
            std::span<const std::string_view> args, const exec_options& opts, exec_callback cb);

  /// Subscribes a listener to a channel of the node that owns `route_key`.
  void subscribe(channel_kind kind, std::string channel, std::string_view route_key,
                 pubsub_listener listener, clock::time_point deadline,
                 std::function<void(std::error_code, subscription)> done);

  /// The error text of a subscription to `channel` (of the object `route_key`; `subject` names
  /// what was subscribed) that subscription_timeout ended: the bound, and what keeps such
  /// subscriptions from being confirmed now, when known (subscriber::trouble).
  std::string subscription_timeout_detail(std::string_view subject, std::string_view channel,
                                          std::string_view route_key);

  /// Fails all pending work with errc::shutdown and stops the I/O threads. Idempotent.
  /// Must not be called from an I/O thread (it joins them).
  void shutdown();

  const config& cfg() const { return cfg_; }
  /// Client id: a random UUID, 36 characters (Redisson's RedissonClient id).
  const std::string& id() const { return id_; }
  asio::io_context& io() { return io_; }
  /// The mapped name (config::name_mapper), from which every key of an object derives.
  std::string map_name(std::string_view name) const;
  /// True when called from one of this client's I/O threads.
  bool on_io_thread() const;
  /// Throws errc::invalid_argument on one of this client's I/O threads: a blocking call there
  /// waits for a reply that thread would have to read, for ever, and every timer of the client
  /// (renewals, loss signals) with it. Also in a fork's child (forked()).
  void check_blocking_allowed() const;
  /// This process is a fork's child of the one that made the client (fork_epoch.hpp): nothing
  /// of the client may be used here. Requests and subscriptions fail with
  /// errc::invalid_argument before anything is written, shutdown() does nothing, and the
  /// client must not be destroyed here (client::~client keeps it until the process exits).
  bool forked() const noexcept { return fork_epoch() != fork_epoch_; }
  /// shutdown() has begun.
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  /// What forked() refusals say.
  std::string forked_detail() const;

  /// The node that owns `key`.
  node& node_for(std::string_view key);
  /// Cluster mode: keys of one slot may share a multi-key script; other keys may not.
  bool cluster_mode() const { return cluster_ != nullptr; }
  /// The state of the command connections (errc::shutdown once shut down).
  connection_status status() const;
  /// Request keys no attempt can read any more, deleted in batches (spent_keys.hpp); what is
  /// pending when the client shuts down is deleted first (briefly: at most 250 ms).
  spent_keys& spent() { return *spent_; }
  /// The client's events (config::on_event): event_sink::wanted() is false without a handler.
  event_sink& events() { return *events_; }
  /// What the client has done (client::stats()), counted by its parts (which may keep it past
  /// the core: a watchdog's late reply).
  const std::shared_ptr<client_counters>& counters() const { return counters_; }
  /// Channels the servers confirmed to the client's subscribers now (0 once shut down).
  std::size_t channels() const;

 private:
  struct attempt;
  /// At most this many handlers left in the io_context's queue are run after its threads end
  /// (shutdown): a bound, should some handler keep posting another.
  static constexpr int max_drained_handlers = 100000;
  /// Cluster mode: MOVED and ASK replies followed per request, at most.
  static constexpr int max_redirects = 5;
  /// Cluster mode: TRYAGAIN replies (a slot being migrated) waited out per request, at most,
  /// each after this delay: 5 s in all.
  static constexpr int max_tryagains = 100;
  static constexpr std::chrono::milliseconds tryagain_delay{50};
  /// Cluster mode: how often a request made before the first scan settled looks again.
  static constexpr std::chrono::milliseconds settle_poll{2};
  /// With config::replica_sync: the command connections per node of the requests followed by
  /// WAIT (node::pick_synced).
  static constexpr int replica_sync_connections = 4;
  /// shutdown() waits at most this long for config::on_event to take the events made before.
  static constexpr std::chrono::milliseconds events_drain_wait{250};
  /// shutdown() waits at most this long for the DELs of spent request keys.
  static constexpr std::chrono::milliseconds spent_close_wait{250};
  /// Swaps an EVALSHA attempt's script for its SPUBLISH twin, if it has one.
  void use_sharded_twin(attempt& a);
  /// An attempt with `opts`' retry policy, timeout and completion; the caller adds its payload
  /// and route key.
  std::shared_ptr<attempt> new_attempt(const exec_options& opts, exec_callback cb);
  /// Cluster mode: follows a MOVED or ASK reply (true), or leaves the result to the retry
  /// policy (false).
  bool follow_redirect(const std::shared_ptr<attempt>& a, exec_result& res);
  void send(const std::shared_ptr<attempt>& a);
  /// Cluster mode, after a scan changed a slot's master: the attempts sleeping before a retry
  /// (a node unreachable, a failover under way) are sent again at once, to the new masters.
  void wake_sleepers();
  /// Cluster mode: a subscriber's node refused a channel with MOVED (moved_handler).
  void resubscribe_moved(const std::string& refusal, channel_kind kind, const std::string& channel,
                         std::shared_ptr<pubsub_listener> listener,
                         std::function<void(std::error_code, subscription)> finish);
  /// Sends `a` again after `delay` (unless the client shuts down first: then `res`, failed
  /// with errc::shutdown, completes it).
  void resend_after(const std::shared_ptr<attempt>& a, std::chrono::milliseconds delay,
                    exec_result res);
  /// The result of `a` when a resend to confirm the replicas (exec_options::confirm_tries)
  /// cannot be answered: its last answered attempt, which the replicas did not confirm (taken
  /// from `a`).
  static exec_result last_unconfirmed(attempt& a);
  void on_result(const std::shared_ptr<attempt>& a, exec_result res);
  /// Completes `a` with `res` (its callback, if any is left), counting the completion.
  void finish(const std::shared_ptr<attempt>& a, exec_result res);
  /// Completes `a` with `res` later, on the fallback executor (complete_closed): when the
  /// client cannot run it (shut down, or a fork's child).
  void finish_closed(const std::shared_ptr<attempt>& a, exec_result res);

  config cfg_;
  server_address address_;
  std::string id_;
  // fork_epoch() when this client was made: another one means this is a fork's child.
  std::uint64_t fork_epoch_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  // config::on_event's delivery; closed as shutdown() begins.
  std::shared_ptr<event_sink> events_;
  // Shared with the connections (connection_options::counters), which may outlive the core.
  std::shared_ptr<client_counters> counters_ = std::make_shared<client_counters>();
  // After io_: its timer is destroyed before io_ is (shutdown() has cancelled it by then).
  std::unique_ptr<spent_keys> spent_;
  std::unique_ptr<node> node_;  // null in Cluster mode
  std::shared_ptr<cluster_router> cluster_;
  // The SHA1s of the scripts every connection loads as it connects (the library's, and their
  // sharded twins): a NOSCRIPT for one of them means the server lost it (client_event).
  std::unordered_set<std::string> loaded_sha1s_;
  // Cluster mode: each publishing script's twin that SPUBLISHes instead.
  std::unordered_map<const script*, std::unique_ptr<script>> sharded_twins_;
  // Sentinel mode: hears the Sentinels announce a new master (null otherwise).
  std::unique_ptr<sentinel_watch> sentinel_watch_;
  // Where config::credentials_resolver is asked (resolver_thread.hpp); null without one.
  std::shared_ptr<resolver_thread> resolver_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::set<std::shared_ptr<attempt>> waiting_;  // attempts sleeping before a retry
  std::atomic<bool> closed_{false};
  std::minstd_rand rng_{std::random_device{}()};
};

/// A random UUID of the given version (RFC 9562: 4, random; 8, rlock's mark of a client that
/// hands locks over through the wait queue), in lowercase hex with dashes: 36 characters.
std::string make_uuid(int version);

/// The EVAL form of an encoded EVALSHA of `s` (NOSCRIPT recovery).
std::string evalsha_to_eval(std::string_view evalsha, const script& s);

}  // namespace rlock::detail
