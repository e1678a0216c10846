// lock_before_end.hpp: the acquire of a timed worker loop (rlock demo, rlock bench contended):
// wait for the lock until the run's end instant, and no longer.
//
// Guarantees: returns true only with the lock held (the caller unlocks it); false when the run
// has ended before the lock was acquired, including when the wait budget ran out with an
// acquire in flight, which the library reports as errc::timeout (it undoes that acquire, whose
// outcome it does not know): at the end of the run that is "not acquired", not a failed worker.
// Any other error, and a timeout before the end instant, is thrown as rlock::error.
#pragma once

#include <rlock/lock.hpp>

namespace rlock::cli {

/// try_lock() with the time left until `end_ns` (steady_now_ns() clock) as its wait.
bool lock_before_end(rlock::lock& l, long long end_ns);

}  // namespace rlock::cli
