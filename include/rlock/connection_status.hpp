// rlock/connection_status.hpp: what a client knows of its link to the server
// (client::status()).
#pragma once

#include <string>
#include <system_error>

namespace rlock {

/// What a client knows of its link to the server: for logs, health checks and error messages.
/// A snapshot, not a promise: the next request may find the link up or down again.
struct connection_status {
  /// At least one of the client's command connections is connected and set up (AUTH, SELECT,
  /// scripts loaded).
  bool connected = false;
  /// While none is: why the latest attempt to connect failed (errc::timeout, auth_failed,
  /// tls_error, connection_refused, ...); empty while the first attempt is still under way.
  std::error_code error;
  /// That failure's description. A connect timeout names the step it cut short: "resolving
  /// the host name", "before the connection was accepted", "in the TLS handshake" or "with no
  /// answer to its setup commands".
  std::string detail;
};

}  // namespace rlock
