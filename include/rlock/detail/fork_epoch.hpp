// Internal to the public headers: which fork() generation this process is (detail/fork_epoch.hpp
// in the sources says why a client cares).
#pragma once

#include <cstdint>

namespace rlock::detail {

/// The number of fork() children this process descends from since it first called this (0 in
/// that process, 1 in its children, 2 in theirs). Lock-free: an atomic load, after a
/// pthread_atfork handler is registered on the first call.
std::uint64_t fork_epoch() noexcept;

}  // namespace rlock::detail
