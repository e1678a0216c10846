// Built against an installed rlock: find_package(rlock) and pkg-config must both work.
#include <iostream>
#include <rlock/client.hpp>
#include <rlock/lock.hpp>

int main() {
  const auto a = rlock::parse_url("redis://user:pw@127.0.0.1:6380/2");
  std::cout << a.to_string() << " owner " << rlock::this_thread_owner_id() << "\n";
  return a.port == 6380 && a.database == 2 ? 0 : 1;
}
