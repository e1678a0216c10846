// lock_release.hpp: releasing a hold of the asynchronous API from a blocking caller.
//
// Guarantees: release_hold() sends the unlock for `owner` and returns its outcome as an error
// code (errc::not_owner if the hold was already lost). It returns within `bound` whatever the
// server does: errc::timeout when no answer came by then (a server that is paused or hung; the
// library would resend the unlock for up to retry_attempts request timeouts), errc::stopped
// when SIGINT, SIGTERM or SIGHUP arrives on `signals` meanwhile. Either way the hold then ends
// with its lease on the server (the client's shutdown stops renewing it). The result crosses
// threads as a plain value (no exception_ptr shared between the caller and the client's I/O
// thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <system_error>

#include "exec_lock.hpp"
#include "signal_channel.hpp"

namespace rlock::cli {

std::error_code release_hold(const exec_lock& lock, std::uint64_t owner,
                             std::chrono::milliseconds bound, signal_channel& signals);

}  // namespace rlock::cli
