#include "detail/core.hpp"

#include <algorithm>
#include <cstdio>
#include <future>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>

#include "detail/backoff.hpp"
#include "detail/closed_completion.hpp"
#include "detail/resp.hpp"
#include "detail/retry_fsm.hpp"

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

struct core::attempt {
  std::string payload;
  const script* via_script = nullptr;  // set for EVALSHA: the text for NOSCRIPT recovery
  bool from_script = false;
  bool noscript_retried = false;
  bool written_once = false;         // some attempt may have reached the server
  bool completes_on_caller = false;  // see exec_options
  bool close_unknown = false;        // see exec_options
  std::vector<server_client> fence;  // see exec_options
  // Connections on which an attempt was written whose outcome is unknown (exec_result).
  std::vector<server_client> unknown_on;
  // CLIENT KILLs of `fence` (and of `unknown_on` with close_unknown) followed by `payload`:
  // what an attempt that closes connections first sends.
  std::string fenced_payload;
  clock::time_point last_sent{};
  std::chrono::milliseconds timeout{0};
  std::string route_key;
  // Cluster mode: redirections followed so far, the node the last attempt went to, and the
  // node an ASK reply named (this attempt only: sent there after ASKING).
  int redirects = 0;
  int tryagains = 0;
  // Its retry delay was cut short by a new slot map (wake_sleepers); under core::mu_.
  bool woken = false;
  // Cluster mode: the script's sharded twin was considered (on the first send after settling).
  bool twin_checked = false;
  node* sent_to = nullptr;
  std::optional<cluster_endpoint> ask_target;
  retry_fsm fsm;
  exec_callback done;
  std::unique_ptr<asio::steady_timer> timer;
  // When the caller handed the command over: the first attempt's timeout counts from here, so
  // that encoding a large command is inside the deadline too.
  std::optional<clock::time_point> started;

  attempt(int attempts, bool idempotent, clock::time_point deadline)
      : fsm(attempts, idempotent, deadline), started(clock::now()) {}
};

