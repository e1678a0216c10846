// The client's engine: I/O threads, nodes (command connections and subscribers), routing of
// requests by key, retries with Redisson's policy, and EVALSHA with NOSCRIPT recovery.
//
// Topology: this release routes every key to the single configured server. The routing call
// (node_for) takes the key so that master/replica, Sentinel and Cluster can slot in behind it.
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
#include <vector>

#include "detail/connection.hpp"
#include "detail/sentinel_watch.hpp"
#include "detail/server_client.hpp"
#include "detail/subscriber.hpp"
#include "rlock/config.hpp"
#include "rlock/connection_status.hpp"
#include "rlock/script.hpp"

namespace rlock::detail {

struct exec_options {
  /// Bounds every attempt and every delay between attempts.
  clock::time_point deadline = clock::time_point::max();
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
};

/// Connections to one server.
class node {
 public:
  node(asio::io_context& io, const connection_options& opts, int pool_size, int sub_pool_size);
  void start();
  void close();
  /// A command connection (round-robin over the pool).
  connection& pick();
  /// The subscriber that carries `channel` (stable for a given channel).
  subscriber& subscriber_for(std::string_view channel);
  /// Sentinel mode: moves every connection to the announced master (connection::master_switched).
  void master_switched(const std::string& host, std::uint16_t port, const std::string& detail);
  /// Connected if any command connection is ready; otherwise the first recorded failure.
  connection_status status() const;

 private:
  std::vector<std::shared_ptr<connection>> conns_;
  std::vector<std::shared_ptr<subscriber>> subs_;
  std::atomic<std::size_t> next_{0};
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
  /// (renewals, loss signals) with it.
  void check_blocking_allowed() const;

  /// The node that owns `key`.
  node& node_for(std::string_view key);
  /// The state of the command connections (errc::shutdown once shut down).
  connection_status status() const;

 private:
  struct attempt;
  /// At most this many handlers left in the io_context's queue are run after its threads end
  /// (shutdown): a bound, should some handler keep posting another.
  static constexpr int max_drained_handlers = 100000;
  /// An attempt with `opts`' retry policy, timeout and completion; the caller adds its payload
  /// and route key.
  std::shared_ptr<attempt> new_attempt(const exec_options& opts, exec_callback cb);
  void send(const std::shared_ptr<attempt>& a);
  void on_result(const std::shared_ptr<attempt>& a, exec_result res);

  config cfg_;
  server_address address_;
  std::string id_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::unique_ptr<node> node_;
  // Sentinel mode: hears the Sentinels announce a new master (null otherwise).
  std::unique_ptr<sentinel_watch> sentinel_watch_;
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
