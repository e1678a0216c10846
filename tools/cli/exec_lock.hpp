// exec_lock.hpp: the lock `rlock exec` holds, as the few operations exec needs: the reentrant
// lock NAME (or its fenced form), or one half of the read-write lock NAME (--shared: the read
// half, --exclusive: the write half; Redisson's RReadWriteLock).
//
// Guarantees: each member forwards to the library's asynchronous API with an explicit owner,
// so the calls keep the library's guarantees (idempotent acquire and release, undo of an
// acquire that gave up, loss signalled through the token). Completions run on a client thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <rlock/client.hpp>
#include <stop_token>
#include <string>
#include <system_error>

namespace rlock::cli {

struct exec_lock {
  using acquired_callback =
      std::function<void(std::error_code, bool acquired, std::optional<rlock::fencing_token>)>;

  std::string name;
  std::string key;
  /// What follows "<client uuid>:<owner id>" in the hash field of a hold: ":write" for the
  /// write half, else nothing.
  std::string field_suffix;
  /// Whether the key is a Redisson lock hash: read while waiting to show the holder and to
  /// refuse an application's hash (false for a semaphore's permit).
  bool lock_hash = true;
  std::function<void(std::uint64_t owner, rlock::acquire_options, acquired_callback)> acquire;
  std::function<void(std::uint64_t owner, std::function<void(std::error_code)>)> unlock;
  std::function<std::stop_token(std::uint64_t owner)> loss_token;
};

/// The reentrant lock; with `fenced` its acquires also return a fencing token (fenced_lock.hpp).
exec_lock exec_lock_of(rlock::lock lock, bool fenced);
/// One half of a read-write lock.
exec_lock exec_lock_of(rlock::read_write_lock rw, rlock::rw_mode mode);

}  // namespace rlock::cli
