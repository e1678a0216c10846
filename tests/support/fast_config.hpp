// A client config for tests: short retry and reconnect delays, so failure tests stay quick.
#pragma once

#include <chrono>
#include <rlock/config.hpp>
#include <string>

namespace rlock::test {

/// A config for the server at `url` (a redis_server's or a proxy's url()) with retry delays of
/// 50-100 ms and reconnect delays of 10-100 ms; everything else is the default.
inline config fast_config(std::string url) {
  using namespace std::chrono_literals;
  config c;
  c.address = std::move(url);
  c.retry_delay_base = 50ms;
  c.retry_delay_max = 100ms;
  c.reconnect_delay_min = 10ms;
  c.reconnect_delay_max = 100ms;
  return c;
}

}  // namespace rlock::test
