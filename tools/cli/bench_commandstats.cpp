#include "bench_commandstats.hpp"

#include <rlock/client.hpp>

namespace rlock::cli {

std::string read_commandstats_info(rlock::client& c) {
  return std::string(c.execute({"INFO", "commandstats"}).str());
}

command_counts read_commandstats(rlock::client& c) {
  return parse_commandstats(read_commandstats_info(c));
}

}  // namespace rlock::cli
