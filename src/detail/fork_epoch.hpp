// fork_epoch: whether this process is a fork's child of the one that made a client.
//
// A client's I/O threads exist only in the process that started them; its sockets, its epoll
// set and its lock owner ids (client id and thread ids) are shared with any child that fork()
// makes. A child that used them would write on the parent's connections, take the parent's
// locks as their owner (a re-entry) or release them (a lock guard unwound in the child), or
// wait for ever for threads it does not have. The client records the epoch it was made in and
// refuses every use in a later one (core::forked).
#pragma once

#include <cstdint>
#include <memory>

#include "rlock/detail/fork_epoch.hpp"  // fork_epoch()

namespace rlock::detail {

/// Keeps `p` alive until the process ends. For a fork's child that lets go of a client it
/// inherited: destroying the client there would close sockets registered in the epoll set it
/// shares with the parent (which deregisters them for the parent too) and join threads that do
/// not exist in the child.
void keep_until_exit(std::shared_ptr<void> p);

}  // namespace rlock::detail
