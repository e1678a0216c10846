#include "rlock/permit_keeper.hpp"

#include <string>
#include <utility>

#include "detail/expirable_semaphore_ops.hpp"
#include "detail/fork_epoch.hpp"
#include "detail/permit_keeper_op.hpp"
#include "rlock/error.hpp"

namespace rlock {
namespace {

std::string checked_bytes(const permit_keeper::permit_id& id, std::chrono::milliseconds lease) {
  if (const std::string why = detail::bad_expirable_lease(lease); !why.empty()) {
    throw error(make_error_code(errc::invalid_argument), "permit_keeper: " + why);
  }
  auto bytes = detail::permit_id_bytes(id);
  if (!bytes) {
    throw error(make_error_code(errc::invalid_argument),
                "permit_keeper: a permit id is 32 hex characters, not '" + id.substr(0, 64) + "'");
  }
  return std::move(*bytes);
}

}  // namespace

permit_keeper::permit_keeper(const permit_expirable_semaphore& semaphore, const permit_id& id,
                             milliseconds lease)
    : semaphore_(semaphore), id_(id) {
  std::string bytes = checked_bytes(id, lease);
  const clock::time_point sent = clock::now();
  if (!semaphore_.update_lease_time(id, lease)) {
    throw error(make_error_code(errc::not_owner),
                "permit_keeper: permit " + id + " of '" + semaphore_.name() +
                    "' is not held (released, or its lease ended)");
  }
  op_ = std::make_shared<detail::permit_keeper_op>(semaphore_.svc_, semaphore_.key_,
                                                   std::move(bytes), lease, true, sent + lease);
  semaphore_.svc_->keepers().start(op_);
}

permit_keeper::permit_keeper(const permit_expirable_semaphore& semaphore, const permit_id& id,
                             milliseconds lease, clock::time_point valid_until, renewal r)
    : semaphore_(semaphore), id_(id) {
  op_ = std::make_shared<detail::permit_keeper_op>(semaphore_.svc_, semaphore_.key_,
                                                   checked_bytes(id, lease), lease,
                                                   r == renewal::on, valid_until);
  semaphore_.svc_->keepers().start(op_);
}

permit_keeper::~permit_keeper() {
  stop();
}

permit_keeper::permit_keeper(permit_keeper&& other) noexcept
    : semaphore_(std::move(other.semaphore_)),
      id_(std::move(other.id_)),
      op_(std::move(other.op_)) {}

permit_keeper& permit_keeper::operator=(permit_keeper&& other) noexcept {
  if (this != &other) {
    stop();
    semaphore_ = std::move(other.semaphore_);
    id_ = std::move(other.id_);
    op_ = std::move(other.op_);
  }
  return *this;
}

std::stop_token permit_keeper::loss_token() const {
  return op_ ? op_->loss_token() : std::stop_token{};
}

permit_keeper::clock::time_point permit_keeper::valid_until() const {
  return op_ ? op_->valid_until() : clock::time_point::min();
}

void permit_keeper::stop() {
  if (!op_) return;
  if (semaphore_.svc_->engine()->forked()) {
    // The permit and its renewals are the parent's (a fork's child: core::forked).
    detail::keep_until_exit(std::move(op_));
    return;
  }
  op_->stop();
  semaphore_.svc_->keepers().forget(op_->id);
}

bool permit_keeper::release() {
  if (!op_) return false;  // moved from: it keeps nothing
  stop();
  return semaphore_.try_release(id_);
}

}  // namespace rlock
