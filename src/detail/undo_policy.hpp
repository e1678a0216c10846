// Whether the undo of an acquire goes out again after a round that failed (no I/O).
//
// An acquire whose outcome is unknown when its caller's wait ends is undone (an unlock of
// exactly that acquire, lock_undo.cpp). A round of the undo is one request with the client's
// retry policy. When a whole round fails, the acquire may still hold the lock on the server,
// for an owner that no longer waits for it: nobody renews or releases that hold, and every other
// client waits out its lease. So the undo goes out again, a retry delay later, while:
//  - the failure may go away by itself (is_transient: timeouts, lost or refused connections, a
//    busy server); a refusal that will not (NOPERM, WRONGTYPE, OOM) ends it;
//  - the client is not closing (its close sends a waiting round at once, then no more);
//  - nothing of the same owner and lock waits for it (its next acquire or unlock waits until
//    the undo has landed, so that the undo's count check cannot match that later hold): a round
//    that failed with one waiting is the last, and the owner's final unlock releases what it
//    finds left (hold::unsure); a round due later is sent at once when one starts waiting;
//  - a hold of that acquire can still be there when the next round arrives: every attempt of
//    the acquire was sent before the undo began, with at most `lease` (a hand-off: at most the
//    queue liveness) ahead of it.
#pragma once

#include <chrono>
#include <system_error>

#include "detail/exec_result.hpp"

namespace rlock::detail {

struct undo_round_failure {
  std::error_code ec;           ///< the round's error
  bool closing = false;         ///< the client is closing: that round was its last
  bool others_waiting = false;  ///< the owner's next acquire or unlock of the lock waits
  std::chrono::steady_clock::time_point next_round;    ///< when the next one would go out
  std::chrono::steady_clock::time_point hold_gone_by;  ///< no hold of the acquire after this
};

/// True: send the undo again at `next_round`. False: the undo ends, its outcome unknown.
inline bool undo_again(const undo_round_failure& f) {
  return is_transient(f.ec) && !f.closing && !f.others_waiting && f.next_round < f.hold_gone_by;
}

}  // namespace rlock::detail
