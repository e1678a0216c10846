#include "connection_options.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <system_error>

#include "command_error.hpp"
#include "duration_option.hpp"

namespace rlock::cli {
namespace {

[[noreturn]] void cannot_read(const std::string& what, const std::string& path, int error) {
  throw command_error(exit_codes::no_input, "cannot read " + what + " '" + path +
                                                "': " + std::system_category().message(error));
}

/// `path` opened for reading; throws command_error(no_input) naming `what` and the reason when
/// it cannot be. A directory is refused here: open(2) accepts one (std::ifstream did too), and
/// only its reads would fail.
int open_readable(const std::string& path, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) cannot_read(what, path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    const int error = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    cannot_read(what, path, error);
  }
  return fd;
}

void require_readable(const std::string& path, const std::string& option) {
  if (path.empty()) return;
  ::close(open_readable(path, option + " file"));
}

/// The first line of `path` (without its line end; at most 64 KiB are read).
std::string read_first_line(const std::string& path, const std::string& what) {
  const int fd = open_readable(path, what);
  std::string text;
  char chunk[4096];
  while (text.find('\n') == std::string::npos && text.size() < 65536) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      cannot_read(what, path, error);
    }
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  text.erase(std::min(text.find('\n'), text.size()));
  if (!text.empty() && text.back() == '\r') text.pop_back();
  return text;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): no setenv
  return v != nullptr ? v : "";
}

/// Refuses an empty value: "--url ''" would otherwise mean "not given" and fall back to the
/// environment or the default without a word.
CLI::Validator non_empty() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        return text.empty() ? "must not be empty (leave the option out for its default)" : "";
      },
      "", "non-empty");
}

}  // namespace

void add_connection_options(CLI::App& app, connection_options& opts) {
  const std::string group = "Connection";
  app.add_option("--url", opts.url,
                 "Redis server: redis://[user@]host[:port][/db], rediss://... (TLS) or "
                 "unix:///path (default: $RLOCK_URL, else redis://127.0.0.1:6379)")
      ->type_name("URL")
      ->check(non_empty())
      ->group(group);
  app.add_option("--user", opts.user,
                 "ACL user name (a URL may name it instead; if both do, they must agree)")
      ->type_name("NAME")
      ->check(non_empty())
      ->group(group);
  app.add_option("--password-file", opts.password_file,
                 "Read the password from the first line of FILE, again at every reconnect "
                 "(default: the password in $RLOCK_URL, else $RLOCK_PASSWORD)")
      ->type_name("FILE")
      ->check(non_empty())
      ->group(group);
  app.add_option("--tls-ca", opts.tls_ca, "CA certificates (PEM) for rediss:// (default: system)")
      ->type_name("FILE")
      ->check(non_empty())
      ->group(group);
  app.add_option("--tls-cert", opts.tls_cert, "Client certificate (PEM) for rediss://")
      ->type_name("FILE")
      ->check(non_empty())
      ->group(group);
  app.add_option("--tls-key", opts.tls_key, "Client key (PEM) for rediss://")
      ->type_name("FILE")
      ->check(non_empty())
      ->group(group);
  app.add_option("--tls-server-name", opts.tls_server_name,
                 "Name to check the server certificate against and to send as SNI (default: "
                 "the URL host), e.g. when connecting by IP address or through a tunnel")
      ->type_name("NAME")
      ->check(non_empty())
      ->group(group);
  app.add_flag("--tls-insecure", opts.tls_insecure,
               "Do not verify the server certificate (testing only)")
      ->group(group);
  app.add_option("--sentinel", opts.sentinels,
                 "Redis Sentinel to find the master through (repeat for each Sentinel): "
                 "redis://host:port or rediss://...; needs --master-name, replaces --url")
      ->type_name("URL")
      // One URL per use: a list would also swallow exec's "--" and its command.
      ->allow_extra_args(false)
      ->check(non_empty())
      ->group(group);
  app.add_option("--master-name", opts.master_name,
                 "Name of the master the --sentinel Sentinels monitor")
      ->type_name("NAME")
      ->check(non_empty())
      ->group(group);
  app.add_option("--sentinel-password-file", opts.sentinel_password_file,
                 "Read the Sentinels' own password from the first line of FILE")
      ->type_name("FILE")
      ->check(non_empty())
      ->group(group);
  app.add_option("--cluster", opts.cluster,
                 "A node of a Redis Cluster to learn the cluster from (repeat for more seeds): "
                 "redis://host:port or rediss://...; replaces --url")
      ->type_name("URL")
      // One URL per use: a list would also swallow exec's "--" and its command.
      ->allow_extra_args(false)
      ->check(non_empty())
      ->group(group);
  add_duration_option(app, "--timeout", opts.timeout, "Timeout of each Redis request",
                      duration_bound::positive)
      ->group(group);
  add_duration_option(app, "--connect-timeout", opts.connect_timeout,
                      "Give up (exit 69) when the server does not answer within this time",
                      duration_bound::positive)
      ->group(group);
  app.add_option("--replica-sync", opts.replica_sync,
                 "Count a lock's acquire and release only once N replicas acknowledge it "
                 "(WAIT); an acquire they do not is undone and tried again, then exit 69. 0: "
                 "off (default). "
                 "'all': Redisson's rule, WAIT for every connected replica and count it once "
                 "one acknowledged (or none is connected)")
      ->type_name("N|all")
      ->transform(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v != "all") return CLI::Range(0, 1000)(v);
            v = std::to_string(rlock::config::all_connected_replicas);
            return {};
          },
          ""))
      ->group(group);
  add_duration_option(app, "--replica-sync-timeout", opts.replica_sync_timeout,
                      "How long --replica-sync waits for the replicas (default 1s, at most "
                      "--timeout)",
                      duration_bound::positive)
      ->group(group);
  app.add_option("--replica-sync-tries", opts.replica_sync_tries,
                 "Tries of an acquire the replicas do not acknowledge, the first included, and "
                 "sends of such an unlock (default 4, Redisson's; 1: exit 69 at the first)")
      ->check(CLI::Range(1, 100))
      ->group(group);
}

