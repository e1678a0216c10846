// Per-client state of reentrant locks: the local FIFO of waiters per lock name (so that at most
// one waiter per process contends in Redis), the shared channel subscription per name, the
// holds of local owners (hold count, watchdog registration, loss signal), and the drivers that
// carry out acquire_fsm's actions.
#pragma once

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "detail/acquire_fsm.hpp"
#include "detail/core.hpp"
#include "detail/spent_latches.hpp"
#include "detail/watchdog.hpp"
#include "rlock/lock.hpp"

namespace rlock::detail {

struct acquire_request {
  std::string raw_name;
  std::uint64_t owner_id = 0;
  /// Lease; nullopt: the watchdog lease (renewed while held).
  std::optional<std::chrono::milliseconds> lease;
  clock::time_point deadline = clock::time_point::max();
  bool single_attempt = false;
  std::stop_token stop;
  /// Optional: on a failure that a reply explains, set to its text (the server's error reply,
  /// or the transport's reason) before the callback runs. Must outlive the callback.
  std::string* error_detail = nullptr;
  /// The request's completions may run on the waiting thread (a blocking acquire reading its
  /// own reply: exec_options::completes_on_caller).
  bool completes_on_caller = false;
  /// The handle's kind: its scripts and its wait. A spin lock's acquire (spin_lock.hpp) sleeps
  /// `spin`'s steps instead of subscribing, never joins the wait queue, and its undo publishes
  /// nothing. A fair lock's (Redisson's RFairLock) queues in Redis in arrival order and is told
  /// on its own channel when it is the head and the lock is free; `fair_wait` is Redisson's
  /// threadWaitTime (how long its queue entry lasts behind the one before it).
  lock_kind kind = lock_kind::reentrant;
  std::optional<spin_backoff> spin;  ///< set exactly for lock_kind::spin
  std::chrono::milliseconds fair_wait{};
  /// Set by the service when it tries an acquire again after the replicas did not confirm it
  /// (config::replica_sync): the tries that have run, the last one's error text, and when the
  /// next one may start.
  int unconfirmed_tries = 0;
  std::string unconfirmed_detail;
  clock::time_point not_before{};
};

/// A try again of an acquire whose last try the replicas did not confirm, asked for by a caller
/// of the lock (a fenced lock whose token was not confirmed: reentrant_lock::start_acquire): the
/// tries that have run, the last one's error text, and when this one may start.
struct unconfirmed_try {
  int tries = 0;
  std::string detail;
  clock::time_point not_before{};
};

class lock_service : public std::enable_shared_from_this<lock_service> {
 public:
  using acquire_callback = std::function<void(std::error_code, bool acquired)>;
  using unlock_callback = std::function<void(std::error_code)>;

  explicit lock_service(std::shared_ptr<core> c);
  ~lock_service();
  /// Stops the watchdog and fails waiting acquires with errc::shutdown. Then waits, at most
  /// the request timeout (not at all on one of the client's I/O threads), for the clean-up
  /// scripts in flight (queue leaves, undos) to land: the connections close right after, and
  /// a waiter left in the queue would be handed the lock, and hold it for its lease, after its
  /// client has gone.
  void shutdown();
  /// Holds the watchdog keeps now (client_stats::holds_watched).
  std::size_t holds_watched() const { return watchdog_->active(); }

  void acquire(acquire_request req, acquire_callback done);
  /// `error_detail`, when given: as acquire_request::error_detail. `completes_on_caller`: as
  /// acquire_request's (a blocking unlock). `was_parked`: sent after waiting behind an undo or
  /// a re-entry of its owner (unlocks_after_undo_); it waits behind an undo again, not behind
  /// an acquire started since. `kind`: the release's script (a spin lock's publishes nothing and
  /// wakes a waiter of this process itself; a fair lock's tells the queue's head only).
  /// `confirm`: with config::replica_sync, a release the replicas did not confirm is sent again
  /// (replica_sync_tries in all) until they do; false sends it once (a fenced lock releasing a
  /// hold it will not return, which an undo would not confirm either).
  void unlock(const std::string& raw_name, std::uint64_t owner_id, lock_kind kind,
              unlock_callback done, std::string* error_detail = nullptr,
              bool completes_on_caller = false, bool was_parked = false, bool confirm = true);
  void force_unlock(const std::string& raw_name, lock_kind kind,
                    std::function<void(std::error_code, bool)> done,
                    std::string* error_detail = nullptr);

