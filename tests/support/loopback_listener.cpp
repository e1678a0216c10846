// loopback_listener: accept-and-close, accept-and-silence, accept-and-never-read and
// never-accept servers on loopback (see the header for the guarantees).
#include "support/loopback_listener.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "support/loopback_address.hpp"

namespace rlock::test {
namespace {

// Receive buffer of accepted sockets in never_read mode: small, so a client's writes stall soon.
constexpr int small_rcvbuf = 4096;

void close_fd(int fd) {
  if (fd >= 0) ::close(fd);
}

[[noreturn]] void fail(const char* what) {
  throw std::runtime_error(std::string("loopback_listener: ") + what + ": " +
                           std::system_category().message(errno));
}

}  // namespace

struct loopback_listener::state {
  listener_behaviour behaviour;
  int listen_fd = -1;
  std::array<int, 2> wake{-1, -1};  // pipe: the destructor writes to stop the thread
  std::uint16_t port = 0;
  std::vector<int> clients{};  // owned by the thread until it has been joined
  std::atomic<std::uint64_t> bytes{0};
  mutable std::mutex mu{};
  mutable std::condition_variable cv{};
  std::uint64_t accepted = 0;  // guarded by mu
  std::thread thread{};

  explicit state(listener_behaviour b) : behaviour(b) {}

  void run() {
    std::vector<char> buf(std::size_t{64} * 1024);
    for (;;) {
      std::vector<pollfd> fds;
      fds.push_back({wake[0], POLLIN, 0});
      // never_accept leaves its queue full: poll() ignores a negative descriptor.
      fds.push_back({behaviour == listener_behaviour::never_accept ? -1 : listen_fd, POLLIN, 0});
      if (behaviour == listener_behaviour::silent ||
          behaviour == listener_behaviour::answers_http) {
        for (const int c : clients) fds.push_back({c, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[0].revents != 0) return;
      if ((fds[1].revents & POLLIN) != 0) accept_one();
      for (std::size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        const ssize_t n = ::read(fds[i].fd, buf.data(), buf.size());
        if (n > 0) {
          bytes += static_cast<std::uint64_t>(n);
          if (behaviour == listener_behaviour::answers_http) answer_http(fds[i].fd);
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          forget(fds[i].fd);  // the client closed: nothing more to read
        }
      }
    }
  }

  void accept_one() {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (behaviour == listener_behaviour::close_at_once) {
      ::close(fd);
    } else {
      clients.push_back(fd);
    }
    {
      const std::lock_guard lk(mu);
      ++accepted;
    }
    cv.notify_all();
  }

  // What a web server or an HTTP proxy sends back to bytes that are not HTTP.
  void answer_http(int fd) {
    static constexpr std::string_view response =
        "HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
    [[maybe_unused]] const ssize_t n = ::send(fd, response.data(), response.size(), MSG_NOSIGNAL);
    forget(fd);
  }

  void forget(int fd) {
    std::erase(clients, fd);
    ::close(fd);
  }
};

loopback_listener::loopback_listener(listener_behaviour behaviour)
    : state_(std::make_unique<state>(behaviour)) {
  state& s = *state_;
  s.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s.listen_fd < 0) fail("socket");
  if (behaviour == listener_behaviour::never_read) {
    // Inherited by accepted sockets; must be set before listen() to shrink the TCP window.
    ::setsockopt(s.listen_fd, SOL_SOCKET, SO_RCVBUF, &small_rcvbuf, sizeof small_rcvbuf);
  }
  sockaddr_in a = loopback_address(0);
  socklen_t len = sizeof a;
  auto* addr = reinterpret_cast<sockaddr*>(&a);
  // never_accept: a backlog of 0 still queues one connection (Linux), made below.
  const int backlog = behaviour == listener_behaviour::never_accept ? 0 : 64;
  if (::bind(s.listen_fd, addr, len) != 0 || ::listen(s.listen_fd, backlog) != 0 ||
      ::getsockname(s.listen_fd, addr, &len) != 0) {
    const int saved = errno;
    close_fd(s.listen_fd);
    errno = saved;
    fail("bind/listen");
  }
  s.port = ntohs(a.sin_port);
  if (behaviour == listener_behaviour::never_accept) {
    // The one connection the queue holds; it is never accepted, and closed with the listener.
    const int filler = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (filler < 0 || ::connect(filler, addr, len) != 0) {
      const int saved = errno;
      close_fd(filler);
      close_fd(s.listen_fd);
      errno = saved;
      fail("filling the accept queue");
    }
    s.clients.push_back(filler);
  }
  if (::pipe2(s.wake.data(), O_CLOEXEC) != 0) {
    const int saved = errno;
    close_fd(s.listen_fd);
    errno = saved;
    fail("pipe2");
  }
  s.thread = std::thread([&s] { s.run(); });
}

loopback_listener::~loopback_listener() {
  state& s = *state_;
  const char stop = 's';
  [[maybe_unused]] const ssize_t n = ::write(s.wake[1], &stop, 1);
  if (s.thread.joinable()) s.thread.join();
  for (const int c : s.clients) close_fd(c);
  close_fd(s.listen_fd);
  close_fd(s.wake[0]);
  close_fd(s.wake[1]);
}

std::uint16_t loopback_listener::port() const {
  return state_->port;
}

std::string loopback_listener::url() const {
  return "redis://127.0.0.1:" + std::to_string(state_->port);
}

std::uint64_t loopback_listener::accepted() const {
  const std::lock_guard lk(state_->mu);
  return state_->accepted;
}

std::uint64_t loopback_listener::bytes_read() const {
  return state_->bytes.load();
}

bool loopback_listener::wait_for_accepted(std::uint64_t n, std::chrono::milliseconds limit) const {
  std::unique_lock lk(state_->mu);
  return state_->cv.wait_for(lk, limit, [&] { return state_->accepted >= n; });
}

}  // namespace rlock::test
