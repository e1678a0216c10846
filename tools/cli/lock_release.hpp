// lock_release.hpp: releasing a hold of the asynchronous API from a blocking caller.
//
// Guarantees: release_hold() sends the unlock for `owner` and returns its outcome as an error
// code (errc::not_owner if the hold was already lost) once the library has answered, which it
// does within its own request deadlines. The result crosses threads as a plain value (no
// exception_ptr shared between the caller and the client's I/O thread).
#pragma once

#include <cstdint>
#include <rlock/lock.hpp>
#include <system_error>

namespace rlock::cli {

std::error_code release_hold(rlock::lock& lock, std::uint64_t owner);

}  // namespace rlock::cli