  /// Local view of a hold (no request): the loss token and the local lease deadline.
  std::stop_token loss_token(const std::string& raw_name, std::uint64_t owner_id);
  clock::time_point valid_until(const std::string& raw_name, std::uint64_t owner_id);

  const std::shared_ptr<core>& engine() const { return core_; }
  std::string owner_field(std::uint64_t owner_id) const;

 private:
  struct op;
  /// Why a subscribe of `o`'s lock channels failed with `ec`, for the acquire's error text
  /// (acquire_request::error_detail); empty when the code says it all. Without o.mu: it asks
  /// the subscriber (core::subscription_timeout_detail).
  std::string subscribe_failure_detail(const op& o, std::error_code ec) const;
  /// Records `why` (subscribe_failure_detail) as the error text, should the acquire end with
  /// `ec`. Under o.mu.
  static void note_subscribe_failure(op& o, std::error_code ec, const std::string& why);
  /// Extends a hold that was handed over with a TTL shorter than its explicit lease (the queue
  /// entry's deadline came first) to `lease_end`; its watchdog deadline follows on success.
  void extend_handed(const std::string& raw_name, const std::string& owner,
                     std::uint64_t watchdog_id, clock::time_point lease_end);
  struct hold {
    int count = 0;
    std::uint64_t watchdog_id = 0;
    std::chrono::milliseconds lease{};  // the last acquire's: a partial unlock's TTL
    bool renew = false;                 // some acquire of it asked for the watchdog
    // Partial unlocks (holds remained) that failed, with an unknown outcome or refused, and
    // failed undos of this owner's re-entries that gave up. Each is counted as applied; if one
    // was not, the final unlock finds holds left on the server and releases them too (else the
    // watchdog would renew a lock its owner believes released, for ever, or the server keep it
    // for a lease).
    int unsure = 0;
    std::stop_source lost;
  };
  using channels = acquire_fsm::channels;
  struct entry {
    std::deque<std::shared_ptr<op>> queue;  // front: the head, the only local contender
    channels level = channels::none;        // subscribed and confirmed
    bool subscribing = false;               // a subscribe is in flight
    subscription sub_handle;                // the Redisson channel (level all)
    subscription handoff_handle;            // queued mode: this process's hand-off channel
    std::uint64_t sub_generation = 0;
    std::unique_ptr<asio::steady_timer> linger;
    std::unique_ptr<asio::steady_timer> refresh;  // queued mode: liveness of local waiters
    bool refresh_armed = false;
    bool handoff_then_zero = false;       // the next "0" is the one that follows our own hand-off
    std::map<std::uint64_t, hold> holds;  // by owner id
  };

