// rlock/client.hpp: the entry point. One client per process is typical (Redisson's
// RedissonClient): it owns the connections, the I/O threads, the pub/sub plumbing and, for
// locks, the watchdog; every object it hands out shares them.
//
// Thread safety: all member functions may be called from any thread concurrently.
// Invalid: destroying a client (or calling shutdown()) from one of its own completion handlers;
// blocking calls (execute, eval, and a lock's blocking members) from them throw
// errc::invalid_argument, since they would wait for a reply that thread has to read. Use the
// async_ forms there. A moved-from client may only be destroyed or assigned to.
//
// Fork: a client belongs to the process that made it. A child made by fork() shares its
// sockets and its lock owner ids (client id, thread ids) but not its threads, so the child
// would write on the parent's connections, re-enter the parent's locks as their owner, or
// release them (a lock guard unwound in the child). In the child, every blocking call of the
// client and of the objects it made throws errc::invalid_argument at once, sending nothing;
// unlock() and the other noexcept releases do nothing; status() reports not connected with
// that code; shutdown(), the destructor and permit_keeper's stop the child's copy without
// touching it (closing its sockets would deregister them from the epoll set the child shares
// with the parent): it stays in memory until the child exits, and the parent's locks stay the
// parent's. Asynchronous calls there complete with errc::invalid_argument, sending nothing;
// handlers bound to the client's executor (the default) then run on a fallback thread the
// library starts in the child (detail/fallback_executor.hpp), since the client's threads are
// the parent's. Make a client of the child's own instead (after fork(), or before exec() make
// none).
//
// Failure semantics: the client reconnects by itself after a connection drops. Requests whose
// outcome became unknown (written, no reply) fail with errc::connection_lost or errc::timeout
// and are never sent twice unless the operation is idempotent. Requests that certainly did not
// reach the server (refused, not connected) are tried up to `retry_attempts` times in all, with
// Redisson's equal-jitter delays, each attempt with its own `timeout`: execute() and eval()
// against a server that is down or does not answer can take retry_attempts x timeout plus the
// delays between attempts (a lock's calls are bounded by their own wait budget instead).
#pragma once

#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <stop_token>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "rlock/client_stats.hpp"
#include "rlock/config.hpp"
#include "rlock/connection_status.hpp"
#include "rlock/countdown_latch.hpp"
#include "rlock/detail/handler_dispatch.hpp"
#include "rlock/error.hpp"
#include "rlock/fenced_lock.hpp"
#include "rlock/lock.hpp"
#include "rlock/multi_lock.hpp"
#include "rlock/permit_expirable_semaphore.hpp"
#include "rlock/read_write_lock.hpp"
#include "rlock/reply.hpp"
#include "rlock/script.hpp"
#include "rlock/semaphore.hpp"
#include "rlock/spin_lock.hpp"

namespace rlock {

namespace detail {
class core;
class lock_service;
class semaphore_service;
class expirable_semaphore_service;
class rw_lock_service;
class countdown_latch_service;
}  // namespace detail

class client {
 public:
  using executor_type = asio::io_context::executor_type;
  /// Completion signature of async_execute and async_eval.
  using reply_signature = void(std::error_code, reply);

  /// Validates `cfg` (throws rlock::error with errc::invalid_url or errc::invalid_argument),
  /// starts the I/O threads and begins connecting in the background. Does not block on the
  /// network: a server that is down surfaces as errors of the first operations.
  explicit client(config cfg = {});
  /// Fails pending operations with errc::shutdown, closes connections, joins the I/O threads.
  /// Acquires still waiting or in flight are undone first (they leave the wait queue, and an
  /// attempt that may have been applied is released): that waits for the server's answers, up
  /// to config::timeout when it does not answer (paused, cut off). Requests already written
  /// meanwhile may end with their own timeout or errc::connection_lost rather than shutdown.
  ~client();
  client(client&&) noexcept;
  client& operator=(client&&) noexcept;
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// This client's id, a random UUID: the first half of every lock owner field it writes.
  /// Version 8 with config::lock_queue on (the mark of a client that hands locks over through
  /// the wait queue), version 4 (like Redisson's) with it off.
  const std::string& id() const;
  const config& get_config() const;
  /// The executor of the client's I/O threads (the default for completion handlers).
  executor_type get_executor() const;

