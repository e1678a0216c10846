#include "detail/transport.hpp"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "rlock/error.hpp"

namespace rlock::detail {

std::shared_ptr<asio::ssl::context> make_tls_context(const tls_options& opts) {
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  std::error_code ec;
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                   asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                   asio::ssl::context::no_tlsv1_1);
  if (!opts.ca_file.empty()) {
    ctx->load_verify_file(opts.ca_file, ec);
    throw_if(ec ? make_error_code(errc::tls_error) : std::error_code{},
             "cannot load TLS CA file '" + opts.ca_file + "': " + ec.message());
  } else {
    ctx->set_default_verify_paths(ec);
  }
  if (!opts.cert_file.empty()) {
    ctx->use_certificate_chain_file(opts.cert_file, ec);
    throw_if(ec ? make_error_code(errc::tls_error) : std::error_code{},
             "cannot load TLS certificate '" + opts.cert_file + "': " + ec.message());
    ctx->use_private_key_file(opts.key_file.empty() ? opts.cert_file : opts.key_file,
                              asio::ssl::context::pem, ec);
    throw_if(ec ? make_error_code(errc::tls_error) : std::error_code{},
             "cannot load TLS key '" + opts.key_file + "': " + ec.message());
  }
  ctx->set_verify_mode(opts.verify_peer ? asio::ssl::verify_peer : asio::ssl::verify_none);
  return ctx;
}

namespace {

std::string describe(const std::error_code& ec, const server_address& addr) {
  return addr.to_string() + ": " + ec.message();
}

/// Opens `s` close-on-exec. Asio opens sockets without SOCK_CLOEXEC, so a program that starts
/// another (rlock exec's command, a user's fork and exec) would hand it its Redis connections:
/// kept open as long as the child lives, authenticated, and writable by it.
template <class Socket, class Protocol>
std::error_code open_cloexec(Socket& s, const Protocol& p) {
  const int fd = ::socket(p.family(), p.type() | SOCK_CLOEXEC, p.protocol());
  if (fd < 0) return {errno, std::system_category()};
  std::error_code ec;
  s.assign(p, fd, ec);
  if (ec) ::close(fd);
  return ec;
}

}  // namespace

