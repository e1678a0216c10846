// connection: its life, submitting and writing requests, and failures, deadlines and health.
// Connecting and the setup commands are in connection_connect.cpp, reading replies and the
// requests awaiting them in connection_replies.cpp.
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
// ---- submitting and writing ----

void connection::submit(request r) {
  std::unique_lock lk(mu_);
  if (state_ == state::closed) {
    lk.unlock();
    complete_closed([cb = std::move(r.done)]() mutable {
      if (cb) cb(exec_failure(make_error_code(errc::shutdown), false));
    });
    return;
  }
  if (state_ == state::backoff && !queue_for_connect_) {
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
      if (cb) cb(exec_failure(ec, false, std::move(detail)));
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
  append_wait_locked(e);
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

void connection::append_wait_locked(entry& e) const {
  if (e.req.wait_connected_timeout.count() <= 0 || e.wait_asked >= 0) return;
  e.wait_counted = opts_.census ? opts_.census->count() : -1;
  e.wait_asked = e.wait_counted >= 0 ? e.wait_counted : 1;
  const std::string replicas = std::to_string(e.wait_asked);
  const std::string wait_ms = std::to_string(e.req.wait_connected_timeout.count());
  const std::string_view wait[] = {"WAIT", replicas, wait_ms};
  if (e.req.external != nullptr) {
    e.req.payload = *e.req.external;
    e.req.external = nullptr;
  }
  encode_command(wait, e.req.payload);
}

void connection::start_write_locked(std::unique_lock<std::mutex>& lk) {
  if (writing_ || state_ != state::ready || pending_.empty()) return;
  write_buf_.clear();
  while (!pending_.empty()) {
    entry& e = pending_.front();
    append_wait_locked(e);
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

bool connection::poll_replies_of_this_thread() {
  const std::shared_ptr<connection> c = polled_by_this_thread.lock();
  return c && c->poll_replies();
}

exec_result connection::unknown_outcome_locked(std::error_code ec, std::string detail) const {
  exec_result r = exec_failure(ec, true, std::move(detail));
  if (server_client_) r.unknown_on.push_back(*server_client_);
  return r;
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
    // A link that was up for a while (CLIENT KILL, a server or proxy closing connections, a
    // failover demoting the master) connects again at once, and the requests not written yet
    // wait for it, within their deadlines, as for the first connect: they would otherwise fail
    // with not_connected and wait out a retry delay (retry_delay_base's jitter, up to seconds)
    // for a link back within milliseconds. One that drops sooner backs off. (A pub/sub
    // connection's subscriber sends nothing while it is down and subscribes every channel
    // again once it is up: a SUBSCRIBE kept, or queued meanwhile, would go out twice.)
    const bool at_once = was_ready && clock::now() - ready_at_ >= stable_link;
    const bool keep_unwritten = at_once && !opts_.pubsub;
    if (!keep_unwritten) {
      for (auto& e : pending_) {
        if (e.req.done) {
          done.emplace_back(std::move(e.req.done),
                            exec_failure(make_error_code(errc::not_connected), false, detail));
        }
      }
      pending_.clear();
    }
    writing_ = false;
    last_error_ = make_error_code(errc::not_connected);
    last_error_detail_ = detail;
    sticky_error_ = false;
    if (at_once) {
      queue_for_connect_ = keep_unwritten;
      arm_reconnect_locked(std::chrono::milliseconds(0));
    } else {
      schedule_reconnect_locked();
    }
  }
  run(done);
  if (!was_ready) return;
  if (opts_.counters) client_counters::add(opts_.counters->disconnects);
  if (handlers_.on_down) handlers_.on_down(ec);
  if (handlers_.on_link) {
    handlers_.on_link({.what = link_report::change::down,
                       .server = opts_.address.to_string(),
                       .error = ec,
                       .detail = std::move(detail)});
  }
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
                            exec_failure(make_error_code(errc::timeout), false,
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
        done.emplace_back(std::move(e.req.done),
                          exec_failure(make_error_code(errc::shutdown), true));
      }
    }
    clear_awaiting_locked();
    for (auto& e : pending_) {
      if (e.req.done) {
        done.emplace_back(std::move(e.req.done),
                          exec_failure(make_error_code(errc::shutdown), false));
      }
    }
    pending_.clear();
  }
  asio::post(strand_, [self = shared_from_this()] {
    self->stop_sentinel_query();
    self->transport_.close();
    self->connect_timer_.cancel();
    self->reconnect_timer_.cancel();
    self->deadline_timer_.cancel();
    self->ping_timer_.cancel();
  });
  run(done);
}

}  // namespace rlock::detail
