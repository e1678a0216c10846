// Usage errors (exit 64 with a reason and a hint), help and the man page: no server needed.
#include <gtest/gtest.h>

#include "cli_harness.hpp"
#include "support/temp_dir.hpp"

namespace rlock::test {
namespace {

void expect_usage_error(const run_result& r, const std::string& reason,
                        const std::string& command) {
  EXPECT_EQ(r.status, 64) << r.err;
  EXPECT_NE(r.err.find(reason), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("see '" + command + " --help'"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << "reason + hint: " << r.err;
}

TEST(cli_usage, bad_durations_are_usage_errors_with_a_reason) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"", "empty duration"},
      {"10", "has no unit"},
      {"-1s", "negative duration"},
      {"+1s", "signed duration"},
      {"5x", "unknown unit 'x'"},
      {"1 s", "unknown unit ' s'"},
      {"abc", "malformed duration"},
      {".5s", "malformed duration"},
      {"1.s", "malformed duration"},
      {"99999999999999999999h", "out of range"},
      {"87601h", "out of range"},
      {"1.5ms", "finer than the 1ms resolution"},
      {"1.2345s", "more than 3 decimal places"},
      {"1h1h", "repeats unit 'h'"},
      {"500ms500ms", "repeats unit 'ms'"},
      {"30s1m", "has unit 'm' after a smaller one"},
      {"1h5ms2s", "has unit 's' after a smaller one"},
  };
  for (const auto& [text, reason] : cases) {
    SCOPED_TRACE("--wait '" + text + "'");
    const auto r = run_rlock({"exec", "x", "--wait", text, "--", "true"});
    expect_usage_error(r, reason, "rlock exec");
    EXPECT_EQ(r.err.rfind("rlock exec: --wait: ", 0), 0u) << r.err;
  }
  expect_usage_error(run_rlock({"exec", "x", "--timeout", "0s", "--", "true"}),
                     "--timeout: duration must be greater than zero", "rlock exec");
  expect_usage_error(run_rlock({"demo", "--duration", "2"}), "--duration: duration '2' has no unit",
                     "rlock demo");
  expect_usage_error(run_rlock({"status", "x", "--connect-timeout", "1d"}), "unknown unit 'd'",
                     "rlock status");
}

TEST(cli_usage, bad_urls_are_usage_errors_naming_their_source) {
  expect_usage_error(run_rlock({"status", "x", "--url", "http://127.0.0.1"}),
                     "rlock status: invalid --url: unsupported scheme 'http'", "rlock status");
  expect_usage_error(run_rlock({"exec", "x", "--url", "redis://127.0.0.1:99999", "--", "true"}),
                     "invalid --url", "rlock exec");
  expect_usage_error(run_rlock({"force-unlock", "x"}, {"RLOCK_URL=nonsense"}), "invalid $RLOCK_URL",
                     "rlock force-unlock");
  expect_usage_error(run_rlock({"status", "x", "--tls-insecure", "--url", "redis://127.0.0.1"}),
                     "TLS options need a rediss:// URL", "rlock status");
  // A password belongs in a file or the environment, never in an option (ps, shell history).
  expect_usage_error(run_rlock({"status", "x", "--url", "redis://u:secret@127.0.0.1:1"}),
                     "--url must not contain a password", "rlock status");
  // From $RLOCK_URL it is accepted: this one fails to connect (nothing listens on port 1).
  const auto env = run_rlock({"status", "x", "--connect-timeout", "1s"},
                             {"RLOCK_URL=redis://u:secret@127.0.0.1:1"});
  EXPECT_EQ(env.status, 69) << env.err;
}

TEST(cli_usage, other_usage_errors) {
  expect_usage_error(run_rlock({"exec", "x"}), "no command given", "rlock exec");
  expect_usage_error(run_rlock({"exec", "x", "--on-loss", "NOPE", "--", "true"}),
                     "--on-loss: unknown signal 'NOPE'", "rlock exec");
  expect_usage_error(run_rlock({"exec", "x", "--lost-exit-code", "300", "--", "true"}),
                     "--lost-exit-code", "rlock exec");
  expect_usage_error(run_rlock({"exec", "x", "--bogus", "--", "true"}), "--bogus", "rlock exec");
  expect_usage_error(run_rlock({"status"}), "name is required", "rlock status");
  expect_usage_error(run_rlock({"demo", "--workers", "0"}), "--workers", "rlock demo");
  expect_usage_error(run_rlock({"demo", "redis://127.0.0.1:1", "--url", "redis://127.0.0.1:2"}),
                     "give the URL once", "rlock demo");
  expect_usage_error(run_rlock({}), "A subcommand is required", "rlock");
  expect_usage_error(run_rlock({"frobnicate"}), "unknown command 'frobnicate'", "rlock");
  expect_usage_error(run_rlock({"--bogus"}), "unknown option '--bogus'", "rlock");

  const auto no_file = run_rlock({"status", "x", "--password-file", "/no/such/file"});
  EXPECT_EQ(no_file.status, 66) << no_file.err;
  EXPECT_NE(no_file.err.find("cannot read --password-file"), std::string::npos) << no_file.err;
}

// An empty value is refused, not taken as "not given" (before, --url '' fell back to
// $RLOCK_URL or the default without a word); a directory is no password or TLS file (before,
// std::ifstream opened it and the password read as empty: exit 69 WRONGPASS).
TEST(cli_usage, empty_values_and_unreadable_files_are_refused) {
  expect_usage_error(run_rlock({"status", "x", "--url", ""}, {"RLOCK_URL=redis://127.0.0.1:1"}),
                     "--url: must not be empty", "rlock status");
  expect_usage_error(run_rlock({"status", "x", "--password-file", ""}),
                     "--password-file: must not be empty", "rlock status");
  expect_usage_error(run_rlock({"exec", "x", "--user", "", "--", "true"}),
                     "--user: must not be empty", "rlock exec");
  temp_dir dir("rlock-cli");
  const auto directory = run_rlock({"status", "x", "--password-file", dir.path().string()});
  EXPECT_EQ(directory.status, 66) << directory.err;
  EXPECT_NE(directory.err.find("cannot read --password-file '" + dir.path().string() +
                               "': Is a directory"),
            std::string::npos)
      << directory.err;
  const auto ca =
      run_rlock({"status", "x", "--url", "rediss://127.0.0.1:1", "--tls-ca", dir.path().string()});
  EXPECT_EQ(ca.status, 66) << ca.err;
  EXPECT_NE(ca.err.find("cannot read --tls-ca file '" + dir.path().string() + "': Is a directory"),
            std::string::npos)
      << ca.err;
}

TEST(cli_usage, help_and_man_page_come_from_the_same_text) {
  const auto exec_help = run_rlock({"exec", "--help"});
  EXPECT_EQ(exec_help.status, 0);
  EXPECT_NE(exec_help.out.find("Usage: rlock exec NAME [OPTIONS] -- CMD [ARGS...]"),
            std::string::npos);
  for (const char* option :
       {"--wait", "--lease", "--watchdog-timeout", "--on-loss", "--grace", "--lost-exit-code",
        "--conflict-exit-code", "--url", "--password-file", "--tls-ca", "--connect-timeout"}) {
    EXPECT_NE(exec_help.out.find(option), std::string::npos) << option;
  }
  const auto status_help = run_rlock({"status", "--help"});
  EXPECT_EQ(status_help.status, 0);
  EXPECT_NE(status_help.out.find("ttl_ms"), std::string::npos) << "JSON fields documented";
  // force-unlock says what "released" means: a queued waiter may get the lock at once, and
  // the evicted holder is told only at its next renewal or at the end of its lease.
  const auto force_help = run_rlock({"force-unlock", "--help"});
  EXPECT_EQ(force_help.status, 0);
  for (const char* text : {"first live one gets it at once", "next renewal",
                           "half of its --watchdog-timeout", "--lease ends"}) {
    EXPECT_NE(force_help.out.find(text), std::string::npos) << text << "\n" << force_help.out;
  }
  const auto top = run_rlock({"--help"});
  EXPECT_EQ(top.status, 0);
  EXPECT_EQ(top.out.find("demo-worker"), std::string::npos) << "internal command hidden";

  const auto man = run_rlock({"--man"});
  EXPECT_EQ(man.status, 0);
  EXPECT_EQ(man.out.rfind(".TH RLOCK 1", 0), 0u);
  EXPECT_NE(man.out.find(".SS \"rlock exec\""), std::string::npos);
  EXPECT_NE(man.out.find("\\-\\-lost\\-exit\\-code"), std::string::npos);
  EXPECT_NE(man.out.find(".SH EXIT STATUS"), std::string::npos);
}

}  // namespace
}  // namespace rlock::test
