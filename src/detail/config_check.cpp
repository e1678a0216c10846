// A config's checks and the connection options each topology derives from it (core's
// constructor).
#include "detail/config_check.hpp"

#include <string>
#include <utility>

#include "rlock/error.hpp"

namespace rlock::detail {

void validate_config(const config& c) {
  auto bad = [](const std::string& what) {
    throw error(make_error_code(errc::invalid_argument), "invalid config: " + what);
  };
  // time_point + duration overflows steady_clock's nanoseconds beyond about 292 years.
  constexpr std::chrono::milliseconds longest = std::chrono::hours(24 * 365 * 100);
  const std::pair<const char*, std::chrono::milliseconds> durations[] = {
      {"timeout", c.timeout},
      {"connect_timeout", c.connect_timeout},
      {"subscription_timeout", c.subscription_timeout},
      {"wait_recheck_interval", c.wait_recheck_interval},
      {"retry_delay_base", c.retry_delay_base},
      {"retry_delay_max", c.retry_delay_max},
      {"ping_connection_interval", c.ping_connection_interval},
      {"reconnect_delay_min", c.reconnect_delay_min},
      {"reconnect_delay_max", c.reconnect_delay_max},
      {"lock_watchdog_timeout", c.lock_watchdog_timeout},
      {"fair_lock_wait_timeout", c.fair_lock_wait_timeout},
      {"lock_queue_liveness", c.lock_queue_liveness},
      {"cluster_scan_interval", c.cluster_scan_interval}};
  for (const auto& [name, d] : durations) {
    if (d > longest) bad(std::string(name) + " must be at most 100 years");
  }
  if (c.timeout.count() <= 0) bad("timeout must be positive");
  if ((c.replica_sync < 0 && c.replica_sync != config::all_connected_replicas) ||
      c.replica_sync > 1000) {
    bad("replica_sync must be 0 to 1000, or config::all_connected_replicas");
  }
  if (c.replica_sync != 0 &&
      (c.replica_sync_timeout.count() < 1 || c.replica_sync_timeout > c.timeout)) {
    bad("replica_sync_timeout must be at least 1 ms and at most timeout");
  }
  if (c.replica_sync_tries < 1 || c.replica_sync_tries > 100) {
    bad("replica_sync_tries must be from 1 to 100");
  }
  if (c.connect_timeout.count() <= 0) bad("connect_timeout must be positive");
  if (c.subscription_timeout.count() <= 0) bad("subscription_timeout must be positive");
  if (c.wait_recheck_interval.count() < 0 ||
      (c.wait_recheck_interval.count() > 0 && c.wait_recheck_interval.count() < 10)) {
    bad("wait_recheck_interval must be 0 (off) or at least 10 ms");
  }
  if (c.retry_attempts < 1 || c.retry_attempts > 10000) {
    bad("retry_attempts must be from 1 to 10000");
  }
  if (c.retry_delay_base.count() < 0 || c.retry_delay_max < c.retry_delay_base) {
    bad("retry delays must satisfy 0 <= retry_delay_base <= retry_delay_max");
  }
  if (c.io_threads < 1 || c.io_threads > 256) bad("io_threads must be from 1 to 256");
  if (c.connection_pool_size < 1 || c.connection_pool_size > 1024) {
    bad("connection_pool_size must be from 1 to 1024");
  }
  if (c.subscription_connection_pool_size < 1 || c.subscription_connection_pool_size > 1024) {
    bad("subscription_connection_pool_size must be from 1 to 1024");
  }
  if (c.lock_watchdog_timeout.count() < 3) bad("lock_watchdog_timeout must be at least 3 ms");
  if (c.fair_lock_wait_timeout.count() <= 0) bad("fair_lock_wait_timeout must be positive");
  if (c.lock_watchdog_batch_size < 1) bad("lock_watchdog_batch_size must be at least 1");
  if (c.lock_queue_liveness.count() < 30) bad("lock_queue_liveness must be at least 30 ms");
  if (c.database < 0) bad("database must not be negative");
  if (!c.master_name.empty() && c.sentinel_addresses.empty()) {
    bad("master_name is set (Sentinel mode) but sentinel_addresses is empty");
  }
  if (c.master_name.empty() && !c.sentinel_addresses.empty()) {
    bad("sentinel_addresses is set but master_name is empty (the name the Sentinels monitor)");
  }
  if (!c.cluster_addresses.empty()) {
    if (!c.master_name.empty() || !c.sentinel_addresses.empty()) {
      bad("cluster_addresses and Sentinel mode (master_name, sentinel_addresses) exclude each "
          "other");
    }
    if (c.database != 0) bad("a Redis Cluster has only database 0");
    if (c.cluster_scan_interval.count() < 10) bad("cluster_scan_interval must be at least 10 ms");
  }
  if (c.blocking_spin.count() < 0 || c.blocking_spin > std::chrono::seconds(1)) {
    bad("blocking_spin must be from 0 to 1 s");
  }
}

/// A single server's address, credentials and database.
connection_options server_options(const config& c, const server_address& address) {
  connection_options opts;
  opts.address = address;
  if (opts.address.database == 0) opts.address.database = c.database;
  opts.username = address.username ? address.username : c.username;
  opts.password = address.password ? address.password : c.password;
  opts.credentials_resolver = c.credentials_resolver;
  return opts;
}

/// Sentinel mode's: the Sentinels, the master's name, credentials and database. The master's
/// scheme is set by each answer (the answering Sentinel's); the first Sentinel's until then.
connection_options sentinel_options(const config& c) {
  connection_options opts;
  for (const std::string& url : c.sentinel_addresses) {
    server_address a = parse_url(url);
    if (a.kind == server_address::scheme::unix_socket) {
      throw error(make_error_code(errc::invalid_argument),
                  "invalid config: sentinel_addresses must be redis:// or rediss:// URLs, not " +
                      a.to_string());
    }
    if (!a.username) a.username = c.sentinel_username;
    if (!a.password) a.password = c.sentinel_password;
    opts.sentinels.push_back(std::move(a));
  }
  opts.master_name = c.master_name;
  opts.address.kind = opts.sentinels.front().kind;
  opts.address.host = opts.sentinels.front().host;  // until the first answer
  opts.address.database = c.database;
  opts.username = c.username;
  opts.password = c.password;
  opts.credentials_resolver = c.credentials_resolver;
  return opts;
}

/// Cluster mode's seeds: redis:// or rediss:// URLs of one scheme, with the same credentials
/// (which then override the config's for every node).
std::vector<server_address> cluster_seeds(const config& c) {
  std::vector<server_address> out;
  for (const std::string& url : c.cluster_addresses) {
    server_address a = parse_url(url);
    const auto bad = [&](const std::string& why) {
      throw error(make_error_code(errc::invalid_argument),
                  "invalid config: cluster_addresses: " + why);
    };
    if (a.kind == server_address::scheme::unix_socket) {
      bad("must be redis:// or rediss:// URLs, not " + a.to_string());
    }
    if (a.database != 0) bad(a.to_string() + ": a Redis Cluster has only database 0");
    if (!out.empty() && (a.kind != out.front().kind || a.username != out.front().username ||
                         a.password != out.front().password)) {
      bad("every URL must have the same scheme and credentials (" + out.front().to_string() + ", " +
          a.to_string() + ")");
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace rlock::detail
