#include "rlock/read_write_lock.hpp"

#include <optional>
#include <utility>

#include "detail/blocking.hpp"
#include "detail/closed_completion.hpp"
#include "detail/lock_call.hpp"
#include "detail/object_key.hpp"
#include "detail/rw_lock_ops.hpp"
#include "detail/stop_either.hpp"
#include "rlock/error.hpp"

namespace rlock {
namespace {

const char* half(rw_mode m) {
  return m == rw_mode::read ? "read" : "write";
}

detail::rw_acquire_request request_of(const std::string& key, rw_mode mode, std::uint64_t owner,
                                      const acquire_options& o) {
  detail::rw_acquire_request r;
  r.raw_name = key;
  r.mode = mode;
  r.owner_id = owner;
  if (o.lease && o.lease->count() > 0) r.lease = *o.lease;
  r.deadline = o.wait ? detail::deadline_after(*o.wait) : detail::clock::time_point::max();
  r.stop = o.stop;
  return r;
}

}  // namespace

read_write_lock::read_write_lock(std::shared_ptr<detail::rw_lock_service> svc, std::string name)
    : svc_(std::move(svc)),
      name_(std::move(name)),
      key_(detail::checked_key(*svc_->engine(), name_, "read-write lock", max_name_size)) {}

asio::io_context::executor_type read_write_lock::executor() const {
  return svc_->engine()->io().get_executor();
}

void read_write_lock::check_blocking_allowed() const {
  svc_->engine()->check_blocking_allowed();
}

// ---- async starts ----

void read_write_lock::start_acquire(rw_mode mode, std::uint64_t owner, const acquire_options& o,
                                    std::stop_token also, callback<bool> cb) {
  std::shared_ptr<void> keep;
  auto req = request_of(key_, mode, owner, o);
  req.stop = detail::stop_either(std::move(req.stop), std::move(also), keep);
  svc_->acquire(std::move(req), [keep, detail_out = o.error_detail, cb = std::move(cb)](
                                    std::error_code ec, bool ok, const std::string& why) {
    if (ec && detail_out != nullptr && !why.empty()) *detail_out = why;
    cb(ec, ok);
  });
}

void read_write_lock::start_unlock(rw_mode mode, std::uint64_t owner,
                                   std::function<void(std::error_code)> cb) {
  svc_->unlock(key_, mode, owner,
               [cb = std::move(cb)](std::error_code ec, const std::string&) { cb(ec); });
}

// ---- blocking API ----

bool read_write_lock::acquire(rw_mode mode, const acquire_options& opts) {
  check_blocking_allowed();
  detail::blocking_result<detail::call_outcome<bool>> w;
  svc_->acquire(request_of(key_, mode, this_thread_owner_id(), opts),
                [&w](std::error_code ec, bool ok, const std::string& why) {
                  w.set({ec, ok, why});
                });
  auto r = w.take(svc_->engine()->cfg().blocking_spin);
  if (r.ec && opts.error_detail != nullptr && !r.detail.empty()) *opts.error_detail = r.detail;
  throw_if(r.ec, detail::context_with(std::string(half(mode)) + " lock '" + name_ + "'", r.detail));
  return r.value;
}

void read_write_lock::acquire_or_throw(rw_mode mode, const acquire_options& opts) {
  if (!acquire(mode, opts)) {
    throw error(make_error_code(errc::timeout),
                std::string(half(mode)) + " lock '" + name_ + "': not acquired");
  }
}

void read_write_lock::release(rw_mode mode, std::error_code& ec) noexcept {
  ec.clear();
  try {
    check_blocking_allowed();
  } catch (const std::system_error& e) {
    ec = e.code();
    return;
  }
  detail::blocking_result<std::error_code> w;
  try {
    svc_->unlock(key_, mode, this_thread_owner_id(),
                 [&w](std::error_code code, const std::string&) { w.set(code); });
  } catch (...) {
    // Allocation failure before anything was sent.
    ec = make_error_code(std::errc::not_enough_memory);
    return;
  }
  ec = w.take(svc_->engine()->cfg().blocking_spin);
}

void read_write_lock::unlock() noexcept {
  std::error_code ec;
  release(rw_mode::write, ec);
}

void read_write_lock::unlock_shared() noexcept {
  std::error_code ec;
  release(rw_mode::read, ec);
}

bool read_write_lock::force_unlock() {
  check_blocking_allowed();
  detail::blocking_result<detail::call_outcome<bool>> w;
  svc_->force_unlock(key_, [&w](std::error_code ec, bool existed, const std::string& why) {
    w.set({ec, existed, why});
  });
  auto r = w.take(svc_->engine()->cfg().blocking_spin);
  throw_if(r.ec, detail::context_with("force_unlock '" + name_ + "'", r.detail));
  return r.value;
}

std::optional<rw_mode> read_write_lock::mode() {
  check_blocking_allowed();
  detail::blocking_result<detail::call_outcome<std::optional<rw_mode>>> w;
  const std::string_view args[] = {"HGET", key_, "mode"};
  detail::exec_options o;
  o.idempotent = true;
  o.route_key = key_;
  svc_->engine()->exec(args, o, [&w](const detail::exec_result& r) {
    detail::call_outcome<std::optional<rw_mode>> out{r.ec, std::nullopt, r.detail};
    if (!r.ec && r.value.is_string()) {
      if (r.value.str() == "read") {
        out.value = rw_mode::read;
      } else if (r.value.str() == "write") {
        out.value = rw_mode::write;
      } else {
        out.ec = make_error_code(errc::wrong_type);
        out.detail = "the key's mode field is neither read nor write";
      }
    } else if (!r.ec && !r.value.is_nil()) {
      out.ec = make_error_code(errc::protocol_error);
      out.detail = "unexpected reply " + r.value.to_string();
    }
    w.set(std::move(out));
  });
  auto r = w.take(svc_->engine()->cfg().blocking_spin);
  throw_if(r.ec, detail::context_with("mode '" + name_ + "'", r.detail));
  return r.value;
}

long long read_write_lock::hold_count(rw_mode mode) const {
  return hold_count(mode, this_thread_owner_id());
}
long long read_write_lock::hold_count(rw_mode mode, std::uint64_t owner_id) const {
  return svc_->hold_count(key_, mode, owner_id);
}
std::stop_token read_write_lock::loss_token(rw_mode mode) const {
  return loss_token(mode, this_thread_owner_id());
}
std::stop_token read_write_lock::loss_token(rw_mode mode, std::uint64_t owner_id) const {
  return svc_->loss_token(key_, mode, owner_id);
}
read_write_lock::clock::time_point read_write_lock::valid_until(rw_mode mode) const {
  return valid_until(mode, this_thread_owner_id());
}
read_write_lock::clock::time_point read_write_lock::valid_until(rw_mode mode,
                                                                std::uint64_t owner_id) const {
  return svc_->valid_until(key_, mode, owner_id);
}

}  // namespace rlock
