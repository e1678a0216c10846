#include "faults/fault_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

namespace rlock::faults {
namespace {

using clock_type = std::chrono::steady_clock;

// Per direction, at most this much is read ahead of the peer (back-pressure beyond it).
constexpr std::size_t max_buffered = 1U << 20U;
constexpr std::size_t read_size = std::size_t{64} * 1024U;

struct chunk {
  std::string data{};
  std::size_t offset = 0;
  clock_type::time_point due{};
};

struct direction {
  std::deque<chunk> queue{};
  std::size_t bytes = 0;

  bool due(clock_type::time_point now) const { return !queue.empty() && queue.front().due <= now; }
};

struct link {
  int client = -1;
  int server = -1;
  direction up{};    // client -> server
  direction down{};  // server -> client
  bool closed = false;
  bool frozen = false;   // open when freeze_existing was set: not polled until it is left
  int client_slot = -1;  // index in the pollfd array of this round, -1 if not polled
  int server_slot = -1;
};

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

void set_nodelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void close_with_rst(int fd) {
  if (fd < 0) return;
  const linger l{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

sockaddr_in loopback_address(const std::string& host, std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) {
    throw std::runtime_error("fault_proxy: not an IPv4 address: " + host);
  }
  return a;
}

}  // namespace

std::string_view to_string(proxy_mode m) {
  switch (m) {
    case proxy_mode::pass:
      return "pass";
    case proxy_mode::delay:
      return "delay";
    case proxy_mode::drop_replies:
      return "drop_replies";
    case proxy_mode::drop_one_reply:
      return "drop_one_reply";
    case proxy_mode::hang:
      return "hang";
    case proxy_mode::reset:
      return "reset";
    case proxy_mode::freeze_existing:
      return "freeze_existing";
  }
  return "unknown";
}

struct fault_proxy::state {
  std::string upstream_host{};
  std::uint16_t upstream_port = 0;
  int listen_fd = -1;
  std::uint16_t port = 0;
  int wake_read = -1;
  int wake_write = -1;
  std::thread thread{};

  // Requests from other threads, and the loop's acknowledgement.
  mutable std::mutex mu{};
  std::condition_variable applied_cv{};
  proxy_mode requested = proxy_mode::pass;
  std::chrono::milliseconds requested_delay{0};
  std::uint64_t requested_gen = 0;
  std::uint64_t applied_gen = 0;
  std::string requested_pattern{};
  bool stopping = false;
  proxy_stats stats{};  // guarded by mu; updated by the loop

  // Owned by the loop thread.
  proxy_mode mode = proxy_mode::pass;
  std::chrono::milliseconds delay{0};
  std::string pattern{};  // hang_on's, until it is seen
  std::list<link> links{};

