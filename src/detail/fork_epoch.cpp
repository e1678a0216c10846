#include "detail/fork_epoch.hpp"

#include <pthread.h>

#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

namespace rlock::detail {
namespace {

// Incremented in each child, by its only thread, before fork() returns there.
std::atomic<std::uint64_t> forks_since_first_use{0};

void count_fork_in_child() noexcept {
  forks_since_first_use.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

std::uint64_t fork_epoch() noexcept {
  // Registered once per process image: a child inherits both the registration and the count.
  static const bool registered = pthread_atfork(nullptr, nullptr, &count_fork_in_child) == 0;
  (void)registered;
  return forks_since_first_use.load(std::memory_order_relaxed);
}

void keep_until_exit(std::shared_ptr<void> p) {
  static std::mutex mu;
  static auto* kept = new std::vector<std::shared_ptr<void>>();  // never destroyed
  std::lock_guard lk(mu);
  kept->push_back(std::move(p));
}

}  // namespace rlock::detail
