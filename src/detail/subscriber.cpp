#include "detail/subscriber.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "detail/closed_completion.hpp"
#include "detail/exec_result.hpp"

namespace rlock::detail {
namespace {

std::string_view command_for(channel_kind k, bool subscribe) {
  if (k == channel_kind::sharded) return subscribe ? "SSUBSCRIBE" : "SUNSUBSCRIBE";
  return subscribe ? "SUBSCRIBE" : "UNSUBSCRIBE";
}

// "1 channel", "3 channels".
std::string count_of(std::size_t channels) {
  return std::to_string(channels) + (channels == 1 ? " channel" : " channels");
}

}  // namespace

subscriber::subscriber(asio::io_context& io, connection_options opts,
                       std::shared_ptr<event_sink> events)
    : io_(io), opts_(std::move(opts)) {
  opts_.pubsub = true;
  opts_.scripts.clear();
  if (events && events->wanted()) events_ = std::move(events);
}

void subscriber::start() {
  std::weak_ptr<subscriber> weak = weak_from_this();
  connection::handlers h;
  h.on_push = [weak](reply r) {
    if (auto s = weak.lock()) s->on_push(r);
  };
  h.on_ready = [weak] {
    if (auto s = weak.lock()) s->on_ready();
  };
  h.on_down = [weak](std::error_code) {
    if (auto s = weak.lock()) s->on_down();
  };
  if (events_) {
    h.on_link = [weak](const link_report& r) {
      if (auto s = weak.lock()) s->on_link(r);
    };
  }
  {
    std::lock_guard lk(mu_);
    conn_ = std::make_shared<connection>(io_, opts_, std::move(h));
  }
  conn_->start();
}

void subscriber::close() {
  std::map<channel_table::listener_id, pending> failed;
  std::map<channel_table::listener_id, std::shared_ptr<subscription>> forwarded;
  {
    std::lock_guard lk(mu_);
    closed_ = true;
    failed.swap(pending_);
    listeners_.clear();
    moving_.clear();
    forwarded.swap(forwarded_);
  }
  forwarded.clear();  // unsubscribed where they moved, outside mu_
  for (auto& [id, p] : failed) {
    if (p.timer) p.timer->cancel();
    if (p.done) p.done(make_error_code(errc::shutdown), id);
  }
  if (conn_) conn_->close();
}

void subscriber::master_switched(std::string host, std::uint16_t port, std::string detail) {
  std::shared_ptr<connection> c;
  {
    std::lock_guard lk(mu_);
    c = conn_;
  }
  if (c) c->master_switched(std::move(host), port, std::move(detail));
}

std::size_t subscriber::active_channels() const {
  std::lock_guard lk(mu_);
  return table_.active_channels();
}

std::string subscriber::trouble() const {
  std::shared_ptr<connection> c;
  {
    std::lock_guard lk(mu_);
    if (up_) return {};
    c = conn_;
  }
  const auto [ec, detail] = c ? c->last_failure() : std::pair<std::error_code, std::string>{};
  if (!ec) return "the pub/sub connection is not set up yet";
  return "the pub/sub connection is down: " + (detail.empty() ? ec.message() : detail);
}

void subscriber::async_subscribe(channel_kind kind, std::string channel, pubsub_listener listener,
                                 clock::time_point deadline, subscribe_callback done) {
  std::vector<std::function<void()>> later;
  {
    std::lock_guard lk(mu_);
    if (closed_) {
      complete_closed([done = std::move(done)] { done(make_error_code(errc::shutdown), 0); });
      return;
    }
    channel_table::actions a;
    const auto id = table_.add(kind, std::move(channel), a);
    listeners_[id] = std::make_shared<pubsub_listener>(std::move(listener));
    pending p;
    p.done = std::move(done);
    if (deadline != clock::time_point::max()) {
      p.timer = std::make_unique<asio::steady_timer>(io_, deadline);
      p.timer->async_wait([weak = weak_from_this(), id](std::error_code ec) {
        if (ec) return;
        auto self = weak.lock();
        if (!self) return;
        subscribe_callback cb;
        std::vector<std::function<void()>> more;
        const std::error_code why = make_error_code(errc::subscription_timeout);
        {
          std::lock_guard lk2(self->mu_);
          auto it = self->pending_.find(id);
          if (it == self->pending_.end()) return;
          cb = std::move(it->second.done);
          self->pending_.erase(it);
          self->listeners_.erase(id);
          channel_table::actions a2;
          self->table_.remove(id, a2);
          more = self->apply_locked(a2);
        }
        for (auto& f : more) f();
        if (cb) cb(why, id);
      });
    }
    pending_[id] = std::move(p);
    later = apply_locked(a);
  }
  for (auto& f : later) f();
}

void subscriber::unsubscribe(channel_table::listener_id id) {
  std::vector<std::function<void()>> later;
  std::shared_ptr<subscription> moved_away;
  {
    std::lock_guard lk(mu_);
    if (closed_) return;
    moving_.erase(id);
    if (auto f = forwarded_.find(id); f != forwarded_.end()) {
      moved_away = std::move(f->second);  // unsubscribed there once mu_ is released
      forwarded_.erase(f);
    }
    listeners_.erase(id);
    pending_.erase(id);
    channel_table::actions a;
    table_.remove(id, a);
    later = apply_locked(a);
  }
  for (auto& f : later) f();
}

std::vector<std::function<void()>> subscriber::apply_locked(channel_table::actions& a) {
  // Commands are submitted under mu_ so that their order on the wire matches the table's.
  // Not while the connection is down: on_ready subscribes every wanted channel anyway, and a
  // command queued meanwhile would be written before those, twice for its channel, putting
  // sent_ out of step with the answers.
  if (!up_) {
    a.subscribe.clear();
    a.unsubscribe.clear();
  }
  if (opts_.counters) {
    client_counters::add(opts_.counters->subscribes, a.subscribe.size());
    client_counters::add(opts_.counters->unsubscribes, a.unsubscribe.size());
  }
  for (auto& [kind, ch] : a.subscribe) {
    request r;
    const std::string_view args[] = {command_for(kind, true), ch};
    r.payload = encode_command(args);
    r.replies = 0;  // confirmed by a push, not a reply
    conn_->submit(std::move(r));
    sent_.push_back({{kind, ch}, true});
  }
  for (auto& [kind, ch] : a.unsubscribe) {
    request r;
    const std::string_view args[] = {command_for(kind, false), ch};
    r.payload = encode_command(args);
    r.replies = 0;
    conn_->submit(std::move(r));
    sent_.push_back({{kind, ch}, false});
  }
  std::vector<std::function<void()>> later;
  for (auto id : a.confirmed) {
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;
    if (it->second.timer) it->second.timer->cancel();
    later.push_back([cb = std::move(it->second.done), id] {
      if (cb) cb({}, id);
    });
    pending_.erase(it);
  }
  for (auto id : a.resubscribed) {
    auto it = listeners_.find(id);
    if (it == listeners_.end()) continue;
    later.push_back([l = it->second] {
      pubsub_event ev;
      ev.what = pubsub_event::kind::resubscribed;
      (*l)(ev);
    });
  }
  return later;
}

void subscriber::on_ready() {
  std::vector<std::function<void()>> later;
  {
    std::lock_guard lk(mu_);
    if (closed_) return;
    up_ = true;
    sent_.clear();  // the old connection's: none of them is answered on this one
    channel_table::actions a;
    table_.on_reconnected(a);
    resubscribing_ = a.subscribe.size();
    later = apply_locked(a);
  }
  for (auto& f : later) f();
}

void subscriber::on_down() {
  std::lock_guard lk(mu_);
  up_ = false;
}

void subscriber::on_link(const link_report& r) {
  client_event e;
  {
    std::lock_guard lk(mu_);
    if (closed_) return;
    switch (r.what) {
      case link_report::change::up:
        // Its first setup is not reported (the command connections' is), only a return.
        if (!std::exchange(dropped_, false)) return;
        e.kind = client_event_kind::pubsub_connected;
        e.detail = count_of(resubscribing_) + " subscribed again";
        break;
      case link_report::change::down: {
        // Only while it served listeners: an idle one's drop cost nobody a message.
        if (listeners_.empty()) return;
        dropped_ = true;
        e.kind = client_event_kind::pubsub_disconnected;
        // The channels it carried: those confirmed, which on_down() has not dropped.
        const std::size_t carried = table_.active_channels();
        e.detail = r.detail + (r.detail.empty() ? "" : "; ") + count_of(carried) +
                   " carried (their waiters wake at their own bounds until they are subscribed "
                   "again)";
        break;
      }
      case link_report::change::connect_failed:
        return;
    }
  }
  e.server = r.server;
  e.error = r.error;
  events_->emit(std::move(e));
}

void subscriber::on_push(const reply& r) {
  if (r.is_error()) {
    // A refused (un)subscribe, in place of its confirmation: the oldest one unanswered. Its
    // channel's pending subscriptions fail now with the error's code (no_permission for NOPERM).
    // The connection is kept, so the other channels on it are not dropped and resubscribed (a
    // reconnect would only be refused again).
    on_refused(r.str());
    return;
  }
  const std::string_view kind = r[0].str();
  const std::string channel(r[1].str());
  const bool sharded = kind == "smessage" || kind == "ssubscribe" || kind == "sunsubscribe";
  const channel_kind ck = sharded ? channel_kind::sharded : channel_kind::classic;
  if (kind == "message" || kind == "smessage") {
    if (opts_.counters) client_counters::add(opts_.counters->messages);
    std::vector<std::shared_ptr<pubsub_listener>> targets;
    {
      std::lock_guard lk(mu_);
      for (auto id : table_.listeners(ck, channel)) {
        auto it = listeners_.find(id);
        if (it != listeners_.end()) targets.push_back(it->second);
      }
    }
    pubsub_event ev;
    ev.channel = channel;
    ev.payload = r[2].str();
    for (auto& l : targets) (*l)(ev);
    return;
  }
  std::vector<std::function<void()>> later;
  {
    std::lock_guard lk(mu_);
    channel_table::actions a;
    const bool subscribed = kind == "subscribe" || kind == "ssubscribe";
    const bool unsubscribed = kind == "unsubscribe" || kind == "sunsubscribe";
    if (subscribed || unsubscribed) {
      // The command this answers, and any before it left unanswered, are done.
      const auto it = std::find_if(sent_.begin(), sent_.end(), [&](const sent_command& c) {
        return c.subscribe == subscribed && c.key.first == ck && c.key.second == channel;
      });
      if (it != sent_.end()) sent_.erase(sent_.begin(), it + 1);
    }
    if (subscribed) {
      table_.on_subscribed(ck, channel, a);
    } else if (unsubscribed) {
      table_.on_unsubscribed(ck, channel, a);
    }
    later = apply_locked(a);
  }
  for (auto& f : later) f();
}

void subscriber::on_refused(std::string_view text) {
  std::vector<std::function<void()>> later;
  {
    std::lock_guard lk(mu_);
    if (sent_.empty()) return;
    const sent_command refused = sent_.front();
    sent_.pop_front();
    if (!refused.subscribe) return;
    const std::error_code why = make_error_code(classify_server_error(text, false));
    // Cluster mode: the channel's slot lives elsewhere now; its listeners follow it there.
    const bool moved = moved_ && text.starts_with("MOVED ");
    const std::vector<channel_table::listener_id> ids =
        moved ? table_.on_moved(refused.key.first, refused.key.second)
              : table_.on_refused(refused.key.first, refused.key.second);
    for (const auto id : ids) {
      std::shared_ptr<pubsub_listener> listener;
      if (auto l = listeners_.find(id); l != listeners_.end()) {
        listener = std::move(l->second);
        listeners_.erase(l);
      }
      subscribe_callback cb;
      if (auto it = pending_.find(id); it != pending_.end()) {
        if (it->second.timer) it->second.timer->cancel();
        cb = std::move(it->second.done);
        pending_.erase(it);
      }
      if (moved && listener) {
        moving_.insert(id);
        later.push_back([weak = weak_from_this(), h = moved_, refusal = std::string(text),
                         key = refused.key, listener, id, cb = std::move(cb)]() mutable {
          h(refusal, key.first, key.second, std::move(listener),
            [weak, id, cb = std::move(cb)](std::error_code ec, subscription there) {
              bool wanted = false;
              if (auto self = weak.lock()) {
                std::lock_guard lk2(self->mu_);
                wanted = self->moving_.erase(id) > 0 && !self->closed_;
                if (wanted && !ec) {
                  self->forwarded_[id] = std::make_shared<subscription>(std::move(there));
                }
              }
              // Not wanted any more (unsubscribed or closed meanwhile): `there` ends here.
              if (cb) cb(wanted ? ec : make_error_code(errc::shutdown), id);
            });
        });
      } else if (cb) {
        later.push_back([cb = std::move(cb), id, why] { cb(why, id); });
      }
    }
  }
  for (auto& f : later) f();
}

}  // namespace rlock::detail