  /// Runs one Redis command. Error replies complete with the matching errc (wrong_type,
  /// out_of_memory, server_error, ...). Not retried once written. On a failure the reply is an
  /// error reply (reply::str() is its text): the server's own, or rlock's description of a
  /// failure the server did not answer (for example "SELECT failed during connection setup:
  /// ERR DB index is out of range"); nil when there is nothing to say beyond the code.
  template <class CompletionToken>
  auto async_execute(std::vector<std::string> args, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, reply_signature>(
        [this](auto handler, const std::vector<std::string>& a) {
          start_execute(a, wrap(std::move(handler)));
        },
        token, std::move(args));
  }
  /// Blocking form: returns the reply or throws rlock::error (with the server's text).
  reply execute(const std::vector<std::string>& args);

  /// Runs a Lua script by EVALSHA (NOSCRIPT recovered transparently). Failures complete as
  /// async_execute's do.
  template <class CompletionToken>
  auto async_eval(const script& s, std::vector<std::string> keys, std::vector<std::string> args,
                  CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, reply_signature>(
        // The script by value: a deferred operation may start after `s` is gone. (The client
        // itself must outlive every operation, as any Asio I/O object.)
        [this](auto handler, const script& sc, const std::vector<std::string>& k,
               const std::vector<std::string>& a) {
          start_eval(sc, k, a, wrap(std::move(handler)));
        },
        token, s, std::move(keys), std::move(args));
  }
  reply eval(const script& s, const std::vector<std::string>& keys,
             const std::vector<std::string>& args);

  /// The reentrant lock named `name` (Redisson's getLock). Throws errc::invalid_argument for an
  /// empty name, or one longer than reentrant_lock::max_name_size (1 MiB) once mapped (any
  /// bytes otherwise). Locks of one client share its watchdog and pub/sub connections.
  reentrant_lock get_lock(std::string name) const;
  /// The fenced lock named `name` (Redisson's getFencedLock): the reentrant lock of that name,
  /// whose acquires also return a fencing token (fenced_lock.hpp). Same name rules as get_lock.
  fenced_lock get_fenced_lock(std::string name) const;
  /// The spin lock named `name` (Redisson's getSpinLock; spin_lock.hpp): the reentrant lock of
  /// that name whose waiters poll with `backoff` instead of subscribing and whose release
  /// publishes nothing. Same name rules as get_lock; throws errc::invalid_argument for an
  /// invalid backoff.
  reentrant_lock get_spin_lock(std::string name, spin_backoff backoff = {}) const;
  /// The fair lock named `name` (Redisson's getFairLock; lock_kind::fair): the reentrant lock of
  /// that name whose waiters queue in Redis in arrival order ("redisson_lock_queue:{<name>}",
  /// "redisson_lock_timeout:{<name>}") and are served first come, first served, Java RFairLock
  /// waiters included; a release tells only the queue's head, on its own channel. Same name
  /// rules as get_lock.
  reentrant_lock get_fair_lock(std::string name) const;
  /// The semaphore named `name` (Redisson's getSemaphore; semaphore.hpp). Throws
  /// errc::invalid_argument for an empty name or one longer than semaphore::max_name_size once
  /// mapped.
  semaphore get_semaphore(std::string name) const;
  /// The permit-expirable semaphore named `name` (Redisson's getPermitExpirableSemaphore;
  /// permit_expirable_semaphore.hpp). Same name rules as get_semaphore.
  permit_expirable_semaphore get_permit_expirable_semaphore(std::string name) const;
  /// The countdown latch named `name` (Redisson's getCountDownLatch; countdown_latch.hpp). Same
  /// name rules as get_semaphore.
  countdown_latch get_countdown_latch(std::string name) const;
  /// The read-write lock named `name` (Redisson's getReadWriteLock; read_write_lock.hpp). Same
  /// name rules as get_lock.
  read_write_lock get_read_write_lock(std::string name) const;

