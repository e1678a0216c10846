// rlock/permit_keeper.hpp: keeps a permit of a permit-expirable semaphore: renews its lease
// while held, as the watchdog renews a lock, and tells the holder when it is lost.
//
// Defines:
//   rlock::permit_keeper   the renewal and the liveness of one permit
//
// Redisson has no renewal for these permits (a permit lives for the lease its acquire gave it,
// unless updateLeaseTime is called); this is rlock's, on the wire only the update that
// permit_expirable_semaphore::update_lease_time sends, so a Java peer sees a permit whose lease
// is set again every third of it.
//
//   auto sem = client.get_permit_expirable_semaphore("jobs");
//   auto id = sem.acquire(30s);                      // a permit with a 30 s lease
//   rlock::permit_keeper keeper(sem, id, 30s);       // renewed every 10 s from now on
//   while (!keeper.loss_token().stop_requested()) work();
//   keeper.release();
//
// Guarantees:
//   - valid_until() is a lower bound of the lease's end on the server, on steady_clock: the
//     send time of the last request that set the lease and that the server confirmed (or the
//     bound given at construction), plus the lease. Before it, the permit is the holder's
//     (unless someone released it or deleted the semaphore: the next renewal finds that).
//   - Renewals are sent every third of the lease from the last confirmed one's send time; one
//     that fails (an error reply, a connection lost, no answer in its request timeout) is tried
//     again every tenth of the lease (at most 1 s), as long as the lease may still run.
//   - loss_token() is stopped, once, when a renewal finds the permit gone (released, reclaimed
//     after its lease ended, the semaphore deleted), when valid_until() passes with no renewal
//     confirmed (a server that is down, paused, partitioned away or refusing: the holder is told
//     at the latest when the permit could be given to someone else), and at client::shutdown().
//     It is not stopped by stop(), release() or the destructor. Its std::stop_callbacks run on
//     one of the client's I/O threads (or the thread calling shutdown()): quick, non-blocking.
//   - A renewal never gives a permit back to its holder: one that reaches the server after the
//     release (from another connection of the pool, or resent after a lost reply) finds the
//     permit gone and changes nothing.
//   - With renewal::off nothing is sent: the token stops at valid_until() (a fixed lease,
//     watched).
//   - After a pause of the holder's process longer than the lease, the token is stopped when it
//     runs again (the bound has passed; a renewal in flight then does not count). After a
//     failover to a replica that had not received the last renewal, the lease is the replica's:
//     a renewal finds the permit gone or the bound passes, and the token stops.
//   - The server's clock counts the lease (TIME in the scripts); a jump of the client's wall
//     clock changes nothing here.
//
// Invalid (errc::invalid_argument, thrown by the constructor): an id that is not 32 hex
// characters; a lease <= 0 or longer than a century. The blocking constructor and release()
// must not be called from the client's completion handlers.
// Thread safety: every member may be called from any thread; one keeper is not to be moved
// while another thread uses it.
#pragma once

#include <chrono>
#include <memory>
#include <stop_token>

#include "rlock/permit_expirable_semaphore.hpp"

namespace rlock {

namespace detail {
class permit_keeper_op;
}

class permit_keeper {
 public:
  using clock = std::chrono::steady_clock;
  using milliseconds = std::chrono::milliseconds;
  using permit_id = permit_expirable_semaphore::permit_id;

  enum class renewal {
    on,   ///< renewed every third of the lease
    off,  ///< not renewed: watched, its loss at valid_until
  };

  /// Keeps permit `id` of `semaphore`: sets its lease to `lease` now (update_lease_time, whose
  /// send time then bounds the lease's end), then renews it every third of `lease`. Throws
  /// errc::not_owner when the permit is not held (released, or its lease ended), and the
  /// update's errors as update_lease_time.
  permit_keeper(const permit_expirable_semaphore& semaphore, const permit_id& id,
                milliseconds lease);
  /// Keeps permit `id`, whose lease `lease` ends on the server no earlier than `valid_until`
  /// (for instance: the time just before the call that took or last set it, plus `lease`). No
  /// request is sent now; the first renewal goes at valid_until - lease + lease / 3 (at once if
  /// that has passed). A `valid_until` already past stops the loss token at once.
  permit_keeper(const permit_expirable_semaphore& semaphore, const permit_id& id,
                milliseconds lease, clock::time_point valid_until, renewal r = renewal::on);

  /// Stops renewing (stop()); the permit is not released.
  ~permit_keeper();
  permit_keeper(permit_keeper&&) noexcept;
  permit_keeper& operator=(permit_keeper&&) noexcept;
  permit_keeper(const permit_keeper&) = delete;
  permit_keeper& operator=(const permit_keeper&) = delete;

  const permit_id& id() const { return id_; }
  /// Stopped when the permit is lost, or may be (see the guarantees above).
  std::stop_token loss_token() const;
  /// The lower bound of the lease's end (see above).
  clock::time_point valid_until() const;

  /// Stops renewing at once (an answer in flight is dropped); the permit keeps what lease it
  /// has. Idempotent.
  void stop();
  /// Stops renewing, then gives the permit back (try_release): true if released while held;
  /// false on a keeper moved from (which keeps nothing: its loss_token() cannot stop, its
  /// valid_until() is time_point::min()).
  bool release();

 private:
  permit_expirable_semaphore semaphore_;
  permit_id id_;
  std::shared_ptr<detail::permit_keeper_op> op_;
};

}  // namespace rlock
