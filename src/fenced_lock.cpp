#include "rlock/fenced_lock.hpp"

#include <algorithm>
#include <string_view>

#include "detail/blocking.hpp"
#include "detail/connection.hpp"
#include "detail/lock_call.hpp"
#include "detail/lock_keys.hpp"
#include "detail/lock_replies.hpp"
#include "detail/lock_scripts.hpp"
#include "detail/lock_service.hpp"
#include "detail/replica_sync.hpp"

namespace rlock {
namespace {

using detail::clock;

struct token_result {
  std::error_code ec;
  std::optional<fencing_token> token;
};

}  // namespace

fenced_lock::fenced_lock(reentrant_lock lock)
    : lock_(std::move(lock)), token_key_(detail::token_key(lock_.key())) {}

struct fenced_lock::acquire_state {
  std::uint64_t owner = 0;
  /// The caller's options: the first try's, and (with the wait left) each try again's.
  acquire_options opts;
  /// The end of the wait (none: a wait without end).
  clock::time_point deadline = clock::time_point::max();
  /// No wait (try_lock_and_get_token()): never tried again.
  bool single = false;
  detail::call_mode mode = detail::call_mode::async;
  token_callback cb;
  /// Tries whose token the replicas did not confirm, so far.
  int tries = 0;
};

void fenced_lock::start_acquire(std::uint64_t owner, acquire_options o, token_callback cb,
                                detail::call_mode mode) {
  auto st = std::make_shared<acquire_state>();
  st->owner = owner;
  // The token step's bound: the end of the wait (none: a wait without end). A single attempt
  // has no wait; its token step gets one request timeout, as its acquire did.
  st->deadline = o.wait ? detail::deadline_after(*o.wait) : clock::time_point::max();
  st->single = o.wait && o.wait->count() <= 0;
  st->opts = std::move(o);
  st->mode = mode;
  st->cb = std::move(cb);
  run_try(st, nullptr);
}

void fenced_lock::run_try(const std::shared_ptr<acquire_state>& st,
                          const detail::unconfirmed_try* again) {
  acquire_options o = st->opts;
  detail::call_mode mode = st->mode;
  if (again != nullptr) {
    // A try again runs from a completion, on whichever thread ran it: the blocking caller
    // waits for the last try's callback all the same.
    mode = detail::call_mode::async;
    if (o.wait) {
      o.wait = std::chrono::ceil<milliseconds>(st->deadline - clock::now());
    }
  }
  lock_.start_acquire(
      st->owner, std::move(o),
      [self = *this, st](std::error_code ec, bool acquired) mutable {
        if (ec || !acquired) {
          st->cb(ec, std::nullopt);
          return;
        }
        self.issue_token(st);
      },
      mode, again);
}

void fenced_lock::issue_token(const std::shared_ptr<acquire_state>& st) {
  const auto& engine = lock_.svc_->engine();
  const std::string field = lock_.svc_->owner_field(st->owner);
  const std::string_view keys[] = {lock_.key(), token_key_};
  const std::string_view args[] = {field};
  detail::exec_options eo;
  // A second run issues a later token of the same hold, which keeps the order.
  eo.idempotent = true;
  eo.route_key = lock_.key();
  eo.deadline = std::max(st->deadline, clock::now() + engine->cfg().timeout);
  eo.completes_on_caller = st->tries == 0 && st->mode == detail::call_mode::blocking_on_caller;
  // The counter's INCR is waited for as the acquire was: a failover to a replica that missed
  // it could issue the token again.
  detail::ask_replicas(engine->cfg(), eo);
  engine->eval(
      detail::lock_fence_script(), keys, args, eo,
      [self = *this, st](detail::exec_result r) mutable {
        const bool issued = !r.ec && r.value.is_integer() && r.value.integer() > 0;
        const auto& cfg = self.lock_.svc_->engine()->cfg();
        if (issued && detail::replicas_confirmed(cfg, r)) {
          st->cb({}, r.value.integer());
          return;
        }
        std::error_code ec = r.ec;
        if (issued) {
          ec = make_error_code(errc::replication_not_confirmed);
          r.detail = detail::not_confirmed_detail(cfg, r, "token issued");
        } else if (!ec) {
          // nil: the hold was gone by the time the token was asked for.
          ec = make_error_code(r.value.is_nil() ? errc::lock_lost : errc::script_error);
        }
        // No hold is returned without its token: the one just taken is released (a hold lost
        // meanwhile is reported lost by the unlock, through its loss token). A token the
        // replicas did not confirm is then tried again with a new acquire, as an acquire they
        // did not confirm is (Redisson's rule), once the release has landed.
        const int tries = st->tries + (issued ? 1 : 0);
        // Sent once: a release the replicas miss still ran on the master (as an undo's).
        self.lock_.svc_->unlock(
            self.lock_.key_, st->owner, self.lock_.kind_,
            [self, st, ec, tries, why = std::move(r.detail)](std::error_code released) mutable {
              const auto& config = self.lock_.svc_->engine()->cfg();
              const auto now = clock::now();
              // A release the replicas did not confirm either still ran on the master: the
              // try again's acquire is confirmed on its own.
              const bool ran = !released || released == errc::replication_not_confirmed;
              if (ec == errc::replication_not_confirmed && ran && !st->single &&
                  !st->opts.stop.stop_requested()) {
                if (const auto in =
                        detail::next_unconfirmed_try_in(config, tries, now, st->deadline)) {
                  st->tries = tries;
                  const detail::unconfirmed_try again{tries, why, now + *in};
                  self.run_try(st, &again);
                  return;
                }
              }
              if (st->opts.error_detail != nullptr && !why.empty()) {
                *st->opts.error_detail = ec == errc::replication_not_confirmed
                                             ? detail::after_tries(std::move(why), tries)
                                             : std::move(why);
              }
              st->cb(ec, std::nullopt);
            },
            nullptr, false, false, /*confirm=*/false);
      });
}

void fenced_lock::start_token(std::function<void(std::error_code, fencing_token)> cb) {
  const std::string_view args[] = {"GET", token_key_};
  detail::exec_options o;
  o.idempotent = true;
  o.route_key = lock_.key();
  lock_.svc_->engine()->exec(args, o, [cb = std::move(cb)](detail::exec_result r) {
    // A counter that is no integer is no token: errc::wrong_type.
    const auto [ec, n] = detail::decode_counter(r);
    cb(ec, n);
  });
}

// ---- blocking ----

std::optional<fencing_token> fenced_lock::acquire(const acquire_options& opts) {
  lock_.check_blocking_allowed();
  detail::blocking_result<token_result> w;
  std::string why;  // written before the callback runs, read after take()
  acquire_options o = opts;
  o.error_detail = &why;
  detail::blocking_plan plan(lock_.blocking_spin());
  start_acquire(
      this_thread_owner_id(), std::move(o),
      [&w](std::error_code ec, std::optional<fencing_token> t) {
        w.set({ec, t});
      },
      plan.mode());
  auto r = w.take(plan, &detail::connection::poll_replies_of_this_thread);
  if (r.ec) {
    if (opts.error_detail != nullptr && !why.empty()) *opts.error_detail = why;
    throw error(r.ec, detail::context_with("fenced lock '" + name() + "'", why));
  }
  return r.token;
}

fencing_token fenced_lock::lock_and_get_token() {
  return lock_and_get_token(milliseconds(-1));
}

fencing_token fenced_lock::lock_and_get_token(milliseconds lease) {
  acquire_options o;
  if (lease.count() > 0) o.lease = lease;
  const auto t = acquire(o);
  // A wait without end returns a token or throws; this only guards the dereference.
  if (!t) throw error(make_error_code(errc::timeout), "fenced lock '" + name() + "'");
  return *t;
}

std::optional<fencing_token> fenced_lock::try_lock_and_get_token() {
  acquire_options o;
  o.wait = milliseconds(0);
  return acquire(o);
}

std::optional<fencing_token> fenced_lock::try_lock_and_get_token(milliseconds wait,
                                                                 milliseconds lease) {
  acquire_options o;
  o.wait = wait;
  if (lease.count() > 0) o.lease = lease;
  return acquire(o);
}

fencing_token fenced_lock::token() {
  lock_.check_blocking_allowed();
  detail::blocking_result<std::pair<std::error_code, fencing_token>> w;
  start_token([&w](std::error_code ec, fencing_token t) { w.set({ec, t}); });
  auto [ec, t] = w.take(lock_.blocking_spin());
  throw_if(ec, "token of '" + name() + "'");
  return t;
}

}  // namespace rlock
