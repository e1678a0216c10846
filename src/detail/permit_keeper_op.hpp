// permit_keeper_op.hpp: one kept permit (rlock/permit_keeper.hpp) on the client's timers, and
// the registry of a client's kept permits, which its shutdown ends.
//
// The op carries out permit_renewal.hpp's actions: a wait on a steady_timer of the client's
// io_context, a renewal sent as expirable_semaphore_inspect.lua's `update` (its answer awaited
// until the action's bound: the lease's end). Every member runs under mu_, the timer's too;
// requests are sent and the loss token is stopped without it (a completion may run inline, and
// a std::stop_callback may call back into the op). A generation number makes the first of a
// renewal's answer and its bound's timer the one that counts.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <system_error>

#include "detail/core.hpp"
#include "detail/permit_renewal.hpp"

namespace rlock::detail {

class expirable_semaphore_service;

class permit_keeper_op : public std::enable_shared_from_this<permit_keeper_op> {
 public:
  /// `permit_bytes`: the permit id's 16 bytes; `lease` > 0; `renew` false: nothing is sent, the
  /// loss comes at `valid_until`.
  permit_keeper_op(std::shared_ptr<expirable_semaphore_service> svc, std::string raw_name,
                   std::string permit_bytes, std::chrono::milliseconds lease, bool renew,
                   clock::time_point valid_until);

  /// Takes the first step (the loss at once when `valid_until` has passed).
  void start();
  /// Stops renewing: the timer is cancelled, an answer in flight is dropped; the loss token is
  /// left as it is. Idempotent.
  void stop();
  /// Stops renewing and stops the loss token (the client shut down: nothing keeps the permit).
  void end();

  std::stop_token loss_token() const { return lost_.get_token(); }
  clock::time_point valid_until() const;
  /// Neither stopped nor lost.
  bool keeping() const;

  std::uint64_t id = 0;  // in the registry (0: not registered); set before start()

 private:
  using action = permit_renewal::action;
  // Carries out `a`; called with lk held, returns with it released. `how`: what a loss that
  // `a` may be would mean (config::on_event's lock_lost).
  void advance(std::unique_lock<std::mutex>& lk, action a, const char* how);
  void on_timer(std::uint64_t generation);
  void on_answer(std::uint64_t generation, std::error_code ec, std::int64_t held);
  // Stops renewing and stops the loss token; called with lk held, returns with it released.
  void lose(std::unique_lock<std::mutex>& lk);

  std::shared_ptr<expirable_semaphore_service> svc_;
  std::string raw_name_;
  std::string id_;
  std::string lease_arg_;
  bool renew_;
  mutable std::mutex mu_;
  asio::steady_timer timer_;
  permit_renewal protocol_;
  std::uint64_t generation_ = 0;
  bool stopped_ = false;
  std::stop_source lost_;
};

/// A client's kept permits: shutdown() ends them all (their loss tokens stop), and a keeper
/// started after it is ended at once.
class permit_keeper_registry {
 public:
  /// Registers and starts `op`.
  void start(const std::shared_ptr<permit_keeper_op>& op);
  void forget(std::uint64_t id);
  void shutdown();
  /// The permits kept now (permit_keeper_op::keeping()).
  std::size_t kept() const;

 private:
  mutable std::mutex mu_;
  bool closed_ = false;
  std::uint64_t next_id_ = 0;
  std::map<std::uint64_t, std::weak_ptr<permit_keeper_op>> ops_;
};

}  // namespace rlock::detail
