#include "detail/channel_table.hpp"

#include <algorithm>
#include <utility>

namespace rlock::detail {

channel_table::listener_id channel_table::add(channel_kind kind, std::string channel,
                                              actions& out) {
  const listener_id id = next_id_++;
  channel_key key{kind, std::move(channel)};
  entry& e = channels_[key];
  e.listeners.push_back(id);
  owners_[id] = key;
  if (e.state == server_state::subscribed) {
    out.confirmed.push_back(id);
  } else {
    e.unconfirmed.push_back(id);
  }
  reconcile(key, e, out);
  return id;
}

void channel_table::remove(listener_id id, actions& out) {
  auto o = owners_.find(id);
  if (o == owners_.end()) return;
  channel_key key = o->second;
  owners_.erase(o);
  auto it = channels_.find(key);
  if (it == channels_.end()) return;
  entry& e = it->second;
  std::erase(e.listeners, id);
  std::erase(e.unconfirmed, id);
  reconcile(key, e, out);
  if (e.listeners.empty() && e.state == server_state::unsubscribed) channels_.erase(it);
}

void channel_table::on_subscribed(channel_kind kind, const std::string& channel, actions& out) {
  channel_key key{kind, channel};
  auto it = channels_.find(key);
  if (it == channels_.end()) {
    // Confirmation for a channel nobody wants any more (or a duplicate): undo it.
    out.unsubscribe.push_back(key);
    channels_[key].state = server_state::unsubscribing;
    return;
  }
  entry& e = it->second;
  if (e.state == server_state::subscribing || e.state == server_state::unsubscribed) {
    e.state = server_state::subscribed;
    out.confirmed.insert(out.confirmed.end(), e.unconfirmed.begin(), e.unconfirmed.end());
    if (e.resync) {
      for (listener_id id : e.listeners) {
        if (std::find(e.unconfirmed.begin(), e.unconfirmed.end(), id) == e.unconfirmed.end()) {
          out.resubscribed.push_back(id);
        }
      }
      e.resync = false;
    }
    e.unconfirmed.clear();
  }
  reconcile(key, e, out);
}

void channel_table::on_unsubscribed(channel_kind kind, const std::string& channel, actions& out) {
  channel_key key{kind, channel};
  auto it = channels_.find(key);
  if (it == channels_.end()) return;
  entry& e = it->second;
  // An unsubscribe we did not ask for (the server dropped a confirmed channel): its listeners
  // are told `resubscribed` once it is confirmed again, so they re-check what they missed.
  if (e.state == server_state::subscribed && !e.listeners.empty()) e.resync = true;
  e.state = server_state::unsubscribed;
  reconcile(key, e, out);
  if (e.listeners.empty() && e.state == server_state::unsubscribed) channels_.erase(it);
}

std::vector<channel_table::listener_id> channel_table::on_moved(channel_kind kind,
                                                                const std::string& channel) {
  auto it = channels_.find({kind, channel});
  if (it == channels_.end() || it->second.state != server_state::subscribing) return {};
  std::vector<listener_id> moved = std::move(it->second.listeners);
  for (const listener_id id : moved) owners_.erase(id);
  channels_.erase(it);
  return moved;
}

std::vector<channel_table::listener_id> channel_table::on_refused(channel_kind kind,
                                                                  const std::string& channel) {
  auto it = channels_.find({kind, channel});
  if (it == channels_.end() || it->second.state != server_state::subscribing) return {};
  entry& e = it->second;
  e.state = server_state::unsubscribed;
  std::vector<listener_id> refused = std::move(e.unconfirmed);
  e.unconfirmed.clear();
  for (const listener_id id : refused) {
    std::erase(e.listeners, id);
    owners_.erase(id);
  }
  // Listeners confirmed on an earlier connection stay, unsubscribed, until a new add().
  if (e.listeners.empty()) channels_.erase(it);
  return refused;
}

void channel_table::on_reconnected(actions& out) {
  for (auto it = channels_.begin(); it != channels_.end();) {
    entry& e = it->second;
    if (e.listeners.empty()) {
      it = channels_.erase(it);
      continue;
    }
    if (e.state == server_state::subscribed || e.state == server_state::unsubscribing) {
      e.resync = true;
    }
    e.state = server_state::subscribing;
    out.subscribe.push_back(it->first);
    ++it;
  }
}

void channel_table::reconcile(const channel_key& key, entry& e, actions& out) {
  const bool wanted = !e.listeners.empty();
  if (wanted && e.state == server_state::unsubscribed) {
    e.state = server_state::subscribing;
    out.subscribe.push_back(key);
  } else if (!wanted && e.state == server_state::subscribed) {
    e.state = server_state::unsubscribing;
    out.unsubscribe.push_back(key);
  }
  // subscribing/unsubscribing: wait for the server's confirmation, then reconcile again.
}

std::vector<channel_table::listener_id> channel_table::listeners(channel_kind kind,
                                                                 const std::string& channel) const {
  auto it = channels_.find({kind, channel});
  if (it == channels_.end()) return {};
  return it->second.listeners;
}

std::size_t channel_table::active_channels() const {
  return static_cast<std::size_t>(std::count_if(channels_.begin(), channels_.end(), [](auto& kv) {
    return kv.second.state == server_state::subscribed;
  }));
}

}  // namespace rlock::detail
