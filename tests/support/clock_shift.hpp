// clock_shift: moves the wall clock of a redis-server while it runs, as an NTP step or an
// operator setting the clock would on its machine (fault N18 of the reference's fault plan).
// Redis keeps key expiry and TIME on the wall clock, and with them the locks' leases and the
// queue's liveness deadlines; its monotonic clock is left alone.
//
// Usage: pass env() as server_options::extra_env; set() then moves that server's clock at its
// next clock read. Works through the LD_PRELOAD library built from clock_shift.c (see there,
// and for why not libfaketime).
//
// Guarantees: the offset starts at 0; set() is seen by every process started with env() (the
// offset lives in a file they map). Declare it before the redis_server that uses it, so that it
// is destroyed after the server: the file goes with it. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace rlock::test {

class clock_shift {
 public:
  /// Creates the offset file (0). Throws std::runtime_error if it cannot.
  clock_shift();
  ~clock_shift();
  clock_shift(const clock_shift&) = delete;
  clock_shift& operator=(const clock_shift&) = delete;
  clock_shift(clock_shift&&) = delete;
  clock_shift& operator=(clock_shift&&) = delete;

  /// "NAME=value" entries that make a process's wall clock follow this object:
  /// LD_PRELOAD and RLOCK_CLOCK_SHIFT_FILE.
  std::vector<std::string> env() const;
  /// Sets the offset from the true wall clock (negative: the clock goes back).
  void set(std::chrono::nanoseconds offset);

 private:
  temp_dir dir_;
  std::int64_t* word_ = nullptr;  // the file's mapping, shared with the processes
};

}  // namespace rlock::test
