#include "detail/core.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>

#include "detail/closed_completion.hpp"
#include "detail/config_check.hpp"
#include "detail/core_attempt.hpp"

namespace rlock::detail {

std::string make_uuid(int version) {
  std::random_device rd;
  std::uniform_int_distribution<int> byte(0, 255);
  unsigned char b[16];
  for (auto& x : b) x = static_cast<unsigned char>(byte(rd));
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | ((version & 0x0f) << 4));
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  char out[37];
  std::snprintf(out, sizeof out,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return out;
}

// ---- core ----

namespace {

// The client whose I/O thread this is, set as the thread starts; null on every other thread.
// Thread-local rather than a look through the client's std::thread objects: those are cleared
// by shutdown() while a blocking call on another thread may be asking (a data race that
// ThreadSanitizer found), and a joined thread's id can be given to a new thread.
thread_local const core* io_thread_of = nullptr;

}  // namespace

core::core(config cfg, const std::vector<const script*>& scripts)
    : cfg_(std::move(cfg)),
      address_(parse_url(cfg_.address)),
      // Version 8 tells queued waiters that this client hands the lock over through the queue
      // (lock_acquire_queued.lua); Redisson's ids, like rlock's without the queue, are version 4.
      id_(make_uuid(cfg_.lock_queue ? 8 : 4)),
      fork_epoch_(fork_epoch()),
      work_(asio::make_work_guard(io_)),
      events_(std::make_shared<event_sink>(io_, cfg_.on_event)),
      spent_(std::make_unique<spent_keys>(*this)) {
  validate_config(cfg_);
  // Made here, in the process that makes the client: a fork's child finds it closed, and a
  // completion for the client's executor goes to the child's fallback context instead.
  asio::use_service<io_gate>(io_);
  const std::vector<server_address> seeds = cluster_seeds(cfg_);
  connection_options opts = !seeds.empty()             ? server_options(cfg_, seeds.front())
                            : cfg_.master_name.empty() ? server_options(cfg_, address_)
                                                       : sentinel_options(cfg_);
  opts.client_name = cfg_.client_name;
  opts.counters = counters_;
  opts.count_replicas = cfg_.replica_sync == config::all_connected_replicas;
  if (cfg_.credentials_resolver) {
    // A blocking call of this client from the resolver is refused as from an I/O thread: it
    // could wait for a connect that waits for the resolver.
    resolver_ = std::make_shared<resolver_thread>([this] { io_thread_of = this; });
    opts.resolver_runner = resolver_;
  }
  opts.tls = cfg_.tls;
  const auto tls = [](const server_address& a) { return a.kind == server_address::scheme::rediss; };
  if (tls(opts.address) || std::ranges::any_of(opts.sentinels, tls)) {
    opts.tls_context = make_tls_context(cfg_.tls);
  }
  opts.connect_timeout = cfg_.connect_timeout;
  opts.reconnect_delay_min = cfg_.reconnect_delay_min;
  opts.reconnect_delay_max = cfg_.reconnect_delay_max;
  opts.ping_interval = cfg_.ping_connection_interval;
  opts.ping_timeout = cfg_.timeout;
  for (const script* s : scripts) {
    opts.scripts.emplace_back(s->text());
    loaded_sha1s_.emplace(s->sha1());
  }
  if (!seeds.empty()) {
    // Cluster mode may publish sharded: each script that publishes has a twin that SPUBLISHes
    // instead (the same keys, arguments and replies), loaded beside it.
    static constexpr std::string_view classic = "redis.call('publish', ";
    for (const script* s : scripts) {
      std::string text(s->text());
      if (text.find(classic) == std::string::npos) continue;
      for (auto at = text.find(classic); at != std::string::npos; at = text.find(classic, at)) {
        text.replace(at, classic.size(), "redis.call('spublish', ");
      }
      opts.scripts.push_back(text);
      auto twin = std::make_unique<script>(std::move(text));
      loaded_sha1s_.emplace(twin->sha1());
      sharded_twins_.emplace(s, std::move(twin));
    }
    cluster_ = std::make_shared<cluster_router>(
        io_,
        cluster_router::options{
            .node = opts,
            .seeds = seeds,
            .pool_size = cfg_.connection_pool_size,
            .sub_pool_size = cfg_.subscription_connection_pool_size,
            .synced_pool_size = cfg_.replica_sync != 0 ? replica_sync_connections : 0,
            .scan_interval = cfg_.cluster_scan_interval,
            .timeout = cfg_.timeout,
            .on_change =
                [this](std::size_t masters) {
                  wake_sleepers();
                  events_->emit({.kind = client_event_kind::topology_changed,
                                 .server = {},
                                 .object = {},
                                 .error = {},
                                 .detail = std::to_string(masters) +
                                           (masters == 1 ? " master serves" : " masters serve") +
                                           " the slots"});
                },
            .on_moved =
                [this](const std::string& refusal, channel_kind kind, const std::string& channel,
                       std::shared_ptr<pubsub_listener> listener,
                       std::function<void(std::error_code, subscription)> finish) {
                  resubscribe_moved(refusal, kind, channel, std::move(listener), std::move(finish));
                },
            .sharded = cfg_.cluster_sharded_subscription,
            .events = events_});
    cluster_->start();
  } else {
    node_ = std::make_unique<node>(io_, opts, cfg_.connection_pool_size,
                                   cfg_.subscription_connection_pool_size,
                                   cfg_.replica_sync != 0 ? replica_sync_connections : 0, events_);
    node_->start();
  }
  if (!opts.sentinels.empty()) {
    sentinel_watch_ = std::make_unique<sentinel_watch>(
        io_, opts,
        [n = node_.get(), name = opts.master_name](const std::string& host, std::uint16_t port) {
          n->master_switched(host, port,
                             "a Sentinel announced that master '" + name + "' is now at " + host +
                                 ":" + std::to_string(port) + ": moving there");
        });
    sentinel_watch_->start();
  }
  for (int i = 0; i < cfg_.io_threads; ++i) {
    threads_.emplace_back([this] {
      io_thread_of = this;
      io_.run();
    });
  }
}

core::~core() {
  shutdown();
}

std::string core::map_name(std::string_view name) const {
  return cfg_.name_mapper ? cfg_.name_mapper(name) : std::string(name);
}

bool core::on_io_thread() const {
  return io_thread_of == this;
}

std::string core::forked_detail() const {
  return "this client was made by a process of which this one is a fork() child: its "
         "connections, threads and lock owner ids are that process's; make a client of this "
         "process's own";
}

void core::check_blocking_allowed() const {
  if (forked()) throw error(make_error_code(errc::invalid_argument), forked_detail());
  if (on_io_thread()) {
    throw error(make_error_code(errc::invalid_argument),
                "blocking call from one of the client's I/O threads would deadlock; use the "
                "async_ form");
  }
}

node& core::node_for(std::string_view key) {
  return cluster_ ? cluster_->node_for(key) : *node_;
}

std::size_t core::channels() const {
  if (forked() || closed_.load()) return 0;
  return cluster_ ? cluster_->channels() : node_->channels();
}

connection_status core::status() const {
  if (forked()) {
    return {.connected = false,
            .error = make_error_code(errc::invalid_argument),
            .detail = forked_detail()};
  }
  if (closed_.load()) {
    return {.connected = false,
            .error = make_error_code(errc::shutdown),
            .detail = "the client was shut down"};
  }
  return cluster_ ? cluster_->status() : node_->status();
}

void core::shutdown() {
  // A fork's child has none of the threads to join, and closing the sockets would deregister
  // them from the epoll set it shares with the parent: nothing is touched.
  if (forked()) return;
  // config::on_event: the events so far are delivered (briefly), nothing after them.
  events_->close(on_io_thread() ? std::chrono::milliseconds(0) : events_drain_wait);
  if (closed_.load(std::memory_order_acquire)) return;
  // Spent request keys are deleted while the connections still serve: briefly, so that a client
  // closing while its server is unreachable does not wait long for it.
  spent_->close(clock::now() + std::min<clock::duration>(cfg_.timeout, spent_close_wait));
  if (closed_.exchange(true)) return;
  // No resolver answer reaches a connection from now on (a resolver still running is left to
  // return on its own thread).
  if (resolver_) resolver_->stop();
  // First: once it has returned, no announcement reaches node_'s connections.
  if (sentinel_watch_) sentinel_watch_->close();
  if (cluster_) {
    cluster_->close();
  } else {
    node_->close();
  }
  std::set<std::shared_ptr<attempt>> sleeping;
  {
    // An attempt's timer is created and armed under mu_ (on_result), so every timer in the set
    // is armed and cancelling it here cannot race with its creation.
    std::lock_guard lk(mu_);
    sleeping.swap(waiting_);
    for (const auto& a : sleeping) a->timer->cancel();
  }
  work_.reset();
  if (on_io_thread()) {
    // Invalid use (documented): shutting down from a completion handler. Do not join ourselves;
    // stop the loop and let the threads end on their own. Completions from now on go to the
    // fallback context; any already queued are lost with the loop.
    io_.stop();
    asio::use_service<io_gate>(io_).close();
    for (auto& t : threads_) t.detach();
    threads_.clear();
    return;
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
  asio::use_service<io_gate>(io_).close();
  // The threads ended when the io_context ran out of work; a handler posted from another thread
  // in the moment before it marked itself stopped (a completion of an operation started while
  // the client shut down) is in its queue, and nothing would run it. What the queue holds runs
  // now, on a thread of its own (not the caller's, which may hold locks that those handlers
  // take; not the fallback context's, where it would queue behind the refusals that callers
  // racing this shutdown keep posting there), and this call waits for it: this object and its
  // io_context must outlive that run, and nothing of the client may still run once shutdown()
  // has returned (the caller may then destroy it, or end the process).
  std::thread([this] {
    io_.restart();
    for (int i = 0; i < max_drained_handlers && io_.poll_one() > 0; ++i) {
    }
  }).join();
}

void core::resubscribe_moved(const std::string& refusal, channel_kind kind,
                             const std::string& channel, std::shared_ptr<pubsub_listener> listener,
                             std::function<void(std::error_code, subscription)> finish) {
  // The table learns where the slot went, then the listener is subscribed there, and told to
  // look again at what it may have missed while it was moving.
  if (auto rd = parse_redirect(refusal, ""); rd && !rd->to.host.empty()) {
    cluster_->moved(*rd);
  } else {
    cluster_->scan_soon();
  }
  pubsub_listener forward = [listener](const pubsub_event& ev) { (*listener)(ev); };
  subscribe(kind, channel, channel, std::move(forward), clock::now() + cfg_.subscription_timeout,
            [listener = std::move(listener), channel, finish = std::move(finish)](
                std::error_code ec, subscription there) {
              finish(ec, std::move(there));
              if (!ec) {
                pubsub_event ev;
                ev.what = pubsub_event::kind::resubscribed;
                ev.channel = channel;
                (*listener)(ev);
              }
            });
}

std::string core::subscription_timeout_detail(std::string_view subject, std::string_view channel,
                                              std::string_view route_key) {
  std::string why = "the server did not confirm the subscription to " + std::string(subject) +
                    " within subscription_timeout (" +
                    std::to_string(cfg_.subscription_timeout.count()) + " ms)";
  if (forked() || closed_.load(std::memory_order_acquire)) return why;
  // The subscriber that subscribe() picks for it.
  const bool sharded = cluster_ && cluster_->sharded();
  const std::string trouble = node_for(sharded ? channel : route_key)
                                  .subscriber_for(route_key.empty() ? channel : route_key)
                                  .trouble();
  if (!trouble.empty()) why += "; " + trouble;
  return why;
}

void core::subscribe(channel_kind kind, std::string channel, std::string_view route_key,
                     pubsub_listener listener, clock::time_point deadline,
                     std::function<void(std::error_code, subscription)> done) {
  if (forked()) {
    complete_closed([done = std::move(done)] {
      done(make_error_code(errc::invalid_argument), subscription{});
    });
    return;
  }
  if (cluster_ && !cluster_->settled()) {
    if (closed_.load(std::memory_order_acquire)) {
      done(make_error_code(errc::shutdown), subscription{});
      return;
    }
    if (clock::now() + settle_poll < deadline) {
      // The first scan has not told the pub/sub kind yet: subscribed once it has.
      auto t = std::make_shared<asio::steady_timer>(io_, settle_poll);
      t->async_wait([self = shared_from_this(), t, kind, channel = std::move(channel),
                     key = std::string(route_key), listener = std::move(listener), deadline,
                     done = std::move(done)](std::error_code) mutable {
        self->subscribe(kind, std::move(channel), key, std::move(listener), deadline,
                        std::move(done));
      });
      return;
    }
  }
  // Sharded: on the master of the channel's slot (the object's, unless a latch's name has a
  // hash tag of its own: its channel wraps the name in braces again).
  const bool sharded = cluster_ && cluster_->sharded();
  if (sharded) kind = channel_kind::sharded;
  const std::string_view by = sharded ? std::string_view(channel) : route_key;
  // The subscriber is chosen by the key, so that all channels of one object share a
  // connection and their messages arrive in the order they were published.
  auto& sub = node_for(by).subscriber_for(route_key.empty() ? channel : route_key);
  std::weak_ptr<subscriber> weak = sub.weak_from_this();
  sub.async_subscribe(
      kind, std::move(channel), std::move(listener), deadline,
      [weak, done = std::move(done)](std::error_code ec, channel_table::listener_id id) {
        if (ec) {
          done(ec, subscription{});
        } else {
          done({}, subscription(weak, id));
        }
      });
}

}  // namespace rlock::detail
