// force_unlock_command.hpp: `rlock force-unlock NAME`: delete a lock whoever holds it and wake
// its waiters (Redisson's forceUnlock).
//
// Guarantees: prints "released" when a lock existed and was deleted, "no lock" when there was
// none; exit 0 in both cases. After connecting, each step (the read of the lock, the script)
// ends within one --timeout and the script is never resent, so the command ends within
// --connect-timeout + 2 x --timeout; a script whose answer did not come in time is reported as
// unknown (exit 69). The holder is not told directly: its watchdog finds the lock gone at its
// next renewal (a holder under `rlock exec` then signals its command and exits 76).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "connection_options.hpp"

namespace rlock::cli {

struct force_unlock_options {
  std::string name{};
  connection_options connection{};
};

CLI::App* add_force_unlock_command(CLI::App& app, force_unlock_options& opts);
int run_force_unlock(const force_unlock_options& opts);

}  // namespace rlock::cli
