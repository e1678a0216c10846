#include "detail/connection.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "detail/closed_completion.hpp"

namespace rlock::detail {
namespace {

// The connection this thread last submitted a completes_on_caller request to: the one a
// blocking call of this thread polls (poll_replies_of_this_thread).
// NOLINTNEXTLINE(*-avoid-non-const-global-variables)
thread_local std::weak_ptr<connection> polled_by_this_thread;

exec_result failure(std::error_code ec, bool written, std::string detail = {}) {
  exec_result r;
  r.ec = ec;
  r.written = written;
  r.detail = std::move(detail);
  return r;
}

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

connection::connection(asio::io_context& io, connection_options opts, handlers h)
    : opts_(std::move(opts)),
      handlers_(std::move(h)),
      strand_(asio::make_strand(io)),
      transport_(strand_),
      connect_timer_(strand_),
      reconnect_timer_(strand_),
      deadline_timer_(strand_),
      ping_timer_(strand_),
      read_buf_(std::make_unique<std::array<char, 65536>>()) {}

connection::~connection() = default;

void connection::start() {
  asio::dispatch(strand_, [self = shared_from_this()] {
    std::unique_lock lk(self->mu_);
    if (self->state_ != state::idle) return;
    lk.unlock();
    self->do_connect();
  });
}

connection::state connection::current_state() const {
  std::lock_guard lk(mu_);
  return state_;
}

std::pair<std::error_code, std::string> connection::last_failure() const {
  std::lock_guard lk(mu_);
  return {last_error_, last_error_detail_};
}

void connection::run(completions& c) {
  for (auto& [cb, res] : c) {
    if (cb) cb(std::move(res));
  }
  c.clear();
}

// ---- connecting ----

void connection::do_connect() {
  std::uint64_t gen = 0;
  {
    std::lock_guard lk(mu_);
    if (state_ == state::closed) return;
    state_ = state::connecting;
    gen = ++generation_;
    reader_.reset();
    server_client_.reset();
  }
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

void connection::send_setup(std::uint64_t gen) {
  // Setup commands are written directly, ahead of any queued user request.
  std::vector<std::vector<std::string>> cmds;
  if (opts_.password) {
    if (opts_.username) {
      cmds.push_back({"AUTH", *opts_.username, *opts_.password});
    } else {
      cmds.push_back({"AUTH", *opts_.password});
    }
  } else if (opts_.username) {
    cmds.push_back({"AUTH", *opts_.username, ""});
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
  for (const auto& text : opts_.scripts) cmds.push_back({"SCRIPT", "LOAD", text});
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
    if (what == "CLIENT" || what == "SCRIPT") what += " " + cmds[i][1];
    // The connection's name only labels it in CLIENT LIST: a server that refuses CLIENT
    // SETNAME (the command renamed away, an ACL without it) is used all the same. So is one
    // that refuses CLIENT INFO (also: older than Redis 6.2): its resends go without closing
    // the connection they left, as before.
    const bool identity = what == "CLIENT INFO";
    // Answered (closed, not found, or refused): done with, unless this setup fails before.
    std::optional<server_client> killed;
    if (i >= first_kill && i - first_kill < left_behind.size()) {
      killed = left_behind[i - first_kill];
    }
    const bool cosmetic = what == "CLIENT SETNAME" || killed || identity;
    const bool ping = what == "PING";
    entry e;
    e.req.done = [self = shared_from_this(), gen, last = (i + 1 == n), cosmetic, identity, ping,
                  killed = std::move(killed), what = std::move(what)](exec_result r) {
      const bool ignored =
          (cosmetic && (r.ec == errc::server_error || r.ec == errc::no_permission ||
                        r.ec == errc::command_unavailable)) ||
          (ping && r.ec == errc::server_error && r.detail.starts_with("MISCONF"));
      if (identity && !r.ec && r.value.is_string()) {
        std::lock_guard id_lk(self->mu_);
        if (gen == self->generation_) self->server_client_ = parse_client_info(r.value.str());
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

void connection::setup_failed(std::uint64_t gen, std::error_code ec, std::string detail) {
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
      if (e.req.done) done.emplace_back(std::move(e.req.done), failure(ec, false, detail));
    }
    pending_.clear();
    last_error_detail_ = std::move(detail);
    writing_ = false;
    schedule_reconnect_locked();
  }
  run(done);
}

void connection::become_ready(std::uint64_t gen) {
  {
    std::unique_lock lk(mu_);
    if (gen != generation_ || state_ != state::connecting) return;
    state_ = state::ready;
    failures_ = 0;
    last_error_.clear();
    last_error_detail_.clear();
    sticky_error_ = false;
    connect_timer_.cancel();
    start_write_locked(lk);
  }
  if (opts_.ping_interval.count() > 0) {
    ping_timer_.expires_after(opts_.ping_interval);
    ping_timer_.async_wait(
        [self = shared_from_this()](std::error_code ec) { self->on_ping_timer(ec); });
  }
  if (handlers_.on_ready) handlers_.on_ready();
}

void connection::schedule_reconnect_locked() {
  state_ = state::backoff;
  ++failures_;
  long long ms = opts_.reconnect_delay_min.count();
  for (int i = 1; i < failures_ && ms < opts_.reconnect_delay_max.count(); ++i) ms *= 2;
  ms = std::min<long long>(ms, opts_.reconnect_delay_max.count());
  std::uniform_int_distribution<long long> jitter(ms / 2, ms);
  reconnect_timer_.expires_after(std::chrono::milliseconds(jitter(rng_)));
  reconnect_timer_.async_wait([self = shared_from_this()](std::error_code ec) {
    if (!ec) self->do_connect();
  });
}

// ---- submitting and writing ----

void connection::submit(request r) {
  std::unique_lock lk(mu_);
  if (state_ == state::closed) {
    lk.unlock();
    complete_closed([cb = std::move(r.done)]() mutable {
      if (cb) cb(failure(make_error_code(errc::shutdown), false));
    });
    return;
  }
  if (state_ == state::backoff) {
    // Not connected: fail fast with the reason; the caller's retry policy decides what next.
    // (idle means start() was called and the connect is about to begin: such requests queue,
    // as they do while connecting.)
    // A refusal, a server that answered the setup with LOADING or BUSY, and one that did not
    // answer it within connect_timeout (a silent or stopped server) are reported as such: they
    // say more than "not connected" and are just as transient. Without the last, a request that
    // met a silent server on every attempt ended with timeout or not_connected depending on
    // whether its last attempt came while a connect was under way or in the back-off after it.
    std::error_code ec = sticky_error_ ? last_error_ : make_error_code(errc::not_connected);
    if (!sticky_error_ && (last_error_ == errc::connection_refused ||
                           last_error_ == errc::server_busy || last_error_ == errc::timeout)) {
      ec = last_error_;
    }
    std::string detail = last_error_detail_;
    lk.unlock();
    asio::post(strand_, [cb = std::move(r.done), ec, detail = std::move(detail)]() mutable {
      if (cb) cb(failure(ec, false, std::move(detail)));
    });
    return;
  }
  if (r.completes_on_caller) polled_by_this_thread = weak_from_this();
  const auto deadline = r.deadline;
  entry e;
  e.remaining = r.replies;
  e.req = std::move(r);
  pending_.push_back(std::move(e));
  if (deadline < armed_deadline_) arm_deadline_locked(deadline);
  if (state_ != state::ready || writing_) return;
  // Idle connection (nothing queued, nothing awaiting a reply): the caller writes the command
  // itself, saving a thread hand-off. Under load requests queue up and go out in batches.
  if (pending_.size() == 1 && awaiting_.empty() && try_direct_send_locked()) return;
  writing_ = true;  // claim the write; the strand starts it
  lk.unlock();
  asio::post(strand_, [self = shared_from_this()] {
    std::unique_lock lk2(self->mu_);
    self->writing_ = false;
    self->start_write_locked(lk2);
  });
}

bool connection::try_direct_send_locked() {
  const int fd = transport_.direct_fd();
  if (fd < 0) return false;
  entry& e = pending_.front();
  const std::string_view bytes = e.req.bytes();
  ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return false;  // let the asynchronous path meet (and report) the error
    }
    n = 0;
  }
  if (n == 0) return false;  // nothing written: the ordinary path sends it
  const auto written = static_cast<std::size_t>(n);
  entry moved = std::move(pending_.front());
  pending_.pop_front();
  const std::string_view all = moved.req.bytes();
  std::string rest = written < all.size() ? std::string(all.substr(written)) : std::string();
  written_locked(std::move(moved));
  if (!rest.empty()) {
    write_buf_ = std::move(rest);
    writing_ = true;
    const std::uint64_t gen = generation_;
    asio::post(strand_, [self = shared_from_this(), gen] {
      self->transport_.async_write(
          asio::buffer(self->write_buf_),
          [self, gen](std::error_code ec, std::size_t) { self->on_written(gen, ec); });
    });
  }
  return true;
}

void connection::start_write_locked(std::unique_lock<std::mutex>& lk) {
  if (writing_ || state_ != state::ready || pending_.empty()) return;
  write_buf_.clear();
  while (!pending_.empty()) {
    entry& e = pending_.front();
    write_buf_ += e.req.bytes();
    written_locked(std::move(e));
    pending_.pop_front();
  }
  writing_ = true;
  const std::uint64_t gen = generation_;
  lk.unlock();
  auto self = shared_from_this();
  asio::dispatch(strand_, [self, gen] {
    self->transport_.async_write(
        asio::buffer(self->write_buf_),
        [self, gen](std::error_code ec, std::size_t) { self->on_written(gen, ec); });
  });
  lk.lock();
}

void connection::on_written(std::uint64_t gen, std::error_code ec) {
  if (ec) {
    drop(gen, make_error_code(errc::connection_lost), "write failed: " + ec.message());
    return;
  }
  std::unique_lock lk(mu_);
  if (gen != generation_) return;
  writing_ = false;
  start_write_locked(lk);
}

// ---- reading ----

void connection::start_reading(std::uint64_t gen) {
  {
    std::lock_guard lk(mu_);
    if (gen != generation_) return;
    direct_read_ = !opts_.pubsub && transport_.direct_fd() >= 0;
    if (direct_read_) {
      arm_readable(gen);
      return;
    }
  }
  read_some(gen);
}

void connection::read_some(std::uint64_t gen) {
  transport_.async_read_some(asio::buffer(*read_buf_),
                             [self = shared_from_this(), gen](std::error_code ec, std::size_t n) {
                               self->on_read(gen, ec, n);
                             });
}

void connection::on_read(std::uint64_t gen, std::error_code ec, std::size_t n) {
  {
    std::lock_guard lk(mu_);
    if (gen != generation_) return;
    if (ec) {
      // fall through to drop() outside the lock
    } else {
      last_read_ = clock::now();
    }
  }
  if (ec) {
    drop(gen, make_error_code(errc::connection_lost),
         ec == asio::error::eof ? "server closed the connection" : "read failed: " + ec.message());
    return;
  }
  reader_.feed(read_buf_->data(), n);
  completions done;
  std::error_code perr;
  for (;;) {
    reply r;
    if (!reader_.next(r, perr)) break;
    handle_reply(std::move(r), done);
  }
  run(done);
  if (perr) {
    drop(gen, perr, "unparseable reply from server");
    return;
  }
  read_some(gen);
}

void connection::handle_reply(reply r, completions& out) {
  if (opts_.pubsub && r.is_array() && r.size() >= 2 && r[0].is_string()) {
    const std::string_view kind = r[0].str();
    const bool confirms = kind == "subscribe" || kind == "unsubscribe" || kind == "ssubscribe" ||
                          kind == "sunsubscribe" || kind == "psubscribe" || kind == "punsubscribe";
    if (confirms || kind == "message" || kind == "smessage" || kind == "pmessage") {
      if (confirms) {
        // Answers the oldest (un)subscribe unanswered: Redis answers in the order it reads.
        std::lock_guard lk(mu_);
        const auto it = std::find(answered_by_push_.begin(), answered_by_push_.end(), true);
        if (it != answered_by_push_.end()) answered_by_push_.erase(it);
      }
      if (handlers_.on_push) handlers_.on_push(std::move(r));
      return;
    }
  }
  if (opts_.pubsub) {
    handle_pubsub_reply(std::move(r), out);
    return;
  }
  std::lock_guard lk(mu_);
  handle_reply_locked(std::move(r), out);
}

void connection::handle_pubsub_reply(reply r, completions& out) {
  std::unique_lock lk(mu_);
  // Setup commands and PINGs get replies ("pong" comes as ["pong", ""] in subscribed mode);
  // SUBSCRIBE and UNSUBSCRIBE get pushes, or an error in their place (NOPERM for a channel the
  // ACL user may not use). Which one this error answers is known from the order of writing:
  // a PING refused with MISCONF (a server that cannot persist) is the PING's, which ignores it,
  // not a refusal of the oldest subscription, which would fail its waiters, and the PING's
  // reply would be missing.
  const std::uint64_t gen = generation_;
  bool push_due = false;
  if (!answered_by_push_.empty()) {
    push_due = answered_by_push_.front();
    answered_by_push_.pop_front();
  }
  if (!push_due) {
    handle_reply_locked(std::move(r), out);
    return;
  }
  lk.unlock();
  if (r.is_error()) {
    // A refused (un)subscribe. The connection is kept, so the other channels on it are not
    // dropped and resubscribed (a reconnect would only be refused again).
    if (handlers_.on_push) handlers_.on_push(std::move(r));
    return;
  }
  // A reply where a push was due: the stream is out of step.
  asio::post(strand_, [self = shared_from_this(), gen] {
    self->drop(gen, make_error_code(errc::protocol_error), "unexpected reply from server");
  });
}

void connection::handle_reply_locked(reply r, completions& out) {
  if (awaiting_.empty()) {
    // A reply nobody asked for: the stream is out of step. Treat as a protocol error.
    asio::post(strand_, [self = shared_from_this(), gen = generation_] {
      self->drop(gen, make_error_code(errc::protocol_error), "unexpected reply from server");
    });
    return;
  }
  entry& e = awaiting_.front();
  if (--e.remaining > 0) return;  // an intermediate reply of a pipelined group
  entry done = take_awaiting_front_locked();
  if (done.abandoned || !done.req.done) return;
  exec_result res;
  res.written = true;
  if (r.is_error()) {
    res.ec = make_error_code(classify_server_error(r.str(), done.req.from_script));
    // Redis ends some error texts with a space ("... with args beginning with: 'x' "); the
    // detail goes into messages, followed by more text.
    std::string_view text = r.str();
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    res.detail = std::string(text);
  }
  res.value = std::move(r);
  out.emplace_back(std::move(done.req.done), std::move(res));
}

// ---- reading on plain sockets (the I/O thread, or a polling caller) ----

void connection::arm_readable(std::uint64_t gen) {
  transport_.async_wait_readable(
      [self = shared_from_this(), gen](std::error_code ec) { self->on_readable(gen, ec); });
}

void connection::on_readable(std::uint64_t gen, std::error_code ec) {
  if (ec == asio::error::operation_aborted) return;  // closed
  if (ec) {
    drop(gen, make_error_code(errc::connection_lost), "read failed: " + ec.message());
    return;
  }
  completions done;
  read_outcome o;
  {
    std::lock_guard lk(mu_);
    if (gen != generation_) return;
    // Armed again before reading: bytes that land after the last recv below wake it again
    // (the socket's readiness is edge-triggered). A caller may have read them already: the
    // wake-up then finds nothing.
    arm_readable(gen);
    o = read_available_locked(done);
  }
  run(done);
  after_read(gen, o);
}

connection::read_outcome connection::read_available_locked(completions& out) {
  read_outcome o;
  const int fd = transport_.direct_fd();
  if (fd < 0) return o;  // closed under us: the close reports it
  for (;;) {
    const ssize_t n = ::recv(fd, read_buf_->data(), read_buf_->size(), MSG_DONTWAIT);
    if (n > 0) {
      o.any = true;
      last_read_ = clock::now();
      reader_.feed(read_buf_->data(), static_cast<std::size_t>(n));
      std::error_code perr;
      for (;;) {
        reply r;
        if (!reader_.next(r, perr)) break;
        handle_reply_locked(std::move(r), out);
      }
      if (perr) {
        o.what = read_outcome::kind::corrupt;
        return o;
      }
      continue;
    }
    if (n == 0) {
      o.what = read_outcome::kind::eof;
      return o;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      o.what = read_outcome::kind::failed;
      o.error = errno;
    }
    return o;
  }
}

void connection::after_read(std::uint64_t gen, const read_outcome& o) {
  switch (o.what) {
    case read_outcome::kind::drained:
      return;
    case read_outcome::kind::eof:
      drop(gen, make_error_code(errc::connection_lost), "server closed the connection");
      return;
    case read_outcome::kind::failed:
      drop(gen, make_error_code(errc::connection_lost),
           "read failed: " + std::system_category().message(o.error));
      return;
    case read_outcome::kind::corrupt:
      drop(gen, make_error_code(errc::protocol_error), "unparseable reply from server");
      return;
  }
}

bool connection::poll_replies() {
  // Only blocking callers' requests: any other completion (a lock's state machine, a user's
  // asynchronous handler) keeps running on the I/O thread, in reply order. Checked first without
  // the mutex, so that a caller that cannot read does not contend for it.
  if (!direct_read_.load(std::memory_order_relaxed) ||
      others_awaiting_.load(std::memory_order_relaxed) != 0) {
    return false;
  }
  completions done;
  read_outcome o;
  std::uint64_t gen = 0;
  {
    std::unique_lock lk(mu_, std::try_to_lock);
    if (!lk.owns_lock() || state_ != state::ready || !direct_read_ || awaiting_.empty() ||
        others_awaiting_ != 0) {
      return false;
    }
    gen = generation_;
    o = read_available_locked(done);
  }
  run(done);
  if (o.what != read_outcome::kind::drained) {
    // Dropping closes the transport, which only the connection's strand may do.
    asio::post(strand_, [self = shared_from_this(), gen, o] { self->after_read(gen, o); });
  }
  return o.any;
}

void connection::written_locked(entry e) {
  if (e.remaining > 0) {
    e.req.payload = std::string();  // its bytes are in the write buffer or on the wire
    e.req.external = nullptr;
    push_awaiting_locked(std::move(e));
  } else if (opts_.pubsub) {
    answered_by_push_.push_back(true);  // a SUBSCRIBE or UNSUBSCRIBE: a push answers it
  }
}

void connection::push_awaiting_locked(entry e) {
  if (!e.req.completes_on_caller) others_awaiting_.fetch_add(1, std::memory_order_relaxed);
  if (opts_.pubsub) answered_by_push_.insert(answered_by_push_.end(), e.remaining, false);
  awaiting_.push_back(std::move(e));
}

connection::entry connection::take_awaiting_front_locked() {
  entry e = std::move(awaiting_.front());
  awaiting_.pop_front();
  if (!e.req.completes_on_caller && !e.abandoned) {
    others_awaiting_.fetch_sub(1, std::memory_order_relaxed);
  }
  return e;
}

void connection::abandon_locked(entry& e) {
  // Its late reply completes nothing, so any thread may read it: it no longer holds blocking
  // callers back from reading their own replies.
  if (!e.req.completes_on_caller) others_awaiting_.fetch_sub(1, std::memory_order_relaxed);
  e.abandoned = true;
}

void connection::clear_awaiting_locked() {
  awaiting_.clear();
  answered_by_push_.clear();
  others_awaiting_.store(0, std::memory_order_relaxed);
}

exec_result connection::unknown_outcome_locked(std::error_code ec, std::string detail) const {
  exec_result r = failure(ec, true, std::move(detail));
  if (server_client_) r.unknown_on.push_back(*server_client_);
  return r;
}

bool connection::poll_replies_of_this_thread() {
  const std::shared_ptr<connection> c = polled_by_this_thread.lock();
  return c && c->poll_replies();
}

// ---- failures, deadlines, health ----

void connection::drop(std::uint64_t gen, std::error_code ec, std::string detail) {
  completions done;
  bool was_ready = false;
  {
    std::lock_guard lk(mu_);
    if (gen != generation_ || state_ == state::closed) return;
    was_ready = state_ == state::ready;
    ++generation_;
    transport_.close();
    connect_timer_.cancel();
    ping_timer_.cancel();
    for (auto& e : awaiting_) {
      if (!e.abandoned && e.req.done) {
        done.emplace_back(std::move(e.req.done), unknown_outcome_locked(ec, detail));
      }
    }
    // Requests left unanswered (abandoned ones included) may still run on the server: the next
    // connection closes this one there first (send_setup). The latest few are kept.
    if (server_client_ && !awaiting_.empty()) {
      if (left_behind_.size() >= max_left_behind) left_behind_.erase(left_behind_.begin());
      left_behind_.push_back(*server_client_);
    }
    clear_awaiting_locked();
    server_client_.reset();
    for (auto& e : pending_) {
      if (e.req.done) {
        done.emplace_back(std::move(e.req.done),
                          failure(make_error_code(errc::not_connected), false, detail));
      }
    }
    pending_.clear();
    writing_ = false;
    last_error_ = make_error_code(errc::not_connected);
    last_error_detail_ = std::move(detail);
    sticky_error_ = false;
    if (was_ready) failures_ = 0;
    schedule_reconnect_locked();
  }
  run(done);
  if (was_ready && handlers_.on_down) handlers_.on_down(ec);
}

void connection::arm_deadline_locked(clock::time_point tp) {
  armed_deadline_ = tp;
  if (tp == clock::time_point::max()) return;
  asio::post(strand_, [self = shared_from_this(), tp] {
    std::lock_guard lk(self->mu_);
    if (self->armed_deadline_ != tp) return;  // superseded
    self->deadline_timer_.expires_at(tp);
    self->deadline_timer_.async_wait([self](std::error_code ec) { self->on_deadline(ec); });
  });
}

void connection::on_deadline(std::error_code ec) {
  if (ec) return;  // re-armed or closed
  completions done;
  bool hung = false;
  std::uint64_t gen = 0;
  {
    std::lock_guard lk(mu_);
    const auto now = clock::now();
    auto next = clock::time_point::max();
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->req.deadline <= now) {
        if (it->req.done) {
          done.emplace_back(std::move(it->req.done),
                            failure(make_error_code(errc::timeout), false,
                                    "request timed out before it could be sent"));
        }
        it = pending_.erase(it);
      } else {
        next = std::min(next, it->req.deadline);
        ++it;
      }
    }
    for (auto& e : awaiting_) {
      if (e.abandoned) continue;
      if (e.req.deadline <= now) {
        abandon_locked(e);
        if (e.req.done) {
          done.emplace_back(std::move(e.req.done),
                            unknown_outcome_locked(make_error_code(errc::timeout),
                                                   "no reply from " + opts_.address.to_string() +
                                                       " before the deadline"));
        }
        // Nothing read for as long as this request waited: the server or the path is hung.
        if (state_ == state::ready && last_read_ <= now - opts_.ping_timeout) hung = true;
      } else {
        next = std::min(next, e.req.deadline);
      }
    }
    gen = generation_;
    armed_deadline_ = clock::time_point::max();
    if (next != clock::time_point::max()) arm_deadline_locked(next);
  }
  run(done);
  if (hung) drop(gen, make_error_code(errc::connection_lost), "connection hung (no reply)");
}

void connection::on_ping_timer(std::error_code ec) {
  if (ec) return;
  bool idle = false;
  {
    std::lock_guard lk(mu_);
    if (state_ != state::ready) return;
    idle = awaiting_.empty() && pending_.empty() && !writing_;
  }
  // Pub/sub connections too: they read nothing while no message is published, so a dead
  // path (a partition, a NAT or load balancer dropping an idle connection) would go unnoticed
  // and every unlock or hand-off message sent meanwhile would be lost. In subscribed mode
  // Redis answers PING with ["pong", ""], which is a reply (not a push) and completes it.
  if (idle) {
    request r;
    const std::string_view ping[] = {"PING"};
    r.payload = encode_command(ping);
    r.deadline = clock::now() + opts_.ping_timeout;
    r.done = [](exec_result) {};  // a timeout marks the connection hung in on_deadline
    submit(std::move(r));
  }
  ping_timer_.expires_after(opts_.ping_interval);
  ping_timer_.async_wait(
      [self = shared_from_this()](std::error_code e) { self->on_ping_timer(e); });
}

void connection::close() {
  completions done;
  {
    std::lock_guard lk(mu_);
    if (state_ == state::closed) return;
    state_ = state::closed;
    ++generation_;
    for (auto& e : awaiting_) {
      if (!e.abandoned && e.req.done) {
        done.emplace_back(std::move(e.req.done), failure(make_error_code(errc::shutdown), true));
      }
    }
    clear_awaiting_locked();
    for (auto& e : pending_) {
      if (e.req.done) {
        done.emplace_back(std::move(e.req.done), failure(make_error_code(errc::shutdown), false));
      }
    }
    pending_.clear();
  }
  asio::post(strand_, [self = shared_from_this()] {
    self->transport_.close();
    self->connect_timer_.cancel();
    self->reconnect_timer_.cancel();
    self->deadline_timer_.cancel();
    self->ping_timer_.cancel();
  });
  run(done);
}

}  // namespace rlock::detail
