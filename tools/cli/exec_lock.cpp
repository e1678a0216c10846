#include "exec_lock.hpp"

#include <utility>

namespace rlock::cli {

exec_lock exec_lock_of(rlock::lock lock, bool fenced) {
  exec_lock out;
  out.name = lock.name();
  out.key = lock.key();
  if (fenced) {
    out.acquire = [lock](std::uint64_t owner, rlock::acquire_options o,
                         const exec_lock::acquired_callback& done) {
      rlock::fenced_lock(lock).async_acquire(
          owner, std::move(o), [done](std::error_code ec, std::optional<rlock::fencing_token> t) {
            done(ec, t.has_value(), t);
          });
    };
  } else {
    out.acquire = [lock](std::uint64_t owner, rlock::acquire_options o,
                         const exec_lock::acquired_callback& done) mutable {
      lock.async_acquire(owner, std::move(o),
                         [done](std::error_code ec, bool got) { done(ec, got, std::nullopt); });
    };
  }
  out.unlock = [lock](std::uint64_t owner, std::function<void(std::error_code)> done) mutable {
    lock.async_unlock(owner, std::move(done));
  };
  out.loss_token = [lock](std::uint64_t owner) { return lock.loss_token(owner); };
  return out;
}

exec_lock exec_lock_of(rlock::read_write_lock rw, rlock::rw_mode mode) {
  exec_lock out;
  out.name = rw.name();
  out.key = rw.key();
  if (mode == rlock::rw_mode::write) out.field_suffix = ":write";
  out.acquire = [rw, mode](std::uint64_t owner, rlock::acquire_options o,
                           const exec_lock::acquired_callback& done) mutable {
    rw.async_acquire(mode, owner, std::move(o),
                     [done](std::error_code ec, bool got) { done(ec, got, std::nullopt); });
  };
  out.unlock = [rw, mode](std::uint64_t owner, std::function<void(std::error_code)> done) mutable {
    rw.async_unlock(mode, owner, std::move(done));
  };
  out.loss_token = [rw, mode](std::uint64_t owner) { return rw.loss_token(mode, owner); };
  return out;
}

}  // namespace rlock::cli
