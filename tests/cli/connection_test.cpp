// The server check: unavailable servers exit 69 within --connect-timeout; passwords come from
// the environment or a file, never from an option value.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli_harness.hpp"
#include "support/loopback_listener.hpp"
#include "support/misconf.hpp"
#include "support/redis_cluster.hpp"
#include "support/redis_server.hpp"
#include "support/replica_acks.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"

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

// A web server or an HTTP proxy on the port answers in HTTP: exit 69, and the message quotes
// the parser and asks whether it is a Redis server.
TEST(cli_connection, something_other_than_redis_on_the_port_exits_69_and_says_so) {
  loopback_listener http(listener_behaviour::answers_http);
  const auto r =
      run_rlock({"exec", "x", "--url", http.url(), "--connect-timeout", "2s", "--", "true"});
  EXPECT_EQ(r.status, 69) << r.err;
  EXPECT_LT(r.ms, 3000);
  EXPECT_NE(r.err.find("Protocol error"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is it a Redis server?"), std::string::npos) << r.err;
}

// A Redis Sentinel answers PING but has no SCRIPT: exit 69, the server's text, and a hint that
// rlock needs the master's own address.
TEST(cli_connection, a_sentinel_port_exits_69_and_points_to_the_master) {
  redis_server sentinel(server_options{.extra_args = {"--sentinel"}});
  const auto r = run_rlock({"status", "x", "--url", sentinel.url(), "--connect-timeout", "2s"});
  EXPECT_EQ(r.status, 69) << r.err;
  EXPECT_NE(r.err.find("ERR unknown command 'SCRIPT'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is this a Redis Sentinel port?"), std::string::npos) << r.err;
  redis_server plain;
  const auto ok = run_rlock({"status", "x", "--url", plain.url()});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.err.find("Sentinel"), std::string::npos) << ok.err;
}

TEST(cli_connection, exec_finds_the_master_through_a_sentinel) {
  redis_server master;
  redis_server replica(
      server_options{.extra_args = {"--replicaof", "127.0.0.1", std::to_string(master.port())}});
  redis_server sentinel(
      server_options{.extra_args = {"--sentinel", "monitor", "mymaster", "127.0.0.1",
                                    std::to_string(master.port()), "1"}});
  temp_dir dir("rlock-cli");
  const auto held = dir.path() / "held";
  // The command sees the lock held on the master while it runs.
  const auto r = run_rlock({"exec", "via-sentinel", "--sentinel", sentinel.url(), "--master-name",
                            "mymaster", "--", "sh", "-c",
                            "redis-cli -p " + std::to_string(master.port()) +
                                " exists via-sentinel > " + held.string()});
  EXPECT_EQ(r.status, 0) << r.err;
  std::ifstream in(held);
  std::string exists;
  std::getline(in, exists);
  EXPECT_EQ(exists, "1");
  EXPECT_EQ(master.cli({"EXISTS", "via-sentinel"}), "0");  // released

  const auto unknown = run_rlock({"status", "x", "--sentinel", sentinel.url(), "--master-name",
                                  "nope", "--connect-timeout", "2s"});
  EXPECT_EQ(unknown.status, 69) << unknown.err;
  EXPECT_NE(unknown.err.find("it monitors no master named 'nope'"), std::string::npos)
      << unknown.err;
  const auto alone = run_rlock({"status", "x", "--sentinel", sentinel.url()});
  EXPECT_EQ(alone.status, 64) << alone.err;
  EXPECT_NE(alone.err.find("--sentinel needs --master-name"), std::string::npos) << alone.err;
  const auto both = run_rlock(
      {"status", "x", "--sentinel", sentinel.url(), "--master-name", "m", "--url", master.url()});
  EXPECT_EQ(both.status, 64) << both.err;
}

// --cluster: the lock is taken on the master of its slot, whichever seed is given; a dead seed
// alone exits 69 naming the cluster; --cluster with --url is a usage error.
TEST(cli_connection, exec_takes_the_lock_on_the_master_of_its_slot_in_a_cluster) {
  redis_cluster cluster;
  const std::string name = names_served_by(cluster, cluster.master(2), "cli-cluster-", 1).front();
  temp_dir dir("rlock-cli");
  const auto held = dir.path() / "held";
  const auto r = run_rlock({"exec", name, "--cluster", cluster.master(0).url(), "--", "sh", "-c",
                            "redis-cli -p " + std::to_string(cluster.master(2).port()) +
                                " exists " + name + " > " + held.string()});
  EXPECT_EQ(r.status, 0) << r.err;
  std::ifstream in(held);
  std::string exists;
  std::getline(in, exists);
  EXPECT_EQ(exists, "1");
  EXPECT_EQ(cluster.master(2).cli({"EXISTS", name}), "0");  // released

  const auto status = run_rlock({"status", name, "--cluster", cluster.master(1).url()});
  EXPECT_EQ(status.status, 0) << status.err;

  redis_server dead(server_options{.cluster = true});
  const std::string dead_url = dead.url();
  dead.kill();
  const auto none = run_rlock({"status", "x", "--cluster", dead_url, "--connect-timeout", "2s"});
  EXPECT_EQ(none.status, 69) << none.err;
  EXPECT_NE(none.err.find("the cluster of " + dead_url), std::string::npos) << none.err;
  const auto both = run_rlock({"status", "x", "--cluster", dead_url, "--url", dead_url});
  EXPECT_EQ(both.status, 64) << both.err;
  const auto db = run_rlock({"status", "x", "--cluster", dead_url + "/1"});
  EXPECT_EQ(db.status, 64) << db.err;
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

/// A server with the ACL user alice (password pw-alice) and a temp dir holding password files.
struct acl_server {
  redis_server server{server_options{.acl_users = {"alice on >pw-alice ~* &* +@all"}}};
  temp_dir dir{"rlock-cli"};
  std::string host = "127.0.0.1:" + std::to_string(server.port());

  std::string password_file(const std::string& name, const std::string& password) const {
    const auto file = dir.path() / name;
    std::ofstream(file) << password << "\n";
    return file.string();
  }
};

// An explicit --password-file wins over the password in $RLOCK_URL (and $RLOCK_PASSWORD).
// Before, the URL's password silently overrode the file: a right file with a stale URL password
// failed (69), and a wrong file was not noticed.
TEST(cli_connection, a_password_file_beats_the_password_in_the_environment) {
  acl_server a;
  const std::string good = a.password_file("good", "pw-alice");
  const std::string wrong = a.password_file("wrong", "pw-XYZZY");
  const auto right_file =
      run_rlock({"status", "p", "--password-file", good, "--connect-timeout", "2s"},
                {"RLOCK_URL=redis://alice:pw-stale@" + a.host});
  EXPECT_EQ(right_file.status, 0) << right_file.err;
  const auto wrong_file =
      run_rlock({"status", "p", "--password-file", wrong, "--connect-timeout", "2s"},
                {"RLOCK_URL=redis://alice:pw-alice@" + a.host});
  EXPECT_EQ(wrong_file.status, 69) << wrong_file.err;
  EXPECT_NE(wrong_file.err.find("authentication failed"), std::string::npos) << wrong_file.err;
  EXPECT_EQ(wrong_file.err.find("pw-"), std::string::npos) << "no password in messages";
  const auto over_env =
      run_rlock({"status", "p", "--url", "redis://alice@" + a.host, "--password-file", good},
                {"RLOCK_PASSWORD=pw-stale"});
  EXPECT_EQ(over_env.status, 0) << over_env.err;
}

// A long `rlock exec` across a password rotation: the password file is read again at every
// reconnect. Before, it was read once: once the server had dropped its connections, every
// reconnect was refused with the old password (the holder had no connection for 10 s).
TEST(cli_connection, a_password_rotated_in_its_file_is_used_from_the_next_reconnect) {
  acl_server a;
  const std::string file = a.password_file("pw", "pw-alice");
  fifo_marker held(a.dir.path() / "held");
  const auto go = a.dir.path() / "go";
  ASSERT_EQ(::mkfifo(go.c_str(), 0600), 0);
  child_process holder =
      start_rlock({"exec", "rot", "--url", "redis://alice@" + a.host, "--password-file", file, "--",
                   "sh", "-c", "echo held > \"$F\"; read x < \"$G\""},
                  {"F=" + held.path().string(), "G=" + go.string()});
  ASSERT_EQ(held.read_line(10s), std::optional<std::string>("held")) << holder.error_output();

  // The password changes on the server and in the file; the old one no longer works.
  ASSERT_EQ(a.server.cli({"ACL", "SETUSER", "alice", "resetpass", ">pw-new"}), "OK");
  a.password_file("pw", "pw-new");
  const auto alice_connections = [&] {
    const std::string list = a.server.cli({"CLIENT", "LIST"});
    long long n = 0;
    for (auto at = list.find("user=alice "); at != std::string::npos;
         at = list.find("user=alice ", at + 1)) {
      ++n;
    }
    return n;
  };
  ASSERT_GT(alice_connections(), 0);
  ASSERT_NE(a.server.cli({"CLIENT", "KILL", "USER", "alice"}), "0");
  // The holder reconnects, with the password the file holds now.
  ASSERT_TRUE(wait_until([&] { return alice_connections() > 0; }, 10s)) << holder.error_output();
  std::ofstream(go) << "go\n";
  EXPECT_EQ(exit_status(holder, 10s), 0) << holder.error_output();
  EXPECT_EQ(a.server.cli({"EXISTS", "rot"}), "0") << "the release did not reach the server";
}

// --user and a URL's user must agree: before, --user was silently ignored.
TEST(cli_connection, a_user_option_that_contradicts_the_urls_user_is_a_usage_error) {
  acl_server a;
  const std::string good = a.password_file("good", "pw-alice");
  const auto given = run_rlock({"status", "p", "--url", "redis://alice@" + a.host, "--user", "bob",
                                "--password-file", good});
  EXPECT_EQ(given.status, 64) << given.err;
  EXPECT_NE(given.err.find("--user 'bob' contradicts the user 'alice' in --url"), std::string::npos)
      << given.err;
  const auto from_env = run_rlock({"status", "p", "--user", "bob", "--password-file", good},
                                  {"RLOCK_URL=redis://alice@" + a.host});
  EXPECT_EQ(from_env.status, 64) << from_env.err;
  EXPECT_NE(from_env.err.find("contradicts the user 'alice' in $RLOCK_URL"), std::string::npos)
      << from_env.err;
  const auto agreed = run_rlock({"status", "p", "--url", "redis://alice@" + a.host, "--user",
                                 "alice", "--password-file", good});
  EXPECT_EQ(agreed.status, 0) << agreed.err;
}

// A user without any password: the rejection says that none was given.
TEST(cli_connection, a_user_without_a_password_is_told_that_none_was_given) {
  acl_server a;
  const auto r =
      run_rlock({"status", "p", "--url", "redis://alice@" + a.host, "--connect-timeout", "2s"});
  EXPECT_EQ(r.status, 69) << r.err;
  EXPECT_NE(r.err.find("no password was given"), std::string::npos) << r.err;
  const std::string wrong = a.password_file("wrong", "pw-XYZZY");
  const auto given = run_rlock({"status", "p", "--url", "redis://alice@" + a.host,
                                "--password-file", wrong, "--connect-timeout", "2s"});
  EXPECT_EQ(given.status, 69) << given.err;
  EXPECT_EQ(given.err.find("no password was given"), std::string::npos) << given.err;
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

// --tls-server-name: the name checked against the certificate (and sent as SNI) instead of the
// URL host. The test certificate names 127.0.0.1 and localhost.
TEST(cli_connection, tls_server_name_is_the_name_the_certificate_is_checked_against) {
  redis_server server(server_options{.tls = true});
  const std::string ca = server.tls().ca_cert.string();
  const auto named = run_rlock(
      {"status", "t", "--url", server.url(), "--tls-ca", ca, "--tls-server-name", "localhost"});
  EXPECT_EQ(named.status, 0) << named.err;
  const auto other =
      run_rlock({"status", "t", "--url", server.url(), "--tls-ca", ca, "--tls-server-name",
                 "wronghost.example", "--connect-timeout", "2s"});
  EXPECT_EQ(other.status, 69) << other.err;
  EXPECT_NE(other.err.find("hostname mismatch"), std::string::npos) << other.err;
  const auto plain =
      run_rlock({"status", "t", "--url", "redis://127.0.0.1:1", "--tls-server-name", "localhost"});
  EXPECT_EQ(plain.status, 64) << plain.err;
  EXPECT_NE(plain.err.find("TLS options need a rediss:// URL"), std::string::npos) << plain.err;
}

// A TLS file that exists but cannot be loaded is a local problem (66), found before any
// connection, not "server unavailable, TLS handshake failed" (69).
TEST(cli_connection, a_tls_file_that_cannot_be_loaded_exits_66) {
  redis_server server(server_options{.tls = true});
  const tls_files& tls = server.tls();
  temp_dir dir("rlock-cli");
  const auto garbage = dir.path() / "garbage.pem";
  std::ofstream(garbage) << "not a certificate\n";
  const auto bad_ca = run_rlock({"status", "t", "--url", server.url(), "--tls-ca", garbage.string(),
                                 "--connect-timeout", "2s"});
  EXPECT_EQ(bad_ca.status, 66) << bad_ca.err;
  EXPECT_NE(bad_ca.err.find("cannot load TLS CA file '" + garbage.string() + "'"),
            std::string::npos)
      << bad_ca.err;
  EXPECT_EQ(bad_ca.err.find("handshake"), std::string::npos) << bad_ca.err;
  const auto mismatch =
      run_rlock({"status", "t", "--url", server.url(), "--tls-ca", tls.ca_cert.string(),
                 "--tls-cert", tls.client_cert.string(), "--tls-key", tls.bad_client_key.string(),
                 "--connect-timeout", "2s"});
  EXPECT_EQ(mismatch.status, 66) << mismatch.err;
  EXPECT_NE(mismatch.err.find("cannot load TLS key"), std::string::npos) << mismatch.err;
}

// The wrong scheme for the port gets a hint: a TLS port resets a plaintext client, and a
// plaintext port does not complete a TLS handshake. A host that never accepts the connection
// gets no such hint: the message names the step instead.
TEST(cli_connection, the_wrong_scheme_for_the_port_gets_a_hint) {
  redis_server tls_server(server_options{.tls = true});
  const auto plain_to_tls =
      run_rlock({"status", "t", "--url", "redis://127.0.0.1:" + std::to_string(tls_server.port()),
                 "--connect-timeout", "2s"});
  EXPECT_EQ(plain_to_tls.status, 69) << plain_to_tls.err;
  EXPECT_NE(plain_to_tls.err.find("is this a TLS port? use rediss://"), std::string::npos)
      << plain_to_tls.err;
  redis_server plain_server;
  const auto tls_to_plain = run_rlock({"status", "t", "--url",
                                       "rediss://127.0.0.1:" + std::to_string(plain_server.port()),
                                       "--tls-insecure", "--connect-timeout", "2s"});
  EXPECT_EQ(tls_to_plain.status, 69) << tls_to_plain.err;
  EXPECT_NE(tls_to_plain.err.find("is this a plaintext port? use redis://"), std::string::npos)
      << tls_to_plain.err;
  EXPECT_NE(tls_to_plain.err.find("in the TLS handshake"), std::string::npos) << tls_to_plain.err;
  loopback_listener dropping(listener_behaviour::never_accept);
  const auto tls_to_nothing =
      run_rlock({"status", "t", "--url", "rediss://127.0.0.1:" + std::to_string(dropping.port()),
                 "--tls-insecure", "--connect-timeout", "1s"});
  EXPECT_EQ(tls_to_nothing.status, 69) << tls_to_nothing.err;
  EXPECT_NE(tls_to_nothing.err.find("before the connection was accepted"), std::string::npos)
      << tls_to_nothing.err;
  EXPECT_EQ(tls_to_nothing.err.find("is this a plaintext port"), std::string::npos)
      << tls_to_nothing.err;
}

// --replica-sync: without a replica to acknowledge it the acquire is undone and the command
// never runs (69, the shortfall named); with one, the command runs, whatever the kind.
TEST(cli_connection, replica_sync_runs_the_command_only_once_the_replica_acknowledges) {
  redis_server master(server_options{.extra_args = {"--repl-diskless-sync-delay", "0"}});
  temp_dir dir("rlock-cli");
  const auto ran = dir.path() / "ran";
  const auto r = run_rlock({"exec", "synced", "--url", master.url(), "--replica-sync", "1",
                            "--replica-sync-timeout", "100ms", "--", "touch", ran.string()});
  EXPECT_EQ(r.status, 69) << r.err;
  EXPECT_NE(r.err.find("acknowledged by 0 of the 1 replicas"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tried 4 times"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(ran));
  EXPECT_EQ(master.cli({"EXISTS", "synced"}), "0");  // undone before rlock exited
  // --replica-sync-tries 1: no try again.
  const auto once =
      run_rlock({"exec", "synced", "--url", master.url(), "--replica-sync", "1",
                 "--replica-sync-timeout", "100ms", "--replica-sync-tries", "1", "--", "true"});
  EXPECT_EQ(once.status, 69) << once.err;
  EXPECT_EQ(once.err.find("tried"), std::string::npos) << once.err;
  EXPECT_EQ(run_rlock({"exec", "synced", "--url", master.url(), "--replica-sync", "1",
                       "--replica-sync-tries", "0", "--", "true"})
                .status,
            64);
  const auto alone_shared =
      run_rlock({"exec", "--shared", "rw", "--url", master.url(), "--replica-sync", "1",
                 "--replica-sync-timeout", "100ms", "--", "touch", ran.string()});
  EXPECT_EQ(alone_shared.status, 69) << alone_shared.err;
  EXPECT_FALSE(std::filesystem::exists(ran));
  // Under Redisson's rule a master without replicas counts each write.
  const auto all_alone = run_rlock({"exec", "synced", "--url", master.url(), "--replica-sync",
                                    "all", "--", "touch", ran.string()});
  EXPECT_EQ(all_alone.status, 0) << all_alone.err;
  EXPECT_TRUE(std::filesystem::exists(ran));
  std::filesystem::remove(ran);

  redis_server replica(
      server_options{.extra_args = {"--replicaof", "127.0.0.1", std::to_string(master.port())}});
  ASSERT_TRUE(wait_until_replicas_acknowledge(master, std::chrono::seconds(20)));
  const auto ok = run_rlock({"exec", "synced", "--url", master.url(), "--replica-sync", "1", "--",
                             "touch", ran.string()});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_TRUE(std::filesystem::exists(ran));

  const auto bad = run_rlock({"exec", "synced", "--url", master.url(), "--replica-sync", "1",
                              "--replica-sync-timeout", "5s", "--timeout", "1s", "--", "true"});
  EXPECT_EQ(bad.status, 64) << bad.err;
  EXPECT_EQ(
      run_rlock({"exec", "synced", "--url", master.url(), "--replica-sync", "-1", "--", "true"})
          .status,
      64);
  // Redisson's rule: every connected replica asked for (one here), one acknowledgement needed.
  const auto all =
      run_rlock({"exec", "synced", "--url", master.url(), "--replica-sync", "all", "--", "true"});
  EXPECT_EQ(all.status, 0) << all.err;
  // The other kinds' acquires (and the read-write lock's release) are waited for too.
  const auto shared = run_rlock(
      {"exec", "--shared", "rw", "--url", master.url(), "--replica-sync", "1", "--", "true"});
  EXPECT_EQ(shared.status, 0) << shared.err;
  const auto permits = run_rlock({"exec", "--permits", "2", "sem", "--url", master.url(),
                                  "--replica-sync", "1", "--", "true"});
  EXPECT_EQ(permits.status, 0) << permits.err;
}

}  // namespace
}  // namespace rlock::test
