// Test certificates for TLS servers and clients, generated with the openssl command-line tool.
//
// Guarantees: generate_test_certificates(dir) writes, into `dir`, a fresh self-signed CA, a server
// certificate signed by it (SAN IP:127.0.0.1 and DNS:localhost, extendedKeyUsage serverAuth), a
// client certificate signed by it (clientAuth), a second unrelated "bad" CA, and a client
// certificate signed by the bad CA. Keys are unencrypted PEM (EC P-256); certificates are valid
// from now for 2 days. Throws std::runtime_error (with openssl's output) if anything fails.
#pragma once

#include <filesystem>

namespace rlock::test {

struct tls_files {
  std::filesystem::path ca_cert{};
  std::filesystem::path server_cert{};
  std::filesystem::path server_key{};
  std::filesystem::path client_cert{};
  std::filesystem::path client_key{};
  std::filesystem::path bad_ca_cert{};      // a CA the server does not trust
  std::filesystem::path bad_client_cert{};  // signed by the bad CA
  std::filesystem::path bad_client_key{};
};

tls_files generate_test_certificates(const std::filesystem::path& dir);

}  // namespace rlock::test
