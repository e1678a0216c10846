// connection: reading replies (on the I/O thread, or by a polling caller on a plain socket) and
// the requests awaiting them.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "detail/connection.hpp"

namespace rlock::detail {
namespace {

/// Why a stream that is not RESP was dropped: most often something other than Redis on the
/// port (a web server, an HTTP proxy, a TLS server on a redis:// URL).
std::string unparseable(const resp_reader& r) {
  std::string text = "unparseable reply from server";
  if (const std::string why = r.error_text(); !why.empty()) text += " (" + why + ")";
  return text + ": is it a Redis server?";
}

}  // namespace

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
  const std::string corrupt = perr ? unparseable(reader_) : std::string();
  run(done);
  if (perr) {
    drop(gen, perr, corrupt);
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
  if (--e.remaining > 0) {
    // An intermediate reply of a pipelined group; the command's own, before its WAIT.
    if (e.req.trailing_wait && e.remaining == 1) e.kept = std::move(r);
    return;
  }
  entry done = take_awaiting_front_locked();
  if (done.abandoned || !done.req.done) return;
  exec_result res;
  res.written = true;
  if (done.req.trailing_wait) {
    // WAIT's reply: the acknowledging replicas, or an error (a replica, an ACL without WAIT);
    // then the command's reply is the one reported.
    if (r.is_integer()) {
      res.replicas_acked = r.integer();
    } else {
      res.detail = r.is_error() ? std::string(r.str()) : "WAIT answered " + r.to_string();
    }
    r = std::move(done.kept);
  }
  if (r.is_error()) {
    res.ec = make_error_code(classify_server_error(r.str(), done.req.from_script));
    // Redis ends some error texts with a space ("... with args beginning with: 'x' "); the
    // detail goes into messages, followed by more text.
    std::string_view text = r.str();
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    res.detail = std::string(text);
    // Sentinel mode: the master was demoted under this connection (Sentinel closes a demoted
    // master's clients, but only once it has reconfigured it). Reconnecting asks the Sentinels
    // for the new one.
    if (res.ec == errc::read_only && !opts_.sentinels.empty()) {
      asio::post(strand_, [self = shared_from_this(), gen = generation_] {
        self->drop(gen, make_error_code(errc::connection_lost),
                   self->opts_.address.to_string() +
                       " is a replica now (READONLY): asking the Sentinels for the master");
      });
    }
  }
  res.value = std::move(r);
  if (done.req.wait_connected_timeout.count() > 0) {
    complete_counted(std::move(done), std::move(res), out);
    return;
  }
  out.emplace_back(std::move(done.req.done), std::move(res));
}

void connection::complete_counted(entry done, exec_result res, completions& out) {
  res.replicas_connected = done.wait_counted;
  const auto& census = opts_.census;
  if (!census || done.wait_counted < 0 || res.replicas_acked < 0) {
    out.emplace_back(std::move(done.req.done), std::move(res));
    return;
  }
  if (res.replicas_acked > 0 || done.wait_asked == 0) {
    // Counted whatever the replicas now: one acknowledged, or none was asked for. The count
    // is taken again (in the background) when WAIT met another than it asked for (a replica
    // lagging, gone or new) or is stale (a replica that joined does not show in WAIT 0's reply).
    const bool recount_now = res.replicas_acked != done.wait_asked || census->begin_stale_recount();
    out.emplace_back(std::move(done.req.done), std::move(res));
    if (recount_now) {
      out.emplace_back(
          [self = shared_from_this(), deadline = done.req.deadline](exec_result) {
            self->recount(deadline, [](std::optional<long long>) {});
          },
          exec_result{});
    }
    return;
  }
  // None of those asked for acknowledged: counted only if none of them is connected any more.
  // The recount runs once the completions run (not under mu_, which submit takes). exec_result
  // holds a reply, which is not copyable, and a std::function's target must be.
  auto held = std::make_shared<exec_result>(std::move(res));
  out.emplace_back(
      [self = shared_from_this(), cb = std::move(done.req.done), held, asked = done.wait_asked,
       deadline = done.req.deadline](exec_result) {
        self->recount(deadline, [cb, held, asked](std::optional<long long> counted) {
          if (counted) held->replicas_connected = std::min(asked, *counted);
          if (cb) cb(std::move(*held));
        });
      },
      exec_result{});
}

void connection::recount(clock::time_point deadline,
                         std::function<void(std::optional<long long>)> then) {
  request info;
  const std::string_view cmd[] = {"INFO", "replication"};
  info.payload = encode_command(cmd);
  // Within the request's own deadline, but never less than a moment: its write has run.
  info.deadline = std::max(deadline, clock::now() + std::chrono::milliseconds(100));
  info.done = [census = opts_.census, then = std::move(then)](exec_result r) {
    std::optional<long long> counted;
    if (!r.ec && r.value.is_string()) counted = connected_replicas_in(r.value.str());
    if (counted) census->counted(*counted);
    census->recount_done();
    then(counted);
  };
  submit(std::move(info));
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
        o.detail = unparseable(reader_);
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
      drop(gen, make_error_code(errc::protocol_error), o.detail);
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

}  // namespace rlock::detail
