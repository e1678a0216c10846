// rlock/spin_lock.hpp: the spin lock, wire-compatible with Redisson's RSpinLock (getSpinLock).
//
// Defines:
//   rlock::spin_backoff  how a spin lock's waiter spaces its attempts
//
// A spin lock is a reentrant_lock (lock.hpp) made by client::get_spin_lock(): the same key,
// owner field, hold counts, leases, watchdog, loss token, idempotent acquire and unlock, and the
// same members. It differs only in how it waits and in what its release announces:
//   - A waiter never subscribes: it tries, sleeps, tries again. The sleeps follow spin_backoff
//     (by default 1, 2, 4, ... ms up to 128 ms, each step plus a few random ms, Redisson's
//     ExponentialBackOff), and a sleep never outlasts the TTL the failed try saw (+1 ms): a lock
//     whose lease ends sooner is tried when it ends. Every sleep ends at the wait's deadline.
//   - Its release publishes nothing (no PUBLISH, no channel), so thousands of spin locks cost no
//     pub/sub traffic (in Cluster mode a classic PUBLISH reaches every node). A waiter of the
//     same client is woken by a local release at once; other processes find the lock free at
//     their next attempt (within one backoff step).
//   - It never joins rlock's wait queue (config::lock_queue): its waiters barge, like Redisson
//     clients, and are not served in arrival order. Within one client only the first waiter of a
//     name polls; the others wait their turn locally.
//
// Mixing with the other kinds on one name (they share the hash and its holds): a thread that
// holds a lock of a name through a reentrant_lock re-enters it through the spin lock of that name
// (and vice versa) in the same client, as in Redisson. Waiters of a reentrant_lock are not woken
// by a spin lock's release: they find the lock free when the TTL their failed try saw runs out
// (Redisson's RLock waiters behave the same, protocol §5). Give a name one kind of waiter.
//
// After a pause, failover or partition: as a reentrant_lock (lock.hpp); a waiter cut off from
// the server keeps trying within its wait, each attempt bounded by the request timeout.
//
// Invalid: a backoff with initial_delay < 1 ms, max_delay < initial_delay, or multiplier < 1
// (client::get_spin_lock throws errc::invalid_argument).
#pragma once

#include <chrono>

namespace rlock {

/// The sleeps of a spin lock's waiter between attempts (Redisson's LockOptions.BackOff). Sleep
/// 1 is initial_delay; sleep k + 1 is sleep k x multiplier plus a random 0 to k - 1 ms, at most
/// max_delay (then every sleep is max_delay).
struct spin_backoff {
  std::chrono::milliseconds initial_delay{1};
  std::chrono::milliseconds max_delay{128};
  int multiplier = 2;

  /// The same sleep every time (Redisson's ConstantBackOff; 64 ms by default).
  static constexpr spin_backoff constant(
      std::chrono::milliseconds delay = std::chrono::milliseconds(64)) {
    return {delay, delay, 1};
  }
};

}  // namespace rlock
