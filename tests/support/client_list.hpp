// client_list(server): the server's connections as CLIENT LIST shows them, one map of fields
// per connection (id, name, flags, qbuf, cmd, obl, oll, omem, ...), values as the server wrote
// them. Tests read what the server has of a client from it: whether its setup is done, which
// connection is blocked, what waits in its query buffer.
//
// Guarantees: one CLIENT LIST, parsed without a shell; a field missing from a line is missing
// from its map. Throws what redis_server::cli throws.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "support/redis_server.hpp"

namespace rlock::test {

using client_fields = std::map<std::string, std::string, std::less<>>;

/// Every connection, or (when `name` is not empty) those whose CLIENT SETNAME is `name`.
std::vector<client_fields> client_list(const redis_server& server, std::string_view name = {});

/// The connections named `name` blocked in a command (flags b), by id, with the size of their
/// query buffers (what they sent that waits behind the blocking command).
std::map<std::string, long long> blocked_clients(const redis_server& server, std::string_view name);

/// The id of a connection named `name` that is blocked with a command waiting behind its
/// blocking one, other than `except` ("" if none).
std::string blocked_with_pending(const redis_server& server, std::string_view name,
                                 std::string_view except = {});

}  // namespace rlock::test