  /// Feeds one event to an op's state machine and carries out the resulting action. Runs on
  /// whichever thread delivers the event (the caller's for the first attempt, so a blocking
  /// acquire pays no extra thread hand-off); o->mu serialises the events of one op.
  template <class Event>
  void step(const std::shared_ptr<op>& o, Event&& ev);
  void run(const std::shared_ptr<op>& o, acquire_fsm::action a, std::unique_lock<std::mutex>& lk);
  void send_acquire(const std::shared_ptr<op>& o, std::unique_lock<std::mutex>& lk);
  void ensure_subscribed(const std::shared_ptr<op>& o, clock::time_point until, channels level);
  /// A fair lock's waiter subscribes its own channel (Redisson's per-thread fair channel); its
  /// state machine is told when the subscription is confirmed.
  void subscribe_fair_waiter(const std::shared_ptr<op>& o, clock::time_point until);
  /// An unlock message on the Redisson channel, or (`resubscribed`) a channel of the lock was
  /// subscribed again after a reconnection, so that a message may have been missed.
  void on_message(const std::string& raw_name, bool resubscribed);
  /// A spin lock's release of this process left the lock free, and announced it to nobody: the
  /// head of the local queue (of either kind) tries at once.
  void wake_local_head(const std::string& raw_name);
  void on_handoff(const std::string& raw_name, std::string_view payload);
  void arm_refresh_locked(const std::string& raw_name, entry& e);
  void refresh(const std::string& raw_name);
  void finish(const std::shared_ptr<op>& o, const acquire_fsm::action& a,
              std::unique_lock<std::mutex>& lk);
  /// Undoes an acquire that may have been applied, and (queued mode) leaves the wait queue,
  /// in rounds until it lands (undo_policy.hpp; lock_undo.cpp).
  void release_or_leave(const std::shared_ptr<op>& o);
  // One undo, over its rounds.
  struct undo {
    std::pair<std::string, std::uint64_t> key;  // (name, owner id)
    std::string channel;
    std::string owner;
    std::chrono::milliseconds lease{};
    std::string expected;  // the owner's hold count with exactly the acquire undone
    std::string latch;     // shared by every round
    // Where attempts of the acquire, or of earlier rounds, may still run: closed first.
    std::vector<server_client> fence;
    lock_kind kind = lock_kind::reentrant;  // of the acquire: its scripts
    std::chrono::milliseconds fair_wait{};  // a fair lock's: it leaves the queue too
    clock::time_point hold_gone_by;         // undo_policy.hpp
    int rounds = 0;                         // sent so far
  };
  void send_undo(const std::shared_ptr<undo>& u);
  void undo_answered(const std::shared_ptr<undo>& u, exec_result res);
  /// Sends the next round of the undos of `key` waiting for it at once (an acquire or unlock of
  /// that owner now waits for them); mu_ held.
  void hurry_undos_locked(const std::pair<std::string, std::uint64_t>& key);
  void maybe_linger_locked(const std::string& raw_name, entry& e);
  struct unlock_request {
    std::string raw_name;
    std::string channel;
    std::string owner;
    std::chrono::milliseconds lease{};
    /// The owner's expected hold count, or "" for any.
    std::string expected;
    /// The unlock latch's key; "" for a fresh one. An undo's rounds share one: whichever runs
    /// first, the others (and their late attempts) read its result and change nothing.
    std::string latch;
    /// An earlier request with this latch may have run: the latch is never spent.
    bool latch_sent_before = false;
    bool completes_on_caller = false;
    /// Connections to close on the server first (exec_options::fence), where the acquire this
    /// unlock undoes may still run.
    std::vector<server_client> fence;
    /// The script: spin_lock_unlock (no channel, never the queue's), fair_lock_unlock (the
    /// fair queue's head told), else plain or queued per config.
    lock_kind kind = lock_kind::reentrant;
    /// A fair lock's undo: its wait time, to leave the fair queue (fair_lock_unlock's ARGV[5]).
    std::string fair_leave_wait;
    /// A caller's unlock: followed by WAIT when config::replica_sync asks (an undo is not).
    bool sync_replicas = false;
    /// With sync_replicas: sent again while the replicas do not confirm it
    /// (exec_options::confirm_tries: config::replica_sync_tries).
    bool confirm = false;
  };
  /// Sends the unlock script (plain or queued, per config; r.kind's for a spin or fair lock)
  /// releasing one hold of `r.owner`, and deletes the lock's spent latches. Before `done` runs, the
  /// latch goes to spent_latches_ if this unlock was answered on its only attempt and no earlier
  /// request had it.
  void send_unlock(unlock_request r, exec_callback done);
  /// Registers a hold with the watchdog (its loss callback reaches on_lost).
  std::uint64_t register_hold(const std::string& raw_name, std::uint64_t owner_id,
                              const std::string& owner);
  void start(const std::shared_ptr<op>& o);
  /// Ends an acquire that start() found after shutdown() with errc::shutdown, unless
  /// shutdown() ended it first.
  void end_unstarted(const std::shared_ptr<op>& o);
  /// An acquire waiting for its owner's undo to land (in after_undo_) ends at its deadline
  /// (errc::timeout) or on a stop request (errc::stopped) without being started.
  void park_locked(const std::shared_ptr<op>& o);
  void unpark(const std::shared_ptr<op>& o, errc why);
  /// Starts a parked acquire that next_parked_locked() returned (mu_ not held).
  void resume_parked(const std::shared_ptr<op>& o);
  /// The next parked acquire of (name, owner) to start, now that nothing of that owner is in
  /// flight (no undo, no acquire), marked as acquiring; nullptr if none may start yet.
  std::shared_ptr<op> next_parked_locked(const std::pair<std::string, std::uint64_t>& key);
  /// The unlocks of (name, owner) parked behind its undo or re-entry, to send now that
  /// neither is in flight (each called with true); mu_ held.
  std::vector<std::function<void(bool)>> take_parked_unlocks_locked(
      const std::pair<std::string, std::uint64_t>& key);
  void on_lost(const std::string& raw_name, std::uint64_t owner_id, std::uint64_t wd_id);
  /// A re-entry was refused (its owner holds nothing on the server): drops the owner's lost
  /// hold, tells its holder, and makes `o` a fresh acquire. o->mu held.
  void reentry_found_lock_gone(const std::shared_ptr<op>& o);
  /// The local hold of `owner_id` on `raw_name`, or nullptr; mu_ held.
  hold* find_hold_locked(const std::string& raw_name, std::uint64_t owner_id);

