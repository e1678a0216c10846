// Sans-I/O state machine of one acquire of a reentrant lock: try, subscribe, re-try, wait for
// an unlock message or the lock's TTL, re-try, ... until acquired, the deadline, a stop request
// or an error. The I/O layer feeds it events and carries out the action each event returns.
//
// Properties (each covered by tests/unit/acquire_fsm_test.cpp with simulated time):
//   - no missed wake-up: an attempt that failed while the channels it needs were not yet
//     subscribed is re-tried once they are, and every wait is bounded by min(TTL, deadline), so
//     a lost message costs at most one TTL (Redisson #1763);
//   - no herd (queued mode): while the holder is one that hands the lock over through the queue,
//     the waiter needs only its process's hand-off channel, not the Redisson channel on which
//     every unlock is announced to all; it asks for the Redisson channel too once it sees a
//     holder that does not hand over (a Java Redisson client, an rlock client with the queue
//     off);
//   - at most one acquire script per wake-up: wake-ups that arrive while an attempt is in flight
//     are folded into a single re-try after it;
//   - honest deadline: no attempt is started at or after the deadline, and every subscribe and
//     wait is bounded by it;
//   - a queued waiter (not the head of its process's local FIFO) sends nothing until it is given
//     the turn;
//   - a stop request or deadline that lands while an attempt is in flight waits for its reply;
//     if that reply says "acquired", the result asks the caller to release the lock;
//   - a hand-off (queued mode) completes the acquire in any waiting state (with
//     params::confirm_handoff, once one more attempt has confirmed it);
//   - a re-entry refused because its owner's hold is gone is tried again at once, once, as a
//     fresh acquire, within the deadline (a single-attempt acquire too);
//   - a wait between attempts never outlasts params::max_wait, when set (a fair waiter);
//   - spin mode (a spin lock, params::spin): never subscribes; after each failed attempt it
//     sleeps the next spin_delays step, cut short by the TTL the attempt saw (+1 ms) and by the
//     deadline; a wake-up (a local release) during a sleep or an attempt re-tries as in the
//     other modes;
//   - a try again (params::retry_of: the replicas did not confirm the last try) holds its first
//     attempt until params::not_before, whatever wakes it, and starts none at or after the
//     deadline (it ends with that error instead); a stop request ends it at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <system_error>

#include "detail/spin_delays.hpp"
#include "rlock/spin_lock.hpp"

namespace rlock::detail {

class acquire_fsm {
 public:
  using clock = std::chrono::steady_clock;
  using time_point = clock::time_point;

  struct params {
    time_point deadline = time_point::max();  ///< max: wait forever (lock())
    bool single_attempt = false;              ///< try_lock(): one attempt, never waits
    std::chrono::milliseconds subscription_timeout{7500};
    /// Spin mode: waits by sleeping these steps instead of subscribing.
    std::optional<spin_backoff> spin;
    std::uint64_t spin_seed = 0;  ///< the jitter's seed (spin mode)
    /// A wait between attempts is never longer than this (0: no bound beyond the TTL and the
    /// deadline). A fair lock's waiter retries at least three times per wait time: each
    /// attempt moves its eviction time out (fair_lock_acquire.lua).
    std::chrono::milliseconds max_wait{0};
    /// A hand-off is confirmed by one more attempt before the acquire completes: the
    /// count-checked script finds the lock already its owner's and writes its lease, and the
    /// driver judges that write (config::replica_sync: the replicas' acknowledgement, which the
    /// unlock that handed the lock over gave this owner no means to ask for). Its reply decides:
    /// held, an error (the lock is released), or not held (the wait goes on).
    bool confirm_handoff = false;
    /// A try again of an acquire whose last try failed with `retry_of` (the replicas did not
    /// confirm it): its first attempt starts no sooner than `not_before` (when it is the head;
    /// a waiter queued behind a local one has waited its turn instead), whatever wakes it, and
    /// not at or after the deadline: the acquire then ends with `retry_of`.
    time_point not_before{};
    std::error_code retry_of;
  };

  /// The channels a waiter listens on, in increasing order. `handoff`: its process's hand-off
  /// channel (queued mode), enough while the holder hands the lock over through the queue.
  /// `all`: also the lock's Redisson channel, on which every unlock publishes "0" (without the
  /// queue, that channel is all there is).
  enum class channels { none, handoff, all };

  enum class action_kind {
    none,          ///< nothing to do until the next event
    send_acquire,  ///< run the acquire script
    subscribe,     ///< subscribe to `level`'s channels, bounded by `until`
    wait,          ///< sleep until `until` (or a wake-up, or the turn for queued waiters)
    done,          ///< finished: see `ec`, `acquired`, `release`
  };

