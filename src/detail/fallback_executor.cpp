#include "rlock/detail/fallback_executor.hpp"

#include <asio/executor_work_guard.hpp>
#include <thread>

namespace rlock::detail {

asio::io_context::executor_type fallback_executor() {
  // Made on first use and never destroyed (see the header): a static object would be destroyed
  // at exit while its detached thread may still run, and a join would hang in a fork child.
  static asio::io_context* const context = [] {
    auto* io = new asio::io_context(1);  // NOLINT(cppcoreguidelines-owning-memory): never freed
    // As on a client's I/O threads, a handler that throws ends the process (std::terminate).
    std::thread([io] {
      auto work = asio::make_work_guard(*io);
      io->run();  // never returns: the work guard is never reset
    }).detach();
    return io;
  }();
  return context->get_executor();
}

}  // namespace rlock::detail
