#include "event_flag.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <system_error>

namespace rlock::cli {

event_flag::event_flag() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_ < 0)
    throw std::runtime_error(std::string("eventfd: ") + std::system_category().message(errno));
}

event_flag::~event_flag() {
  ::close(fd_);
}

void event_flag::raise() const noexcept {
  const std::uint64_t one = 1;
  // A full counter (2^64 - 2 raises) would fail with EAGAIN; the flag is then raised anyway.
  [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof one);
}

bool event_flag::clear() const noexcept {
  std::uint64_t count = 0;
  return ::read(fd_, &count, sizeof count) == static_cast<ssize_t>(sizeof count) && count > 0;
}

}  // namespace rlock::cli
