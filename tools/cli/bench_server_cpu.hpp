// bench_server_cpu.hpp: how busy a benchmark kept the Redis server, from INFO cpu.
//
// Redis runs commands on its main thread, so that thread's CPU time is the server's limit: a
// main thread busy 1.0 of the wall time cannot go faster. Redis 7 reports it as
// used_cpu_user_main_thread + used_cpu_sys_main_thread; older servers only report the whole
// process (used_cpu_user + used_cpu_sys), which is used then.
//
// Guarantees: parse_server_cpu_seconds() returns that sum from an INFO cpu text, or a negative
// value when neither pair is present. Pure; thread-safe; needs no rlock library
// (bench_server_cpu_parse.cpp).
#pragma once

#include <string_view>

namespace rlock {
class client;
}

namespace rlock::cli {

double parse_server_cpu_seconds(std::string_view info);
/// INFO cpu of the client's server (throws rlock::error); negative when the server reports none.
double read_server_cpu_seconds(rlock::client& c);

}  // namespace rlock::cli
