#include "support/clock_shift.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <system_error>

#ifndef RLOCK_CLOCK_SHIFT_LIBRARY
#error "RLOCK_CLOCK_SHIFT_LIBRARY must name the built clock_shift library"
#endif

namespace rlock::test {
namespace {

std::runtime_error failure(const std::string& what) {
  return std::runtime_error("clock_shift: " + what + ": " + std::system_category().message(errno));
}

}  // namespace

clock_shift::clock_shift() : dir_("rlock-clock") {
  const std::string path = (dir_.path() / "offset").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) throw failure("cannot create " + path);
  if (::ftruncate(fd, sizeof(std::int64_t)) != 0) {
    ::close(fd);
    throw failure("cannot size " + path);
  }
  void* m = ::mmap(nullptr, sizeof(std::int64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) throw failure("cannot map " + path);
  word_ = static_cast<std::int64_t*>(m);
}

clock_shift::~clock_shift() {
  ::munmap(word_, sizeof(std::int64_t));
}

std::vector<std::string> clock_shift::env() const {
  return {std::string("LD_PRELOAD=") + RLOCK_CLOCK_SHIFT_LIBRARY,
          "RLOCK_CLOCK_SHIFT_FILE=" + (dir_.path() / "offset").string()};
}

void clock_shift::set(std::chrono::nanoseconds offset) {
  // The processes read it with an atomic load of the same aligned word (clock_shift.c).
  std::atomic_ref<std::int64_t>(*word_).store(offset.count(), std::memory_order_relaxed);
}

}  // namespace rlock::test
