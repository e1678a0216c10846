// raw_client: a tiny blocking Redis client (hiredis 0.14 synchronous API, RESP2, plain TCP) for
// tests to inspect and poke the server from outside the library under test.
//
// Guarantees:
//  - Arguments are binary-safe (any bytes, including NUL).
//  - The constructor connects (bounded by `timeout`, which must be > 0 and also bounds every
//    command() and every socket write), authenticates if a password is given
//    (AUTH password, or AUTH username password), and throws std::runtime_error on any failure,
//    including an AUTH error reply.
//  - command() returns error replies as kind::error; it throws std::runtime_error on I/O errors,
//    on a closed connection and when no reply arrives within `timeout`.
//  - After command() has thrown, the client is "broken": the reply stream can no longer be
//    matched to commands, so every further call throws until reconnect() succeeds.
//  - read() is for pub/sub and pipelining: it waits for the next reply with poll(2), so a read()
//    timeout returns std::nullopt and leaves the client fully usable (unlike a hiredis socket
//    timeout, which in 0.14 marks the context as failed).
//  - command() returns the *next* reply on the connection. Do not call it while replies to
//    send() are still unread, or on a connection in subscribed mode: use send()/read() there.
//  - A write to a connection the server has closed never raises SIGPIPE in the test process.
//  - One raw_client must not be used by two threads at once; different clients are independent.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/raw_reply.hpp"

struct redisContext;

namespace rlock::test {

class raw_client {
 public:
  raw_client(std::string host, std::uint16_t port,
             std::chrono::milliseconds timeout = std::chrono::seconds(5), std::string password = {},
             std::string username = {});
  ~raw_client();
  raw_client(raw_client&&) noexcept;
  raw_client& operator=(raw_client&&) noexcept;
  raw_client(const raw_client&) = delete;
  raw_client& operator=(const raw_client&) = delete;

  // Sends one command and waits (at most the constructor's timeout) for its reply.
  raw_reply command(const std::vector<std::string>& args);

  // Queues one command; it is written by the next read() or command(). Never waits for a reply.
  void send(const std::vector<std::string>& args);

  // Flushes queued commands, then waits up to `timeout` for the next reply (0ms = poll once).
  // std::nullopt on timeout. Throws std::runtime_error on I/O error or closed connection.
  std::optional<raw_reply> read(std::chrono::milliseconds timeout);

  // Drops the connection (and anything queued or unread) and connects + authenticates again.
  void reconnect();

  // true after an I/O error, a closed connection or a command() timeout (see above).
  bool broken() const { return broken_; }

  const std::string& host() const { return host_; }
  std::uint16_t port() const { return port_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  struct context_deleter {
    void operator()(redisContext* context) const;
  };

  void connect();
  void flush();
  [[noreturn]] void fail(const std::string& what);

  std::string host_;
  std::uint16_t port_;
  std::chrono::milliseconds timeout_;
  std::string password_;
  std::string username_;
  std::unique_ptr<redisContext, context_deleter> context_;
  bool broken_ = false;
};

}  // namespace rlock::test
