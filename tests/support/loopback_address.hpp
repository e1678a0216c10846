// loopback_address: the IPv4 socket address 127.0.0.1:<port> (port 0: let the kernel choose),
// for the harness's raw sockets (listeners, port probes, test clients).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>

namespace rlock::test {

inline sockaddr_in loopback_address(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

}  // namespace rlock::test