namespace {

// The client whose I/O thread this is, set as the thread starts; null on every other thread.
// Thread-local rather than a look through the client's std::thread objects: those are cleared
// by shutdown() while a blocking call on another thread may be asking (a data race that
// ThreadSanitizer found), and a joined thread's id can be given to a new thread.
thread_local const core* io_thread_of = nullptr;

void validate(const config& c) {
  auto bad = [](const std::string& what) {
    throw error(make_error_code(errc::invalid_argument), "invalid config: " + what);
  };
  // time_point + duration overflows steady_clock's nanoseconds beyond about 292 years.
  constexpr std::chrono::milliseconds longest = std::chrono::hours(24 * 365 * 100);
  const std::pair<const char*, std::chrono::milliseconds> durations[] = {
      {"timeout", c.timeout},
      {"connect_timeout", c.connect_timeout},
      {"subscription_timeout", c.subscription_timeout},
      {"retry_delay_base", c.retry_delay_base},
      {"retry_delay_max", c.retry_delay_max},
      {"ping_connection_interval", c.ping_connection_interval},
      {"reconnect_delay_min", c.reconnect_delay_min},
      {"reconnect_delay_max", c.reconnect_delay_max},
      {"lock_watchdog_timeout", c.lock_watchdog_timeout},
      {"fair_lock_wait_timeout", c.fair_lock_wait_timeout},
      {"lock_queue_liveness", c.lock_queue_liveness},
      {"cluster_scan_interval", c.cluster_scan_interval}};
  for (const auto& [name, d] : durations) {
    if (d > longest) bad(std::string(name) + " must be at most 100 years");
  }
  if (c.timeout.count() <= 0) bad("timeout must be positive");
  if (c.connect_timeout.count() <= 0) bad("connect_timeout must be positive");
  if (c.subscription_timeout.count() <= 0) bad("subscription_timeout must be positive");
  if (c.retry_attempts < 1 || c.retry_attempts > 10000) {
    bad("retry_attempts must be from 1 to 10000");
  }
  if (c.retry_delay_base.count() < 0 || c.retry_delay_max < c.retry_delay_base) {
    bad("retry delays must satisfy 0 <= retry_delay_base <= retry_delay_max");
  }
  if (c.io_threads < 1 || c.io_threads > 256) bad("io_threads must be from 1 to 256");
  if (c.connection_pool_size < 1 || c.connection_pool_size > 1024) {
    bad("connection_pool_size must be from 1 to 1024");
  }
  if (c.subscription_connection_pool_size < 1 || c.subscription_connection_pool_size > 1024) {
    bad("subscription_connection_pool_size must be from 1 to 1024");
  }
  if (c.lock_watchdog_timeout.count() < 3) bad("lock_watchdog_timeout must be at least 3 ms");
  if (c.fair_lock_wait_timeout.count() <= 0) bad("fair_lock_wait_timeout must be positive");
  if (c.lock_watchdog_batch_size < 1) bad("lock_watchdog_batch_size must be at least 1");
  if (c.lock_queue_liveness.count() < 30) bad("lock_queue_liveness must be at least 30 ms");
  if (c.database < 0) bad("database must not be negative");
  if (!c.master_name.empty() && c.sentinel_addresses.empty()) {
    bad("master_name is set (Sentinel mode) but sentinel_addresses is empty");
  }
  if (c.master_name.empty() && !c.sentinel_addresses.empty()) {
    bad("sentinel_addresses is set but master_name is empty (the name the Sentinels monitor)");
  }
  if (!c.cluster_addresses.empty()) {
    if (!c.master_name.empty() || !c.sentinel_addresses.empty()) {
      bad("cluster_addresses and Sentinel mode (master_name, sentinel_addresses) exclude each "
          "other");
    }
    if (c.database != 0) bad("a Redis Cluster has only database 0");
    if (c.cluster_scan_interval.count() < 10) bad("cluster_scan_interval must be at least 10 ms");
  }
  if (c.blocking_spin.count() < 0 || c.blocking_spin > std::chrono::seconds(1)) {
    bad("blocking_spin must be from 0 to 1 s");
  }
}

/// A single server's address, credentials and database.
connection_options server_options(const config& c, const server_address& address) {
  connection_options opts;
  opts.address = address;
  if (opts.address.database == 0) opts.address.database = c.database;
  opts.username = address.username ? address.username : c.username;
  opts.password = address.password ? address.password : c.password;
  return opts;
}

/// Sentinel mode's: the Sentinels, the master's name, credentials and database. The master's
/// scheme is set by each answer (the answering Sentinel's); the first Sentinel's until then.
connection_options sentinel_options(const config& c) {
  connection_options opts;
  for (const std::string& url : c.sentinel_addresses) {
    server_address a = parse_url(url);
    if (a.kind == server_address::scheme::unix_socket) {
      throw error(make_error_code(errc::invalid_argument),
                  "invalid config: sentinel_addresses must be redis:// or rediss:// URLs, not " +
                      a.to_string());
    }
    if (!a.username) a.username = c.sentinel_username;
    if (!a.password) a.password = c.sentinel_password;
    opts.sentinels.push_back(std::move(a));
  }
  opts.master_name = c.master_name;
  opts.address.kind = opts.sentinels.front().kind;
  opts.address.host = opts.sentinels.front().host;  // until the first answer
  opts.address.database = c.database;
  opts.username = c.username;
  opts.password = c.password;
  return opts;
}

/// Cluster mode's seeds: redis:// or rediss:// URLs of one scheme, with the same credentials
/// (which then override the config's for every node).
std::vector<server_address> cluster_seeds(const config& c) {
  std::vector<server_address> out;
  for (const std::string& url : c.cluster_addresses) {
    server_address a = parse_url(url);
    const auto bad = [&](const std::string& why) {
      throw error(make_error_code(errc::invalid_argument),
                  "invalid config: cluster_addresses: " + why);
    };
    if (a.kind == server_address::scheme::unix_socket) {
      bad("must be redis:// or rediss:// URLs, not " + a.to_string());
    }
    if (a.database != 0) bad(a.to_string() + ": a Redis Cluster has only database 0");
    if (!out.empty() && (a.kind != out.front().kind || a.username != out.front().username ||
                         a.password != out.front().password)) {
      bad("every URL must have the same scheme and credentials (" + out.front().to_string() + ", " +
          a.to_string() + ")");
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

core::core(config cfg, const std::vector<const script*>& scripts)
    : cfg_(std::move(cfg)),
      address_(parse_url(cfg_.address)),
      // Version 8 tells queued waiters that this client hands the lock over through the queue
      // (lock_acquire_queued.lua); Redisson's ids, like rlock's without the queue, are version 4.
      id_(make_uuid(cfg_.lock_queue ? 8 : 4)),
      work_(asio::make_work_guard(io_)) {
  validate(cfg_);
  const std::vector<server_address> seeds = cluster_seeds(cfg_);
  connection_options opts = !seeds.empty()             ? server_options(cfg_, seeds.front())
                            : cfg_.master_name.empty() ? server_options(cfg_, address_)
                                                       : sentinel_options(cfg_);
  opts.client_name = cfg_.client_name;
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
  for (const script* s : scripts) opts.scripts.emplace_back(s->text());
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
      sharded_twins_.emplace(s, std::make_unique<script>(std::move(text)));
    }
    cluster_ = std::make_shared<cluster_router>(
        io_, cluster_router::options{
                 .node = opts,
                 .seeds = seeds,
                 .pool_size = cfg_.connection_pool_size,
                 .sub_pool_size = cfg_.subscription_connection_pool_size,
                 .scan_interval = cfg_.cluster_scan_interval,
                 .timeout = cfg_.timeout,
                 .on_change = [this] { wake_sleepers(); },
                 .on_moved =
                     [this](const std::string& refusal, channel_kind kind,
                            const std::string& channel, std::shared_ptr<pubsub_listener> listener,
                            std::function<void(std::error_code, subscription)> finish) {
                       resubscribe_moved(refusal, kind, channel, std::move(listener),
                                         std::move(finish));
                     },
                 .sharded = cfg_.cluster_sharded_subscription});
    cluster_->start();
  } else {
    node_ = std::make_unique<node>(io_, opts, cfg_.connection_pool_size,
                                   cfg_.subscription_connection_pool_size);
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

void core::check_blocking_allowed() const {
  if (on_io_thread()) {
    throw error(make_error_code(errc::invalid_argument),
                "blocking call from one of the client's I/O threads would deadlock; use the "
                "async_ form");
  }
}

node& core::node_for(std::string_view key) {
  return cluster_ ? cluster_->node_for(key) : *node_;
}

connection_status core::status() const {
  if (closed_.load()) {
    return {.connected = false,
            .error = make_error_code(errc::shutdown),
            .detail = "the client was shut down"};
  }
  return cluster_ ? cluster_->status() : node_->status();
}

void core::shutdown() {
  if (closed_.exchange(true)) return;
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
    // system executor; any already queued are lost with the loop.
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
  // now, on the system executor like every completion of a closed client, and this call waits
  // for it: this object and its io_context must outlive that run, and nothing of the client may
  // still run once shutdown() has returned (the caller may then destroy it, or end the process).
  auto drained = std::make_shared<std::promise<void>>();
  auto done = drained->get_future();
  asio::post(asio::system_executor(), [this, drained] {
    io_.restart();
    for (int i = 0; i < max_drained_handlers && io_.poll_one() > 0; ++i) {
    }
    drained->set_value();
  });
  done.wait();
}

std::shared_ptr<core::attempt> core::new_attempt(const exec_options& opts, exec_callback cb) {
  auto a =
      std::make_shared<attempt>(opts.max_attempts > 0 ? opts.max_attempts : cfg_.retry_attempts,
                                opts.idempotent, opts.deadline);
  a->completes_on_caller = opts.completes_on_caller;
  a->close_unknown = opts.close_unknown;
  a->fence = opts.fence;
  a->timeout = opts.timeout.count() > 0 ? opts.timeout : cfg_.timeout;
  a->done = std::move(cb);
  return a;
}

void core::exec(std::span<const std::string_view> args, const exec_options& opts,
                exec_callback cb) {
  auto a = new_attempt(opts, std::move(cb));
  encode_command(args, a->payload);
  a->route_key = std::string(opts.route_key);
  // Cluster mode, a raw command: most commands name their key first. A wrong guess costs one
  // MOVED, which is followed.
  if (cluster_ && a->route_key.empty() && args.size() > 1) a->route_key = std::string(args[1]);
  send(a);
}

void core::eval(const script& s, std::span<const std::string_view> keys,
                std::span<const std::string_view> args, const exec_options& opts,
                exec_callback cb) {
  auto a = new_attempt(opts, std::move(cb));
  const std::string numkeys = std::to_string(keys.size());
  std::vector<std::string_view> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.push_back("EVALSHA");
  argv.push_back(s.sha1());
  argv.push_back(numkeys);
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  encode_command(argv, a->payload);
  a->via_script = &s;
  a->from_script = true;
  a->route_key = !opts.route_key.empty() ? std::string(opts.route_key)
                 : keys.empty()          ? std::string{}
                                         : std::string(keys.front());
  send(a);
}

// Rewrites an encoded `EVALSHA <sha> numkeys ...` into `EVAL <text> numkeys ...`: the same
// array with its first two elements replaced.
std::string evalsha_to_eval(std::string_view evalsha, const script& s) {
  // "*<n>\r\n" "$7\r\nEVALSHA\r\n" "$40\r\n<sha>\r\n" <rest>
  const auto header_end = evalsha.find("\r\n") + 2;
  constexpr std::string_view cmd = "$7\r\nEVALSHA\r\n";
  const auto sha_start = header_end + cmd.size();
  const auto sha_end = evalsha.find("\r\n", sha_start) + 2;  // after "$40\r\n"
  const auto rest = sha_end + 40 + 2;
  std::string out(evalsha.substr(0, header_end));
  out += "$4\r\nEVAL\r\n$";
  out += std::to_string(s.text().size());
  out += "\r\n";
  out += s.text();
  out += "\r\n";
  out += evalsha.substr(rest);
  return out;
}

void core::send(const std::shared_ptr<attempt>& a) {
  if (closed_.load(std::memory_order_acquire)) {
    exec_result r;
    r.ec = make_error_code(errc::shutdown);
    auto cb = std::move(a->done);
    complete_closed([cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
    return;
  }
  if (cluster_ && !cluster_->settled() && clock::now() + settle_poll < a->fsm.deadline()) {
    // The first scan has not told the pub/sub kind yet (nor where the key lives).
    resend_after(a, settle_poll, exec_result{});
    return;
  }
  if (cluster_ && a->from_script && !a->twin_checked) {
    a->twin_checked = true;
    if (cluster_->sharded()) use_sharded_twin(*a);
  }
  request r;
  a->last_sent = clock::now();
  r.external = &a->payload;  // `a` lives until r.done has run
  const bool kill_first = !a->fence.empty() || (a->close_unknown && !a->unknown_on.empty());
  if (kill_first || a->ask_target) {
    a->fenced_payload.clear();
    if (kill_first) {
      std::vector<server_client> kills = a->fence;
      if (a->close_unknown) add_unique(kills, a->unknown_on);
      // The kills go first in the same write, on the connection this attempt takes: the server
      // closes those connections before it runs this attempt. Their replies are not reported
      // (0 for a connection already gone; an error where the server refuses CLIENT KILL, which
      // leaves the protection of the scripts alone: lock.hpp).
      for (const server_client& c : kills) encode_kill(c, a->fenced_payload);
      r.replies += static_cast<int>(kills.size());
    }
    if (a->ask_target) {
      // ASK: the slot is being migrated there, and the node serves only the command right
      // after an ASKING.
      static constexpr std::string_view asking[] = {"ASKING"};
      encode_command(asking, a->fenced_payload);
      ++r.replies;
    }
    a->fenced_payload += a->payload;
    r.external = &a->fenced_payload;
  }
  r.from_script = a->from_script;
  r.completes_on_caller = a->completes_on_caller;
  const clock::time_point from = a->started.value_or(a->last_sent);
  a->started.reset();
  r.deadline = std::min(from + a->timeout, a->fsm.deadline());
  r.done = [self = shared_from_this(), a](exec_result res) { self->on_result(a, std::move(res)); };
  node& n = !cluster_       ? *node_
            : a->ask_target ? cluster_->node_at(*a->ask_target)
                            : cluster_->node_for(a->route_key);
  a->sent_to = &n;
  n.pick().submit(std::move(r));
}

void core::use_sharded_twin(attempt& a) {
  auto it = sharded_twins_.find(a.via_script);
  if (it == sharded_twins_.end()) return;
  // "*<n>\r\n$7\r\nEVALSHA\r\n$40\r\n<sha>...": the twin's digest in place of the script's.
  constexpr std::string_view head = "$7\r\nEVALSHA\r\n$40\r\n";
  const auto at = a.payload.find(head);
  if (at == std::string::npos) return;
  a.payload.replace(at + head.size(), 40, it->second->sha1());
  a.via_script = it->second.get();
}

bool core::follow_redirect(const std::shared_ptr<attempt>& a, exec_result& res) {
  if (res.ec == errc::cluster_redirect) {
    const std::string asked = a->sent_to != nullptr ? cluster_->host_of(*a->sent_to) : "";
    auto rd = parse_redirect(res.detail, asked);
    if (!rd || a->redirects >= max_redirects || closed_.load(std::memory_order_acquire)) {
      return false;
    }
    // The node did not run the command: send it where the reply says, at once.
    ++a->redirects;
    if (rd->ask) {
      a->ask_target = std::move(rd->to);
    } else {
      cluster_->moved(*rd);
    }
    send(a);
    return true;
  }
  // A node unreachable or gone: the cluster may have failed over. Read the map again soon.
  if (res.ec == errc::connection_refused || res.ec == errc::not_connected ||
      res.ec == errc::connection_lost || res.ec == errc::timeout ||
      res.ec.category() != error_category()) {
    cluster_->scan_soon();
  }
  // TRYAGAIN: a multi-key request in a slot being migrated, whose keys are split between the
  // two nodes for now; nothing ran. The migration usually ends within moments: sent again every
  // tryagain_delay, within the request's deadline, at most max_tryagains times.
  if (res.detail.starts_with("TRYAGAIN ") && a->tryagains < max_tryagains &&
      clock::now() + tryagain_delay < a->fsm.deadline()) {
    ++a->tryagains;
    resend_after(a, tryagain_delay, std::move(res));
    return true;
  }
  return false;
}

void core::on_result(const std::shared_ptr<attempt>& a, exec_result res) {
  res.sent_at = a->last_sent;
  // An ASK is good for one attempt (and its NOSCRIPT resend, below).
  std::optional<cluster_endpoint> asked = std::exchange(a->ask_target, std::nullopt);
  if (res.ec && cluster_ && follow_redirect(a, res)) return;
  if (res.ec && a->from_script && !a->noscript_retried && res.detail.starts_with("NOSCRIPT")) {
    // The server lost the script (SCRIPT FLUSH, restart, failover): nothing ran. Send the text.
    a->noscript_retried = true;
    a->ask_target = std::move(asked);
    a->payload = evalsha_to_eval(a->payload, *a->via_script);
    send(a);
    return;
  }
  retry_fsm::action act;
  if (res.ec && !closed_.load(std::memory_order_acquire)) {
    const equal_jitter policy(cfg_.retry_delay_base, cfg_.retry_delay_max);
    std::chrono::milliseconds delay{};
    {
      std::lock_guard lk(mu_);
      delay = policy.delay(a->fsm.attempts() + 1, rng_);
    }
    act = a->fsm.on_result(res.ec, res.written, clock::now(), delay);
  }
  res.earlier_attempt_may_have_run = a->written_once;
  // A server-side BUSY or LOADING reply proves the command did not run.
  if (res.written && res.ec && res.ec != errc::server_busy) {
    a->written_once = true;
    add_unique(a->unknown_on, std::move(res.unknown_on));
  }
  res.unknown_on = a->unknown_on;
  if (act.what != retry_fsm::action::kind::retry_after) {
    if (res.ec && !res.written && a->written_once) {
      // This attempt certainly did not run, but an earlier one was sent and may have: the
      // request's outcome is unknown, not "not applied", whatever stopped this attempt (a lost
      // connection, or a sticky setup error on reconnecting, such as a rotated password).
      if (res.ec != errc::shutdown) res.ec = make_error_code(errc::connection_lost);
      res.written = true;
      res.detail =
          "an earlier attempt was sent and its outcome is unknown; last attempt: " + res.detail;
    }
    auto cb = std::move(a->done);
    if (cb) cb(std::move(res));
    return;
  }
  resend_after(a, act.delay, std::move(res));
}

void core::resend_after(const std::shared_ptr<attempt>& a, std::chrono::milliseconds delay,
                        exec_result res) {
  std::unique_lock lk(mu_);
  if (closed_) {
    // Completed outside the lock: the callback may reach user code (a handler run inline).
    auto cb = std::move(a->done);
    lk.unlock();
    res.ec = make_error_code(errc::shutdown);
    if (cb) cb(std::move(res));
    return;
  }
  // Armed before it is published in waiting_, under the same lock as shutdown's cancel: a
  // shutdown that finds the attempt cancels its timer, so the client's threads end at once
  // instead of after the retry delay.
  a->timer = std::make_unique<asio::steady_timer>(io_, delay);
  a->timer->async_wait([self = shared_from_this(), a](std::error_code ec) {
    bool woken = false;
    {
      std::lock_guard relk(self->mu_);
      self->waiting_.erase(a);
      woken = std::exchange(a->woken, false);
    }
    if ((ec && !woken) || self->closed_) {
      exec_result r;
      r.ec = make_error_code(errc::shutdown);
      auto cb = std::move(a->done);
      if (cb) cb(std::move(r));
      return;
    }
    self->send(a);
  });
  waiting_.insert(a);
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

void core::wake_sleepers() {
  std::lock_guard lk(mu_);
  if (closed_) return;
  for (const auto& a : waiting_) {
    // Cancelled, its handler sends it at once (woken) rather than failing it.
    if (a->timer->cancel() > 0) a->woken = true;
  }
}

void core::subscribe(channel_kind kind, std::string channel, std::string_view route_key,
                     pubsub_listener listener, clock::time_point deadline,
                     std::function<void(std::error_code, subscription)> done) {
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
