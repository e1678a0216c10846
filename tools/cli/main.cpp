// rlock: Redisson-compatible distributed locks on Redis, from the shell.
//
//   rlock exec NAME [options] -- CMD [ARGS...]   run a command while holding a lock
//   rlock status NAME [--json]                   who holds a lock
//   rlock force-unlock NAME [--json]             delete a lock and wake its waiters
//   rlock demo [URL]                             worker processes contend for one lock
//   rlock bench SCENARIO [--json]                benchmarks (uncontended, contended, ...)
//
// main() owns the command line: it parses with CLI11, runs the chosen command, and turns every
// failure into one line on stderr and an exit status from exit_codes.hpp (usage errors: 64 with
// a hint to the command's --help). `rlock --man` prints the man page (see man_page.hpp).
#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>
#include <memory>
#include <rlock/error.hpp>

#include "bench_command.hpp"
#include "bench_worker.hpp"
#include "command_error.hpp"
#include "demo_command.hpp"
#include "demo_worker.hpp"
#include "exec_command.hpp"
#include "force_unlock_command.hpp"
#include "help_formatter.hpp"
#include "man_page.hpp"
#include "status_command.hpp"
#include "terminal_text.hpp"

#ifndef RLOCK_VERSION
#define RLOCK_VERSION "unknown"
#endif

namespace {

using namespace rlock::cli;

/// The deepest subcommand parsed when parsing stopped (nullptr for the top level).
const CLI::App* active_app(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->parsed()) {
      const CLI::App* nested = active_app(*sub);
      return nested != nullptr ? nested : sub;
    }
  }
  return nullptr;
}

/// Its name as typed after "rlock" ("bench contended"; "" for the top level).
std::string active_command(const CLI::App& app) {
  std::vector<std::string> names;  // innermost first
  for (const CLI::App* a = active_app(app); a != nullptr && a != &app; a = a->get_parent()) {
    names.push_back(a->get_name());
  }
  std::string name;
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    if (!name.empty()) name += ' ';
    name += *it;
  }
  return name;
}

int report(const std::string& command, const std::string& message, int code) {
  const std::string who = command.empty() ? "rlock" : "rlock " + command;
  // Messages carry lock names and server texts: control characters are escaped.
  std::cerr << who << ": " << printable(message) << "\n";
  if (code == exit_codes::usage) std::cerr << "see '" << who << " --help'\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a closed pipe is an error to report, not a way to die

  CLI::App app("Redisson-compatible distributed locks on Redis, from the shell", "rlock");
  auto formatter = std::make_shared<help_formatter>();
  formatter->column_width(34);
  app.formatter(formatter);
  app.require_subcommand(1, 1);
  app.set_version_flag("--version", std::string("rlock ") + RLOCK_VERSION);
  bool man = false;
  app.add_flag("--man", man, "Print the man page (troff)")->group("");
  app.footer("Run 'rlock COMMAND --help' for a command's options. Exit status: see 'man rlock'.\n");

  exec_options exec;
  status_options status;
  force_unlock_options force_unlock;
  demo_options demo;
  demo_worker_options worker;
  bench_options bench;
  bench_worker_options bench_worker;
  CLI::App* exec_cmd = add_exec_command(app, exec);
  CLI::App* status_cmd = add_status_command(app, status);
  CLI::App* force_cmd = add_force_unlock_command(app, force_unlock);
  CLI::App* demo_cmd = add_demo_command(app, demo);
  CLI::App* worker_cmd = add_demo_worker_command(app, worker);
  CLI::App* bench_cmd = add_bench_command(app, bench);
  CLI::App* bench_worker_cmd = add_bench_worker_command(app, bench_worker);
  formatter->set_usage(&app, "rlock [--version] COMMAND [OPTIONS] ...");
  formatter->set_usage(exec_cmd, "rlock exec NAME [OPTIONS] -- CMD [ARGS...]");
  formatter->set_usage(status_cmd, "rlock status NAME [--json] [OPTIONS]");
  formatter->set_usage(force_cmd, "rlock force-unlock NAME [--json] [OPTIONS]");
  formatter->set_usage(demo_cmd,
                       "rlock demo [URL] [--workers N] [--duration DUR] [--hold DUR] [OPTIONS]");
  formatter->set_usage(bench_cmd, "rlock bench SCENARIO [--json] [OPTIONS]");
  const CLI::App& bench_app = *bench_cmd;
  for (const CLI::App* scenario : bench_app.get_subcommands([](const CLI::App*) { return true; })) {
    formatter->set_usage(scenario, "rlock bench " + scenario->get_name() + " [--json] [OPTIONS]");
  }

  // `rlock --man`: without a command (require_subcommand would refuse it in CLI11).
  if (argc == 2 && std::string(argv[1]) == "--man") {
    std::cout << make_man_page(app, RLOCK_VERSION);
    return exit_codes::ok;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    const CLI::App* asked = active_app(app);
    std::cout << (asked == nullptr ? app.help() : asked->help());
    return exit_codes::ok;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return exit_codes::ok;
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what() << "\n";
    return exit_codes::ok;
  } catch (const CLI::ParseError& e) {
    const std::string command = active_command(app);
    if (command.empty() && argc > 1) {
      // CLI11 says "A subcommand is required" for any unknown first word: name it instead.
      const std::string first = argv[1];
      if (first.starts_with("-"))
        return report("", "unknown option '" + first + "'", exit_codes::usage);
      return report(
          "", "unknown command '" + first + "' (commands: exec, status, force-unlock, demo, bench)",
          exit_codes::usage);
    }
    std::string message = e.what();
    if (command == "bench") {
      // CLI11 reports an unknown or missing scenario in its own words: name it instead.
      std::string given;
      for (int i = 1; i + 1 < argc; ++i) {
        if (std::string(argv[i]) == "bench") given = argv[i + 1];
      }
      message = (given.empty() || given.starts_with("-") ? std::string("no scenario given")
                                                         : "unknown scenario '" + given + "'") +
                " (scenarios: uncontended, contended, watchdog, footprint)";
    }
    if (command == "exec" && dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      message +=
          " (options of the command go after --: rlock exec NAME [OPTIONS] -- CMD [ARGS...])";
    }
    return report(command, message, exit_codes::usage);
  }

  const std::string command = active_command(app);
  try {
    if (exec_cmd->parsed()) return run_exec(exec);
    if (status_cmd->parsed()) return run_status(status);
    if (force_cmd->parsed()) return run_force_unlock(force_unlock);
    if (demo_cmd->parsed()) return run_demo(demo);
    if (worker_cmd->parsed()) return run_demo_worker(worker);
    if (bench_cmd->parsed()) return run_bench(*bench_cmd, bench);
    if (bench_worker_cmd->parsed()) return run_bench_worker(bench_worker);
    return report("", "no command given", exit_codes::usage);
  } catch (const command_error& e) {
    return report(command, e.what(), e.code());
  } catch (const rlock::error& e) {
    return report(command, e.what(), exit_code_for(e.code()));
  } catch (const std::exception& e) {
    return report(command, e.what(), exit_codes::software);
  }
}