  void wake() const {
    const char b = 1;
    [[maybe_unused]] const auto n = ::write(wake_write, &b, 1);
  }
  void count(std::uint64_t proxy_stats::*field, std::uint64_t n = 1) {
    std::lock_guard lk(mu);
    stats.*field += n;
  }
  void close_link(link& l, bool rst) {
    if (l.closed) return;
    if (rst) {
      count(&proxy_stats::resets);
      close_with_rst(l.client);
      close_with_rst(l.server);
    } else {
      ::close(l.client);
      ::close(l.server);
    }
    l.client = l.server = -1;
    l.closed = true;
  }
  void accept_all();
  void read_side(link& l, bool from_client, clock_type::time_point now);
  void write_side(link& l, bool to_server, clock_type::time_point now);
  void loop();
};

void fault_proxy::state::accept_all() {
  for (;;) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN: nothing more (or a transient error: the next poll retries)
    count(&proxy_stats::accepted);
    if (mode == proxy_mode::reset) {
      count(&proxy_stats::resets);  // counted first: the client may look as soon as it is reset
      close_with_rst(fd);
      continue;
    }
    const int up = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_in a = loopback_address(upstream_host, upstream_port);
    // Loopback: a blocking connect completes (or is refused) at once.
    if (up < 0 || ::connect(up, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
      if (up >= 0) ::close(up);
      ::close(fd);
      continue;
    }
    set_nonblocking(up);
    set_nodelay(up);
    set_nodelay(fd);
    link l;
    l.client = fd;
    l.server = up;
    links.push_back(std::move(l));
  }
}

void fault_proxy::state::read_side(link& l, bool from_client, clock_type::time_point now) {
  char buf[read_size];
  const int fd = from_client ? l.client : l.server;
  const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n <= 0) {
    close_link(l, false);
    return;
  }
  if (!from_client && (mode == proxy_mode::drop_replies || mode == proxy_mode::drop_one_reply)) {
    if (mode == proxy_mode::drop_one_reply) {
      mode = proxy_mode::pass;
      std::lock_guard lk(mu);
      if (applied_gen == requested_gen) requested = proxy_mode::pass;  // what mode() reports
    }
    count(&proxy_stats::replies_dropped);
    close_link(l, false);
    return;
  }
  direction& d = from_client ? l.up : l.down;
  chunk c;
  c.data.assign(buf, static_cast<std::size_t>(n));
  c.due = mode == proxy_mode::delay ? now + delay : now;
  d.bytes += c.data.size();
  const bool matched =
      !from_client && !pattern.empty() && c.data.find(pattern) != std::string::npos;
  d.queue.push_back(std::move(c));
  if (matched) {
    mode = proxy_mode::hang;
    pattern.clear();
    std::lock_guard lk(mu);
    if (applied_gen == requested_gen) requested = proxy_mode::hang;  // what mode() reports
  }
}

void fault_proxy::state::write_side(link& l, bool to_server, clock_type::time_point now) {
  direction& d = to_server ? l.up : l.down;
  const int fd = to_server ? l.server : l.client;
  while (d.due(now)) {
    chunk& c = d.queue.front();
    const ssize_t n = ::send(fd, c.data.data() + c.offset, c.data.size() - c.offset, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) {
      close_link(l, false);
      return;
    }
    const auto sent = static_cast<std::size_t>(n);
    c.offset += sent;
    d.bytes -= sent;
    count(to_server ? &proxy_stats::bytes_up : &proxy_stats::bytes_down, sent);
    if (c.offset == c.data.size()) d.queue.pop_front();
  }
}

void fault_proxy::state::loop() {
  std::vector<pollfd> fds;
  for (;;) {
    {
      std::lock_guard lk(mu);
      if (stopping) break;
      if (applied_gen != requested_gen) {
        mode = requested;
        delay = requested_delay;
        pattern = requested_pattern;
        for (auto& l : links) l.frozen = mode == proxy_mode::freeze_existing;
        if (mode == proxy_mode::reset) {
          for (auto& l : links) {
            if (!l.closed) {
              close_with_rst(l.client);
              close_with_rst(l.server);
              l.client = l.server = -1;
              l.closed = true;
              ++stats.resets;
            }
          }
        }
        stats.open = static_cast<std::uint64_t>(
            std::count_if(links.begin(), links.end(), [](const link& l) { return !l.closed; }));
        applied_gen = requested_gen;
        applied_cv.notify_all();
      }
    }
    links.remove_if([](const link& l) { return l.closed; });
    {
      std::lock_guard lk(mu);
      stats.open = links.size();
    }
    const auto now = clock_type::now();
    fds.clear();
    fds.push_back({wake_read, POLLIN, 0});
    const bool relaying = mode != proxy_mode::hang;
    if (relaying) fds.push_back({listen_fd, POLLIN, 0});
    auto next_due = clock_type::time_point::max();
    for (auto& l : links) {
      l.client_slot = l.server_slot = -1;
      if (!relaying || l.frozen) continue;
      short client_events = 0;
      short server_events = 0;
      if (l.up.bytes < max_buffered) client_events |= POLLIN;
      if (l.down.bytes < max_buffered) server_events |= POLLIN;
      if (l.down.due(now)) client_events |= POLLOUT;
      if (l.up.due(now)) server_events |= POLLOUT;
      for (const direction* d : {&l.up, &l.down}) {
        if (!d->queue.empty() && d->queue.front().due > now) {
          next_due = std::min(next_due, d->queue.front().due);
        }
      }
      l.client_slot = static_cast<int>(fds.size());
      fds.push_back({l.client, client_events, 0});
      l.server_slot = static_cast<int>(fds.size());
      fds.push_back({l.server, server_events, 0});
    }
    int timeout_ms = 200;  // also bounds how late a stop request is noticed
    if (next_due != clock_type::time_point::max()) {
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next_due - now).count();
      timeout_ms = static_cast<int>(std::clamp<long long>(wait, 0, timeout_ms));
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) {
      char drain[64];
      while (::read(wake_read, drain, sizeof drain) > 0) {
      }
    }
    if (relaying && (fds[1].revents & POLLIN)) accept_all();
    const auto after = clock_type::now();
    for (auto& l : links) {
      if (l.client_slot < 0 || l.closed) continue;
      const short cr = fds[static_cast<std::size_t>(l.client_slot)].revents;
      const short sr = fds[static_cast<std::size_t>(l.server_slot)].revents;
      if (cr & (POLLIN | POLLHUP | POLLERR)) read_side(l, true, after);
      if (!l.closed && (sr & (POLLIN | POLLHUP | POLLERR))) read_side(l, false, after);
      // A hang_on match in this round holds its chunk too: nothing more is written.
      if (mode == proxy_mode::hang) continue;
      if (!l.closed) write_side(l, true, after);
      if (!l.closed) write_side(l, false, after);
    }
  }
  for (auto& l : links) close_link(l, false);
  links.clear();
}