  std::shared_ptr<core> core_;
  std::shared_ptr<watchdog> watchdog_;
  // Latches of answered unlocks, deleted by the next unlock script of their lock.
  spent_latches spent_latches_;
  std::mutex mu_;
  std::map<std::string, entry> entries_;
  // Undo/leave scripts in flight per (name, owner), and acquires of that owner waiting for
  // them: a later acquire must not be undone by an earlier acquire's clean-up.
  std::map<std::pair<std::string, std::uint64_t>, int> undo_in_flight_;
  std::map<std::pair<std::string, std::uint64_t>, std::vector<std::shared_ptr<op>>> after_undo_;
  // Unlocks of an owner sent once its undo has landed. Sent before it, an unlock could take the
  // hold the undo is for (count 2 -> 1), and the undo's count check then fail (1 is not 2): the
  // owner's last hold would stay on the server, unrenewed, for its lease. Also unlocks of an
  // owner behind its re-entry in flight (async API), sent once it has completed.
  // Each is called with true to send it, or false to refuse it (errc::shutdown).
  std::map<std::pair<std::string, std::uint64_t>, std::vector<std::function<void(bool)>>>
      unlocks_after_undo_;
  // The started acquire of each (name, owner), until it finishes (queued or not): shutdown()
  // ends and undoes them. One at a time per owner: the scripts' count check (ARGV[3]: the
  // owner's count before this acquire) takes a second concurrent acquire of the same owner for
  // a resend of the first, so both would be granted one server hold. A later one waits in
  // after_undo_ like behind an undo.
  std::map<std::pair<std::string, std::uint64_t>, std::shared_ptr<op>> acquiring_;
  // Undos of (name, owner) waiting for their next round (a timer each); cancelled to send it
  // at once. Set, waited on and cancelled with mu_ held.
  std::map<std::pair<std::string, std::uint64_t>, std::vector<std::shared_ptr<asio::steady_timer>>>
      undo_waits_;
  std::condition_variable cleanup_done_;  // undo_in_flight_ reached 0
  bool closed_ = false;
  std::atomic<std::uint64_t> next_token_{0};  // acquire tokens (op::token)
};

}  // namespace rlock::detail
