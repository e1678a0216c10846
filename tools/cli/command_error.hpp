// command_error.hpp: the exception a subcommand throws to end the program with a message on
// stderr and a chosen exit status.
//
// Guarantees: main() catches it, prints "rlock <command>: <what()>" (plus, for usage errors,
// the hint "see 'rlock <command> --help'") on one line each, and exits with code().
// Thrown only from the main thread, before or after (never during) a child command runs.
#pragma once

#include <stdexcept>
#include <string>

#include "exit_codes.hpp"

namespace rlock::cli {

class command_error : public std::runtime_error {
 public:
  command_error(int exit_code, const std::string& what)
      : std::runtime_error(what), exit_code_(exit_code) {}
  int code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

/// A usage error: exit status 64, with the --help hint.
inline command_error usage_error(const std::string& what) {
  return command_error(exit_codes::usage, what);
}

}  // namespace rlock::cli
