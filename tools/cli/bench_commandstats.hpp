// bench_commandstats.hpp: what a Redis server counted between two moments, from
// INFO commandstats, and which of it an rlock client sent itself.
//
// Redis 7 counts the commands a script runs (redis.call) in commandstats too, so "client
// requests" are only the commands an rlock client issues on its own: scripts (evalsha, eval),
// pub/sub (subscribe, unsubscribe and their sharded forms), connection upkeep (ping, hello,
// auth, select, client|setname, client|info, script|load) and the CLIENT KILL that a resent
// request sends ahead of itself (client|kill). A workload's GET/SET and the bench's own INFO,
// GET and DEL are never among them.
//
// Guarantees: parse_commandstats() reads "cmdstat_NAME:calls=N,..." lines (other lines are
// ignored; names keep Redis's "parent|sub" form); command_delta() is after - before per
// command, leaving out commands whose count did not grow. Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace rlock {
class client;
}

namespace rlock::cli {

using command_counts = std::map<std::string, long long>;

command_counts parse_commandstats(std::string_view info);
/// INFO commandstats of the client's server; throws rlock::error.
command_counts read_commandstats(rlock::client& c);
command_counts command_delta(const command_counts& before, const command_counts& after);
/// The part of a delta that rlock clients sent themselves (see above).
long long client_requests(const command_counts& delta);
/// Scripts run (evalsha + eval) in a delta.
long long scripts_run(const command_counts& delta);

}  // namespace rlock::cli
