#include "status_command.hpp"

#include <iostream>
#include <sstream>

#include "command_error.hpp"
#include "connect.hpp"
#include "duration.hpp"
#include "json_text.hpp"
#include "lock_inspection.hpp"
#include "terminal_text.hpp"

namespace rlock::cli {
namespace {

constexpr const char* status_footer =
    "Output (--json: one object on one line; the fields are stable and always present):\n"
    "  name       the lock name as given\n"
    "  key        the Redis key\n"
    "  state      \"free\" (no key), \"held\" (a lock of any kind), \"other\" (a non-lock key)\n"
    "  kind       free, lock, fair_lock, fenced_lock, read_write_lock,\n"
    "             permit_expirable_semaphore, count_down_latch, semaphore_or_latch,\n"
    "             or other:<redis type> (other:hash: a hash without a lock's fields\n"
    "             \"<id>:<thread-id>\" = holds, and \"mode\" for a read-write lock)\n"
    "  owners     [{\"owner\": \"<client-uuid>:<thread-id>\", \"holds\": N}, ...]\n"
    "  mode       read_write_lock: \"read\" or \"write\"; otherwise null\n"
    "  ttl_ms     remaining TTL in milliseconds; null if no key or no expiry\n"
    "  listeners  subscribers of `channel` (below); for a lock: processes with Redisson\n"
    "             waiters, and with rlock waiters while the holder is not an rlock\n"
    "             process (behind an rlock holder they listen only on\n"
    "             rlock_handoff:{NAME}:<client-uuid>: see queued); fair_lock: null (not\n"
    "             counted: each waiter listens on a channel of its own, <channel>:<owner>)\n"
    "  queued     waiters in rlock's wait queue rlock_queue:{NAME} (ZCARD): waiting rlock\n"
    "             threads (an rlock holder's unlock hands the lock to the first live one)\n"
    "  channel    that channel: redisson_lock__channel:{NAME}; read_write_lock:\n"
    "             redisson_rwlock:{NAME}; the semaphores (and semaphore_or_latch):\n"
    "             redisson_sc:{NAME}; count_down_latch:\n"
    "             redisson_countdownlatch__channel__{NAME}\n"
    "  value      string kinds (semaphores, latches): the integer value (a semaphore's\n"
    "             permits available); otherwise null\n"
    "  taken      permit_expirable_semaphore: permits taken ({NAME}:timeout, expired ones\n"
    "             until a script reclaims them); otherwise null\n"
    "\n"
    "Exit status: 0 whether free or held; 64 usage; 66 a password or TLS file cannot be\n"
    "read; 69 server unavailable; 70 other server error; 77 the ACL user may not run a command\n"
    "status needs (NOPERM; see 'man rlock', SERVER).\n";

std::string optional_json(const std::optional<long long>& v) {
  return v ? std::to_string(*v) : "null";
}

std::string to_json(const lock_report& r) {
  std::ostringstream out;
  out << "{\"name\":" << json_quote(r.name) << ",\"key\":" << json_quote(r.key)
      << ",\"state\":" << json_quote(to_string(r.state)) << ",\"kind\":" << json_quote(r.kind)
      << ",\"owners\":[";
  for (std::size_t i = 0; i < r.owners.size(); ++i) {
    out << (i ? "," : "") << "{\"owner\":" << json_quote(r.owners[i].owner)
        << ",\"holds\":" << r.owners[i].holds << "}";
  }
  out << "],\"mode\":" << (r.mode ? json_quote(*r.mode) : "null")
      << ",\"ttl_ms\":" << optional_json(r.ttl_ms)
      << ",\"listeners\":" << optional_json(r.listeners) << ",\"queued\":" << r.queued
      << ",\"channel\":" << json_quote(r.channel) << ",\"value\":" << optional_json(r.value)
      << ",\"taken\":" << optional_json(r.taken) << "}";
  return out.str();
}

std::string to_text(const lock_report& r) {
  std::ostringstream out;
  // Names and owners are any bytes: control characters are escaped, never sent to the terminal.
  const std::string channel = printable(r.channel);
  out << "name:       " << printable(r.name) << "\n";
  if (r.key != r.name) out << "key:        " << printable(r.key) << "\n";
  out << "state:      " << to_string(r.state) << "\n";
  out << "kind:       " << printable(r.kind) << (r.mode ? " (mode " + printable(*r.mode) + ")" : "")
      << "\n";
  if (r.state == lock_state::held) {
    out << "owners:     ";
    if (r.owners.empty()) out << "(none)";
    for (std::size_t i = 0; i < r.owners.size(); ++i) {
      out << (i ? "\n            " : "") << printable(r.owners[i].owner) << " ("
          << r.owners[i].holds << (r.owners[i].holds == 1 ? " hold)" : " holds)");
    }
    out << "\n";
  }
  if (r.value) out << "value:      " << *r.value << "\n";
  if (r.taken) out << "taken:      " << *r.taken << (*r.taken == 1 ? " permit\n" : " permits\n");
  if (r.state != lock_state::free) {
    out << "ttl:        "
        << (r.ttl_ms ? format_duration(std::chrono::milliseconds(*r.ttl_ms)) : "no expiry") << "\n";
  }
  out << "listeners:  ";
  if (!r.listeners) {
    out << "not counted (each waiter of a fair lock listens on " << channel << ":<owner>)\n";
  } else {
    out << *r.listeners << " on " << channel << "\n";
  }
  out << "queued:     " << r.queued << " in rlock's wait queue\n";
  return out.str();
}

}  // namespace

CLI::App* add_status_command(CLI::App& app, status_options& opts) {
  CLI::App* sub = app.add_subcommand("status", "Show whether a lock is free or held, and by whom");
  sub->add_option("name", opts.name, "Lock name")->required()->type_name("NAME");
  sub->add_flag("--json", opts.json, "Print one JSON object (fields below)");
  add_connection_options(*sub, opts.connection);
  sub->footer(status_footer);
  return sub;
}

int run_status(const status_options& opts) {
  rlock::client client = connect_checked(make_config(opts.connection));
  lock_report report;
  try {
    report = inspect_lock(client, opts.name);
  } catch (const rlock::error& e) {
    throw command_error(exit_code_for(e.code()), e.what());
  }
  std::cout << (opts.json ? to_json(report) + "\n" : to_text(report)) << std::flush;
  return exit_codes::ok;
}

}  // namespace rlock::cli
