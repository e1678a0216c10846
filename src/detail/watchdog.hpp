// The lease keeper of one client: renews watchdog leases and tells holders when a lock is lost.
//
// - One renewal timer per client, period = lock_watchdog_timeout / 3. Each round cuts the held
//   locks into batches of at most lock_watchdog_batch_size keys (in Cluster mode, of one slot
//   each, as Redisson's), one renewal script per batch,
//   most urgent first (earliest local deadline), and spreads the batches evenly over the first
//   half of the period: batch i of n goes at round + i * spread / n, or halfway to its most
//   urgent deadline if that is sooner. Each round clears the queue and queues every hold not
//   in flight again, by its deadline then: a hold still queued when the next round comes (an
//   early round, after a re-entry set a shorter lease) takes its new place. A hold whose
//   renewal is in flight is skipped by a round; if that renewal succeeds while a re-entry sent
//   after it (on another connection) set a nearer deadline, the reply brings the next round
//   forward; if it fails, the first retry comes at most halfway to the deadline. A round of 100
//   batches sent at once held a lock request on the same connection behind all of them (12.8 ms p99
//   against 0.5 ms idle, at 10,000 locks); spread, a request meets at most one batch, and rarely,
//   unless many leases are near their end at once (after an outage): their batches then go
//   together. A hold is renewed about once per period, its first renewal at most 1.5 periods after
//   its acquire.
// - A failed batch neither aborts the others nor waits a whole period: only its holds are
//   retried, after min(timeout / 10, 1 s), then after twice that and so on, as long as the
//   retry comes before the next round (which renews every hold); the first retry at most
//   halfway to the hold's deadline (a re-entry may have set a lease shorter than the delay).
//   A retry's batches are spread over half its delay. A server refusing renewals therefore costs a
//   few extra scripts per hold, not a round every second until the leases end.
// - Every registered hold has a local deadline, valid_until = send time of the last successful
//   acquire or renewal + lease, on steady_clock (the earlier of the two when a renewal's reply
//   comes after that of an acquire sent later, which may have set a shorter lease). When the
//   renewal script reports the owner field gone, or when valid_until passes without a successful
//   renewal (Redis unreachable, paused), the hold is lost: it leaves the watchdog and its loss
//   callback runs once (and config::on_event hears client_event_kind::lock_lost, with how).
// - Holds taken with an explicit lease are not renewed, but their loss is still reported when
//   the lease runs out. A re-entry resets the server's TTL to its own lease (Redisson's script):
//   the hold's deadline follows it, and a re-entry under the watchdog starts renewal.
// - Registration happens before the acquire is sent (add, then activate on success) and removal
//   before the unlock is sent, so no renewal round starts after an unlock (Redisson #7272).
//   A renewal script already submitted runs before the unlock on the same connection, and is
//   never sent again, written or not (one attempt: see send_batch). It may still reach the
//   server after the unlock: with connection_pool_size > 1, on another connection; and on one
//   connection if the owner's unlock is submitted in the instant between send_batch taking
//   the hold (under the mutex) and submitting the script (outside it, since the core may
//   complete it at once). The renewal script never shortens a TTL, so it can at most keep
//   the owner's next hold, if there is one, for one watchdog timeout past that hold's
//   explicit lease.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "detail/client_counters.hpp"
#include "detail/connection.hpp"
#include "rlock/script.hpp"

namespace rlock::detail {

class core;

class watchdog : public std::enable_shared_from_this<watchdog> {
 public:
  using loss_callback = std::function<void(std::error_code)>;

  /// `renew_script`: the batched renewal (lock_renew.lua's contract: KEYS the keys, ARGV[1] the
  /// lease, ARGV[i+1] the owner of KEYS[i]; an array of 1 held / 0 lost); must outlive it.
  watchdog(const std::shared_ptr<core>& c, std::chrono::milliseconds timeout, int batch_size,
           const script& renew_script);

