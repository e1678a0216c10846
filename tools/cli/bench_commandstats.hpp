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
// Each line also carries `usec`: the server's wall-clock time in that command (ustime() around
// each call), a script's including the commands it ran. For scripts that is the time the
// server's main thread could do nothing else, whatever share of it the CPU was taken away.
//
// Guarantees: parse_commandstats() reads the `calls` (or `usec`) field of
// "cmdstat_NAME:calls=N,usec=N,..." lines (other lines are ignored; names keep Redis's
// "parent|sub" form); command_delta() is after - before per command, leaving out commands whose
// count did not grow. Pure functions; thread-safe; need no rlock library
// (bench_commandstats_parse.cpp), except read_commandstats_info() and read_commandstats(),
// which ask the server (bench_commandstats.cpp).
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace rlock {
class client;
}

namespace rlock::cli {

using command_counts = std::map<std::string, long long>;

/// Which figure of a commandstats line to read.
enum class commandstats_field { calls, usec };

command_counts parse_commandstats(std::string_view info,
                                  commandstats_field field = commandstats_field::calls);
/// The text of INFO commandstats of the client's server; throws rlock::error.
std::string read_commandstats_info(rlock::client& c);
/// INFO commandstats of the client's server, calls per command; throws rlock::error.
command_counts read_commandstats(rlock::client& c);
command_counts command_delta(const command_counts& before, const command_counts& after);
/// command_delta() of the `field` of two INFO commandstats texts.
command_counts commandstats_delta(std::string_view before, std::string_view after,
                                  commandstats_field field = commandstats_field::calls);
/// The part of a calls delta that rlock clients sent themselves (see above).
long long client_requests(const command_counts& delta);
/// Scripts (evalsha + eval) in a delta: how many ran (calls), or how long they took (usec).
long long scripts_run(const command_counts& delta);

}  // namespace rlock::cli
