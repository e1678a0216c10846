// force_unlock_command.hpp: `rlock force-unlock NAME [--json]`: delete a lock whoever holds it
// and wake its waiters (Redisson's forceUnlock).
//
// Guarantees: prints "released" when a lock existed and was deleted, followed by "; now held by
// <owner>[, <owner>...]" when a read right after finds the lock held again (the script hands
// it to the first live queued waiter), and "no lock" when there was none; exit 0 in these
// cases. --json prints exactly one JSON object on one line instead: {"name", "released",
// "held_by"} (see the help). After connecting, each step (the read before, the script, the read
// after) ends within one --timeout and the script is never resent, so the command ends within
// --connect-timeout + 3 x --timeout; a script whose answer did not come in time is reported as
// unknown (exit 69). A script that the ACL refused after it deleted the lock (no PUBLISH: Redis
// does not roll back) is reported as released, with who holds the lock now, and exit 77 with
// "waiters could not be notified". The holder is not told directly: its watchdog finds the lock
// gone at its next renewal (a holder under `rlock exec` then signals its command and exits 76).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "connection_options.hpp"

namespace rlock::cli {

struct force_unlock_options {
  std::string name{};
  bool json = false;
  connection_options connection{};
};

CLI::App* add_force_unlock_command(CLI::App& app, force_unlock_options& opts);
int run_force_unlock(const force_unlock_options& opts);

}  // namespace rlock::cli
