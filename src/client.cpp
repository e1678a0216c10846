#include "rlock/client.hpp"

#include <string_view>

#include "detail/blocking.hpp"
#include "detail/closed_completion.hpp"
#include "detail/connection.hpp"
#include "detail/core.hpp"
#include "detail/countdown_latch_ops.hpp"
#include "detail/expirable_semaphore_ops.hpp"
#include "detail/fork_epoch.hpp"
#include "detail/lock_scripts.hpp"
#include "detail/lock_service.hpp"
#include "detail/resp.hpp"
#include "detail/rw_lock_ops.hpp"
#include "detail/semaphore_ops.hpp"

namespace rlock {
namespace {

std::vector<std::string_view> views(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

reply take_or_throw(detail::blocking_result<detail::exec_result>& w,
                    std::chrono::microseconds spin) {
  // While it polls, the caller reads its reply itself if it can (connection::poll_replies).
  detail::exec_result r = w.take(spin, &detail::connection::poll_replies_of_this_thread);
  if (r.ec) throw error(r.ec, r.detail.empty() ? r.ec.message() : r.detail);
  return std::move(r.value);
}

// A blocking call's completion only hands the result to the waiting thread: it may run there.
detail::exec_options blocking_options() {
  detail::exec_options o;
  o.completes_on_caller = true;
  return o;
}

// The reply an asynchronous caller gets: on a failure the server did not answer with an error
// reply of its own, an error reply carrying rlock's description of what failed.
reply reply_for(detail::exec_result& r) {
  if (r.ec && r.value.is_nil() && !r.detail.empty()) return detail::make_error_reply(r.detail);
  return std::move(r.value);
}

}  // namespace

namespace {

std::vector<const script*> every_script() {
  std::vector<const script*> all = detail::lock_scripts();
  for (const script* s : detail::semaphore_scripts()) all.push_back(s);
  for (const script* s : detail::expirable_semaphore_scripts()) all.push_back(s);
  for (const script* s : detail::countdown_latch_scripts()) all.push_back(s);
  for (const script* s : detail::rw_lock_scripts()) all.push_back(s);
  return all;
}

}  // namespace

client::client(config cfg)
    : core_(std::make_shared<detail::core>(std::move(cfg), every_script())),
      locks_(std::make_shared<detail::lock_service>(core_)),
      semaphores_(std::make_shared<detail::semaphore_service>(core_)),
      expirable_semaphores_(std::make_shared<detail::expirable_semaphore_service>(core_)),
      latches_(std::make_shared<detail::countdown_latch_service>(core_)),
      rw_locks_(std::make_shared<detail::rw_lock_service>(core_)) {}

client::~client() {
  shutdown();
}

bool client::kept_in_fork_child() noexcept {
  if (!core_ || !core_->forked()) return false;
  // The parent's client (core::forked): kept, untouched, until this process exits.
  try {
    detail::keep_until_exit(std::move(core_));
    detail::keep_until_exit(std::move(locks_));
    detail::keep_until_exit(std::move(semaphores_));
    detail::keep_until_exit(std::move(expirable_semaphores_));
    detail::keep_until_exit(std::move(latches_));
    detail::keep_until_exit(std::move(rw_locks_));
  } catch (...) {
    // Out of memory: the part being kept is released after all. Nothing better can be done.
  }
  return true;
}

client::client(client&&) noexcept = default;
client& client::operator=(client&& o) noexcept {
  if (this != &o) {
    shutdown();
    core_ = std::move(o.core_);
    locks_ = std::move(o.locks_);
    semaphores_ = std::move(o.semaphores_);
    expirable_semaphores_ = std::move(o.expirable_semaphores_);
    latches_ = std::move(o.latches_);
    rw_locks_ = std::move(o.rw_locks_);
  }
  return *this;
}

reentrant_lock client::get_lock(std::string name) const {
  return reentrant_lock(locks_, std::move(name));
}

reentrant_lock client::get_spin_lock(std::string name, spin_backoff backoff) const {
  return reentrant_lock(locks_, std::move(name), backoff);
}

reentrant_lock client::get_fair_lock(std::string name) const {
  return reentrant_lock(locks_, std::move(name), lock_kind::fair);
}

fenced_lock client::get_fenced_lock(std::string name) const {
  return fenced_lock(get_lock(std::move(name)));
}

semaphore client::get_semaphore(std::string name) const {
  return semaphore(semaphores_, std::move(name));
}

permit_expirable_semaphore client::get_permit_expirable_semaphore(std::string name) const {
  return permit_expirable_semaphore(expirable_semaphores_, std::move(name));
}

countdown_latch client::get_countdown_latch(std::string name) const {
  return countdown_latch(latches_, std::move(name));
}

read_write_lock client::get_read_write_lock(std::string name) const {
  return read_write_lock(rw_locks_, std::move(name));
}

void client::release_quietly(reentrant_lock& l) noexcept {
  l.unlock();  // the caller's exception is the one to report
}

const std::string& client::id() const {
  return core_->id();
}
const config& client::get_config() const {
  return core_->cfg();
}
client::executor_type client::get_executor() const {
  return core_->io().get_executor();
}
connection_status client::status() const {
  if (!core_) {
    return {.connected = false,
            .error = make_error_code(errc::shutdown),
            .detail = "a moved-from client"};
  }
  return core_->status();
}

client_stats client::stats() const {
  if (!core_) return {};
  client_stats s = core_->counters()->snapshot();
  if (core_->closed() || core_->forked()) {
    s.requests_in_flight = 0;
    return s;
  }
  if (locks_) s.holds_watched += locks_->holds_watched();
  if (rw_locks_) s.holds_watched += rw_locks_->holds_watched();
  if (expirable_semaphores_) s.holds_watched += expirable_semaphores_->keepers().kept();
  s.channels = core_->channels();
  return s;
}

void client::shutdown() {
  if (kept_in_fork_child()) return;
  if (semaphores_) semaphores_->shutdown();
  if (expirable_semaphores_) expirable_semaphores_->shutdown();
  if (latches_) latches_->shutdown();
  if (rw_locks_) rw_locks_->shutdown();
  if (locks_) locks_->shutdown();
  if (core_) core_->shutdown();
}

void client::start_execute(const std::vector<std::string>& args, callback cb) {
  if (args.empty()) {
    detail::post_or_complete_closed(core_->io(), [cb = std::move(cb)] {
      cb(make_error_code(errc::invalid_argument), reply{});
    });
    return;
  }
  auto v = views(args);
  core_->exec(v, {}, [cb = std::move(cb)](detail::exec_result r) { cb(r.ec, reply_for(r)); });
}

void client::start_eval(const script& s, const std::vector<std::string>& keys,
                        const std::vector<std::string>& args, callback cb) {
  auto k = views(keys);
  auto a = views(args);
  core_->eval(s, k, a, {}, [cb = std::move(cb)](detail::exec_result r) { cb(r.ec, reply_for(r)); });
}

reply client::execute(const std::vector<std::string>& args) {
  if (args.empty()) throw error(make_error_code(errc::invalid_argument), "empty command");
  core_->check_blocking_allowed();
  detail::blocking_result<detail::exec_result> w;
  auto v = views(args);
  core_->exec(v, blocking_options(), [&w](detail::exec_result r) { w.set(std::move(r)); });
  return take_or_throw(w, core_->cfg().blocking_spin);
}

reply client::eval(const script& s, const std::vector<std::string>& keys,
                   const std::vector<std::string>& args) {
  core_->check_blocking_allowed();
  detail::blocking_result<detail::exec_result> w;
  auto k = views(keys);
  auto a = views(args);
  core_->eval(s, k, a, blocking_options(), [&w](detail::exec_result r) { w.set(std::move(r)); });
  return take_or_throw(w, core_->cfg().blocking_spin);
}

}  // namespace rlock