std::string resolve_url(const connection_options& opts) {
  if (!opts.url.empty()) return opts.url;
  std::string env = env_or_empty("RLOCK_URL");
  return env.empty() ? default_url : env;
}

std::optional<std::string> resolve_password(const connection_options& opts) {
  if (!opts.password_file.empty()) return read_first_line(opts.password_file, "--password-file");
  // NOLINTNEXTLINE(concurrency-mt-unsafe): rlock never calls setenv
  if (const char* env = std::getenv("RLOCK_PASSWORD"); env != nullptr && *env != '\0') {
    return std::string(env);
  }
  return std::nullopt;
}

std::vector<std::string> secret_environment_names() {
  std::vector<std::string> names{"RLOCK_PASSWORD"};
  std::error_code ec;
  const auto url = rlock::parse_url(env_or_empty("RLOCK_URL"), ec);
  if (url && url->password) names.emplace_back("RLOCK_URL");
  return names;
}

namespace {

/// One URL of a repeatable --sentinel or --cluster `option`: a redis:// or rediss:// URL
/// without a password (it would show in ps: `password_from` says where to give it), of the
/// scheme of `first` when there is one.
rlock::server_address checked_node_url(const std::string& option, const std::string& url,
                                       const std::string& password_from,
                                       const std::optional<rlock::server_address>& first) {
  std::error_code ec;
  std::string why;
  const auto a = rlock::parse_url(url, ec, &why);
  if (!a) throw usage_error("invalid " + option + ": " + why);
  if (a->kind == rlock::server_address::scheme::unix_socket) {
    throw usage_error(option + " must be a redis:// or rediss:// URL (got " + a->to_string() + ")");
  }
  if (a->password) {
    throw usage_error(option + " must not contain a password (it would show in ps): use " +
                      password_from);
  }
  if (first && a->kind != first->kind) {
    throw usage_error(option + " URLs mix redis:// and rediss://");
  }
  return *a;
}

/// Sentinel mode's part of make_config: the Sentinels, the master's name, and the scheme TLS
/// options must match (the first Sentinel's). Returns nullopt without --master-name.
std::optional<rlock::server_address> sentinel_config(const connection_options& opts,
                                                     rlock::config& cfg) {
  if (opts.master_name.empty() && opts.sentinels.empty()) {
    if (!opts.sentinel_password_file.empty()) {
      throw usage_error("--sentinel-password-file needs --sentinel and --master-name");
    }
    return std::nullopt;
  }
  if (opts.master_name.empty()) throw usage_error("--sentinel needs --master-name");
  if (opts.sentinels.empty()) throw usage_error("--master-name needs at least one --sentinel");
  if (!opts.url.empty()) {
    throw usage_error("--url and --sentinel exclude each other: the Sentinels name the master");
  }
  std::optional<rlock::server_address> first;
  for (const std::string& url : opts.sentinels) {
    const auto a = checked_node_url("--sentinel", url, "--sentinel-password-file", first);
    if (!first) first = a;
  }
  cfg.master_name = opts.master_name;
  cfg.sentinel_addresses = opts.sentinels;
  if (!opts.sentinel_password_file.empty()) {
    cfg.sentinel_password =
        read_first_line(opts.sentinel_password_file, "--sentinel-password-file");
  }
  return first;
}

/// Cluster mode's part of make_config: the seeds, whose scheme TLS options must match.
/// Returns nullopt without --cluster.
std::optional<rlock::server_address> cluster_config(const connection_options& opts,
                                                    rlock::config& cfg) {
  if (opts.cluster.empty()) return std::nullopt;
  if (!opts.url.empty()) {
    throw usage_error("--url and --cluster exclude each other: the cluster names its masters");
  }
  if (!opts.sentinels.empty() || !opts.master_name.empty()) {
    throw usage_error("--cluster and --sentinel/--master-name exclude each other");
  }
  std::optional<rlock::server_address> first;
  for (const std::string& url : opts.cluster) {
    const auto a = checked_node_url("--cluster", url, "--password-file or $RLOCK_PASSWORD", first);
    if (a.database != 0) {
      throw usage_error("--cluster " + a.to_string() + ": a Redis Cluster has only database 0");
    }
    if (!opts.user.empty() && a.username && *a.username != opts.user) {
      throw usage_error("--user '" + opts.user + "' contradicts the user '" + *a.username +
                        "' in --cluster " + a.to_string());
    }
    if (first && a.username != first->username) {
      throw usage_error("--cluster URLs name different users");
    }
    if (!first) first = a;
  }
  cfg.cluster_addresses = opts.cluster;
  return first;
}

rlock::config finish_config(const connection_options& opts, rlock::config cfg,
                            const rlock::server_address& address) {
  const bool tls_given = !opts.tls_ca.empty() || !opts.tls_cert.empty() || !opts.tls_key.empty() ||
                         !opts.tls_server_name.empty() || opts.tls_insecure;
  if (tls_given && address.kind != rlock::server_address::scheme::rediss) {
    throw usage_error("TLS options need a rediss:// URL (got " + address.to_string() + ")");
  }
  if (opts.tls_cert.empty() != opts.tls_key.empty()) {
    throw usage_error("--tls-cert and --tls-key go together");
  }
  require_readable(opts.tls_ca, "--tls-ca");
  require_readable(opts.tls_cert, "--tls-cert");
  require_readable(opts.tls_key, "--tls-key");
  cfg.tls.ca_file = opts.tls_ca;
  cfg.tls.cert_file = opts.tls_cert;
  cfg.tls.key_file = opts.tls_key;
  cfg.tls.server_name = opts.tls_server_name;
  cfg.tls.verify_peer = !opts.tls_insecure;
  if (!opts.user.empty()) cfg.username = opts.user;
  cfg.password = resolve_password(opts);
  if (!opts.password_file.empty() && address.password) {
    // The URL's credentials would override the file's password (rlock::config): the explicit
    // option wins, so the password is taken out of the URL (it can only be $RLOCK_URL's).
    rlock::server_address bare = address;
    bare.username.reset();
    bare.password.reset();
    cfg.address = bare.to_string();
    if (address.username) cfg.username = address.username;
  }
  if (!opts.password_file.empty()) {
    // Read again at every connect, so that a long `rlock exec` reconnects with a password
    // rotated in the file meanwhile (a mounted secret is updated in place). The user is the
    // one the URL or --user names (a --sentinel URL's user is the Sentinel's, not the
    // master's). A file that cannot be read then fails that connect, and says why.
    std::optional<std::string> user = cfg.username;
    if (!user && cfg.master_name.empty()) user = address.username;
    cfg.credentials_resolver = [path = opts.password_file, user](const rlock::server_address&) {
      return rlock::credentials{user, read_first_line(path, "--password-file")};
    };
  }
  cfg.client_name = "rlock-cli";
  cfg.timeout = opts.timeout;
  cfg.connect_timeout = opts.connect_timeout;
  cfg.replica_sync = opts.replica_sync;
  cfg.replica_sync_timeout = opts.replica_sync_timeout;
  cfg.replica_sync_tries = opts.replica_sync_tries;
  if (opts.replica_sync != 0 && opts.replica_sync_timeout > opts.timeout) {
    throw usage_error("--replica-sync-timeout must be at most --timeout");
  }
  // Retries: short first delays (the first command of a new client can find its connection
  // not yet started and is retried at once), doubling up to a quarter of the connect timeout,
  // and as many attempts as fit in three quarters of it in the worst case.
  using std::chrono::milliseconds;
  const milliseconds budget = opts.connect_timeout * 3 / 4;
  cfg.retry_delay_base = std::min(milliseconds(10), opts.connect_timeout / 8);
  cfg.retry_delay_max =
      std::max(cfg.retry_delay_base, std::min(milliseconds(1000), opts.connect_timeout / 4));
  cfg.retry_attempts = 1;
  milliseconds worst{0};
  for (milliseconds cap = cfg.retry_delay_base * 2; cfg.retry_attempts < 32;) {
    cap = std::min(cap, cfg.retry_delay_max);
    if (worst + cap > budget) break;
    worst += cap;
    ++cfg.retry_attempts;
    cap *= 2;
  }
  cfg.retry_attempts = std::max(cfg.retry_attempts, 2);
  cfg.reconnect_delay_min =
      std::max(milliseconds(1), std::min(milliseconds(50), opts.connect_timeout / 8));
  cfg.reconnect_delay_max =
      std::max(cfg.reconnect_delay_min, std::min(milliseconds(1000), opts.connect_timeout / 4));
  return cfg;
}

}  // namespace

