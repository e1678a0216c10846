#include "detail/cluster_router.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include "detail/resp.hpp"

namespace rlock::detail {

struct cluster_router::scan_state {
  struct candidate {
    node* n = nullptr;    // a known master, asked on its own connection
    server_address seed;  // otherwise a seed, on a connection of the scan's own
    std::string host;     // the host asked (for entries that name none)
    std::string where;    // for messages
  };
  std::vector<candidate> candidates;
  std::size_t next = 0;
  std::vector<std::string> failures;  // "where: why", one per candidate that did not tell
  std::error_code last_error;
};

cluster_router::cluster_router(asio::io_context& io, options o)
    : io_(io), opts_(std::move(o)), slots_(cluster_slot_count, nullptr), timer_(io) {
  opts_.node.movable = true;
  if (opts_.sharded != sharded_subscription_mode::automatic) {
    sharded_known_ = true;
    sharded_ = opts_.sharded == sharded_subscription_mode::on;
  }
}

void cluster_router::start() {
  {
    std::unique_lock lk(mu_);
    const server_address& first = opts_.seeds.front();
    fallback_ = &node_at_locked({first.host, first.port});
  }
  std::lock_guard lk(scan_mu_);
  scanning_ = true;
  asio::post(io_, [self = shared_from_this()] { self->run_scan(); });
}

void cluster_router::close() {
  {
    std::lock_guard lk(scan_mu_);
    if (closed_) return;
    closed_ = true;
    timer_.cancel();
  }
  std::unique_lock lk(mu_);
  for (auto& [name, n] : nodes_) n->close();
}

node& cluster_router::node_for(std::string_view key) {
  const std::uint16_t slot = key_slot(key);
  std::shared_lock lk(mu_);
  node* n = slots_[slot];
  return n != nullptr ? *n : *fallback_;
}

node& cluster_router::node_at(const cluster_endpoint& e) {
  {
    std::shared_lock lk(mu_);
    if (auto it = nodes_.find(e.name()); it != nodes_.end()) return *it->second;
  }
  std::unique_lock lk(mu_);
  return node_at_locked(e);
}

std::string cluster_router::host_of(const node& n) const {
  std::shared_lock lk(mu_);
  auto it = where_.find(&n);
  return it != where_.end() ? it->second.host : std::string();
}

node& cluster_router::node_at_locked(const cluster_endpoint& e) {
  if (auto it = nodes_.find(e.name()); it != nodes_.end()) return *it->second;
  return start_node_locked(e);
}

node& cluster_router::start_node_locked(const cluster_endpoint& e) {
  connection_options o = opts_.node;
  o.address.host = e.host;
  o.address.port = e.port;
  auto n = std::make_unique<node>(io_, o, opts_.pool_size, opts_.sub_pool_size,
                                  opts_.synced_pool_size, opts_.events);
  if (opts_.on_moved) n->set_moved_handler(opts_.on_moved);
  node& out = *n;
  where_[&out] = e;
  nodes_.emplace(e.name(), std::move(n));
  {
    std::lock_guard lk(scan_mu_);
    if (closed_) {
      out.close();
      return out;
    }
  }
  out.start();
  return out;
}

void cluster_router::moved(const redirect& r) {
  {
    std::unique_lock lk(mu_);
    slots_[r.slot] = &node_at_locked(r.to);
  }
  scan_soon();
}

void cluster_router::scan_soon() {
  std::lock_guard lk(scan_mu_);
  if (closed_) return;
  if (scanning_) {
    again_ = true;
    return;
  }
  scanning_ = true;
  timer_.cancel();
  asio::post(io_, [self = shared_from_this()] { self->run_scan(); });
}

void cluster_router::arm_locked(std::chrono::milliseconds after) {
  timer_.expires_after(after);
  timer_.async_wait([self = shared_from_this()](std::error_code ec) {
    if (ec) return;  // cancelled: a scan was asked for sooner, or closed
    {
      std::lock_guard lk(self->scan_mu_);
      if (self->closed_ || self->scanning_) return;
      self->scanning_ = true;
    }
    self->run_scan();
  });
}

void cluster_router::run_scan() {
  auto s = std::make_shared<scan_state>();
  {
    std::shared_lock lk(mu_);
    std::set<const node*> seen;
    for (node* n : slots_) {
      if (n != nullptr && seen.insert(n).second) {
        const cluster_endpoint& e = where_.at(n);
        s->candidates.push_back({.n = n, .seed = {}, .host = e.host, .where = e.name()});
      }
    }
  }
  for (const server_address& seed : opts_.seeds) {
    s->candidates.push_back(
        {.n = nullptr, .seed = seed, .host = seed.host, .where = seed.to_string()});
  }
  ask_next(s);
}

void cluster_router::ask_next(const std::shared_ptr<scan_state>& s) {
  {
    std::lock_guard lk(scan_mu_);
    if (closed_) return;
  }
  if (s->next >= s->candidates.size()) {
    std::string detail = "no cluster node told its slots";
    for (std::size_t i = 0; i < s->failures.size(); ++i) {
      detail += (i == 0 ? " (" : "; ") + s->failures[i];
    }
    if (!s->failures.empty()) detail += ")";
    scan_finished(false, s->last_error ? s->last_error : make_error_code(errc::not_connected),
                  std::move(detail));
    settle();
    return;
  }
  const scan_state::candidate& c = s->candidates[s->next++];
  request r;
  static constexpr std::string_view cmd[] = {"CLUSTER", "SLOTS"};
  encode_command(cmd, r.payload);
  r.deadline = clock::now() + opts_.timeout;
  if (c.n != nullptr) {
    r.done = [self = shared_from_this(), s, host = c.host](exec_result res) {
      self->on_answer(s, host, std::move(res));
    };
    c.n->pick().submit(std::move(r));
    return;
  }
  connection_options o = opts_.node;
  o.address = c.seed;
  o.scripts.clear();
  o.ping_interval = std::chrono::milliseconds(0);
  o.movable = false;
  o.counters = nullptr;  // a scan's own connection to a seed, not one of the client's links
  auto conn = std::make_shared<connection>(io_, o, connection::handlers{});
  r.done = [self = shared_from_this(), s, host = c.host, conn](exec_result res) {
    asio::post(self->io_, [conn] { conn->close(); });
    self->on_answer(s, host, std::move(res));
  };
  conn->start();
  conn->submit(std::move(r));
}

void cluster_router::on_answer(const std::shared_ptr<scan_state>& s, const std::string& host,
                               exec_result res) {
  {
    std::lock_guard lk(scan_mu_);
    if (closed_) return;  // the client is shutting down: no map, no on_change
  }
  const std::string& where = s->candidates[s->next - 1].where;
  if (res.ec) {
    s->last_error = res.ec;
    s->failures.push_back(where + ": " + (res.detail.empty() ? res.ec.message() : res.detail));
    ask_next(s);
    return;
  }
  std::string why;
  auto map = parse_cluster_slots(res.value, host, &why);
  if (!map) {
    s->last_error = make_error_code(errc::protocol_error);
    s->failures.push_back(where + ": " + why);
    ask_next(s);
    return;
  }
  const bool changed = apply(*map);
  bool known = false;
  {
    std::lock_guard lk(scan_mu_);
    known = sharded_known_;
  }
  if (!known) {
    probe_sharded(changed);
    return;
  }
  scan_finished(true, {}, {});
  const bool first = !settled();
  settle();
  if (changed || first) report_change();
}

void cluster_router::probe_sharded(bool changed) {
  node* n = nullptr;
  {
    std::shared_lock lk(mu_);
    for (node* m : slots_) {
      if (m != nullptr) {
        n = m;
        break;
      }
    }
  }
  request r;
  static constexpr std::string_view cmd[] = {"PUBSUB", "SHARDNUMSUB"};
  encode_command(cmd, r.payload);
  r.deadline = clock::now() + opts_.timeout;
  r.done = [self = shared_from_this(), changed](exec_result res) {
    {
      std::lock_guard lk(self->scan_mu_);
      if (self->closed_) return;
      // An answer decides: a list (Redis 7 and later) or an error reply (an older server, a
      // renamed command). A transport failure decides nothing: the next scan asks again.
      if (!res.ec || !is_transient(res.ec)) {
        self->sharded_known_ = true;
        self->sharded_.store(!res.ec, std::memory_order_release);
      }
    }
    self->scan_finished(true, {}, {});
    const bool first = !self->settled();
    self->settle();
    if (changed || first) self->report_change();
  };
  n->pick().submit(std::move(r));
}

void cluster_router::settle() {
  settled_.store(true, std::memory_order_release);
}

void cluster_router::report_change() {
  if (!opts_.on_change) return;
  std::size_t masters = 0;
  {
    std::shared_lock lk(mu_);
    std::set<const node*> seen(slots_.begin(), slots_.end());
    seen.erase(nullptr);
    masters = seen.size();
  }
  opts_.on_change(masters);
}

bool cluster_router::apply(const std::vector<slot_range>& map) {
  std::unique_lock lk(mu_);
  std::set<std::string> masters;
  for (const slot_range& r : map) masters.insert(r.master.name());
  std::vector<node*> next(cluster_slot_count, nullptr);
  std::set<node*> moved_here;
  for (const slot_range& r : map) {
    const std::string name = r.master.name();
    node* n = nullptr;
    if (auto it = nodes_.find(name); it != nodes_.end()) {
      n = it->second.get();
    } else {
      // A master the client has no node for. If the range's old master is gone from the map
      // (a failover promoted this one), its node moves here with its subscriptions.
      node* old = slots_[r.first];
      if (old != nullptr && masters.count(where_.at(old).name()) == 0 &&
          moved_here.insert(old).second) {
        auto node_it = nodes_.find(where_.at(old).name());
        auto owned = std::move(node_it->second);
        nodes_.erase(node_it);
        old->master_switched(r.master.host, r.master.port,
                             "the cluster moved slots " + std::to_string(r.first) + "-" +
                                 std::to_string(r.last) + " from " + where_.at(old).name() +
                                 " to " + name);
        where_[old] = r.master;
        nodes_.emplace(name, std::move(owned));
        n = old;
      } else {
        n = &start_node_locked(r.master);
      }
    }
    std::fill(next.begin() + r.first, next.begin() + r.last + 1, n);
  }
  // A node moved to the promoted replica keeps its place in the table, but serves elsewhere.
  const bool changed = next != slots_ || !moved_here.empty();
  slots_ = std::move(next);
  mapped_ = true;
  return changed;
}

void cluster_router::scan_finished(bool ok, std::error_code ec, std::string detail) {
  std::lock_guard lk(scan_mu_);
  scanning_ = false;
  if (ok) {
    scan_error_.clear();
    scan_detail_.clear();
  } else {
    scan_error_ = ec;
    scan_detail_ = std::move(detail);
  }
  if (closed_) return;
  using namespace std::chrono_literals;
  // Asked for again while this scan ran (a MOVED, a failed connection): soon, but not in a
  // loop; a failed scan is tried again within a second, whatever the interval.
  const bool again = std::exchange(again_, false);
  const auto after = again ? 20ms
                     : ok  ? opts_.scan_interval
                           : std::min(opts_.scan_interval, 1000ms);
  arm_locked(after);
}

std::size_t cluster_router::channels() const {
  std::shared_lock lk(mu_);
  std::size_t n = 0;
  for (const auto& [name, nd] : nodes_) n += nd->channels();
  return n;
}

connection_status cluster_router::status() const {
  connection_status out;
  {
    std::shared_lock lk(mu_);
    if (mapped_) {
      std::set<const node*> seen;
      std::size_t unserved = 0;
      for (const node* n : slots_) {
        if (n == nullptr) {
          ++unserved;
          continue;
        }
        if (!seen.insert(n).second) continue;
        connection_status st = n->status();
        if (!st.connected) {
          const std::string name = where_.at(n).name();
          if (!st.error) st.error = make_error_code(errc::not_connected);
          st.detail = "cluster node " + name + (st.detail.empty() ? "" : ": " + st.detail);
          return st;
        }
      }
      if (unserved > 0) {
        return {.connected = false,
                .error = make_error_code(errc::server_busy),
                .detail = std::to_string(unserved) + " of 16384 slots have no master"};
      }
      return {.connected = true, .error = {}, .detail = {}};
    }
  }
  std::lock_guard lk(scan_mu_);
  if (scan_error_) return {.connected = false, .error = scan_error_, .detail = scan_detail_};
  return out;  // the first scan is under way
}

}  // namespace rlock::detail
