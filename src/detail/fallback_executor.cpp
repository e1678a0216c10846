#include "rlock/detail/fallback_executor.hpp"

#include <algorithm>
#include <asio/executor_work_guard.hpp>
#include <thread>

namespace rlock::detail {

asio::io_context::executor_type fallback_executor() {
  // Made on first use and never destroyed (see the header): a static object would be destroyed
  // at exit while its detached thread may still run, and a join would hang in a fork child.
  static asio::io_context* const context = [] {
    // As many threads as Asio's system executor has (twice the cores): a shutdown with many
    // operations in flight refuses them all here at once.
    const unsigned threads = 2 * std::max(1U, std::thread::hardware_concurrency());
    auto* io = new asio::io_context(
        static_cast<int>(threads));  // NOLINT(cppcoreguidelines-owning-memory): never freed
    for (unsigned i = 0; i < threads; ++i) {
      // As on a client's I/O threads, a handler that throws ends the process (std::terminate).
      std::thread([io] {
        auto work = asio::make_work_guard(*io);
        io->run();  // never returns: the work guards are never reset
      }).detach();
    }
    return io;
  }();
  return context->get_executor();
}

}  // namespace rlock::detail