  /// Registers a hold before its acquire is sent; it is neither renewed nor expired before
  /// activate() says what lease the acquire set.
  std::uint64_t add(std::string key, std::string owner, loss_callback on_loss);
  /// A script sent at `sent_at` set the lock's TTL to `lease` and succeeded: the hold's first
  /// acquire, a re-entry (which resets the TTL to its own lease) or an unlock that left holds
  /// behind. valid_until becomes sent_at + lease, the server's expiry or earlier (if a script
  /// sent later was activated first, the earlier of the two). `renew`: this
  /// acquire asked for the watchdog; once any acquire of a hold did, the hold is renewed until
  /// it is removed, and the next round comes within a third of `lease`; the round sends this
  /// hold's batch at most halfway to its deadline, before the TTL runs out. If a renewal of the
  /// hold is in flight then, that round skips it; the renewal's reply then brings the next
  /// round forward to a third of what is left of the deadline (or, if it failed, the first
  /// retry comes halfway to it).
  void activate(std::uint64_t id, clock::time_point sent_at, std::chrono::milliseconds lease,
                bool renew);
  /// Removes a hold (before its unlock is sent, or after its acquire failed). No callback.
  void remove(std::uint64_t id);
  /// The local deadline of a hold (time_point::min() if unknown or lost).
  clock::time_point valid_until(std::uint64_t id) const;
  /// Stops renewing; pending callbacks are dropped.
  void stop();

  /// Renewal scripts sent so far (for tests and benchmarks).
  std::uint64_t scripts_sent() const;
  std::size_t active() const;

 private:
  struct hold {
    std::string key;
    std::string owner;
    bool renew = false;
    bool active = false;
    /// A renewal script with this hold was sent and has not been answered.
    bool in_flight = false;
    /// The queued batch this hold waits in (0: none); a batch sends only the holds that name
    /// it (a round clears the queue, but send_due may have taken a batch out already). Retries
    /// leave queued holds alone.
    std::uint64_t queued_in = 0;
    /// Failed renewals since the last successful one, and when the next retry is due
    /// (time_point::max(): none; the next round renews it).
    int failures = 0;
    clock::time_point retry_at = clock::time_point::max();
    clock::time_point valid_until = clock::time_point::min();
    /// Send time of the last acquire or unlock that set the lease (activate()).
    clock::time_point activated_at = clock::time_point::min();
    /// When activate() last ran (that script's reply had come). A renewal sent before then may
    /// have run before or after that script (with a pool, on another connection), even if the
    /// script was sent first.
    clock::time_point activation_seen_at = clock::time_point::min();
    loss_callback on_loss;
  };
  /// One timer and the time it is armed for (time_point::max(): not armed).
  struct alarm {
    explicit alarm(asio::io_context& io) : timer(io) {}
    asio::steady_timer timer;
    clock::time_point at = clock::time_point::max();
  };
  /// Arms `a` to run `fire` at `at`, unless it is already armed for `at` or earlier.
  void arm_locked(alarm& a, clock::time_point at, void (watchdog::*fire)());
  void run_round();
  void run_retries();
  /// A batch of holds to renew in one script; `serial` tells its holds apart from those since
  /// queued in another batch.
  struct batch {
    std::uint64_t serial = 0;
    std::vector<std::uint64_t> ids;
  };
  /// A hold picked for renewal: its deadline, id and entry (stable while mu_ is held).
  struct due_hold {
    clock::time_point valid_until;
    std::uint64_t id;
    hold* h;
  };
  /// Queues `due` (active, none in flight) as batches, most urgent first, spread over `spread`
  /// from `now`; a batch goes at most halfway to its most urgent deadline. Arms send_.
  void schedule_locked(std::vector<due_hold> due, clock::time_point now, clock::duration spread);
  /// Sends the queued batches that are due.
  void send_due();
  void send_batch(const batch& b);
  void on_batch(std::vector<std::uint64_t> ids, clock::time_point sent_at, exec_result res);
  void arm_retry_locked();
  void arm_expiry_locked();
  void on_expiry();
  /// config::on_event: client_event_kind::lock_lost for each of `keys`, lost as `how` says.
  void report_lost(const std::vector<std::string>& keys, const std::string& how) const;

  std::weak_ptr<core> core_;
  std::shared_ptr<client_counters> counters_;
  const script* renew_script_;
  std::chrono::milliseconds timeout_;
  /// One connection carries every script: the server runs them in the order they were sent.
  bool ordered_;
  /// Cluster mode: a batch holds keys of one slot only.
  bool by_slot_;
  std::size_t batch_size_;
  std::chrono::milliseconds retry_delay_;
  alarm round_;
  alarm retry_;
  alarm expiry_;
  alarm send_;
  mutable std::mutex mu_;
  /// By id. Hashed: a round looks up every hold a few times (send, reply), 10,000s of them.
  std::unordered_map<std::uint64_t, hold> holds_;
  /// Batches waiting for their send time.
  std::multimap<clock::time_point, batch> queue_;
  std::uint64_t next_batch_ = 1;
  std::uint64_t next_id_ = 1;
  bool stopped_ = false;
  std::uint64_t scripts_sent_ = 0;
};

}  // namespace rlock::detail
