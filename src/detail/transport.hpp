// One byte stream to a Redis server: TCP, TLS over TCP, or a unix socket, behind one interface.
// Not thread-safe: the owning connection serialises every call on its strand.
#pragma once

#include <asio.hpp>
#include <asio/ssl.hpp>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include "rlock/config.hpp"

namespace rlock::detail {

/// Builds the TLS context for rediss:// addresses from the user's options.
/// Throws rlock::error(errc::tls_error) when a certificate or key file cannot be loaded.
std::shared_ptr<asio::ssl::context> make_tls_context(const tls_options& opts);

class transport {
 public:
  using executor = asio::strand<asio::io_context::executor_type>;
  using tcp = asio::ip::tcp;
  using tls_stream = asio::ssl::stream<tcp::socket>;
  using unix_socket = asio::local::stream_protocol::socket;
  /// Completion of async_connect: error, and a human-readable detail on failure.
  using connect_handler = std::function<void(std::error_code, std::string)>;

  /// How far the latest async_connect got: a connect timeout's message names the step that
  /// did not finish (a TLS handshake that never ends suggests a plaintext port; a name that
  /// never resolves or a SYN never answered does not).
  enum class connect_phase { resolving, connecting, handshaking, connected };

  explicit transport(executor ex) : ex_(std::move(ex)), resolver_(ex_) {}

  [[nodiscard]] connect_phase phase() const { return phase_; }

  /// Resolves, connects and (for rediss://) performs the TLS handshake. Errors are mapped to
  /// errc::connection_refused (unreachable, refused, DNS) and errc::tls_error (handshake).
  void async_connect(const server_address& addr, std::shared_ptr<asio::ssl::context> tls,
                     const tls_options& opts, connect_handler done);

  template <class Buffers, class Handler>
  void async_write(const Buffers& b, Handler&& h) {
    std::visit(
        [&](auto& s) {
          if constexpr (std::is_same_v<std::decay_t<decltype(s)>, std::monostate>) {
            asio::post(ex_, [h = std::forward<Handler>(h)]() mutable {
              h(asio::error::not_connected, 0);
            });
          } else if constexpr (std::is_same_v<std::decay_t<decltype(s)>,
                                              std::shared_ptr<tls_stream>>) {
            // The handler keeps the TLS stream alive: its state must outlive the operation.
            asio::async_write(*s, b,
                              [keep = s, h = std::forward<Handler>(h)](
                                  std::error_code ec, std::size_t n) mutable { h(ec, n); });
          } else {
            asio::async_write(s, b, std::forward<Handler>(h));
          }
        },
        stream_);
  }

  template <class Buffer, class Handler>
  void async_read_some(const Buffer& b, Handler&& h) {
    std::visit(
        [&](auto& s) {
          if constexpr (std::is_same_v<std::decay_t<decltype(s)>, std::monostate>) {
            asio::post(ex_, [h = std::forward<Handler>(h)]() mutable {
              h(asio::error::not_connected, 0);
            });
          } else if constexpr (std::is_same_v<std::decay_t<decltype(s)>,
                                              std::shared_ptr<tls_stream>>) {
            s->async_read_some(b, [keep = s, h = std::forward<Handler>(h)](
                                      std::error_code ec, std::size_t n) mutable { h(ec, n); });
          } else {
            s.async_read_some(b, std::forward<Handler>(h));
          }
        },
        stream_);
  }

  /// Waits until the socket is readable; the reading is then the caller's (recv on
  /// direct_fd()). Plain TCP and unix sockets only: for TLS, or when closed, it completes with
  /// operation_not_supported.
  template <class Handler>
  void async_wait_readable(Handler&& h) {
    if (auto* t = std::get_if<tcp::socket>(&stream_)) {
      t->async_wait(asio::socket_base::wait_read, std::forward<Handler>(h));
    } else if (auto* u = std::get_if<unix_socket>(&stream_)) {
      u->async_wait(asio::socket_base::wait_read, std::forward<Handler>(h));
    } else {
      asio::post(ex_, [h = std::forward<Handler>(h)]() mutable {
        h(asio::error::operation_not_supported);
      });
    }
  }

  /// The socket's descriptor when writes may bypass Asio (plain TCP and unix sockets only;
  /// -1 for TLS or when closed). The caller must serialise such writes with async_write.
  int direct_fd();

  /// Closes the stream and cancels pending operations; safe to call repeatedly.
  void close();

 private:
  template <class S>
  static S& deref(S& s) {
    return s;
  }
  static tls_stream& deref(std::shared_ptr<tls_stream>& s) { return *s; }

  using connected_handler = std::function<void(std::error_code)>;
  /// Connects to eps[i], then the next on failure (Asio's range connect, but each socket opened
  /// close-on-exec). `gen`: the connect this belongs to; a close() or newer connect ends it.
  void connect_tcp(std::shared_ptr<const std::vector<tcp::endpoint>> eps, std::size_t i,
                   std::error_code last, std::uint64_t gen, connected_handler done);

  executor ex_;
  std::atomic<std::uint64_t> connect_gen_{0};
  connect_phase phase_ = connect_phase::resolving;
  tcp::resolver resolver_;
  std::variant<std::monostate, tcp::socket, std::shared_ptr<tls_stream>, unix_socket> stream_;
};

}  // namespace rlock::detail
