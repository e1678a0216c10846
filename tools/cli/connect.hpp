// connect.hpp: a client whose server has been checked before anything else is done.
//
// Guarantees of connect_checked():
//  - It creates the client and sends PING, and returns only once PONG came back.
//  - It returns or throws within the configured connect_timeout (plus scheduling slack): a
//    server that refuses, cannot be reached, rejects the credentials (AUTH, NOAUTH) or the TLS
//    handshake, or does not answer in time gives command_error(unavailable, 69) naming the
//    server and the reason (with the server's error text or the failed setup step when there
//    is one); NOPERM gives no_permission (77). A TLS file the client cannot load (no
//    certificate in it, a key that does not fit the certificate) gives no_input (66): it is
//    loaded before any I/O. A failure that looks like the wrong scheme for the port (reset
//    right after a plaintext command; a TLS handshake answered wrongly or not at all) adds a
//    hint to use the other scheme. A rejection of the credentials when no password
//    was given at all (a user without one) says so.
//  - With `interrupt` set, a pending SIGINT/SIGTERM/SIGHUP on it ends the wait at once with
//    command_error(128 + signal). Other signals read from it meanwhile (SIGCHLD) are dropped.
#pragma once

#include <rlock/client.hpp>

namespace rlock::cli {

class signal_channel;

rlock::client connect_checked(const rlock::config& cfg, signal_channel* interrupt = nullptr);

}  // namespace rlock::cli
