// rlock's own Lua scripts (src/lua/*.lua, embedded at build time), loaded on every connection.
#pragma once

#include <vector>

#include "rlock/script.hpp"

namespace rlock::detail {

const script& lock_acquire_script();
const script& lock_unlock_script();
const script& lock_renew_script();
const script& lock_force_unlock_script();
const script& lock_acquire_queued_script();
const script& lock_unlock_queued_script();
const script& lock_force_unlock_queued_script();
const script& lock_queue_refresh_script();
/// A spin lock's release: lock_unlock without the channel (publishes nothing).
const script& spin_lock_unlock_script();
/// The fair lock's (Redisson's RFairLock): acquire or queue, release telling the head, force.
const script& fair_lock_acquire_script();
const script& fair_lock_unlock_script();
const script& fair_lock_force_unlock_script();
const script& lock_fence_script();

/// Every script above, for SCRIPT LOAD at connect time.
std::vector<const script*> lock_scripts();

}  // namespace rlock::detail
