#include "bench_server_cpu.hpp"

#include <rlock/client.hpp>

namespace rlock::cli {

double read_server_cpu_seconds(rlock::client& c) {
  return parse_server_cpu_seconds(c.execute({"INFO", "cpu"}).str());
}

}  // namespace rlock::cli
