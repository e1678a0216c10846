// nemesis: the fault injectors of the scenarios, one per nemesis_kind.
//
// The runner calls inject() at the start of each cycle, tick() every options.tick while the
// fault is on, and heal() at the end of the on phase. Each injection is appended to
// context.faults (and as fault_start/fault_end events to the pool's history) with the times
// the recovery and loss measurements start from.
//
// Guarantees:
//  - Holder faults act on a worker that is inside its critical section when the fault lands:
//    the worker is stopped first and its (then frozen) history checked; a worker caught
//    outside is resumed and another attempt made, for at most 3 s per cycle (a cycle without a
//    holder injects nothing and records nothing). early_expiry and server_restart instead wait
//    for a worker that acquired the lock less than 30 ms ago (not stopped), so that the fault
//    lands early in its critical section.
//  - heal() leaves the system fault-free: processes resumed, server running and answering,
//    proxy in pass mode.
#pragma once

#include <memory>
#include <vector>

#include "faults/fault_proxy.hpp"
#include "faults/scenario.hpp"
#include "faults/worker_networks.hpp"
#include "faults/worker_pool.hpp"
#include "support/redis_server.hpp"

namespace rlock::faults {

struct fault_context {
  test::redis_server& server;
  worker_pool& pool;
  fault_proxy* proxy = nullptr;  // set for nemesis_kind::proxy
  const scenario_options& options;
  std::vector<fault_record>& faults;
  worker_networks* networks = nullptr;  // set for the nemeses that need namespaces
};

class nemesis {
 public:
  virtual ~nemesis() = default;
  virtual void inject(fault_context& ctx, int cycle) = 0;
  virtual void tick(fault_context&) {}
  virtual void heal(fault_context& ctx) = 0;
};

std::unique_ptr<nemesis> make_nemesis(nemesis_kind kind);

}  // namespace rlock::faults
