#include "rlock/detail/fallback_executor.hpp"

#include <algorithm>
#include <asio/executor_work_guard.hpp>
#include <atomic>
#include <cstdint>
#include <thread>

#include "detail/fork_epoch.hpp"

namespace rlock::detail {
namespace {

// The fallback context of one process (fork_epoch): a fork's child inherits its parent's, whose
// threads it does not have, and makes its own at its first use.
struct fallback_context {
  std::uint64_t epoch = 0;
  asio::io_context* io = nullptr;
  fallback_context* next = nullptr;  // in `retired`
};

// Made on first use in each process and never destroyed (see the header): a static object
// would be destroyed at exit while its detached threads may still run, and a join would hang
// in a fork child.
std::atomic<fallback_context*> current{nullptr};
// Those no longer current (a parent's, in its fork child; one that lost the race below), kept
// reachable and never freed: their threads may still be inside io_context::run().
std::atomic<fallback_context*> retired{nullptr};

void retire(fallback_context* c) {
  c->next = retired.load(std::memory_order_relaxed);
  while (!retired.compare_exchange_weak(c->next, c, std::memory_order_release,
                                        std::memory_order_relaxed)) {
  }
}

fallback_context* make_context(std::uint64_t epoch) {
  // As many threads as Asio's system executor has (twice the cores): a shutdown with many
  // operations in flight refuses them all here at once.
  const unsigned threads = 2 * std::max(1U, std::thread::hardware_concurrency());
  // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): never freed (see above)
  auto* made = new fallback_context{epoch, new asio::io_context(static_cast<int>(threads))};
  for (unsigned i = 0; i < threads; ++i) {
    // As on a client's I/O threads, a handler that throws ends the process (std::terminate).
    std::thread([io = made->io] {
      auto work = asio::make_work_guard(*io);
      io->run();  // returns only for a context that lost the race below
    }).detach();
  }
  return made;
}

}  // namespace

asio::io_context::executor_type fallback_executor() {
  const std::uint64_t epoch = fork_epoch();
  fallback_context* seen = current.load(std::memory_order_acquire);
  while (seen == nullptr || seen->epoch != epoch) {
    // No lock: one held by a parent's thread as it forked would never be released in the child.
    fallback_context* made = make_context(epoch);
    fallback_context* const was = seen;
    if (current.compare_exchange_strong(seen, made, std::memory_order_acq_rel)) {
      if (was != nullptr) retire(was);  // the parent's, in a fork child
      return made->io->get_executor();
    }
    // Another thread of this process made one first: this one's threads end.
    made->io->stop();
    retire(made);
  }
  return seen->io->get_executor();
}

}  // namespace rlock::detail
