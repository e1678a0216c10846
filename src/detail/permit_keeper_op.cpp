#include "detail/permit_keeper_op.hpp"

#include <utility>
#include <vector>

#include "detail/core.hpp"
#include "detail/expirable_semaphore_ops.hpp"
#include "rlock/error.hpp"

namespace rlock::detail {

permit_keeper_op::permit_keeper_op(std::shared_ptr<expirable_semaphore_service> svc,
                                   std::string raw_name, std::string permit_bytes,
                                   std::chrono::milliseconds lease, bool renew,
                                   clock::time_point valid_until)
    : svc_(std::move(svc)),
      raw_name_(std::move(raw_name)),
      id_(std::move(permit_bytes)),
      lease_arg_(expirable_lease_arg(lease)),
      renew_(renew),
      timer_(svc_->engine()->io()),
      protocol_(lease, renew, valid_until) {}

namespace {

// How a kept permit is lost, for config::on_event.
constexpr const char* permit_found_gone = "a renewal found the permit gone";
constexpr const char* permit_unrenewed = "its lease ended with no successful renewal";
constexpr const char* permit_ran_out = "its lease ran out while it was held";

}  // namespace

void permit_keeper_op::start() {
  std::unique_lock lk(mu_);
  if (stopped_) return;
  advance(lk, protocol_.next(clock::now()), renew_ ? permit_unrenewed : permit_ran_out);
}

void permit_keeper_op::stop() {
  const std::lock_guard lk(mu_);
  stopped_ = true;
  ++generation_;
  timer_.cancel();
}

void permit_keeper_op::end() {
  std::unique_lock lk(mu_);
  lose(lk);
}

void permit_keeper_op::lose(std::unique_lock<std::mutex>& lk) {
  stopped_ = true;
  ++generation_;
  timer_.cancel();
  lk.unlock();
  lost_.request_stop();
}

bool permit_keeper_op::keeping() const {
  const std::lock_guard lk(mu_);
  return !stopped_;
}

clock::time_point permit_keeper_op::valid_until() const {
  const std::lock_guard lk(mu_);
  return protocol_.valid_until();
}

void permit_keeper_op::advance(std::unique_lock<std::mutex>& lk, action a, const char* how) {
  const std::uint64_t generation = ++generation_;
  switch (a.what) {
    case permit_renewal::step::lost: {
      lose(lk);
      client_counters::add(svc_->engine()->counters()->holds_lost);
      event_sink& events = svc_->engine()->events();
      if (events.wanted()) {
        events.emit({.kind = client_event_kind::lock_lost,
                     .server = {},
                     .object = raw_name_,
                     .error = make_error_code(errc::lock_lost),
                     .detail = how});
      }
      return;
    }
    case permit_renewal::step::wait:
    case permit_renewal::step::renew:
      // A wait, or a renewal's bound: past it, its answer would come too late to matter.
      timer_.expires_at(a.until);
      timer_.async_wait([self = shared_from_this(), generation](std::error_code ec) {
        if (!ec) self->on_timer(generation);
      });
      break;
  }
  lk.unlock();
  if (a.what != permit_renewal::step::renew) return;
  client_counters::add(svc_->engine()->counters()->renewals);
  svc_->inspect(raw_name_, expirable_inspect::update, id_, lease_arg_,
                [self = shared_from_this(), generation](std::error_code ec, std::int64_t held,
                                                        const std::string&) {
                  self->on_answer(generation, ec, held);
                });
}

void permit_keeper_op::on_timer(std::uint64_t generation) {
  std::unique_lock lk(mu_);
  if (stopped_ || generation != generation_) return;
  advance(lk, protocol_.next(clock::now()), renew_ ? permit_unrenewed : permit_ran_out);
}

void permit_keeper_op::on_answer(std::uint64_t generation, std::error_code ec, std::int64_t held) {
  std::unique_lock lk(mu_);
  if (stopped_ || generation != generation_) return;
  if (ec == errc::shutdown) {  // the client is closing: nothing keeps the permit now
    lose(lk);
    return;
  }
  if (ec) client_counters::add(svc_->engine()->counters()->renewals_failed);
  advance(lk, protocol_.on_reply(clock::now(), static_cast<bool>(ec), held == 1),
          !ec && held != 1 ? permit_found_gone : permit_unrenewed);
}

void permit_keeper_registry::start(const std::shared_ptr<permit_keeper_op>& op) {
  {
    const std::lock_guard lk(mu_);
    if (!closed_) {
      op->id = ++next_id_;
      ops_.emplace(op->id, op);
    }
  }
  if (op->id == 0) {
    op->end();
    return;
  }
  op->start();
}

std::size_t permit_keeper_registry::kept() const {
  const std::lock_guard lk(mu_);
  std::size_t n = 0;
  for (const auto& [id, weak] : ops_) {
    if (const auto op = weak.lock(); op && op->keeping()) ++n;
  }
  return n;
}

void permit_keeper_registry::forget(std::uint64_t id) {
  const std::lock_guard lk(mu_);
  ops_.erase(id);
}

void permit_keeper_registry::shutdown() {
  std::vector<std::shared_ptr<permit_keeper_op>> ops;
  {
    const std::lock_guard lk(mu_);
    closed_ = true;
    for (const auto& [id, weak] : ops_) {
      if (auto op = weak.lock()) ops.push_back(std::move(op));
    }
    ops_.clear();
  }
  for (const auto& op : ops) op->end();
}

}  // namespace rlock::detail
