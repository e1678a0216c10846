// Self-test of loopback_listener: each behaviour does what hostile-server tests rely on.
#include "support/loopback_listener.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "support/loopback_address.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

using namespace std::chrono_literals;

// A connected client socket, closed on scope exit.
class client_socket {
 public:
  explicit client_socket(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    const sockaddr_in a = loopback_address(port);
    connected_ = ::connect(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
  }
  ~client_socket() { ::close(fd_); }
  client_socket(const client_socket&) = delete;
  client_socket& operator=(const client_socket&) = delete;

  int fd() const { return fd_; }
  bool connected() const { return connected_; }

  /// poll() for readability (data, EOF or error) for up to `limit`.
  bool readable_within(std::chrono::milliseconds limit) const {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(limit.count())) == 1;
  }

  /// Reads once: > 0 data, 0 EOF, < 0 error (ECONNRESET counts as closed too).
  ssize_t read_once() const {
    char buf[256];
    return ::read(fd_, buf, sizeof buf);
  }

 private:
  int fd_;
  bool connected_ = false;
};

TEST(loopback_listener, close_at_once_closes_every_connection_before_reading) {
  loopback_listener l(listener_behaviour::close_at_once);
  EXPECT_EQ(l.url(), "redis://127.0.0.1:" + std::to_string(l.port()));
  for (std::uint64_t i = 1; i <= 3; ++i) {
    client_socket c(l.port());
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.readable_within(5s));
    EXPECT_LE(c.read_once(), 0) << "closed without a byte";
    EXPECT_TRUE(l.wait_for_accepted(i, 5s));
  }
  EXPECT_EQ(l.bytes_read(), 0U);
}

TEST(loopback_listener, silent_reads_everything_and_answers_nothing) {
  loopback_listener l(listener_behaviour::silent);
  client_socket c(l.port());
  ASSERT_TRUE(c.connected());
  const std::string ping = "*1\r\n$4\r\nPING\r\n";
  ASSERT_EQ(::write(c.fd(), ping.data(), ping.size()), static_cast<ssize_t>(ping.size()));
  ASSERT_TRUE(wait_until([&] { return l.bytes_read() == ping.size(); }, 5s));
  // Everything was read; no reply and no close came back (a bounded look, not a timing claim).
  EXPECT_FALSE(c.readable_within(200ms));
  EXPECT_EQ(l.accepted(), 1U);
}

TEST(loopback_listener, never_read_lets_the_clients_writes_stall) {
  loopback_listener l(listener_behaviour::never_read);
  client_socket c(l.port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(l.wait_for_accepted(1, 5s));
  const std::vector<char> chunk(std::size_t{64} * 1024, 'x');
  std::size_t written = 0;
  bool stalled = false;
  // Bounded: loopback buffers are a few MiB at most, so 1 GiB is never reached.
  for (int i = 0; i < 16 * 1024 && !stalled; ++i) {
    const ssize_t n = ::send(c.fd(), chunk.data(), chunk.size(), MSG_DONTWAIT);
    if (n > 0) {
      written += static_cast<std::size_t>(n);
    } else {
      stalled = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      ASSERT_TRUE(stalled) << "send failed: errno " << errno;
    }
  }
  EXPECT_TRUE(stalled) << "wrote " << written << " bytes without stalling";
  EXPECT_EQ(l.bytes_read(), 0U);
  EXPECT_FALSE(c.readable_within(100ms)) << "never_read must not close";
}

TEST(loopback_listener, never_accept_leaves_a_connect_pending) {
  loopback_listener l(listener_behaviour::never_accept);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(fd, 0);
  const sockaddr_in a = loopback_address(l.port());
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  const int err = errno;
  EXPECT_EQ(rc, -1);
  EXPECT_EQ(err, EINPROGRESS);
  // The handshake neither completes (writable) nor fails (error) within a bounded look.
  pollfd p{fd, POLLOUT, 0};
  EXPECT_EQ(::poll(&p, 1, 200), 0) << "revents " << p.revents;
  ::close(fd);
  EXPECT_EQ(l.accepted(), 0U);
}

TEST(loopback_listener, destructor_closes_accepted_connections) {
  auto l = std::make_unique<loopback_listener>(listener_behaviour::silent);
  client_socket c(l->port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(l->wait_for_accepted(1, 5s));
  l.reset();
  ASSERT_TRUE(c.readable_within(5s));
  EXPECT_LE(c.read_once(), 0);
}

}  // namespace
}  // namespace rlock::test
