// connection: connecting, the setup commands, and reconnecting after a failure.
#include <algorithm>
#include <string>
#include <string_view>

#include "detail/connection.hpp"
#include "detail/eviction_warning.hpp"

namespace rlock::detail {
namespace {

/// Which step a connect timeout cut short, for its message.
const char* unfinished_step(transport::connect_phase phase) {
  switch (phase) {
    case transport::connect_phase::resolving:
      return "resolving the host name";
    case transport::connect_phase::connecting:
      return "before the connection was accepted";
    case transport::connect_phase::handshaking:
      return "in the TLS handshake";
    case transport::connect_phase::connected:
      break;
  }
  return "with no answer to its setup commands";
}

}  // namespace

// ---- connecting ----

void connection::do_connect() {
  std::uint64_t gen = 0;
  {
    std::lock_guard lk(mu_);
    if (state_ == state::closed) return;
    state_ = state::connecting;
    queue_for_connect_ = false;
    gen = ++generation_;
    reader_.reset();
    server_client_.reset();
    eviction_warning_.clear();  // this connect's server says its own (a failover may move it)
  }
  // Sentinel mode: first asks where the master is; each Sentinel's query has its own bound.
  // Unless a Sentinel has just announced it (master_switched): the ones that did not announce
  // it yet may still name the old master, which accepts writes until it is demoted.
  if (switched_to_) {
    opts_.address.host = std::move(switched_to_->first);
    opts_.address.port = switched_to_->second;
    switched_to_.reset();
  } else if (!opts_.sentinels.empty()) {
    ask_sentinel(gen, 0, {});
    return;
  }
  connect_to_address(gen);
}

void connection::connect_to_address(std::uint64_t gen) {
  connect_timer_.expires_after(opts_.connect_timeout);
  connect_timer_.async_wait([self = shared_from_this(), gen](std::error_code ec) {
    if (ec) return;  // cancelled: connected or closed
    self->setup_failed(gen, make_error_code(errc::timeout),
                       "connecting to " + self->opts_.address.to_string() + " timed out " +
                           unfinished_step(self->transport_.phase()));
  });
  transport_.async_connect(
      opts_.address, opts_.tls_context, opts_.tls,
      [self = shared_from_this(), gen](std::error_code ec, std::string detail) {
        self->on_transport_connected(gen, ec, std::move(detail));
      });
}

void connection::on_transport_connected(std::uint64_t gen, std::error_code ec, std::string detail) {
  {
    std::lock_guard lk(mu_);
    if (gen != generation_ || state_ != state::connecting) return;
  }
  if (ec) {
    setup_failed(gen, ec, std::move(detail));
    return;
  }
  start_reading(gen);
  send_setup(gen);
}

connection::resolved connection::ask_resolver(
    const std::function<credentials(const server_address&)>& resolver, server_address server) {
  server.username.reset();
  server.password.reset();
  std::string why;
  try {
    return resolver(server);
  } catch (const std::exception& e) {
    why = e.what();
  } catch (...) {
    why = "an exception not derived from std::exception";
  }
  return "credentials_resolver failed for " + server.to_string() + ": " + why;
}

void connection::send_setup(std::uint64_t gen) {
  if (!opts_.credentials_resolver) {
    send_setup_as(gen, credentials{opts_.username, opts_.password});
    return;
  }
  if (!opts_.resolver_runner) {
    send_setup_as(gen, ask_resolver(opts_.credentials_resolver, opts_.address));
    return;
  }
  // Asked off the I/O threads: meanwhile they carry every other request (renewals included).
  // The connect timer runs on; a connect that timed out or closed meanwhile (another
  // generation) drops the answer.
  std::weak_ptr<connection> weak = shared_from_this();
  std::weak_ptr<resolver_thread> runner = opts_.resolver_runner;
  opts_.resolver_runner->post(
      [weak, runner, resolver = opts_.credentials_resolver, address = opts_.address, gen] {
        resolved login = ask_resolver(resolver, address);
        auto r = runner.lock();
        if (!r) return;
        // Only while the client runs: after it stopped the runner, its io_context may be gone.
        r->deliver([&] {
          if (auto self = weak.lock()) {
            asio::post(self->strand_,
                       [self, gen, login = std::move(login)] { self->send_setup_as(gen, login); });
          }
        });
      });
}

void connection::send_setup_as(std::uint64_t gen, const resolved& answer) {
  {
    std::lock_guard lk(mu_);
    if (gen != generation_ || state_ != state::connecting) return;
  }
  if (const auto* why = std::get_if<std::string>(&answer)) {
    setup_failed(gen, make_error_code(errc::auth_failed), *why);
    return;
  }
  const auto* login = &std::get<credentials>(answer);
  // Setup commands are written directly, ahead of any queued user request.
  std::vector<std::vector<std::string>> cmds;
  if (login->password) {
    if (login->username) {
      cmds.push_back({"AUTH", *login->username, *login->password});
    } else {
      cmds.push_back({"AUTH", *login->password});
    }
  } else if (login->username) {
    cmds.push_back({"AUTH", *login->username, ""});
  }
  if (opts_.address.database != 0) {
    cmds.push_back({"SELECT", std::to_string(opts_.address.database)});
  }
  if (!opts_.client_name.empty()) cmds.push_back({"CLIENT", "SETNAME", opts_.client_name});
  // Earlier connections dropped with requests unanswered: closed on the server before this one
  // sends anything else, so that none of what they carried runs after what this one sends (a
  // resent request, the undo of one that got no answer). Best effort, as CLIENT INFO below;
  // kept for the next setup until one answers.
  std::vector<server_client> left_behind;
  {
    std::lock_guard lk(mu_);
    left_behind = left_behind_;
  }
  const std::size_t first_kill = cmds.size();
  for (const server_client& c : left_behind) {
    const auto args = kill_args(c);
    cmds.emplace_back(args.begin(), args.end());
  }
  // The connection's id on the server, to close it there should a request written on it be
  // resent elsewhere (server_client.hpp). Command connections only: subscribers run no scripts.
  if (!opts_.pubsub) cmds.push_back({"CLIENT", "INFO"});
  // Sentinel mode: the server the Sentinels named must still be the master (during a failover
  // they may name the old one, which is then being demoted).
  if (!opts_.sentinels.empty()) cmds.push_back({"ROLE"});
  for (const auto& text : opts_.scripts) cmds.push_back({"SCRIPT", "LOAD", text});
  // With events wanted, command connections ask whether the server may evict keys under memory
  // pressure, held locks included: the link's `connected` event then warns. INFO memory, not
  // CONFIG GET, which managed services rename away and ACL users often lack (+@all -@admin).
  // Best effort, as CLIENT INFO: a server that refuses INFO is not warned about.
  const bool eviction_check = handlers_.on_link && !opts_.pubsub;
  if (eviction_check) cmds.push_back({"INFO", "memory"});
  // config::all_connected_replicas: how many replicas the WAITs that follow lock writes ask
  // for. Best effort: a server that refuses INFO is asked for 1.
  if (opts_.census) cmds.push_back({"INFO", "replication"});
  // A final PING proves the server answers even when there is nothing else to send (and,
  // without AUTH, surfaces NOAUTH here rather than on the first user request). A server that
  // cannot persist refuses PING with MISCONF so that health checks notice; it still serves
  // reads, and each write reports MISCONF itself, so such a connection is used.
  cmds.push_back({"PING"});

  std::string bytes;
  std::unique_lock lk(mu_);
  if (gen != generation_ || state_ != state::connecting) return;
  const std::size_t n = cmds.size();
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::string_view> args(cmds[i].begin(), cmds[i].end());
    encode_command(args, bytes);
    std::string what = cmds[i][0];
    if (what == "CLIENT" || what == "SCRIPT" || what == "INFO") what += " " + cmds[i][1];
    // The connection's name only labels it in CLIENT LIST: a server that refuses CLIENT
    // SETNAME (the command renamed away, an ACL without it) is used all the same. So is one
    // that refuses CLIENT INFO (also: older than Redis 6.2): its resends go without closing
    // the connection they left, as before.
    const bool identity = what == "CLIENT INFO";
    const bool policy = what == "INFO memory";
    const bool replicas = what == "INFO replication";
    // Answered (closed, not found, or refused): done with, unless this setup fails before.
    std::optional<server_client> killed;
    if (i >= first_kill && i - first_kill < left_behind.size()) {
      killed = left_behind[i - first_kill];
    }
    const bool cosmetic = what == "CLIENT SETNAME" || killed || identity || policy || replicas;
    const bool ping = what == "PING";
    const bool role = what == "ROLE";
    entry e;
    e.req.done = [self = shared_from_this(), gen, last = (i + 1 == n), cosmetic, identity, ping,
                  role, policy, replicas, killed = std::move(killed),
                  what = std::move(what)](exec_result r) {
      if (role) {
        if (auto why = self->not_master(r)) {
          self->setup_failed(gen, make_error_code(errc::read_only), std::move(*why));
          return;
        }
      }
      const bool ignored =
          (cosmetic && (r.ec == errc::server_error || r.ec == errc::no_permission ||
                        r.ec == errc::command_unavailable)) ||
          (ping && r.ec == errc::server_error && r.detail.starts_with("MISCONF"));
      if (identity && !r.ec && r.value.is_string()) {
        std::lock_guard id_lk(self->mu_);
        if (gen == self->generation_) self->server_client_ = parse_client_info(r.value.str());
      }
      if (policy && !r.ec) {
        std::lock_guard policy_lk(self->mu_);
        if (gen == self->generation_ && r.value.is_string()) {
          self->eviction_warning_ = eviction_warning(r.value.str());
        }
      }
      if (replicas && self->opts_.census) {
        const auto count =
            !r.ec && r.value.is_string() ? connected_replicas_in(r.value.str()) : std::nullopt;
        if (count) {
          self->opts_.census->counted(*count);
        } else {
          self->opts_.census->forget();
        }
      }
      if (killed) {
        std::lock_guard kill_lk(self->mu_);
        std::erase(self->left_behind_, *killed);
      }
      if (r.ec && !ignored) {
        std::string detail = what + " failed during connection setup";
        if (!r.detail.empty()) detail += ": " + r.detail;
        self->setup_failed(gen, r.ec, std::move(detail));
      } else if (last) {
        self->become_ready(gen);
      }
    };
    push_awaiting_locked(std::move(e));
  }
  write_buf_ = std::move(bytes);
  writing_ = true;
  lk.unlock();
  transport_.async_write(asio::buffer(write_buf_),
                         [self = shared_from_this(), gen](std::error_code ec, std::size_t) {
                           self->on_written(gen, ec);
                         });
}