void transport::async_connect(const server_address& addr, std::shared_ptr<asio::ssl::context> tls,
                              const tls_options& opts, connect_handler done) {
  close();
  if (addr.kind == server_address::scheme::unix_socket) {
    phase_ = connect_phase::connecting;
    auto& s = stream_.emplace<unix_socket>(ex_);
    if (const std::error_code oec = open_cloexec(s, asio::local::stream_protocol())) {
      asio::post(ex_, [done = std::move(done), addr, oec] {
        done(make_error_code(errc::connection_refused), describe(oec, addr));
      });
      return;
    }
    s.async_connect(asio::local::stream_protocol::endpoint(addr.path),
                    [this, done = std::move(done), addr](std::error_code ec) {
                      if (ec) {
                        done(make_error_code(errc::connection_refused), describe(ec, addr));
                      } else {
                        phase_ = connect_phase::connected;
                        done({}, {});
                      }
                    });
    return;
  }
  phase_ = connect_phase::resolving;
  const bool use_tls = addr.kind == server_address::scheme::rediss;
  const std::string sni = opts.server_name.empty() ? addr.host : opts.server_name;
  const bool verify = opts.verify_peer;
  const std::uint64_t gen = connect_gen_;
  resolver_.async_resolve(
      addr.host, std::to_string(addr.port),
      [this, addr, use_tls, sni, verify, gen, tls = std::move(tls), done = std::move(done)](
          std::error_code ec, const tcp::resolver::results_type& results) mutable {
        if (ec) {
          done(make_error_code(errc::connection_refused), "cannot resolve " + describe(ec, addr));
          return;
        }
        phase_ = connect_phase::connecting;
        auto on_connected = [this, addr, use_tls, sni, verify, tls,
                             done = std::move(done)](std::error_code cec) mutable {
          if (cec) {
            done(make_error_code(errc::connection_refused), describe(cec, addr));
            return;
          }
          if (!use_tls) {
            std::error_code ignored;
            std::get<tcp::socket>(stream_).set_option(tcp::no_delay(true), ignored);
            phase_ = connect_phase::connected;
            done({}, {});
            return;
          }
          // Move the connected socket into a TLS stream and shake hands.
          tcp::socket raw = std::move(std::get<tcp::socket>(stream_));
          std::error_code ignored;
          raw.set_option(tcp::no_delay(true), ignored);
          auto s = std::make_shared<tls_stream>(std::move(raw), *tls);
          SSL* ssl = s->native_handle();
          std::error_code not_ip;
          (void)asio::ip::make_address(sni, not_ip);
          if (not_ip) {
            // SNI names a host, never an IP literal (RFC 6066, 3). SSL_set_tlsext_host_name is
            // a macro with a C cast; this is its expansion.
            SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                     const_cast<char*>(sni.c_str()));  // NOLINT
          }
          if (verify) {
            // OpenSSL checks the name during chain verification, so a mismatch is reported
            // as such (X509_V_ERR_HOSTNAME_MISMATCH) and not as a bare "verify failed".
            X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
            int named = 0;
            if (not_ip) {
              X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
              named = X509_VERIFY_PARAM_set1_host(param, sni.c_str(), sni.size());
            } else {
              named = X509_VERIFY_PARAM_set1_ip_asc(param, sni.c_str());
            }
            if (named != 1) {
              // A name OpenSSL cannot check (an IPv6 literal with a %scope, an embedded NUL)
              // must not turn the check off: fail closed.
              done(make_error_code(errc::tls_error),
                   "TLS: cannot check the server certificate against the name '" + sni + "'");
              return;
            }
          }
          stream_ = s;
          phase_ = connect_phase::handshaking;
          s->async_handshake(asio::ssl::stream_base::client, [this, done = std::move(done), addr,
                                                              tls, s, verify](std::error_code hec) {
            if (hec) {
              std::string why = "TLS handshake with " + describe(hec, addr);
              const long verified = SSL_get_verify_result(s->native_handle());
              if (verify && verified != X509_V_OK) {
                why += " (server certificate: ";
                why += X509_verify_cert_error_string(verified);
                why += ")";
              }
              done(make_error_code(errc::tls_error), why);
            } else {
              phase_ = connect_phase::connected;
              done({}, {});
            }
          });
        };
        auto eps =
            std::make_shared<const std::vector<tcp::endpoint>>(results.begin(), results.end());
        connect_tcp(std::move(eps), 0, {}, gen, std::move(on_connected));
      });
}

void transport::connect_tcp(std::shared_ptr<const std::vector<tcp::endpoint>> eps, std::size_t i,
                            std::error_code last, std::uint64_t gen, connected_handler done) {
  if (gen != connect_gen_) {
    done(asio::error::operation_aborted);
    return;
  }
  if (i >= eps->size()) {
    done(last ? last : make_error_code(asio::error::not_found));
    return;
  }
  const tcp::endpoint ep = (*eps)[i];
  auto& sock = stream_.emplace<tcp::socket>(ex_);
  if (const std::error_code oec = open_cloexec(sock, ep.protocol())) {
    connect_tcp(std::move(eps), i + 1, oec, gen, std::move(done));
    return;
  }
  sock.async_connect(ep, [this, eps, i, gen, done = std::move(done)](std::error_code ec) mutable {
    if (!ec || ec == asio::error::operation_aborted) {
      done(ec);
      return;
    }
    connect_tcp(std::move(eps), i + 1, ec, gen, std::move(done));
  });
}

int transport::direct_fd() {
  if (auto* s = std::get_if<tcp::socket>(&stream_)) {
    return s->is_open() ? s->native_handle() : -1;
  }
  if (auto* s = std::get_if<unix_socket>(&stream_)) {
    return s->is_open() ? s->native_handle() : -1;
  }
  return -1;
}

void transport::close() {
  ++connect_gen_;  // a connect in progress tries no further endpoint
  resolver_.cancel();
  std::error_code ignored;
  std::visit(
      [&](auto& s) {
        using type = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<type, std::shared_ptr<tls_stream>>) {
          if (s) s->lowest_layer().close(ignored);
        } else if constexpr (!std::is_same_v<type, std::monostate>) {
          s.close(ignored);
        }
      },
      stream_);
}

}  // namespace rlock::detail
