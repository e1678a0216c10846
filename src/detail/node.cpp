#include "detail/node.hpp"

#include <algorithm>
#include <functional>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>

namespace rlock::detail {

// A node's link, as its events tell it: up while any of its command connections is set up. Each
// connection reports its own changes (connection::handlers::on_link); this turns them into the
// node's: `connected` when the first one is up, `disconnected` when the last one up drops, and
// `connect_failed` while none is up, once per error code (the back-off retries each connection
// every few seconds at most, with the same failure as a rule).
class node::link_events {
 public:
  link_events(std::shared_ptr<event_sink> sink, server_address address)
      : sink_(std::move(sink)), address_(std::move(address)), server_(address_.to_string()) {}

  /// Where the node's connections are, as last known (set up there, or moved there).
  std::string server() const {
    std::lock_guard lk(mu_);
    return server_;
  }

  void report(const link_report& r) {
    client_event e;
    {
      std::lock_guard lk(mu_);
      switch (r.what) {
        case link_report::change::up:
          server_ = r.server;
          if (up_++ > 0) return;
          last_failure_.reset();
          e.kind = client_event_kind::connected;
          break;
        case link_report::change::down:
          if (up_ == 0 || --up_ > 0) return;
          e.kind = client_event_kind::disconnected;
          break;
        case link_report::change::connect_failed:
          if (up_ > 0 || last_failure_ == r.error) return;
          last_failure_ = r.error;
          e.kind = client_event_kind::connect_failed;
          break;
      }
    }
    e.server = r.server;
    e.error = r.error;
    e.detail = r.detail;
    sink_->emit(std::move(e));
  }

  /// The connections move to `host`:`port` (reached with the address's scheme).
  void master_switched(const std::string& host, std::uint16_t port, std::string detail) {
    server_address to = address_;
    to.host = host;
    to.port = port;
    std::string server = to.to_string();
    {
      std::lock_guard lk(mu_);
      server_ = server;
    }
    sink_->emit({.kind = client_event_kind::master_switched,
                 .server = std::move(server),
                 .object = {},
                 .error = {},
                 .detail = std::move(detail)});
  }

 private:
  std::shared_ptr<event_sink> sink_;
  const server_address address_;  // the node's, for its scheme and database
  mutable std::mutex mu_;
  std::string server_;
  int up_ = 0;  // command connections set up
  // The code of the last connect failure reported since the link was last up (details vary
  // from try to try: a timeout's step, a TLS library's text).
  std::optional<std::error_code> last_failure_;
};

node::node(asio::io_context& io, const connection_options& opts, int pool_size, int sub_pool_size,
           int synced_pool_size, const std::shared_ptr<event_sink>& events) {
  connection::handlers h;
  if (events && events->wanted()) {
    link_events_ = std::make_shared<link_events>(events, opts.address);
    h.on_link = [l = link_events_](const link_report& r) { l->report(r); };
  }
  // Only the connections that WAIT count the server's replicas, into one census.
  connection_options plain = opts;
  plain.count_replicas = false;
  plain.census = nullptr;
  connection_options synced = plain;
  if (opts.count_replicas) synced.census = std::make_shared<replica_census>();
  for (int i = 0; i < std::max(1, pool_size); ++i) {
    conns_.push_back(std::make_shared<connection>(io, plain, h));
  }
  for (int i = 0; i < synced_pool_size; ++i) {
    synced_.push_back(std::make_shared<connection>(io, synced, h));
  }
  for (int i = 0; i < std::max(1, sub_pool_size); ++i) {
    subs_.push_back(std::make_shared<subscriber>(io, plain, events));
  }
}

void node::start() {
  for (auto& c : conns_) c->start();
  for (auto& c : synced_) c->start();
  for (auto& s : subs_) s->start();
}

void node::close() {
  for (auto& s : subs_) s->close();
  for (auto& c : conns_) c->close();
  for (auto& c : synced_) c->close();
}

connection& node::pick() {
  if (conns_.size() == 1) return *conns_.front();
  return *conns_[next_.fetch_add(1, std::memory_order_relaxed) % conns_.size()];
}

connection& node::pick_synced() {
  if (synced_.empty()) return pick();
  return *synced_[next_synced_.fetch_add(1, std::memory_order_relaxed) % synced_.size()];
}

subscriber& node::subscriber_for(std::string_view channel) {
  if (subs_.size() == 1) return *subs_.front();
  return *subs_[std::hash<std::string_view>{}(channel) % subs_.size()];
}

void node::master_switched(const std::string& host, std::uint16_t port, const std::string& detail) {
  if (link_events_) link_events_->master_switched(host, port, detail);
  for (auto& c : conns_) c->master_switched(host, port, detail);
  for (auto& c : synced_) c->master_switched(host, port, detail);
  for (auto& s : subs_) s->master_switched(host, port, detail);
}

std::string node::server() const {
  return link_events_ ? link_events_->server() : std::string();
}

void node::set_moved_handler(const moved_handler& h) {
  for (auto& s : subs_) s->set_moved_handler(h);
}

std::size_t node::channels() const {
  std::size_t n = 0;
  for (const auto& s : subs_) n += s->active_channels();
  return n;
}

connection_status node::status() const {
  connection_status out;
  for (const auto& c : conns_) {
    if (c->current_state() == connection::state::ready)
      return {.connected = true, .error = {}, .detail = {}};
    if (!out.error) std::tie(out.error, out.detail) = c->last_failure();
  }
  return out;
}

}  // namespace rlock::detail
