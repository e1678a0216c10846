#include "lock_release.hpp"

#include <future>
#include <memory>

namespace rlock::cli {

std::error_code release_hold(rlock::lock& lock, std::uint64_t owner) {
  auto done = std::make_shared<std::promise<std::error_code>>();
  std::future<std::error_code> result = done->get_future();
  lock.async_unlock(owner, [done](std::error_code ec) { done->set_value(ec); });
  return result.get();
}

}  // namespace rlock::cli
