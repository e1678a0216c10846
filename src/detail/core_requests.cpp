// core's requests: an exec or eval becomes an attempt that is sent to the node of its key,
// follows Cluster redirections, recovers from a flushed script cache (NOSCRIPT: sent again as
// EVAL) and is retried after a delay as its retry_fsm decides, within its deadline.
#include <algorithm>
#include <string>
#include <utility>

#include "detail/backoff.hpp"
#include "detail/closed_completion.hpp"
#include "detail/core.hpp"
#include "detail/core_attempt.hpp"
#include "detail/replica_sync.hpp"
#include "detail/resp.hpp"

namespace rlock::detail {

std::shared_ptr<core::attempt> core::new_attempt(const exec_options& opts, exec_callback cb) {
  auto a =
      std::make_shared<attempt>(opts.max_attempts > 0 ? opts.max_attempts : cfg_.retry_attempts,
                                opts.idempotent, opts.deadline, opts.start_by);
  a->completes_on_caller = opts.completes_on_caller;
  a->close_unknown = opts.close_unknown;
  a->fence = opts.fence;
  a->timeout = opts.timeout.count() > 0 ? opts.timeout : cfg_.timeout;
  a->done = std::move(cb);
  client_counters::add(counters_->requests);
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
  if (opts.sync_replicas < 0) {
    // The connection appends the WAIT as it writes the request: it knows how many replicas its
    // server has.
    a->trailing_wait = true;
    a->wait_connected_timeout = opts.sync_timeout;
    a->timeout += opts.sync_timeout;
  } else if (opts.sync_replicas > 0) {
    // WAIT in the same write, on the same connection: it waits for this connection's writes,
    // the script's included. (NOSCRIPT recovery and the sharded twin keep it: they rewrite only
    // the EVALSHA's head.)
    const std::string replicas = std::to_string(opts.sync_replicas);
    const std::string wait_ms = std::to_string(opts.sync_timeout.count());
    const std::string_view wait[] = {"WAIT", replicas, wait_ms};
    encode_command(wait, a->payload);
    a->trailing_wait = true;
    a->timeout += opts.sync_timeout;
  }
  if (opts.sync_replicas != 0) a->confirm_sends_left = std::max(opts.confirm_tries, 1) - 1;
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
  if (forked()) {
    // Nothing goes out on the parent's connections (core::forked).
    exec_result r;
    r.ec = make_error_code(errc::invalid_argument);
    r.detail = forked_detail();
    finish_closed(a, std::move(r));
    return;
  }
  if (closed_.load(std::memory_order_acquire)) {
    exec_result r;
    r.ec = make_error_code(errc::shutdown);
    finish_closed(a, std::move(r));
    return;
  }
  if (cluster_ && !cluster_->settled() && clock::now() + settle_poll < a->fsm.start_by()) {
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
  if (a->trailing_wait) {
    r.trailing_wait = true;
    r.wait_connected_timeout = a->wait_connected_timeout;
    ++r.replies;
  }
  r.completes_on_caller = a->completes_on_caller;
  const clock::time_point from = a->started.value_or(a->last_sent);
  a->started.reset();
  r.deadline = std::min(from + a->timeout, a->fsm.deadline());
  r.done = [self = shared_from_this(), a](exec_result res) { self->on_result(a, std::move(res)); };
  node& n = !cluster_       ? *node_
            : a->ask_target ? cluster_->node_at(*a->ask_target)
                            : cluster_->node_for(a->route_key);
  a->sent_to = &n;
  client_counters::add(counters_->attempts);
  (a->trailing_wait ? n.pick_synced() : n.pick()).submit(std::move(r));
}

void core::finish(const std::shared_ptr<attempt>& a, exec_result res) {
  if (std::exchange(a->finished, true)) return;
  counters_->completed(res.ec);
  auto cb = std::move(a->done);
  if (cb) cb(std::move(res));
}

void core::finish_closed(const std::shared_ptr<attempt>& a, exec_result res) {
  if (std::exchange(a->finished, true)) return;
  counters_->completed(res.ec);
  auto cb = std::move(a->done);
  complete_closed([cb = std::move(cb), r = std::move(res)]() mutable { cb(std::move(r)); });
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
      clock::now() + tryagain_delay < a->fsm.start_by()) {
    ++a->tryagains;
    resend_after(a, tryagain_delay, std::move(res));
    return true;
  }
  return false;
}

void core::on_result(const std::shared_ptr<attempt>& a, exec_result res) {
  res.sent_at = a->last_sent;
  if (a->trailing_wait && a->sent_to != nullptr) res.synced_on = a->sent_to->server();
  // An ASK is good for one attempt (and its NOSCRIPT resend, below).
  std::optional<cluster_endpoint> asked = std::exchange(a->ask_target, std::nullopt);
  if (res.ec && cluster_ && follow_redirect(a, res)) return;
  if (res.ec && a->from_script && !a->noscript_retried && res.detail.starts_with("NOSCRIPT")) {
    // The server lost the script (SCRIPT FLUSH, restart, failover): nothing ran. Send the text.
    a->noscript_retried = true;
    // Reported and counted for the scripts every connection loads as it connects: a user's
    // script meets NOSCRIPT the first time anyway.
    const bool library_script = loaded_sha1s_.contains(std::string(a->via_script->sha1()));
    if (library_script) client_counters::add(counters_->scripts_reloaded);
    if (events_->wanted() && library_script) {
      events_->emit({.kind = client_event_kind::script_reloaded,
                     .server = a->sent_to != nullptr ? a->sent_to->server() : std::string(),
                     .object = std::string(a->via_script->sha1()),
                     .error = {},
                     .detail = "the server did not have it (NOSCRIPT): sent with its text"});
    }
    a->ask_target = std::move(asked);
    a->payload = evalsha_to_eval(a->payload, *a->via_script);
    send(a);
    return;
  }
  if (!res.ec && a->trailing_wait && a->confirm_sends_left > 0 && !replicas_confirmed(cfg_, res) &&
      !closed_.load(std::memory_order_acquire)) {
    // It ran without the replicas asked for: sent again to confirm it (exec_options::
    // confirm_tries), unless the delay would pass the request's deadline.
    std::chrono::milliseconds delay{};
    {
      std::lock_guard lk(mu_);
      delay = equal_jitter(cfg_.retry_delay_base, cfg_.retry_delay_max)
                  .delay(a->confirm_resends + 1, rng_);
    }
    if (clock::now() + delay < a->fsm.start_by()) {
      --a->confirm_sends_left;
      ++a->confirm_resends;
      a->unconfirmed = std::move(res);
      resend_after(a, delay, exec_result{});
      return;
    }
  }
  res.confirm_sends = a->confirm_resends + 1;
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
  if (failed_attempt_may_have_run(res.ec, res.written)) {
    a->written_once = true;
    add_unique(a->unknown_on, std::move(res.unknown_on));
  }
  res.unknown_on = a->unknown_on;
  if (act.what != retry_fsm::action::kind::retry_after) {
    if (res.ec && a->unconfirmed) {
      // A resend to confirm the replicas failed: the last answered attempt, unconfirmed, is
      // the result (it ran), and the latch it read must outlive any late copy of this one.
      finish(a, last_unconfirmed(*a));
      return;
    }
    if (res.ec && !res.written && a->written_once) {
      // This attempt certainly did not run, but an earlier one was sent and may have: the
      // request's outcome is unknown, not "not applied", whatever stopped this attempt (a lost
      // connection, or a sticky setup error on reconnecting, such as a rotated password).
      if (res.ec != errc::shutdown) res.ec = make_error_code(errc::connection_lost);
      res.written = true;
      res.detail =
          "an earlier attempt was sent and its outcome is unknown; last attempt: " + res.detail;
    }
    finish(a, std::move(res));
    return;
  }
  resend_after(a, act.delay, std::move(res));
}

exec_result core::last_unconfirmed(attempt& a) {
  exec_result r = std::move(*a.unconfirmed);
  a.unconfirmed.reset();
  r.earlier_attempt_may_have_run = a.written_once;
  r.unknown_on = a.unknown_on;
  r.confirm_sends = a.confirm_resends + 1;
  return r;
}

void core::resend_after(const std::shared_ptr<attempt>& a, std::chrono::milliseconds delay,
                        exec_result res) {
  std::unique_lock lk(mu_);
  if (closed_) {
    // Completed outside the lock: the callback may reach user code (a handler run inline).
    lk.unlock();
    if (a->unconfirmed) {
      finish(a, last_unconfirmed(*a));
      return;
    }
    res.ec = make_error_code(errc::shutdown);
    finish(a, std::move(res));
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
      self->finish(a, a->unconfirmed ? last_unconfirmed(*a) : std::move(r));
      return;
    }
    self->send(a);
  });
  waiting_.insert(a);
}

void core::wake_sleepers() {
  std::lock_guard lk(mu_);
  if (closed_) return;
  for (const auto& a : waiting_) {
    // Cancelled, its handler sends it at once (woken) rather than failing it.
    if (a->timer->cancel() > 0) a->woken = true;
  }
}

}  // namespace rlock::detail
