// The permit-expirable semaphore example: two licences for a batch tool, each taken with a lease,
// so that a worker that dies holding one gives it back when its lease ends. Java services using
// Redisson's getPermitExpirableSemaphore("licences") share the same permits.
//
//   rlock_permit_expirable_semaphore_example [redis://host:port]
//
// With no URL it starts a throwaway redis-server on a free loopback port.
#include <atomic>
#include <iostream>
#include <rlock/client.hpp>
#include <rlock/permit_keeper.hpp>
#include <thread>
#include <vector>

#include "example_server.hpp"  // tools/

using namespace std::chrono_literals;

int main(int argc, char** argv) try {
  const rlock::examples::example_server server(argc, argv);  // argv[1], else a throwaway one
  rlock::config cfg;
  cfg.address = server.url();
  rlock::client client(cfg);

  // Redisson's layout: the available count is the string "licences", the permits taken the
  // sorted set "{licences}:timeout" of id -> lease end (on the Redis server's clock here).
  rlock::permit_expirable_semaphore licences = client.get_permit_expirable_semaphore("licences");
  licences.try_set_permits(2);

  // A worker takes a licence for 200 ms and "crashes": it never releases it.
  const auto lost = licences.try_acquire(200ms);
  if (!lost) throw std::runtime_error("no licence for the first worker");
  std::cout << "a worker took licence " << *lost << " and died\n";

  // Three workers share the remaining licence, then the one given back at the lease's end.
  std::vector<std::thread> workers;
  workers.reserve(3);
  std::atomic<int> done{0};
  for (int w = 0; w < 3; ++w) {
    workers.emplace_back([&licences, &done] {
      // Sleeps until a release, or until the nearest lease ends; never polls.
      const auto id = licences.try_acquire_for(10s, 5s);
      if (!id) return;
      std::this_thread::sleep_for(300ms);     // ... the licensed work
      if (licences.try_release(*id)) ++done;  // false: the lease had ended meanwhile
    });
  }
  for (auto& t : workers) t.join();

  // The dead worker's permit is no longer its own: its release says so.
  const bool stale = licences.try_release(*lost);
  std::cout << done.load() << " of 3 workers ran; the dead worker's release "
            << (stale ? "succeeded" : "was refused: its lease had ended") << "; available "
            << licences.available_permits() << "\n";

  // A job longer than its lease: a keeper renews the permit every third of the lease while the
  // job runs (Redisson has no such renewal), and would tell the job if the permit were lost.
  const auto long_job = licences.try_acquire(300ms);
  if (!long_job) throw std::runtime_error("no licence for the long job");
  rlock::permit_keeper keeper(licences, *long_job, 300ms);
  for (int step = 0; step < 10 && !keeper.loss_token().stop_requested(); ++step) {
    std::this_thread::sleep_for(100ms);  // 1 s of work, in steps that check the permit
  }
  const bool kept = keeper.release();
  std::cout << "a 1 s job under a 300 ms lease, kept: "
            << (kept ? "released while held" : "the permit was lost") << "\n";
  return done.load() == 3 && !stale && kept && licences.available_permits() == 2 ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "rlock_permit_expirable_semaphore_example: " << e.what() << "\n";
  return 1;
}