void connection::setup_failed(std::uint64_t gen, std::error_code ec, std::string detail,
                              failure_report report) {
  completions done;
  {
    std::lock_guard lk(mu_);
    if (gen != generation_ || state_ != state::connecting) return;
    // Failures that do not fix themselves (credentials, TLS, ACL, and any other error reply to
    // a setup command, such as SELECT of a database the server does not have) are reported as
    // they are until a later attempt succeeds; the rest read as not_connected meanwhile.
    const bool sticky = ec == errc::auth_failed || ec == errc::auth_required ||
                        ec == errc::tls_error || ec == errc::no_permission ||
                        ec == errc::server_error || ec == errc::command_unavailable;
    last_error_ = ec;
    sticky_error_ = sticky;
    ++generation_;  // ignore late completions of this attempt
    transport_.close();
    connect_timer_.cancel();
    // While connecting, awaiting_ holds only the setup commands: drop them without running
    // their callbacks (they would only report this same failure again).
    clear_awaiting_locked();
    // Queued user requests cannot be sent on this attempt. Fail them now with the reason so
    // the retry layer can decide; they were certainly not written.
    for (auto& e : pending_) {
      if (e.req.done) done.emplace_back(std::move(e.req.done), exec_failure(ec, false, detail));
    }
    pending_.clear();
    last_error_detail_ = detail;
    writing_ = false;
    schedule_reconnect_locked();
  }
  run(done);
  // failure_report::none: the attempt was cut short to move to another master, not failed.
  if (opts_.counters && report != failure_report::none) {
    client_counters::add(opts_.counters->connect_failures);
  }
  if (handlers_.on_link && report != failure_report::none) {
    handlers_.on_link(
        {.what = link_report::change::connect_failed,
         .server = report == failure_report::at_address ? opts_.address.to_string() : std::string(),
         .error = ec,
         .detail = std::move(detail)});
  }
}

