// exec_permit.hpp: `rlock exec --permits N`: one permit of Redisson's
// RPermitExpirableSemaphore NAME as the "lock" exec holds, so that at most N commands run at
// once under NAME (a distributed `sem -j N`).
//
// Guarantees, on top of exec_lock.hpp's:
//  - The permit is taken with a lease (the watchdog timeout, or --lease) and its lease is set
//    once more as soon as it is taken, so that the holder's lower bound of its end is that
//    request's send time plus the lease (rlock/permit_keeper.hpp). Without a fixed lease it is
//    renewed every third of it while held; with one it is not, and the loss token stops when it
//    ends.
//  - If that first renewal fails, the permit is given back and the acquire fails with its error;
//    if it finds the permit gone, the acquire succeeds with the loss token already stopped.
//  - A stop request ends the wait and takes nothing (the library's undo).
//  - A holder that dies holds the permit for at most its lease: the next script on the
//    semaphore gives it back.
#pragma once

#include <chrono>
#include <cstdint>
#include <rlock/client.hpp>

#include "exec_lock.hpp"

namespace rlock::cli {

/// One permit of `semaphore`, leased for `lease` and renewed while held when `renew`.
exec_lock exec_permit_of(rlock::client& client, const rlock::permit_expirable_semaphore& semaphore,
                         std::chrono::milliseconds lease, bool renew);

}  // namespace rlock::cli
