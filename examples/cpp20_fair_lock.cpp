// The fair lock example: jobs that must run in the order they asked, across processes. Each
// waiter queues in Redisson's "redisson_lock_queue:{<name>}" and is told on its own channel
// when its turn comes; Redisson's getFairLock("nightly-report") peers share the same queue.
//
//   rlock_fair_lock_example [redis://host:port]
//
// With no URL it starts a throwaway redis-server on a free loopback port.
#include <chrono>
#include <iostream>
#include <mutex>
#include <rlock/client.hpp>
#include <string>
#include <thread>
#include <vector>

#include "example_server.hpp"  // tools/

using namespace std::chrono_literals;

int main(int argc, char** argv) try {
  const rlock::examples::example_server server(argc, argv);  // argv[1], else a throwaway one
  rlock::config cfg;
  cfg.address = server.url();
  rlock::client client(cfg);
  const auto queued = [&client] {
    return client.execute({"LLEN", "redisson_lock_queue:{nightly-report}"}).integer();
  };

  // One job holds the lock while four more ask for it, one after another.
  rlock::lock first = client.get_fair_lock("nightly-report");
  first.lock();  // renewed by the watchdog while held
  std::mutex mu;
  std::vector<int> served;
  std::vector<std::thread> jobs;
  jobs.reserve(4);
  for (int job = 1; job <= 4; ++job) {
    jobs.emplace_back([&client, &mu, &served, job] {
      rlock::lock turn = client.get_fair_lock("nightly-report");
      std::lock_guard guard(turn);  // waits in the queue, first come, first served
      std::lock_guard lk(mu);
      served.push_back(job);
    });
    // The next job asks once this one is in the queue.
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (queued() < job && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(1ms);
    }
  }
  first.unlock();  // the queue's head is told, and only it
  for (auto& t : jobs) t.join();

  std::cout << "served in order:";
  for (int job : served) std::cout << ' ' << job;
  std::cout << "\n";
  return served == std::vector<int>{1, 2, 3, 4} ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "rlock_fair_lock_example: " << e.what() << "\n";
  return 1;
}