  struct action {
    action_kind kind = action_kind::none;
    time_point until = time_point::max();
    std::error_code ec;     ///< done: the error, if any
    bool acquired = false;  ///< done: the lock is held
    bool release = false;   ///< done: the lock was acquired but must be released (stop/deadline)
    channels level = channels::none;  ///< subscribe: the channels needed
  };

  /// What an acquire script reported.
  struct reply {
    std::error_code ec;     ///< transport or server error
    bool acquired = false;  ///< nil reply
    long long ttl_ms = -1;  ///< PTTL of the held lock (-1: no TTL)
    /// The holder hands the lock over through the queue when it unlocks (queued mode only).
    bool holder_hands_off = false;
    /// A re-entry was refused: its owner's hold is gone, and the driver made the acquire a
    /// fresh one, which is tried at once (once; even by a single-attempt acquire).
    bool hold_gone = false;
  };

  explicit acquire_fsm(params p) : p_(p) {
    if (p_.spin) {
      delays_.emplace(*p_.spin, p_.spin_seed);
      needed_ = channels::none;
    }
  }

  /// Starts. `head`: this waiter may contend now (else it is queued behind a local waiter).
  /// `subscribed`: the channels of this lock already subscribed in this process.
  action start(time_point now, bool head, channels subscribed);
  /// The head of the local queue left or acquired: this waiter contends now. With
  /// `held_until` set, the lock is known to be held (by a local owner) until then, so the
  /// waiter sleeps until a wake-up or that time instead of sending a script that would fail.
  /// `subscribed`: the channels of this lock subscribed in this process. A turn that comes
  /// before start() is kept: start() then contends at once, whatever its `head`.
  action on_turn(time_point now, std::optional<time_point> held_until, channels subscribed);
  action on_reply(time_point now, const reply& r);
  /// A subscribe of this process for this lock completed (with `ec` if it failed); `subscribed`
  /// is what the process listens on now. Every waiter of the lock in the process is told.
  action on_subscribed(time_point now, std::error_code ec, channels subscribed);
  /// An unlock message on the lock's channel, or the subscription was re-established.
  action on_wake(time_point now);
  /// The wait or queue timer fired.
  action on_timer(time_point now);
  /// The previous holder handed the lock to this waiter (queued hand-off): it holds the lock
  /// without running a script. While an attempt is in flight the acquire completes with that
  /// attempt's reply, whatever it says (it ran before the hand-off, or after it and found the
  /// lock already this owner's): finishing earlier would let a resend of that attempt land
  /// after the owner's unlock and take the lock again for nobody. With
  /// params::confirm_handoff the hand-off is then confirmed by one more attempt.
  action on_handed(time_point now);
  action on_stop(time_point now);

  bool is_head() const { return state_ != state::queued && state_ != state::idle; }
  bool finished() const { return state_ == state::done; }
  /// Waiting for the channels it asked for (after a `subscribe` action, before on_subscribed).
  bool subscribing() const { return state_ == state::subscribing; }
  /// An attempt was sent and its reply has not come (it may be applied any time).
  bool attempting() const { return state_ == state::attempting; }
  int attempts() const { return attempts_; }

 private:
  enum class state { idle, queued, attempting, subscribing, waiting, done };
  action attempt(time_point now);
  /// A head's first attempt: it waits until params::not_before first (a back-off, never past
  /// the deadline), and a try again (params::retry_of) starts none at or after the deadline.
  action back_off_or_retry(time_point now);
  /// The attempt that confirms a hand-off (params::confirm_handoff), whatever the deadline.
  action confirm();
  /// Sends an attempt (attempt() and confirm() after their checks).
  action send_attempt();
  action finish(std::error_code ec, bool acquired, bool release = false);
  action wait_for_ttl(time_point now);
  action spin_wait(time_point now);
  action subscribe(time_point now);

  params p_;
  state state_ = state::idle;
  channels subscribed_ = channels::none;
  channels subscribed_at_send_ = channels::none;
  // What this waiter must hear; `all` until a reply says the holder hands over.
  channels needed_ = channels::all;
  bool woken_during_attempt_ = false;
  bool stop_pending_ = false;
  bool handed_pending_ = false;  // handed the lock while an attempt was in flight
  bool confirming_ = false;      // the attempt in flight confirms a hand-off
  bool turn_pending_ = false;    // on_turn came before start()
  long long last_ttl_ = -1;
  bool answered_ = false;       // an attempt's reply said the lock is held by another
  bool retried_fresh_ = false;  // a refused re-entry was tried again as a fresh acquire
  bool backing_off_ = false;    // waiting for params::not_before
  int attempts_ = 0;
  std::optional<spin_delays> delays_;  // spin mode
};

}  // namespace rlock::detail