void connection::become_ready(std::uint64_t gen) {
  {
    std::unique_lock lk(mu_);
    if (gen != generation_ || state_ != state::connecting) return;
    state_ = state::ready;
    ready_at_ = clock::now();
    failures_ = 0;
    last_error_.clear();
    last_error_detail_.clear();
    sticky_error_ = false;
    connect_timer_.cancel();
    start_write_locked(lk);
  }
  if (opts_.counters) client_counters::add(opts_.counters->connects);
  if (opts_.ping_interval.count() > 0) {
    ping_timer_.expires_after(opts_.ping_interval);
    ping_timer_.async_wait(
        [self = shared_from_this()](std::error_code ec) { self->on_ping_timer(ec); });
  }
  if (handlers_.on_ready) handlers_.on_ready();
  if (handlers_.on_link) {
    std::string warning;
    {
      std::lock_guard lk(mu_);
      warning = eviction_warning_;
    }
    handlers_.on_link({.what = link_report::change::up,
                       .server = opts_.address.to_string(),
                       .error = {},
                       .detail = std::move(warning)});
  }
}

void connection::schedule_reconnect_locked() {
  ++failures_;
  long long ms = opts_.reconnect_delay_min.count();
  for (int i = 1; i < failures_ && ms < opts_.reconnect_delay_max.count(); ++i) ms *= 2;
  ms = std::min<long long>(ms, opts_.reconnect_delay_max.count());
  std::uniform_int_distribution<long long> jitter(ms / 2, ms);
  arm_reconnect_locked(std::chrono::milliseconds(jitter(rng_)));
}

void connection::arm_reconnect_locked(std::chrono::milliseconds delay) {
  state_ = state::backoff;
  reconnect_timer_.expires_after(delay);
  reconnect_timer_.async_wait([self = shared_from_this()](std::error_code ec) {
    if (!ec) self->do_connect();
  });
}

}  // namespace rlock::detail
