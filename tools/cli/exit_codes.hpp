// exit_codes.hpp: every exit status the rlock tool itself chooses (sysexits.h values where one
// fits), and the mapping from rlock::errc to them.
//
// Guarantees: the values are stable; `rlock exec` passes the command's own status through
// unchanged (0-255, or 128+N when it died of signal N), so only the statuses below that exec
// itself produces (conflict, lost, usage, unavailable, ...) can be confused with the command's.
// Those two have options (--conflict-exit-code, --lost-exit-code) for commands that use them.
#pragma once

#include <system_error>

namespace rlock::cli {

namespace exit_codes {
inline constexpr int ok = 0;
/// `rlock demo`: a check failed (counter != acquisitions, an overlap, a worker failed).
inline constexpr int check_failed = 1;
/// EX_USAGE: bad option, argument, duration or URL.
inline constexpr int usage = 64;
/// EX_DATAERR: the key holds something that is not a lock (WRONGTYPE).
inline constexpr int data_error = 65;
/// EX_NOINPUT: --password-file or a TLS file cannot be read, or a TLS file cannot be loaded.
inline constexpr int no_input = 66;
/// EX_UNAVAILABLE: the server cannot be reached, refuses, rejects the credentials or the TLS
/// handshake, or does not answer within --connect-timeout.
inline constexpr int unavailable = 69;
/// EX_SOFTWARE: any other failure reported by the server or the library.
inline constexpr int software = 70;
/// EX_TEMPFAIL: `exec` did not acquire the lock within --wait (default; --conflict-exit-code).
inline constexpr int conflict = 75;
/// `exec`: the lock was lost while the command ran (default; --lost-exit-code).
inline constexpr int lost = 76;
/// EX_NOPERM: the ACL user may not run a command rlock needs (NOPERM).
inline constexpr int no_permission = 77;
/// `exec`: the command was found but could not be executed (as a shell reports it).
inline constexpr int cannot_execute = 126;
/// `exec`: the command was not found (as a shell reports it).
inline constexpr int not_found = 127;
/// A process that died of signal N is reported as signal_base + N (130 for SIGINT).
inline constexpr int signal_base = 128;
}  // namespace exit_codes

/// The exit status for a failure the library reported: unavailable for connection, timeout,
/// authentication and TLS failures, and for servers that cannot serve the lock (a read-only
/// replica, scripting disabled, a cluster node of another slot, replicas that did not
/// acknowledge a --replica-sync write); data_error for wrong_type;
/// no_permission for NOPERM; software for everything else.
int exit_code_for(std::error_code ec) noexcept;

}  // namespace rlock::cli
