#include "support/tls_certs.hpp"

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace rlock::test {

namespace {

constexpr const char* openssl_config = R"(# written by rlock::test::generate_test_certificates
[req]
distinguished_name = dn
prompt = no
[dn]
CN = placeholder
[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[v3_server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid,issuer
[v3_client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid,issuer
)";

void run_openssl(const std::filesystem::path& openssl, std::vector<std::string> args) {
  const std::string description = "openssl " + args.front();
  child_process proc(openssl, std::move(args), child_options{.merge_stderr = true});
  const std::optional<int> status = proc.wait_for(std::chrono::seconds(20));
  if (status != 0) {
    throw std::runtime_error("generate_test_certificates: " + description + " failed (status " +
                             (status ? std::to_string(*status) : std::string("timeout")) + "):\n" +
                             proc.output());
  }
}

// Creates key + certificate `name`.key/.crt: self-signed when issuer is empty, else signed by
// issuer.crt/issuer.key.
void make_certificate(const std::filesystem::path& openssl, const std::filesystem::path& dir,
                      const std::string& name, const std::string& common_name,
                      const std::string& extensions, const std::string& issuer) {
  std::vector<std::string> args{"req",
                                "-config",
                                (dir / "openssl.cnf").string(),
                                "-x509",
                                "-newkey",
                                "ec",
                                "-pkeyopt",
                                "ec_paramgen_curve:prime256v1",
                                "-nodes",
                                "-keyout",
                                (dir / (name + ".key")).string(),
                                "-out",
                                (dir / (name + ".crt")).string(),
                                "-days",
                                "2",
                                "-subj",
                                "/CN=" + common_name,
                                "-extensions",
                                extensions};
  if (!issuer.empty()) {
    args.insert(args.end(), {"-CA", (dir / (issuer + ".crt")).string(), "-CAkey",
                             (dir / (issuer + ".key")).string()});
  }
  run_openssl(openssl, std::move(args));
}

}  // namespace

tls_files generate_test_certificates(const std::filesystem::path& dir) {
  const std::filesystem::path openssl = find_program("openssl", "/usr/bin/openssl");
  {
    std::ofstream config(dir / "openssl.cnf");
    config << openssl_config;
    if (!config) throw std::runtime_error("generate_test_certificates: cannot write openssl.cnf");
  }
  make_certificate(openssl, dir, "ca", "rlock-test-ca", "v3_ca", "");
  make_certificate(openssl, dir, "server", "localhost", "v3_server", "ca");
  make_certificate(openssl, dir, "client", "rlock-test-client", "v3_client", "ca");
  make_certificate(openssl, dir, "bad_ca", "rlock-test-bad-ca", "v3_ca", "");
  make_certificate(openssl, dir, "bad_client", "rlock-test-bad-client", "v3_client", "bad_ca");

  tls_files files;
  files.ca_cert = dir / "ca.crt";
  files.server_cert = dir / "server.crt";
  files.server_key = dir / "server.key";
  files.client_cert = dir / "client.crt";
  files.client_key = dir / "client.key";
  files.bad_ca_cert = dir / "bad_ca.crt";
  files.bad_client_cert = dir / "bad_client.crt";
  files.bad_client_key = dir / "bad_client.key";
  return files;
}

}  // namespace rlock::test
