// A redis-server that refuses writes with MISCONF, as one whose disk failed does.
//
// misconf_options(dir): options for a server that keeps its data in `dir` and snapshots (the
// harness's default turns snapshots off, and without them Redis never refuses writes).
// break_persistence(server, dir): removes `dir` under the running server and asks for a
// snapshot, which then cannot create its file; returns true once the server reports the failed
// snapshot (it then answers writes, and PING, with MISCONF until a snapshot succeeds).
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace rlock::test {

inline server_options misconf_options(const std::filesystem::path& dir) {
  return server_options{.extra_args = {"--dir", dir.string(), "--save", "3600 1"}};
}

inline bool break_persistence(redis_server& server, const std::filesystem::path& dir) {
  std::filesystem::remove_all(dir);
  server.cli({"BGSAVE"});
  return wait_until(
      [&] {
        return server.cli({"INFO", "persistence"}).find("rdb_last_bgsave_status:err") !=
               std::string::npos;
      },
      std::chrono::seconds(10));
}

}  // namespace rlock::test
