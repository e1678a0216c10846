// connection_options.hpp: the options every rlock command shares to reach Redis, and how they
// become an rlock::config.
//
// Sources, first match wins (an option given on the command line beats the environment):
//   server    --url, else $RLOCK_URL, else redis://127.0.0.1:6379
//   password  --password-file FILE (first line), else the URL's own (only $RLOCK_URL may carry
//             one), else $RLOCK_PASSWORD; never an option value, so it does not show in `ps`.
//             The file is read again at every (re)connect: a password rotated in it is used
//             from the next reconnect on (a file unreadable then fails that connect, exit 69
//             if no later one succeeds in time)
//   user      --user NAME or the URL's own (ACL user); both given and different: usage error
//   TLS       rediss:// URLs; --tls-ca, --tls-cert, --tls-key, --tls-server-name,
//             --tls-insecure
//   Sentinel  --master-name NAME with one --sentinel URL per Sentinel (instead of --url and
//             $RLOCK_URL): the master is found through them on every connect, and reached with
//             the Sentinels' scheme, --user and the password above; a Sentinel's own password
//             comes from --sentinel-password-file, never from its URL
//   Cluster   one --cluster URL per seed node of a Redis Cluster (instead of --url and
//             $RLOCK_URL): every request goes to the master of its key's slot, reached with
//             the seeds' scheme, --user and the password above
//
// Guarantees of make_config(): it validates everything it can without the network and throws
// command_error: usage (64) for a malformed URL (naming where it came from and why), a --user
// that contradicts the URL's user, or inconsistent TLS options; no_input (66) for a file that
// cannot be opened or read (a directory included); usage (64) for --sentinel without
// --master-name or the other way round, --url with --sentinel, or a password in a --sentinel URL;
// likewise --cluster with --url or --sentinel, a --cluster URL that is not redis:// or
// rediss://, mixes them, names a database or holds a password.
// Retries are scaled
// so that a command retried until its last attempt stays within --connect-timeout: delays
// start at 10 ms and double up to min(1 s, connect timeout / 4), with as many attempts as fit
// in three quarters of the connect timeout in the worst case (Redisson's 4 attempts of 1-2 s
// would make a CLI wait for seconds on a server that is merely restarting, or a new client
// whose connection is not yet started).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <rlock/config.hpp>
#include <string>
#include <vector>

namespace rlock::cli {

inline constexpr const char* default_url = "redis://127.0.0.1:6379";

struct connection_options {
  std::string url{};            ///< --url; empty: $RLOCK_URL or default_url
  std::string user{};           ///< --user
  std::string password_file{};  ///< --password-file
  std::string tls_ca{};
  std::string tls_cert{};
  std::string tls_key{};
  std::string tls_server_name{};  ///< --tls-server-name; empty: the URL host
  bool tls_insecure = false;
  std::vector<std::string> sentinels{};  ///< --sentinel (repeatable): Sentinel mode's URLs
  std::string master_name{};             ///< --master-name: the master the Sentinels monitor
  std::string sentinel_password_file{};  ///< --sentinel-password-file
  std::vector<std::string> cluster{};    ///< --cluster (repeatable): Cluster mode's seed URLs
  std::chrono::milliseconds timeout = std::chrono::milliseconds(3000);
  std::chrono::milliseconds connect_timeout = std::chrono::milliseconds(10000);
  /// --replica-sync: replicas that must acknowledge a lock's writes
  /// (rlock::config::all_connected_replicas for 'all')
  int replica_sync = 0;
  std::chrono::milliseconds replica_sync_timeout = std::chrono::milliseconds(1000);
  int replica_sync_tries = 4;
};

/// Adds the shared options to `app` (group "Connection"). An empty value (--url '') is a usage
/// error when parsing: it is never silently replaced by the environment or a default.
void add_connection_options(CLI::App& app, connection_options& opts);

/// The server URL (--url, $RLOCK_URL or the default), not yet validated.
std::string resolve_url(const connection_options& opts);

/// The client configuration; see the guarantees above.
rlock::config make_config(const connection_options& opts);

/// The password rlock would use, if any (from --password-file or $RLOCK_PASSWORD); throws
/// command_error(no_input) if the file cannot be read.
std::optional<std::string> resolve_password(const connection_options& opts);

/// The names of rlock's environment variables that hold a secret now: RLOCK_PASSWORD, and
/// RLOCK_URL when its URL has a password. `rlock exec` removes them from its command's
/// environment.
std::vector<std::string> secret_environment_names();

/// The options as arguments for a child rlock process (a demo or bench worker): --url if given
/// (a URL from $RLOCK_URL reaches the child through the environment it inherits), timeouts,
/// user, password file, TLS files and server name; never a password itself (options show in
/// ps).
std::vector<std::string> connection_arguments(const connection_options& opts);

/// Help text describing the environment variables, shared by --help and the man page.
const char* connection_environment_help();

}  // namespace rlock::cli
