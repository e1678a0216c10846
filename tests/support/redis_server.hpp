// redis_server: a private redis-server process for one test or fixture.
//
// Guarantees:
//  - The constructor returns only once *this* server (checked by its process id) answers PING
//    with PONG on 127.0.0.1:port(); otherwise it throws std::runtime_error with the tail of the
//    server log, and leaves no process or directory behind. Startup is bounded by ~10 s.
//  - Each server gets a fresh temp dir (mkdtemp under $TMPDIR or /tmp) holding redis.conf, the
//    log (redis.log, plus stdout.log for early errors), persistence files and TLS material.
//  - The port is a random free loopback port outside the kernel's ephemeral range; if another
//    process takes it before redis binds (parallel tests), the start is retried on a new port
//    (up to 20 attempts). Servers alive at the same time have distinct ports.
//  - The server dies with the test process (PR_SET_PDEATHSIG SIGKILL), even if the test process
//    itself is killed with SIGKILL, and does not inherit the test's file descriptors.
//  - The destructor kills the server with SIGKILL (after SIGCONT if paused), reaps it and removes
//    the temp dir. It never throws.
//  - restart() reuses the same port, dir, config and options. With persistence (appendonly yes,
//    appendfsync always) every acknowledged write survives kill() + restart().
//  - cli() / cli_reply() / client() authenticate as the default user with `requirepass`; the
//    harness itself also relies on that for its readiness check, so acl_users must not disable
//    the default user or change its password.
//  - Not thread-safe, except that the const accessors and cli()/cli_reply()/client() may be used
//    from several threads while no non-const member function runs.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/raw_client.hpp"
#include "support/raw_reply.hpp"
#include "support/temp_dir.hpp"
#include "support/tls_certs.hpp"

namespace rlock::test {

class child_process;

struct server_options {
  // Appended to the redis-server command line after the config file, e.g. {"--maxmemory", "1mb"}.
  std::vector<std::string> extra_args{};
  // TLS only: `port 0` and `tls-port <port>`, certificates generated into dir() (see tls()),
  // `tls-auth-clients optional` (a client certificate is checked if presented, not required).
  bool tls = false;
  // TLS only: these certificates instead of fresh ones (the nodes of a cluster share one CA).
  // With `cluster` as well: tls-cluster and tls-replication yes, the bus and the replication
  // links presenting the client certificate.
  std::optional<tls_files> shared_tls{};
  // appendonly yes + appendfsync always (and the default RDB save points); otherwise save "".
  bool persistence = false;
  // Password of the default user (requirepass) when not empty.
  std::string requirepass{};
  // Raw ACL rule strings, each written to redis.conf as a `user <rule>` line,
  // e.g. "alice on >secret ~* &* +@all".
  std::vector<std::string> acl_users{};
  // "NAME=value" entries added to the server's environment, e.g. clock_shift::env().
  std::vector<std::string> extra_env{};
  // A Redis Cluster node (cluster-enabled yes), its cluster bus on another free port
  // (cluster_bus_port()). It serves no slot until given some (CLUSTER ADDSLOTSRANGE).
  bool cluster = false;
};

class redis_server {
 public:
  explicit redis_server(server_options options = {});
  ~redis_server();
  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;
  redis_server(redis_server&&) = delete;
  redis_server& operator=(redis_server&&) = delete;

  std::uint16_t port() const { return port_; }
  // The cluster bus's port (options().cluster), 0 otherwise.
  std::uint16_t cluster_bus_port() const { return bus_port_; }
  std::string host() const { return "127.0.0.1"; }
  // "redis://127.0.0.1:PORT", or "rediss://127.0.0.1:PORT" for a TLS server.
  std::string url() const;
  std::filesystem::path dir() const { return dir_.path(); }
  // Process id of the current server process, -1 when it is not running.
  pid_t pid() const;
  // true while the server process exists (also while paused).
  bool running() const;
  bool paused() const { return paused_; }
  const server_options& options() const { return options_; }
  // Certificate paths. Throws std::logic_error unless options().tls.
  const tls_files& tls() const;

  // SIGSTOP: connections and the port stay open, nothing is answered. No-op if not running.
  void pause();
  // SIGCONT. No-op if not running.
  void resume();
  // SIGKILL + reap: simulates a crash. No-op if not running.
  void kill();
  // Graceful: SHUTDOWN NOSAVE, falling back to SIGTERM then SIGKILL. No-op if not running.
  void stop();
  // Kills the server if it runs, then starts it again on the same port with the same dir and
  // config, and waits until it answers (data is reloaded from the AOF with persistence).
  // Throws std::runtime_error if it does not come up (e.g. the port was taken meanwhile).
  void restart();

  // Runs one command as an administrator and returns raw_reply::text() of its reply
  // (e.g. "PONG", "OK", "42", "(nil)", "(error) ERR ..."). Plain servers are reached with
  // raw_client, TLS servers with `redis-cli --tls` (arguments then must not contain NUL bytes).
  // Throws std::runtime_error if the server cannot be reached.
  std::string cli(const std::vector<std::string>& args) const;
  // Same, returning the reply itself (for TLS servers, status replies come back as strings).
  raw_reply cli_reply(const std::vector<std::string>& args) const;

  // A new raw_client to this server, authenticated with requirepass. Throws std::logic_error for
  // TLS servers (hiredis 0.14 has no TLS).
  raw_client client(std::chrono::milliseconds timeout = std::chrono::seconds(5)) const;

  // The last `max_bytes` of the server's stdout/stderr and log file, for failure messages.
  std::string log_tail(std::size_t max_bytes = 4096) const;

 private:
  enum class start_result { ready, port_taken };

  void write_config() const;
  start_result start_once(std::chrono::steady_clock::time_point deadline);
  bool probe(std::chrono::milliseconds timeout, bool& port_taken, std::string& error) const;
  [[noreturn]] void throw_start_failure(const std::string& reason);
  std::filesystem::path log_path() const;

  server_options options_;
  temp_dir dir_;  // declared before process_: removed only after the server is dead
  std::uint16_t port_ = 0;
  std::uint16_t bus_port_ = 0;
  tls_files tls_;
  std::unique_ptr<child_process> process_;
  bool paused_ = false;
};

}  // namespace rlock::test
