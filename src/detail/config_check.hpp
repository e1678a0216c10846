// A config's checks and the connection options each topology derives from it: what core's
// constructor uses before it connects anywhere.
#pragma once

#include <vector>

#include "detail/connection.hpp"
#include "rlock/config.hpp"

namespace rlock::detail {

/// Throws errc::invalid_argument ("invalid config: ...") for the first setting out of range or
/// settings that exclude each other (Sentinel and Cluster, Cluster and a database, ...).
void validate_config(const config& c);
/// A single server's address, credentials and database: the URL's, else the config's.
connection_options server_options(const config& c, const server_address& address);
/// Sentinel mode's: the Sentinels, the master's name, credentials and database. Throws
/// errc::invalid_argument for a Sentinel URL that is not redis:// or rediss://.
connection_options sentinel_options(const config& c);
/// Cluster mode's seeds (empty outside Cluster mode): redis:// or rediss:// URLs of one scheme
/// and the same credentials, database 0. Throws errc::invalid_argument otherwise.
std::vector<server_address> cluster_seeds(const config& c);

}  // namespace rlock::detail
