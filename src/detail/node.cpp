#include "detail/node.hpp"

#include <algorithm>
#include <functional>
#include <tuple>

namespace rlock::detail {

node::node(asio::io_context& io, const connection_options& opts, int pool_size, int sub_pool_size,
           int synced_pool_size) {
  for (int i = 0; i < std::max(1, pool_size); ++i) {
    conns_.push_back(std::make_shared<connection>(io, opts, connection::handlers{}));
  }
  for (int i = 0; i < synced_pool_size; ++i) {
    synced_.push_back(std::make_shared<connection>(io, opts, connection::handlers{}));
  }
  for (int i = 0; i < std::max(1, sub_pool_size); ++i) {
    subs_.push_back(std::make_shared<subscriber>(io, opts));
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
  for (auto& c : conns_) c->master_switched(host, port, detail);
  for (auto& c : synced_) c->master_switched(host, port, detail);
  for (auto& s : subs_) s->master_switched(host, port, detail);
}

void node::set_moved_handler(const moved_handler& h) {
  for (auto& s : subs_) s->set_moved_handler(h);
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
