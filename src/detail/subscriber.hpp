// Pub/sub on one dedicated connection: SUBSCRIBE/SSUBSCRIBE with channels reference-counted
// across all local listeners, and local demultiplexing of messages.
//
// Guarantees:
//   - async_subscribe completes when the server has confirmed the channel (so a message
//     published after that completion reaches the listener), or with subscription_timeout at
//     its deadline, or with shutdown;
//   - after the connection is re-established, every channel that still has listeners is
//     subscribed again and each of its listeners receives a `resubscribed` event, so it can
//     re-check whatever it may have missed while disconnected;
//   - the last listener of a channel leaving unsubscribes it.
// Listeners run on an I/O thread and must not block.
#pragma once

#include <asio.hpp>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "detail/channel_table.hpp"
#include "detail/connection.hpp"
#include "detail/event_sink.hpp"

namespace rlock::detail {

struct pubsub_event {
  enum class kind { message, resubscribed };
  kind what = kind::message;
  std::string_view channel;
  std::string_view payload;
};
using pubsub_listener = std::function<void(const pubsub_event&)>;
using subscribe_callback = std::function<void(std::error_code, channel_table::listener_id)>;
class subscription;
/// Cluster mode: a (re)subscription this subscriber's node refused with MOVED (the channel's slot
/// is served elsewhere: after a migration the server also unsubscribes sharded channels itself).
/// The handler subscribes `listener` to `channel` where the slot now lives and calls `finish`
/// with the outcome; the listener's id here then forwards to that subscription.
using moved_handler =
    std::function<void(const std::string& refusal, channel_kind kind, const std::string& channel,
                       std::shared_ptr<pubsub_listener> listener,
                       std::function<void(std::error_code, subscription)> finish)>;

class subscriber : public std::enable_shared_from_this<subscriber> {
 public:
  /// `events`, when given and wanted: where this subscriber's connection reports its drops and
  /// its returns after one (client_event_kind::pubsub_disconnected, pubsub_connected).
  subscriber(asio::io_context& io, connection_options opts,
             std::shared_ptr<event_sink> events = nullptr);
  void start();
  /// Fails pending subscriptions with errc::shutdown and closes the connection.
  void close();

  void async_subscribe(channel_kind kind, std::string channel, pubsub_listener listener,
                       clock::time_point deadline, subscribe_callback done);
  /// Removes a listener; the last listener of a channel unsubscribes it. Thread-safe.
  void unsubscribe(channel_table::listener_id id);

  /// Sentinel mode: connection::master_switched on this subscriber's connection. Its channels
  /// are subscribed again on the new master and their listeners hear `resubscribed`.
  void master_switched(std::string host, std::uint16_t port, std::string detail);
  /// Channels confirmed by the server (for tests and stats).
  std::size_t active_channels() const;
  /// Why subscriptions cannot be confirmed now: while the connection is not set up, its last
  /// failure ("the pub/sub connection is down: ..."); empty once it is.
  std::string trouble() const;
  /// Cluster mode: where listeners go whose channel's slot has moved (see moved_handler).
  /// Without one, such listeners are dropped (their pending subscriptions fail with
  /// errc::cluster_redirect). Set before start().
  void set_moved_handler(moved_handler h) { moved_ = std::move(h); }

 private:
  struct pending {
    subscribe_callback done;
    std::unique_ptr<asio::steady_timer> timer;
  };
  void on_push(const reply& r);
  /// An error reply in place of the oldest unanswered (un)subscribe's confirmation.
  void on_refused(std::string_view text);
  void on_ready();
  void on_down();
  /// The connection's link reports, as client events (events_).
  void on_link(const link_report& r);
  /// Carries out the table's actions; called with mu_ held, returns callbacks to run unlocked.
  std::vector<std::function<void()>> apply_locked(channel_table::actions& a);

  asio::io_context& io_;
  connection_options opts_;
  std::shared_ptr<connection> conn_;
  mutable std::mutex mu_;
  channel_table table_;
  std::map<channel_table::listener_id, std::shared_ptr<pubsub_listener>> listeners_;
  std::map<channel_table::listener_id, pending> pending_;
  // (Un)subscribes written on the current connection and not yet answered, in wire order. Each
  // names one channel and gets exactly one push: its confirmation, or an error reply (NOPERM:
  // the ACL user may not use the channel) which fails that channel's pending subscriptions.
  struct sent_command {
    channel_table::channel_key key;
    bool subscribe = false;
  };
  std::deque<sent_command> sent_;
  // The connection is set up (on_ready ran, on_down has not since): (un)subscribes are written
  // only then.
  bool up_ = false;
  bool closed_ = false;
  // Null when no one wants the client's events.
  std::shared_ptr<event_sink> events_;
  // The connection dropped since it was last set up (pubsub_connected is reported on its return).
  bool dropped_ = false;
  // The channels on_ready() subscribed again, for the event that follows it.
  std::size_t resubscribing_ = 0;
  moved_handler moved_;
  // Listeners handed to moved_ whose new subscription is not made yet, and those made: the id
  // here stands for the subscription there (unsubscribe(id) ends it).
  std::set<channel_table::listener_id> moving_;
  std::map<channel_table::listener_id, std::shared_ptr<subscription>> forwarded_;
};

/// An active subscription; unsubscribes when destroyed. Move-only.
class subscription {
 public:
  subscription() = default;
  subscription(std::weak_ptr<subscriber> s, channel_table::listener_id id)
      : s_(std::move(s)), id_(id) {}
  subscription(subscription&& o) noexcept : s_(std::move(o.s_)), id_(std::exchange(o.id_, 0)) {}
  subscription& operator=(subscription&& o) noexcept {
    if (this != &o) {
      reset();
      s_ = std::move(o.s_);
      id_ = std::exchange(o.id_, 0);
    }
    return *this;
  }
  subscription(const subscription&) = delete;
  subscription& operator=(const subscription&) = delete;
  ~subscription() { reset(); }

  void reset() {
    if (id_ != 0) {
      if (auto s = s_.lock()) s->unsubscribe(id_);
    }
    id_ = 0;
    s_.reset();
  }
  explicit operator bool() const { return id_ != 0; }

 private:
  std::weak_ptr<subscriber> s_;
  channel_table::listener_id id_ = 0;
};

}  // namespace rlock::detail
