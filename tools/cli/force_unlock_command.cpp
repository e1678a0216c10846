#include "force_unlock_command.hpp"

#include <iostream>

#include "command_error.hpp"
#include "connect.hpp"

namespace rlock::cli {

CLI::App* add_force_unlock_command(CLI::App& app, force_unlock_options& opts) {
  CLI::App* sub =
      app.add_subcommand("force-unlock", "Delete a lock whoever holds it and wake its waiters");
  sub->add_option("name", opts.name, "Lock name")->required()->type_name("NAME");
  add_connection_options(*sub, opts.connection);
  sub->footer(
      "Prints \"released\" if a lock was there, \"no lock\" otherwise.\n"
      "A key that is not a lock (not a hash) is left untouched (exit 65).\n"
      "Exit status: 0 in both cases; 64 usage; 65 not a lock; 69 server unavailable.\n");
  return sub;
}

int run_force_unlock(const force_unlock_options& opts) {
  rlock::client client = connect_checked(make_config(opts.connection));
  bool existed = false;
  try {
    rlock::lock lock = client.get_lock(opts.name);
    // Redisson's forceUnlock deletes whatever the key holds: refuse to touch a non-lock key.
    const std::string type(client.execute({"TYPE", lock.key()}).str());
    if (type != "hash" && type != "none") {
      throw command_error(exit_codes::data_error, "'" + opts.name + "' is a Redis " + type +
                                                      ", not a lock: left untouched");
    }
    existed = lock.force_unlock();
  } catch (const rlock::error& e) {
    throw command_error(exit_code_for(e.code()), e.what());
  }
  std::cout << (existed ? "released" : "no lock") << std::endl;
  return exit_codes::ok;
}

}  // namespace rlock::cli
