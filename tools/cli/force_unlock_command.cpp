#include "force_unlock_command.hpp"

#include <iostream>
#include <optional>
#include <sstream>
#include <vector>

#include "bounded_call.hpp"
#include "command_error.hpp"
#include "connect.hpp"
#include "json_text.hpp"
#include "lock_inspection.hpp"
#include "terminal_text.hpp"

namespace rlock::cli {
namespace {

constexpr const char* force_unlock_footer =
    "Output: \"released\" if a lock was there, \"no lock\" otherwise. Right after a release it\n"
    "reads the lock again and says who holds it now: \"released; now held by <owner>\".\n"
    "\"released\" does not mean free: if rlock exec processes are queued for the lock, the\n"
    "first live one gets it at once (a waiter that crashed within the last few seconds can\n"
    "still be chosen; the lock then ends with that waiter's lease). Redisson's waiters are\n"
    "woken to retry.\n"
    "--json: one object on one line, {\"name\": NAME, \"released\": true|false, \"held_by\":\n"
    "[\"<client-uuid>:<thread-id>\", ...] | null}; held_by is read right after a release ([]:\n"
    "free), null when nothing was released or the read failed.\n"
    "\n"
    "The evicted holder is not stopped at once: an rlock exec holder learns of the loss at\n"
    "its next renewal (within half of its --watchdog-timeout, 15s by default) or when its\n"
    "--lease ends, and only then signals its command (exit 76); until then the old and the\n"
    "new holder's commands run at the same time. Check with 'rlock status NAME'.\n"
    "A key that is not a lock is left untouched (exit 65): not a hash, or a hash without\n"
    "Redisson's lock fields (\"<id>:<thread-id>\" = holds, and for a read-write lock\n"
    "\"mode\"), such as an application's hash.\n"
    "A Redisson read-write lock or fair lock is released as Redisson's forceUnlock of that\n"
    "kind does: a read-write lock's waiters are told on its channel, a fair lock's queue head\n"
    "on its own (stale heads are dropped first).\n"
    "\n"
    "Time bound: after connecting (within --connect-timeout), reading the lock, the\n"
    "force-unlock script and the read after it each get one --timeout, and the script is\n"
    "never sent twice: at most --connect-timeout + 3 x --timeout in all, also against a\n"
    "server that holds writes. If the script's answer does not come in time, the lock may\n"
    "or may not have been deleted (exit 69): check with 'rlock status NAME'.\n"
    "\n"
    "An ACL user without PUBLISH (or without the lock's channels) is refused by Redis partway\n"
    "through the script, after the lock was deleted (and handed to a queued waiter): Redis\n"
    "does not roll back. force-unlock then reads the lock again, prints \"released\" (and who\n"
    "holds it now) as usual, says on stderr that the waiters could not be notified, and\n"
    "exits 77.\n"
    "\n"
    "Exit status: 0 released or no lock; 64 usage; 65 not a lock; 66 a password or TLS file\n"
    "cannot be read; 69 server unavailable, or no answer in\n"
    "time; 70 other server error; 77 the ACL user may not run a command force-unlock needs\n"
    "(NOPERM; with \"released\" on stdout: the lock was released, its waiters not notified).\n";

struct force_unlock_outcome {
  bool released = false;
  /// The owners read right after a release ({}: free); nullopt when not read.
  std::optional<std::vector<owner_hold>> held_by{};
};

std::string to_text(const force_unlock_outcome& o) {
  if (!o.released) return "no lock\n";
  if (!o.held_by || o.held_by->empty()) return "released\n";
  std::string out = "released; now held by ";
  for (std::size_t i = 0; i < o.held_by->size(); ++i) {
    // Owners are any bytes from Redis: control characters are escaped.
    out += (i ? ", " : "") + printable((*o.held_by)[i].owner);
  }
  return out + "\n";
}

std::string to_json(const std::string& name, const force_unlock_outcome& o) {
  std::ostringstream out;
  out << "{\"name\":" << json_quote(name) << ",\"released\":" << (o.released ? "true" : "false")
      << ",\"held_by\":";
  if (!o.held_by) {
    out << "null";
  } else {
    out << "[";
    for (std::size_t i = 0; i < o.held_by->size(); ++i) {
      out << (i ? "," : "") << json_quote((*o.held_by)[i].owner);
    }
    out << "]";
  }
  out << "}\n";
  return out.str();
}

/// Who holds `name` now ({} when free or not a lock), read within `bound`; nullopt, with a
/// warning on stderr, when the read fails.
std::optional<std::vector<owner_hold>> owners_now(rlock::client& client, const std::string& name,
                                                  std::chrono::milliseconds bound) {
  try {
    const lock_report now =
        call_within(client, bound, [&client, &name] { return read_lock(client, name); });
    return now.state == lock_state::held ? now.owners : std::vector<owner_hold>{};
  } catch (const rlock::error& e) {
    std::cerr << "rlock force-unlock: warning: cannot read who holds '" << printable(name)
              << "' now: " << printable(e.what()) << "\n";
    return std::nullopt;
  }
}

}  // namespace

CLI::App* add_force_unlock_command(CLI::App& app, force_unlock_options& opts) {
  CLI::App* sub =
      app.add_subcommand("force-unlock", "Delete a lock whoever holds it and wake its waiters");
  sub->add_option("name", opts.name, "Lock name")->required()->type_name("NAME");
  sub->add_flag("--json", opts.json, "Print one JSON object (fields below)");
  add_connection_options(*sub, opts.connection);
  sub->footer(force_unlock_footer);
  return sub;
}

int run_force_unlock(const force_unlock_options& opts) {
  if (opts.name.empty()) throw usage_error("the lock name must not be empty");
  const rlock::config cfg = make_config(opts.connection);
  rlock::client client = connect_checked(cfg);
  // Each step within one request timeout, whatever the library's retry budget would allow.
  const std::chrono::milliseconds bound = cfg.timeout;
  force_unlock_outcome result;
  try {
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
    // Each kind's own forceUnlock: a read-write lock's waiters listen on its channel, a fair
    // lock's queue head on its own, which a plain lock's release would not tell.
    const auto force = [&client, &opts, kind = report.kind] {
      if (kind == "read_write_lock") return client.get_read_write_lock(opts.name).force_unlock();
      if (kind == "fair_lock") return client.get_fair_lock(opts.name).force_unlock();
      return client.get_lock(opts.name).force_unlock();
    };
    try {
      result.released = call_within(client, bound, force);
    } catch (const rlock::error& e) {
      if (e.code() != rlock::errc::no_permission) throw;
      // Redis runs a script up to the command the ACL refuses and keeps what it did: the DEL
      // (and a hand-over) come before the PUBLISH. The lock now tells which happened.
      result.held_by = owners_now(client, opts.name, bound);
      if (!result.held_by || *result.held_by == report.owners) throw;
      result.released = true;
      std::cout << (opts.json ? to_json(opts.name, result) : to_text(result)) << std::flush;
      throw command_error(exit_codes::no_permission,
                          "released '" + opts.name +
                              "', but its waiters could not be notified: the ACL user lacks "
                              "PUBLISH (or permission for the lock's channels): " +
                              e.what());
    }
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
  // With queued waiters the script hands the lock to the first live one: say who has it now.
  if (result.released) result.held_by = owners_now(client, opts.name, bound);
  std::cout << (opts.json ? to_json(opts.name, result) : to_text(result)) << std::flush;
  return exit_codes::ok;
}

}  // namespace rlock::cli
