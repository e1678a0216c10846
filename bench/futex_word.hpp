// The futex system call on a 32-bit word, for the bench tools that measure this machine's thread
// hand-offs without rlock (handoff_floor.cpp, bare_blocking.cpp). Linux only, as they are.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace rlock::bench {

/// futex(2) on `word`: FUTEX_WAIT_PRIVATE (sleeps while it holds `value`) or FUTEX_WAKE_PRIVATE
/// (wakes up to `value` sleepers).
inline void futex(std::atomic<std::uint32_t>& word, int op, std::uint32_t value) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op, value, nullptr, nullptr, 0);
}

}  // namespace rlock::bench
