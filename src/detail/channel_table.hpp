// Sans-I/O bookkeeping of pub/sub channels on one subscriber connection.
//
// Listeners are reference-counted per channel: the first listener of a channel causes a
// SUBSCRIBE, the last one leaving causes an UNSUBSCRIBE, and the table reconciles what the
// server has confirmed with what local listeners want, so overlapping subscribe/unsubscribe
// requests for one channel never leave it in the wrong state. The owner carries out the actions
// the table returns, in order, and feeds back the server's confirmations.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace rlock::detail {

enum class channel_kind { classic, sharded };  // SUBSCRIBE or SSUBSCRIBE

class channel_table {
 public:
  using listener_id = std::uint64_t;
  using channel_key = std::pair<channel_kind, std::string>;

  struct actions {
    std::vector<channel_key> subscribe;     ///< send (S)SUBSCRIBE for these
    std::vector<channel_key> unsubscribe;   ///< send (S)UNSUBSCRIBE for these
    std::vector<listener_id> confirmed;     ///< their subscription is now active
    std::vector<listener_id> resubscribed;  ///< active again after a reconnect
  };

  /// Adds a listener. If the channel is already confirmed the listener is confirmed at once.
  listener_id add(channel_kind kind, std::string channel, actions& out);
  /// Removes a listener (unknown ids are ignored).
  void remove(listener_id id, actions& out);
  /// The server confirmed a (S)SUBSCRIBE.
  void on_subscribed(channel_kind kind, const std::string& channel, actions& out);
  /// The server confirmed a (S)UNSUBSCRIBE.
  void on_unsubscribed(channel_kind kind, const std::string& channel, actions& out);
  /// The server refused a (S)SUBSCRIBE of this channel (an error reply, such as NOPERM, in
  /// place of its confirmation). Returns the listeners that waited for that confirmation; they
  /// are removed, and the caller fails them. The channel counts as unsubscribed and is not
  /// subscribed again at once (that would be refused again, over and over): the next add()
  /// tries again. A refusal of a channel that is not being subscribed is ignored.
  std::vector<listener_id> on_refused(channel_kind kind, const std::string& channel);
  /// Cluster mode: the server refused a (S)SUBSCRIBE of this channel with MOVED (its slot is
  /// served elsewhere). Returns every listener of the channel, confirmed before or waiting,
  /// and forgets the channel: the caller moves them to the node that serves it now. Ignored
  /// (empty) for a channel that is not being subscribed.
  std::vector<listener_id> on_moved(channel_kind kind, const std::string& channel);
  /// The connection was re-established: the server has no subscriptions. Every channel with
  /// listeners is subscribed again; those that had been confirmed report `resubscribed`.
  void on_reconnected(actions& out);

  /// Listeners of a channel (for message dispatch).
  std::vector<listener_id> listeners(channel_kind kind, const std::string& channel) const;
  /// Channels the server has confirmed and that are not being unsubscribed.
  std::size_t active_channels() const;
  bool empty() const { return channels_.empty(); }

 private:
  enum class server_state { unsubscribed, subscribing, subscribed, unsubscribing };
  struct entry {
    server_state state = server_state::unsubscribed;
    std::vector<listener_id> listeners;
    std::vector<listener_id> unconfirmed;  // waiting for the subscribe confirmation
    bool resync = false;                   // confirmed before a reconnect
  };
  void reconcile(const channel_key& key, entry& e, actions& out);

  std::map<channel_key, entry> channels_;
  std::map<listener_id, channel_key> owners_;
  listener_id next_id_ = 1;
};

}  // namespace rlock::detail
