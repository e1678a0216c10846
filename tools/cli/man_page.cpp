#include "man_page.hpp"

#include <sstream>

#include "connection_options.hpp"

namespace rlock::cli {
namespace {

/// One line of literal text for troff.
std::string escape_line(const std::string& line) {
  std::string out;
  for (char c : line) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  if (!out.empty() && (out.front() == '.' || out.front() == '\'')) out.insert(0, "\\&");
  return out;
}

/// Literal, unfilled block (keeps the help's own layout).
std::string literal_block(const std::string& text) {
  std::ostringstream out;
  out << ".nf\n";
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out << escape_line(line) << "\n";
  out << ".fi\n";
  return out.str();
}

}  // namespace

std::string make_man_page(const CLI::App& app, const std::string& version) {
  std::ostringstream out;
  out << ".TH RLOCK 1 \"\" \"rlock " << version << "\" \"User Commands\"\n";
  out << ".SH NAME\nrlock \\- " << escape_line(app.get_description()) << "\n";
  out << ".SH SYNOPSIS\n";
  const auto subs = app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); });
  for (const CLI::App* sub : subs) {
    const std::string help = sub->help();
    const std::string prefix = "Usage: ";
    const std::size_t at = help.find(prefix);
    if (at == std::string::npos) continue;
    const std::size_t from = at + prefix.size();
    out << ".B " << escape_line(help.substr(from, help.find('\n', from) - from)) << "\n.br\n";
  }
  out << ".SH DESCRIPTION\n";
  out << "rlock takes Redisson\\-compatible distributed locks on Redis from the shell: a lock\n"
         "taken by rlock excludes Java Redisson clients and rlock C++ clients using the same\n"
         "name, and the other way round.\n";
  out << ".SH COMMANDS\n";
  for (const CLI::App* sub : subs) {
    out << ".SS \"rlock " << sub->get_name() << "\"\n";
    out << literal_block(sub->help());
    // Commands with their own subcommands (bench SCENARIO): each one's options too.
    for (const CLI::App* nested : sub->get_subcommands([](const CLI::App*) { return true; })) {
      out << ".SS \"rlock " << sub->get_name() << " " << nested->get_name() << "\"\n";
      out << literal_block(nested->help());
    }
  }
  out << ".SH ENVIRONMENT\n" << literal_block(connection_environment_help());
  out << ".SH SERVER\n"
      << literal_block(
             "Locks are Lua scripts run with EVALSHA; rlock loads them with SCRIPT LOAD and sends\n"
             "EVAL when the server has lost them. A server that renamed or disabled those\n"
             "commands (rename-command) cannot serve locks: rlock says the server does not know\n"
             "the command and exits 69. CLIENT may be renamed away. An ACL user also needs the\n"
             "commands the scripts run and the lock channels: the rule is in the README\n"
             "(Configuration).\n");
  out << ".SH EXIT STATUS\n"
      << literal_block(
             "0    success (exec: the command's own status is passed through)\n"
             "1    demo, bench: a check failed\n"
             "64   usage error (bad option, duration or URL)\n"
             "65   the key is not a lock\n"
             "66   --password-file or a TLS file cannot be read, or a TLS file cannot be loaded\n"
             "     (no certificate in it, a key that does not fit the certificate)\n"
             "69   server unavailable (refused, unreachable, authentication, TLS, a read-only\n"
             "     replica, a command rlock needs renamed or disabled, a cluster node that\n"
             "     does not serve the lock's slot, no answer within --connect-timeout,\n"
             "     fewer replicas than --replica-sync acknowledged each try of the acquire)\n"
             "70   other server or library error\n"
             "75   exec: not acquired within --wait (--conflict-exit-code)\n"
             "76   exec: the lock was lost while the command ran (--lost-exit-code)\n"
             "77   permission denied by the server's ACL (NOPERM)\n"
             "126  exec: the command cannot be executed\n"
             "127  exec: the command was not found\n"
             "128+N  exec: the command died of signal N; or rlock was interrupted by signal N\n"
             "     while waiting (the command was not run)\n");
  out << ".SH EXAMPLES\n"
      << literal_block(
             "rlock exec nightly-backup --wait 0s -- /usr/local/bin/backup\n"
             "rlock exec deploy --wait 5m --on-loss INT --grace 30s -- ./deploy.sh\n"
             "rlock exec --fenced invoice-42 -- sh -c 'bill --fence \"$RLOCK_TOKEN\"'\n"
             "rlock exec --permits 4 encoders -- ./encode.sh clip.mov\n"
             "rlock status deploy --json\n"
             "rlock force-unlock deploy\n"
             "rlock force-unlock deploy --json\n"
             "rlock demo --workers 8 --duration 10s\n"
             "rlock bench contended --processes 8 --hold 1ms --json\n");
  out << ".SH SEE ALSO\nredis\\-cli(1), redis\\-server(1)\n";
  return out.str();
}

}  // namespace rlock::cli
