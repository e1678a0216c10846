#include "exec_permit.hpp"

#include <asio/bind_cancellation_slot.hpp>
#include <asio/bind_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/post.hpp>
#include <asio/strand.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <rlock/permit_keeper.hpp>
#include <string>
#include <utility>
#include <vector>

namespace rlock::cli {
namespace {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// What the permit's operations share: the keeper of the permit taken, which has its id.
struct permit_state {
  rlock::permit_expirable_semaphore semaphore;
  milliseconds lease;
  bool renew;
  asio::strand<rlock::client::executor_type> strand;
  std::mutex mu;
  std::unique_ptr<rlock::permit_keeper> keeper;  // the permit taken (its id) while held
  // The bridge from the acquire's stop token to its cancellation slot: the signal is emitted on
  // the strand the handler is bound to, where the library also clears the slot.
  asio::cancellation_signal cancel;
  std::optional<std::stop_callback<std::function<void()>>> on_stop;

  permit_state(rlock::permit_expirable_semaphore s, milliseconds l, bool r,
               const rlock::client::executor_type& ex)
      : semaphore(std::move(s)), lease(l), renew(r), strand(asio::make_strand(ex)) {}
};

void keep(const std::shared_ptr<permit_state>& st, const std::string& id, clock::time_point valid) {
  auto keeper = std::make_unique<rlock::permit_keeper>(
      st->semaphore, id, st->lease, valid,
      st->renew ? rlock::permit_keeper::renewal::on : rlock::permit_keeper::renewal::off);
  const std::lock_guard lk(st->mu);
  st->keeper = std::move(keeper);
}

}  // namespace

exec_lock exec_permit_of(rlock::client& client, const rlock::permit_expirable_semaphore& semaphore,
                         milliseconds lease, bool renew) {
  auto st = std::make_shared<permit_state>(semaphore, lease, renew, client.get_executor());
  exec_lock out;
  out.name = semaphore.name();
  out.key = semaphore.key();
  out.lock_hash = false;
  out.acquire = [st](std::uint64_t, rlock::acquire_options o,
                     const exec_lock::acquired_callback& done) {
    clock::time_point deadline = clock::time_point::max();
    if (o.wait) deadline = o.wait->count() <= 0 ? clock::now() : clock::now() + *o.wait;
    auto taken = [st, done](std::error_code ec, std::vector<std::string> ids) {
      if (ec || ids.empty()) {
        done(ec, false, std::nullopt);
        return;
      }
      // Set the lease once more, to know a lower bound of its end: when this request was sent.
      const clock::time_point sent = clock::now();
      std::string id = ids.front();
      st->semaphore.async_update_lease_time(
          id, st->lease, [st, done, sent, id](std::error_code uec, bool held) {
            if (uec) {
              // Unknown state: give the permit back (its lease ends it otherwise).
              st->semaphore.async_try_release(
                  {id}, [done, uec](std::error_code, bool) { done(uec, false, std::nullopt); });
              return;
            }
            keep(st, id, held ? sent + st->lease : clock::now());  // not held: lost already
            done({}, true, std::nullopt);
          });
    };
    st->semaphore.async_try_acquire_until(
        deadline, st->lease, 1,
        asio::bind_cancellation_slot(st->cancel.slot(), asio::bind_executor(st->strand, taken)));
    // A weak reference: the state owns this callback.
    st->on_stop.emplace(o.stop, [weak = std::weak_ptr<permit_state>(st)] {
      if (auto s = weak.lock()) {
        asio::post(s->strand, [s] { s->cancel.emit(asio::cancellation_type::terminal); });
      }
    });
  };
  out.unlock = [st](std::uint64_t, std::function<void(std::error_code)> done) {
    std::unique_ptr<rlock::permit_keeper> keeper;
    {
      const std::lock_guard lk(st->mu);
      keeper = std::move(st->keeper);
    }
    if (!keeper) {
      done(make_error_code(rlock::errc::not_owner));
      return;
    }
    std::string id = keeper->id();
    keeper.reset();  // stop renewing before the release
    st->semaphore.async_try_release({id}, [done = std::move(done)](std::error_code ec, bool held) {
      done(ec ? ec : held ? std::error_code{} : make_error_code(rlock::errc::not_owner));
    });
  };
  out.loss_token = [st](std::uint64_t) {
    const std::lock_guard lk(st->mu);
    return st->keeper ? st->keeper->loss_token() : std::stop_token{};
  };
  return out;
}

}  // namespace rlock::cli