fault_proxy::fault_proxy(std::uint16_t upstream_port, std::string upstream_host)
    : state_(std::make_unique<state>()) {
  state_->upstream_host = std::move(upstream_host);
  state_->upstream_port = upstream_port;
  (void)loopback_address(state_->upstream_host, upstream_port);  // validates the host
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    throw std::runtime_error("fault_proxy: pipe2: " + std::generic_category().message(errno));
  }
  state_->wake_read = pipe_fds[0];
  state_->wake_write = pipe_fds[1];
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in a = loopback_address("127.0.0.1", 0);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(fd, 128) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const std::string why = std::generic_category().message(errno);
    if (fd >= 0) ::close(fd);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    throw std::runtime_error("fault_proxy: cannot listen on 127.0.0.1: " + why);
  }
  state_->listen_fd = fd;
  state_->port = ntohs(a.sin_port);
  state_->thread = std::thread([s = state_.get()] { s->loop(); });
}

fault_proxy::~fault_proxy() {
  {
    std::lock_guard lk(state_->mu);
    state_->stopping = true;
  }
  state_->wake();
  if (state_->thread.joinable()) state_->thread.join();
  ::close(state_->listen_fd);
  ::close(state_->wake_read);
  ::close(state_->wake_write);
}

std::uint16_t fault_proxy::port() const {
  return state_->port;
}

std::string fault_proxy::url() const {
  return "redis://127.0.0.1:" + std::to_string(port());
}

void fault_proxy::hang_on(std::string pattern) {
  std::unique_lock lk(state_->mu);
  state_->requested = proxy_mode::pass;
  state_->requested_delay = std::chrono::milliseconds(0);
  state_->requested_pattern = std::move(pattern);
  const std::uint64_t gen = ++state_->requested_gen;
  state_->wake();
  state_->applied_cv.wait_for(lk, std::chrono::seconds(5),
                              [&] { return state_->applied_gen >= gen || state_->stopping; });
}

void fault_proxy::set_mode(proxy_mode mode, std::chrono::milliseconds delay) {
  std::unique_lock lk(state_->mu);
  state_->requested = mode;
  state_->requested_delay = delay;
  state_->requested_pattern.clear();
  const std::uint64_t gen = ++state_->requested_gen;
  state_->wake();
  state_->applied_cv.wait_for(lk, std::chrono::seconds(5),
                              [&] { return state_->applied_gen >= gen || state_->stopping; });
}

proxy_mode fault_proxy::mode() const {
  std::lock_guard lk(state_->mu);
  return state_->requested;
}

proxy_stats fault_proxy::stats() const {
  std::lock_guard lk(state_->mu);
  return state_->stats;
}

}  // namespace rlock::faults
