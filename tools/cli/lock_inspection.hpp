// lock_inspection.hpp: what a lock name stands for in Redis right now, read from Redisson's key
// layout (see redisson_names.hpp), for `rlock status` and the waiting status line of `exec`.
//
// Guarantees: inspect_lock() only reads; it throws rlock::error on any failure. The key itself
// (its type, TTL, fields or value) is read in one read-only script (EVALSHA running TYPE, PTTL,
// HGETALL or GET), so state, owners and TTL are one snapshot. The kind's other keys (EXISTS),
// the listeners (PUBSUB NUMSUB) and the queue (ZCARD) are separate round trips.
//
// A hash is a lock only with Redisson's field layout (shape_of_hash): every field an owner
// "<id>:<thread id>" (decimal) holding a positive integer; a read-write lock also has "mode"
// ("read" or "write") and may have write owners "<id>:<thread id>:write". Any other hash (an
// application's) is other:hash.
//
// kind:
//   free                        no key
//   lock                        hash of owners (RLock)
//   fair_lock                   such a hash, and redisson_lock_queue:{name} exists (RFairLock)
//   fenced_lock                 such a hash, and redisson_lock_token:{name} exists (RFencedLock)
//   read_write_lock             such a hash with "mode" (RReadWriteLock)
//   permit_expirable_semaphore  string, and {name}:timeout exists
//   count_down_latch            string, and its latch channel has subscribers
//   semaphore_or_latch          string holding an integer (RSemaphore or an idle RCountDownLatch)
//   other:<type>                anything else (TYPE's answer, e.g. other:list)
#pragma once

#include <optional>
#include <rlock/client.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::cli {

struct owner_hold {
  std::string owner{};  ///< hash field "<client-uuid>:<owner-id>"
  long long holds = 0;  ///< reentrant hold count
  bool operator==(const owner_hold&) const = default;
};

enum class lock_state { free, held, other };

struct lock_report {
  std::string name{};
  std::string key{};
  /// The channel its waiters listen on: the lock's unlock channel redisson_lock__channel:{name};
  /// redisson_rwlock:{name} for a read_write_lock; for a fair_lock the base of its waiters' own
  /// channels "<channel>:<owner>"; redisson_sc:{name} for the semaphores (and
  /// semaphore_or_latch); redisson_countdownlatch__channel__{name} for a count_down_latch.
  std::string channel{};
  lock_state state = lock_state::free;
  std::string kind = "free";
  std::vector<owner_hold> owners{};
  std::optional<std::string> mode{};  ///< read_write_lock: "read" or "write"
  std::optional<long long> ttl_ms{};  ///< PTTL; nullopt if no key or no expiry
  /// Subscribers of `channel`; nullopt for a fair_lock, whose waiters each listen on a channel
  /// of their own.
  std::optional<long long> listeners = 0;
  long long queued = 0;              ///< waiters in rlock's wait queue rlock_queue:{name} (ZCARD)
  std::optional<long long> value{};  ///< string kinds: the integer value
  /// permit_expirable_semaphore: the permits taken (ZCARD {name}:timeout, expired ones included
  /// until a script reclaims them); nullopt otherwise. Set by inspect_lock() only.
  std::optional<long long> taken{};
};

lock_report inspect_lock(rlock::client& client, const std::string& name);
/// inspect_lock() without the pub/sub, queue and permit queries: listeners and queued stay 0,
/// taken stays nullopt, and a count_down_latch reads as semaphore_or_latch (or other:string).
lock_report read_lock(rlock::client& client, const std::string& name);

enum class hash_shape { lock, read_write_lock, other };

/// What an HGETALL reply is by Redisson's field layout (see above); other for an empty reply.
hash_shape shape_of_hash(const rlock::reply_view& hgetall);

/// The owners in an HGETALL reply of a lock hash (fields with integer values, "mode" skipped).
std::vector<owner_hold> owners_from_hgetall(const rlock::reply_view& r);

const char* to_string(lock_state s);

/// A Redis string as a decimal integer (a lock's hold count, a semaphore's count); nullopt for
/// anything else, an empty string included.
std::optional<long long> to_integer(std::string_view s);

}  // namespace rlock::cli
