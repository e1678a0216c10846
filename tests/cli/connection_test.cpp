// The server check: unavailable servers exit 69 within --connect-timeout; passwords come from
// the environment or a file, never from an option value.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli_harness.hpp"
#include "support/misconf.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"

namespace rlock::test {
namespace {

TEST(cli_connection, a_refusing_server_exits_69_within_the_connect_timeout) {
  redis_server server;
  const std::string url = server.url();
  server.kill();
  temp_dir dir("rlock-cli");
  const auto ran = dir.path() / "ran";
  const auto r = run_rlock(
      {"exec", "x", "--url", url, "--connect-timeout", "2s", "--", "touch", ran.string()});
  EXPECT_EQ(r.status, 69) << r.err;
  EXPECT_LT(r.ms, 3000);
  EXPECT_NE(r.err.find("rlock exec: cannot use " + url), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(ran));
  std::cout << "[ timing ] refused, --connect-timeout 2s: exit 69 after " << r.ms << " ms\n";

  const auto status = run_rlock({"status", "x", "--url", url, "--connect-timeout", "2s"});
  EXPECT_EQ(status.status, 69) << status.err;
  EXPECT_LT(status.ms, 3000);
}

TEST(cli_connection, a_server_that_does_not_answer_exits_69_within_the_connect_timeout) {
  redis_server server;
  server.pause();  // accepts TCP connections (kernel backlog), answers nothing
  const auto r = run_rlock({"status", "x", "--url", server.url(), "--connect-timeout", "2s"});
  EXPECT_EQ(r.status, 69) << r.err;
  EXPECT_GE(r.ms, 1900);
  EXPECT_LT(r.ms, 3000);
  std::cout << "[ timing ] paused server, --connect-timeout 2s: exit 69 after " << r.ms << " ms\n";
  server.resume();
}

TEST(cli_connection, a_failed_setup_step_is_named_with_the_servers_text) {
  redis_server server;
  const auto r =
      run_rlock({"status", "x", "--url", server.url() + "/99", "--connect-timeout", "2s"});
  EXPECT_EQ(r.status, 69) << r.err;
  EXPECT_NE(r.err.find("SELECT failed during connection setup: ERR DB index is out of range"),
            std::string::npos)
      << r.err;
}

TEST(cli_connection, a_read_only_replica_exits_69_and_says_so) {
  redis_server master;
  redis_server replica(
      server_options{.extra_args = {"--replicaof", "127.0.0.1", std::to_string(master.port())}});
  temp_dir dir("rlock-cli");
  const auto ran = dir.path() / "ran";
  const auto r = run_rlock({"exec", "x", "--url", replica.url(), "--", "touch", ran.string()});
  EXPECT_EQ(r.status, 69) << r.err;
  EXPECT_NE(r.err.find("read-only replica"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(ran));
}

TEST(cli_connection, a_server_without_evalsha_exits_69_and_says_what_rlock_needs) {
  redis_server server(server_options{.extra_args = {"--rename-command", "EVALSHA", ""}});
  temp_dir dir("rlock-cli");
  const auto ran = dir.path() / "ran";
  const auto r = run_rlock({"exec", "x", "--url", server.url(), "--", "touch", ran.string()});
  EXPECT_EQ(r.status, 69) << r.err;
  EXPECT_NE(r.err.find("does not know the command"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rlock needs EVALSHA and SCRIPT"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(ran));
}

TEST(cli_connection, a_server_refusing_writes_gives_its_reason_and_can_still_be_inspected) {
  temp_dir data("rlock-misconf");
  redis_server server(misconf_options(data.path()));
  ASSERT_TRUE(break_persistence(server, data.path()));
  temp_dir dir("rlock-cli");
  const auto ran = dir.path() / "ran";
  const auto r = run_rlock({"exec", "x", "--url", server.url(), "--", "touch", ran.string()});
  EXPECT_EQ(r.status, 70) << r.err;
  EXPECT_NE(r.err.find("cannot acquire 'x': server error; MISCONF"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(ran));
  // Redis refuses PING in this state; reads still work, and so does inspection.
  const auto status = run_rlock({"status", "x", "--url", server.url()});
  EXPECT_EQ(status.status, 0) << status.err;
}

TEST(cli_connection, password_from_the_environment_or_a_file) {
  redis_server server(server_options{.requirepass = "s3cret"});
  temp_dir dir("rlock-cli");
  const auto file = dir.path() / "pw";
  std::ofstream(file) << "s3cret\n";

  const auto none = run_rlock({"status", "p", "--url", server.url(), "--connect-timeout", "2s"});
  EXPECT_EQ(none.status, 69) << none.err;
  const auto wrong = run_rlock({"status", "p", "--url", server.url(), "--connect-timeout", "2s"},
                               {"RLOCK_PASSWORD=pw-XYZZY"});
  EXPECT_EQ(wrong.status, 69) << wrong.err;
  EXPECT_NE(wrong.err.find("authentication failed"), std::string::npos) << wrong.err;
  EXPECT_EQ(wrong.err.find("XYZZY"), std::string::npos) << "no password in messages";
  const auto env =
      run_rlock({"status", "p"}, {"RLOCK_PASSWORD=s3cret", "RLOCK_URL=" + server.url()});
  EXPECT_EQ(env.status, 0) << env.err;
  const auto from_file = run_rlock(
      {"exec", "p", "--url", server.url(), "--password-file", file.string(), "--", "true"});
  EXPECT_EQ(from_file.status, 0) << from_file.err;
}

TEST(cli_connection, tls_with_the_servers_ca_and_a_client_certificate) {
  redis_server server(server_options{.tls = true});
  const tls_files& tls = server.tls();
  const auto ok =
      run_rlock({"status", "t", "--url", server.url(), "--tls-ca", tls.ca_cert.string(),
                 "--tls-cert", tls.client_cert.string(), "--tls-key", tls.client_key.string()});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_NE(ok.out.find("state:      free"), std::string::npos) << ok.out;
  // Not trusted (wrong CA): the handshake fails, reported as unavailable.
  const auto untrusted = run_rlock({"status", "t", "--url", server.url(), "--tls-ca",
                                    tls.bad_ca_cert.string(), "--connect-timeout", "2s"});
  EXPECT_EQ(untrusted.status, 69) << untrusted.err;
  EXPECT_LT(untrusted.ms, 3000);
  const auto insecure = run_rlock({"status", "t", "--url", server.url(), "--tls-insecure"});
  EXPECT_EQ(insecure.status, 0) << insecure.err;
}

}  // namespace
}  // namespace rlock::test
