// The intro example: connect (logging the client's events), run a Redisson-format lock script,
// and show what it wrote.
//
//   rlock_intro [redis://host:port]
//
// With no URL it starts a throwaway redis-server on a free loopback port and stops it at the end.
#include <iostream>
#include <memory>
#include <rlock/client.hpp>

#include "example_server.hpp"  // tools/

namespace {

// The same contract as Redisson's RLock acquire: nil when acquired, else the lock's PTTL.
const rlock::script acquire{R"lua(
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1]))lua"};

}  // namespace

int main(int argc, char** argv) try {
  const rlock::examples::example_server server(argc, argv);  // argv[1], else a throwaway one
  if (server.throwaway())
    std::cout << "started a throwaway redis-server at " << server.url() << "\n";
  rlock::config cfg;
  cfg.address = server.url();
  // The client's events, for a log: "event: connected to redis://...". Called on the client's
  // I/O thread, so it must not block (client_event.hpp, config::on_event).
  cfg.on_event = [](const rlock::client_event& e) {
    std::clog << "event: " << rlock::describe(e) << "\n";
  };
  rlock::client client(cfg);
  std::cout << "client id " << client.id() << "\n";
  std::cout << "PING -> " << client.execute({"PING"}).to_string() << "\n";

  const std::string key = "rlock:intro";
  const std::string owner = client.id() + ":1";
  auto first = client.eval(acquire, {key}, {"30000", owner});
  std::cout << "acquire " << key << " as " << owner << " -> "
            << (first.is_nil() ? "acquired" : "held, ttl " + first.to_string()) << "\n";
  auto again = client.eval(acquire, {key}, {"30000", owner});
  std::cout << "re-enter -> " << (again.is_nil() ? "acquired" : again.to_string()) << "\n";
  auto other = client.eval(acquire, {key}, {"30000", "someone-else:7"});
  std::cout << "another owner tries -> "
            << (other.is_nil() ? "acquired"
                               : "refused, pttl " + std::to_string(other.integer()) + " ms")
            << "\n";
  std::cout << "HGETALL " << key << " ->\n" << client.execute({"HGETALL", key}).to_string() << "\n";
  std::cout << "PTTL " << key << " -> " << client.execute({"PTTL", key}).to_string() << "\n";
  std::cout << "DEL " << key << " -> " << client.execute({"DEL", key}).to_string() << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "rlock_intro: " << e.what() << "\n";
  return 1;
}
