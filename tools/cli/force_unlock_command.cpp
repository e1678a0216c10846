#include "force_unlock_command.hpp"

#include <iostream>

#include "bounded_call.hpp"
#include "command_error.hpp"
#include "connect.hpp"
#include "lock_inspection.hpp"

namespace rlock::cli {

CLI::App* add_force_unlock_command(CLI::App& app, force_unlock_options& opts) {
  CLI::App* sub =
      app.add_subcommand("force-unlock", "Delete a lock whoever holds it and wake its waiters");
  sub->add_option("name", opts.name, "Lock name")->required()->type_name("NAME");
  add_connection_options(*sub, opts.connection);
  sub->footer(
      "Prints \"released\" if a lock was there, \"no lock\" otherwise.\n"
      "\"released\" does not mean free: if rlock exec processes are queued for the lock, the\n"
      "first live one gets it at once (a waiter that crashed within the last few seconds can\n"
      "still be chosen; the lock then ends with that waiter's lease). Redisson's waiters are\n"
      "woken to retry.\n"
      "The evicted holder is not stopped at once: an rlock exec holder learns of the loss at\n"
      "its next renewal (within a third of its --watchdog-timeout, 10s by default) or when its\n"
      "--lease ends, and only then signals its command (exit 76); until then the old and the\n"
      "new holder's commands run at the same time. Check with 'rlock status NAME'.\n"
      "A key that is not a lock is left untouched (exit 65): not a hash, or a hash without\n"
      "Redisson's lock fields (\"<id>:<thread-id>\" = holds, and for a read-write lock\n"
      "\"mode\"), such as an application's hash.\n"
      "A Redisson read-write lock or fair lock is refused too (exit 65): rlock does not\n"
      "implement their wake-ups; use Redisson's forceUnlock.\n"
      "Time bound: after connecting (within --connect-timeout), reading the lock and the\n"
      "force-unlock script each get one --timeout, and the script is never sent twice: at most\n"
      "--connect-timeout + 2 x --timeout in all, also against a server that holds writes. If\n"
      "the script's answer does not come in time, the lock may or may not have been deleted\n"
      "(exit 69): check with 'rlock status NAME'.\n"
      "Exit status: 0 in both cases; 64 usage; 65 not a lock, or a read-write or fair lock;\n"
      "69 server unavailable.\n");
  return sub;
}

int run_force_unlock(const force_unlock_options& opts) {
  if (opts.name.empty()) throw usage_error("the lock name must not be empty");
  const rlock::config cfg = make_config(opts.connection);
  rlock::client client = connect_checked(cfg);
  // Each step within one request timeout, whatever the library's retry budget would allow.
  const std::chrono::milliseconds bound = cfg.timeout;
  bool existed = false;
  try {
    rlock::lock lock = client.get_lock(opts.name);
    // Redisson's forceUnlock deletes whatever the key holds: refuse to touch a non-lock key.
    // (A key that changes between this read and the delete is not caught.)
    lock_report report;
    try {
      report =
          call_within(client, bound, [&client, &opts] { return read_lock(client, opts.name); });
    } catch (const rlock::error& e) {
      throw command_error(exit_code_for(e.code()),
                          "cannot read '" + opts.name + "': " + e.what() + "; nothing was deleted");
    }
    if (report.state == lock_state::other) {
      const std::string type = report.kind.starts_with("other:") ? report.kind.substr(6) : "string";
      throw command_error(exit_codes::data_error,
                          "'" + opts.name + "' is a Redis " + type +
                              (type == "hash" ? " without a lock's fields" : "") +
                              ", not a lock: left untouched");
    }
    // rlock implements the plain lock only: Redisson's forceUnlock of these kinds wakes other
    // channels (and a fair lock's queue head), which a plain force_unlock would not.
    if (report.kind == "read_write_lock" || report.kind == "fair_lock") {
      throw command_error(exit_codes::data_error,
                          "'" + opts.name + "' is a Redisson " +
                              (report.kind == "fair_lock" ? "fair lock" : "read-write lock") +
                              "; rlock force-unlock handles plain locks only: use Redisson's "
                              "forceUnlock. Left untouched");
    }
    existed = call_within(client, bound, [&lock] { return lock.force_unlock(); });
  } catch (const rlock::error& e) {
    if (e.code() == rlock::errc::timeout || e.code() == rlock::errc::connection_lost) {
      throw command_error(exit_codes::unavailable,
                          "force-unlock of '" + opts.name + "': " + e.what() +
                              "; the lock may or may not have been deleted: check with 'rlock "
                              "status " +
                              opts.name + "'");
    }
    throw command_error(exit_code_for(e.code()), e.what());
  }
  std::cout << (existed ? "released" : "no lock") << std::endl;
  return exit_codes::ok;
}

}  // namespace rlock::cli