rlock::config make_config(const connection_options& opts) {
  rlock::config cfg;
  if (const auto seed = cluster_config(opts, cfg)) {
    return finish_config(opts, std::move(cfg), *seed);
  }
  if (const auto sentinel = sentinel_config(opts, cfg)) {
    return finish_config(opts, std::move(cfg), *sentinel);
  }
  cfg.address = resolve_url(opts);
  std::error_code ec;
  std::string why;
  const auto address = rlock::parse_url(cfg.address, ec, &why);
  const std::string source = !opts.url.empty() ? "--url" : "$RLOCK_URL";
  if (!address) throw usage_error("invalid " + source + ": " + why);
  if (!opts.url.empty() && address->password) {
    // Options show in ps and shell histories; $RLOCK_URL may carry one (the environment).
    throw usage_error(
        "--url must not contain a password (it would show in ps): use --password-file or "
        "$RLOCK_PASSWORD");
  }
  if (!opts.user.empty() && address->username && *address->username != opts.user) {
    throw usage_error("--user '" + opts.user + "' contradicts the user '" + *address->username +
                      "' in " + source + ": name the user once, or the same in both");
  }
  return finish_config(opts, std::move(cfg), *address);
}

std::vector<std::string> connection_arguments(const connection_options& opts) {
  const auto ms_text = [](std::chrono::milliseconds d) { return std::to_string(d.count()) + "ms"; };
  std::vector<std::string> a{"--timeout", ms_text(opts.timeout), "--connect-timeout",
                             ms_text(opts.connect_timeout)};
  const auto add = [&a](const char* option, const std::string& value) {
    if (!value.empty()) a.insert(a.end(), {option, value});
  };
  // Not a URL taken from $RLOCK_URL, which may hold a password: the workers inherit the
  // environment, and their options show in ps. Likewise the password file, not the password.
  add("--url", opts.url);
  add("--password-file", opts.password_file);
  add("--user", opts.user);
  add("--tls-ca", opts.tls_ca);
  add("--tls-cert", opts.tls_cert);
  add("--tls-key", opts.tls_key);
  add("--tls-server-name", opts.tls_server_name);
  if (opts.tls_insecure) a.emplace_back("--tls-insecure");
  for (const std::string& sentinel : opts.sentinels) add("--sentinel", sentinel);
  add("--master-name", opts.master_name);
  add("--sentinel-password-file", opts.sentinel_password_file);
  for (const std::string& seed : opts.cluster) add("--cluster", seed);
  if (opts.replica_sync != 0) {
    a.insert(a.end(), {"--replica-sync",
                       opts.replica_sync == rlock::config::all_connected_replicas
                           ? std::string("all")
                           : std::to_string(opts.replica_sync),
                       "--replica-sync-timeout", ms_text(opts.replica_sync_timeout),
                       "--replica-sync-tries", std::to_string(opts.replica_sync_tries)});
  }
  return a;
}

const char* connection_environment_help() {
  return "Environment:\n"
         "  RLOCK_URL       server URL when --url is not given; a password in it is used\n"
         "                  unless --password-file is given\n"
         "  RLOCK_PASSWORD  password when neither --password-file nor RLOCK_URL gives one\n"
         "                  (never pass a password as an option: it would show in ps)\n"
         "rlock exec removes RLOCK_PASSWORD, and RLOCK_URL when it holds a password, from the\n"
         "command's environment.\n";
}

}  // namespace rlock::cli