  /// Runs `f` while holding the lock `name`, returns what `f` returns, and always releases it,
  /// also when `f` throws. `opts` gives the wait budget, lease and stop token; when the lock is
  /// not acquired within the wait, throws rlock::error(errc::timeout) without running `f`.
  /// If `f` takes a std::stop_token it receives the hold's loss token, stopped when the lock is
  /// lost while `f` runs. An unlock that fails after `f` returned normally (for example because
  /// the lock was lost) throws; after `f` threw, `f`'s exception wins.
  template <class F>
  auto with_lock(std::string name, const acquire_options& opts, F&& f) {
    reentrant_lock l = get_lock(std::move(name));
    if (!l.acquire(opts)) {
      throw error(make_error_code(errc::timeout), "lock '" + l.name() + "' not acquired in time");
    }
    auto call = [&]() -> decltype(auto) {
      if constexpr (std::is_invocable_v<F&, std::stop_token>) {
        return f(l.loss_token());
      } else {
        return f();
      }
    };
    using result = decltype(call());
    // Set once `f` has returned: an exception after that comes from the unlock itself, which
    // must not be sent again. A second unlock (a new request, not a resend) of a re-entered
    // lock whose first unlock ran but went unanswered would release the caller's outer hold.
    bool unlocking = false;
    try {
      if constexpr (std::is_void_v<result>) {
        call();
        unlocking = true;
        l.unlock_or_throw();
        return;
      } else {
        result r = call();
        unlocking = true;
        l.unlock_or_throw();
        return r;
      }
    } catch (...) {
      if (!unlocking) release_quietly(l);
      throw;
    }
  }

  /// The state of the client's command connections now. Never blocks and sends nothing; after
  /// shutdown() it reports not connected with errc::shutdown.
  connection_status status() const;

  /// What the client has done so far, and its requests, holds and channels now, for metrics
  /// (client_stats.hpp). Never blocks on the network and sends nothing; cheap enough to call
  /// every second (it walks the watched holds once: about 10 µs per 1,000). After shutdown()
  /// the counts stay and the gauges are 0; a moved-from client reports all zeros.
  client_stats stats() const;

  /// Fails pending work with errc::shutdown and stops the I/O threads. Idempotent; the
  /// destructor calls it. Afterwards every call on this client and its locks fails with
  /// errc::shutdown at once: blocking calls throw it (a lock guard that outlives shutdown()
  /// does not hang), and asynchronous handlers get it, those on the client's executor (the
  /// default) on the library's fallback thread (detail/fallback_executor.hpp), since the
  /// client's threads are gone.
  /// Locks still held are not released: they are no longer renewed, stay on the server until
  /// their leases end, and every hold's loss_token() is stopped. The keys that made this
  /// client's answered requests count once (unlock latches, semaphore and latch request keys),
  /// which nothing reads any more, are deleted first; that waits at most 250 ms (a server that
  /// does not answer leaves them to their TTL, about 20 s at the defaults).
  void shutdown();

  /// Internal: the engine shared by every object this client hands out.
  const std::shared_ptr<detail::core>& core() const { return core_; }

 private:
  using callback = std::function<void(std::error_code, reply)>;

  /// Adapts a completion handler: it runs on its associated executor (default: the client's).
  /// Like Asio's own operations, it keeps that executor's context busy (a work guard) until the
  /// handler has been handed over, so a caller's io_context::run() cannot return, and the
  /// context be destroyed, while this client is still posting into it.
  template <class Handler>
  callback wrap(Handler handler) {
    auto own = get_executor();
    auto ex = asio::get_associated_executor(handler, own);
    auto work = std::make_shared<asio::executor_work_guard<decltype(ex)>>(ex);
    auto h = std::make_shared<Handler>(std::move(handler));
    return [h, ex, own, work](std::error_code ec, reply r) mutable {
      detail::dispatch_handler(ex, own, *work,
                               [h, ec, r = std::move(r)]() mutable { (*h)(ec, std::move(r)); });
    };
  }
  void start_execute(const std::vector<std::string>& args, callback cb);
  void start_eval(const script& s, const std::vector<std::string>& keys,
                  const std::vector<std::string>& args, callback cb);

  static void release_quietly(reentrant_lock& l) noexcept;
  /// In a fork's child (see "Fork" above): keeps the engine and the services, untouched, until
  /// the process exits, leaves this client moved-from and returns true. Otherwise false.
  bool kept_in_fork_child() noexcept;

  std::shared_ptr<detail::core> core_;
  std::shared_ptr<detail::lock_service> locks_;
  std::shared_ptr<detail::semaphore_service> semaphores_;
  std::shared_ptr<detail::expirable_semaphore_service> expirable_semaphores_;
  std::shared_ptr<detail::countdown_latch_service> latches_;
  std::shared_ptr<detail::rw_lock_service> rw_locks_;
};

}  // namespace rlock
