// `rlock exec` end to end: real rlock processes, real commands, a real redis-server.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>

#include "cli_harness.hpp"
#include "support/lock_listeners.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

/// A shell script that traps SIGTERM: it writes WORD to $M, stops its background sleep and
/// exits with STATUS. It writes "held" to $F (if set) once the trap is in place, then waits.
std::string trap_term_script(const std::string& word, int status) {
  return "trap 'echo " + word + " > \"$M\"; kill $pid; exit " + std::to_string(status) +
         "' TERM; sleep 30 & pid=$!; if [ -n \"$F\" ]; then echo held > \"$F\"; fi; wait";
}

/// Exits 3 only if RLOCK_NAME is env-name and RLOCK_TOKEN is not set at all.
constexpr const char* check_environment =
    "test \"$RLOCK_NAME\" = env-name || exit 1; test -z \"${RLOCK_TOKEN+set}\" || exit 2; exit 3";

/// A holder: `rlock exec NAME -- sh -c 'echo held > FIFO; exec sleep 30'`, started and held.
child_process start_holder(const redis_server& server, const std::string& name, fifo_marker& held,
                           std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"exec", name, "--url", server.url()};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--", "sh", "-c", "echo held > \"$F\"; exec sleep 30"});
  child_process p = start_rlock(args, {"F=" + held.path().string()});
  const auto line = held.read_line(10s);
  EXPECT_EQ(line, std::optional<std::string>("held")) << p.error_output();
  return p;
}

TEST(cli_exec, two_commands_serialize_and_never_overlap) {
  redis_server server;
  temp_dir dir("rlock-cli");
  const std::string log = (dir.path() / "log").string();
  const std::vector<std::string> args{
      "exec", "ser", "--url", server.url(),
      "--",   "sh",  "-c",    "echo start >> \"$LOG\"; sleep 0.3; echo end >> \"$LOG\""};
  const auto t0 = steady::now();
  child_process a = start_rlock(args, {"LOG=" + log});
  child_process b = start_rlock(args, {"LOG=" + log});
  EXPECT_EQ(exit_status(a), 0) << a.error_output();
  EXPECT_EQ(exit_status(b), 0) << b.error_output();
  EXPECT_GE(ms_since(t0), 600) << "the two 0.3 s sections ran one after the other";
  EXPECT_EQ(read_file(log), "start\nend\nstart\nend\n");
  EXPECT_EQ(server.cli({"EXISTS", "ser"}), "0");
}

TEST(cli_exec, propagates_the_exit_status_and_sets_the_environment) {
  redis_server server;
  // RLOCK_NAME is set; an RLOCK_TOKEN inherited from outside is removed (no fencing token).
  const auto r = run_rlock({"exec", "env-name", "--url", server.url(), "--wait", "1.5s", "--", "sh",
                            "-c", check_environment},
                           {"RLOCK_TOKEN=stale"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(server.cli({"EXISTS", "env-name"}), "0");

  const auto missing = run_rlock({"exec", "env-name", "--url", server.url(), "--", "/no/such/cmd"});
  EXPECT_EQ(missing.status, 127);
  EXPECT_NE(missing.err.find("cannot run '/no/such/cmd'"), std::string::npos) << missing.err;
  EXPECT_EQ(server.cli({"EXISTS", "env-name"}), "0");
}

// --fenced: the command gets the hold's fencing token in RLOCK_TOKEN (an inherited one is
// replaced), one greater with each acquire, from the Redisson RFencedLock counter; a token that
// cannot be issued fails the acquire (70) and the command never runs.
TEST(cli_exec, fenced_passes_a_rising_token_to_the_command) {
  redis_server server;
  const std::vector<std::string> args{"exec", "fx", "--url", server.url(),           "--fenced",
                                      "--",   "sh", "-c",    "echo \"$RLOCK_TOKEN\""};
  const auto first = run_rlock(args, {"RLOCK_TOKEN=stale"});
  EXPECT_EQ(first.status, 0) << first.err;
  EXPECT_EQ(first.out, "1\n");
  const auto second = run_rlock(args);
  EXPECT_EQ(second.status, 0) << second.err;
  EXPECT_EQ(second.out, "2\n");
  EXPECT_EQ(server.cli({"GET", "redisson_lock_token:{fx}"}), "2");
  EXPECT_EQ(server.cli({"EXISTS", "fx"}), "0");

  server.cli({"SET", "redisson_lock_token:{fx}", "not a number"});
  const auto refused = run_rlock(args);
  EXPECT_EQ(refused.status, 70) << refused.err;
  EXPECT_EQ(refused.out, "");
  EXPECT_NE(refused.err.find("cannot acquire 'fx'"), std::string::npos) << refused.err;
  EXPECT_EQ(server.cli({"EXISTS", "fx"}), "0");
}

// --spin: the spin lock NAME (the reentrant lock's hash): a waiter polls, gives up at --wait
// (75), runs once the holder is gone, and nothing is published or subscribed on the way.
TEST(cli_exec, spin_waits_by_polling_and_publishes_nothing) {
  redis_server server;
  temp_dir dir("rlock-cli");
  fifo_marker held(dir.path() / "held");
  child_process holder = start_holder(server, "spx", held, {"--spin"});
  EXPECT_EQ(server.cli({"HLEN", "spx"}), "1");
  const auto busy =
      run_rlock({"exec", "spx", "--spin", "--wait", "300ms", "--url", server.url(), "--", "true"});
  EXPECT_EQ(busy.status, 75) << busy.err;
  // A plain exec of the name is excluded too: one hash.
  const auto plain =
      run_rlock({"exec", "spx", "--wait", "0s", "--url", server.url(), "--", "true"});
  EXPECT_EQ(plain.status, 75) << plain.err;
  holder.kill(SIGTERM);
  EXPECT_EQ(exit_status(holder, 10s), 128 + SIGTERM) << holder.error_output();
  const auto ran = run_rlock(
      {"exec", "spx", "--spin", "--wait", "5s", "--url", server.url(), "--", "echo", "ran"});
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(ran.out, "ran\n");
  EXPECT_EQ(server.cli({"EXISTS", "spx"}), "0");
  const std::string stats = server.cli({"INFO", "commandstats"});
  // The plain exec's refused try published nothing either; only --spin runs released.
  EXPECT_EQ(stats.find("cmdstat_publish:"), std::string::npos) << stats;
  EXPECT_EQ(stats.find("cmdstat_subscribe:"), std::string::npos) << stats;
}

// --fair: Redisson's fair lock NAME: a waiter queues in redisson_lock_queue:{NAME}, and runs
// once the holder is gone; --spin and --fair exclude each other.
TEST(cli_exec, fair_queues_in_redissons_fair_queue) {
  redis_server server;
  temp_dir dir("rlock-cli");
  fifo_marker held(dir.path() / "held");
  child_process holder = start_holder(server, "fqx", held, {"--fair"});
  const auto log = (dir.path() / "log").string();
  child_process waiter = start_rlock({"exec", "fqx", "--fair", "--wait", "10s", "--url",
                                      server.url(), "--", "sh", "-c", "echo ran > \"$LOG\""},
                                     {"LOG=" + log});
  ASSERT_TRUE(wait_until(
      [&] {
        return server.cli_reply({"LLEN", "redisson_lock_queue:{fqx}"}).integer == 1;
      },
      10s))
      << waiter.error_output();
  holder.kill(SIGTERM);
  EXPECT_EQ(exit_status(holder, 10s), 128 + SIGTERM) << holder.error_output();
  EXPECT_EQ(exit_status(waiter, 10s), 0) << waiter.error_output();
  EXPECT_EQ(read_file(log), "ran\n");
  EXPECT_EQ(server.cli({"EXISTS", "fqx", "redisson_lock_queue:{fqx}"}), "0");
  const auto both =
      run_rlock({"exec", "fqx", "--fair", "--spin", "--url", server.url(), "--", "true"});
  EXPECT_EQ(both.status, 64) << both.err;
}

// The command does not get rlock's credentials: RLOCK_PASSWORD and an RLOCK_URL holding a
// password are removed from its environment (before, `rlock exec x -- env` printed both).
TEST(cli_exec, the_command_gets_no_credentials_from_rlocks_environment) {
  redis_server server(
      server_options{.requirepass = "s3cret", .acl_users = {"alice on >pw-alice ~* &* +@all"}});
  const std::string host = "127.0.0.1:" + std::to_string(server.port());
  // Only the variables in question: the test's own environment may hold other RLOCK_ ones (CI
  // sets RLOCK_WERROR).
  const std::vector<std::string> print_env{"sh", "-c",
                                           "env | grep -E '^RLOCK_(URL|PASSWORD|NAME)=' | sort"};
  std::vector<std::string> args{"exec", "envt", "--"};
  args.insert(args.end(), print_env.begin(), print_env.end());
  const auto secret_url =
      run_rlock(args, {"RLOCK_URL=redis://alice:pw-alice@" + host, "RLOCK_PASSWORD=pw-other"});
  EXPECT_EQ(secret_url.status, 0) << secret_url.err;
  EXPECT_EQ(secret_url.out, "RLOCK_NAME=envt\n");
  // A URL without a password stays: only the secret goes.
  const auto plain_url = run_rlock(args, {"RLOCK_URL=redis://" + host, "RLOCK_PASSWORD=s3cret"});
  EXPECT_EQ(plain_url.status, 0) << plain_url.err;
  EXPECT_EQ(plain_url.out, "RLOCK_NAME=envt\nRLOCK_URL=redis://" + host + "\n");
}

// An executable script without a #! line runs with /bin/sh, as execvp, env(1) and flock(1) run
// it (glibc's posix_spawnp does not: it exited 126, "Exec format error", before).
TEST(cli_exec, a_script_without_a_shebang_runs_with_sh) {
  redis_server server;
  temp_dir dir("rlock-cli");
  const auto script = dir.path() / "no-shebang";
  std::ofstream(script) << "echo \"ran with $1\"\nexit 5\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  const auto r =
      run_rlock({"exec", "no-shebang", "--url", server.url(), "--", script.string(), "arg"});
  EXPECT_EQ(r.status, 5) << r.err;
  EXPECT_EQ(r.out, "ran with arg\n");
  // Found through PATH too.
  const auto via_path = run_rlock({"exec", "no-shebang", "--url", server.url(), "--", "no-shebang"},
                                  {"PATH=" + dir.path().string() + ":/usr/bin:/bin"});
  EXPECT_EQ(via_path.status, 5) << via_path.err;
}

// The command gets stdin, stdout and stderr, not rlock's connections to Redis: an inherited
// socket would stay open (and authenticated) as long as anything the command started lives.
// Before the fix the command saw two "socket:" descriptors (Asio opens sockets without
// SOCK_CLOEXEC).
TEST(cli_exec, the_command_inherits_no_connection_to_redis) {
  redis_server server;
  const auto r =
      run_rlock({"exec", "no-fds", "--url", server.url(), "--", "sh", "-c", "ls -l /proc/$$/fd"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("socket:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 2 -> "), std::string::npos) << "the listing itself ran: " << r.out;
}

/// `rlock exec NAME --timeout T -- sh` holding the lock, whose command has written its pid to a
/// FIFO and now blocks reading the FIFO `go`; it exits 7 once go() sends it a line.
struct held_until_go {
  redis_server server;
  temp_dir dir{"rlock-cli"};
  fifo_marker held{dir.path() / "held"};
  std::filesystem::path go_path = dir.path() / "go";
  std::string command_pid;
  child_process process;

  held_until_go(const std::string& name, const std::string& timeout)
      : process(start(name, timeout)) {
    const auto line = held.read_line(10s);
    EXPECT_TRUE(line.has_value()) << process.error_output();
    command_pid = line.value_or("");
  }
  void go() const { std::ofstream(go_path) << "go\n"; }

 private:
  child_process start(const std::string& name, const std::string& timeout) {
    EXPECT_EQ(::mkfifo(go_path.c_str(), 0600), 0);
    return start_rlock({"exec", name, "--url", server.url(), "--timeout", timeout, "--", "sh", "-c",
                        "echo $$ > \"$F\"; read x < \"$G\"; exit 7"},
                       {"F=" + held.path().string(), "G=" + go_path.string()});
  }
};

// The server stops answering while the command runs: rlock still exits soon after the command,
// with its status and a warning (the lock then ends with its lease). Before, the unlock was
// resent for up to 13 request timeouts: 18.5 s with --timeout 1s, 35 s with the default.
TEST(cli_exec, a_hung_server_at_release_time_does_not_hold_rlock_back) {
  held_until_go h("hung", "1s");
  h.server.pause();
  const auto t0 = steady::now();
  h.go();
  const int status = exit_status(h.process, 30s);
  const auto took = ms_since(t0);
  h.server.resume();
  EXPECT_EQ(status, 7) << h.process.error_output();
  EXPECT_LT(took, 2 * 1000 + 1000) << "the release is bounded by two request timeouts";
  EXPECT_NE(h.process.error_output().find("could not release lock 'hung'"), std::string::npos)
      << h.process.error_output();
}

// A stop signal while rlock waits for a hung server to release ends the wait at once.
TEST(cli_exec, sigterm_while_releasing_to_a_hung_server_exits_at_once) {
  held_until_go h("hung-term", "20s");
  ASSERT_FALSE(h.command_pid.empty());
  h.server.pause();
  h.go();
  // Once rlock has reaped the command (its /proc entry is gone) it is releasing, or about to:
  // a signal from then on is not forwarded but stays pending for the release's wait.
  const std::filesystem::path proc = "/proc/" + h.command_pid;
  ASSERT_TRUE(wait_until([&] { return !std::filesystem::exists(proc); }, 10s));
  const auto t0 = steady::now();
  h.process.kill(SIGTERM);
  const int status = exit_status(h.process, 60s);
  const auto took = ms_since(t0);
  h.server.resume();
  EXPECT_EQ(status, 7) << h.process.error_output();
  EXPECT_LT(took, 2000) << h.process.error_output();
}

// --wait 0s tries once: against a server that holds writes (CLIENT PAUSE WRITE) that one try is
// bounded by the request timeout, not by every resend's.
TEST(cli_exec, one_try_against_a_paused_server_ends_within_the_request_timeout) {
  redis_server server;
  server.cli({"CLIENT", "PAUSE", "20000", "WRITE"});
  const auto r = run_rlock({"exec", "paused-once", "--url", server.url(), "--wait", "0s",
                            "--timeout", "1s", "--verbose", "--", "true"});
  server.cli({"CLIENT", "UNPAUSE"});
  EXPECT_NE(r.status, 0) << r.err;
  EXPECT_LT(r.ms, 1000 + 1500) << r.err;
  // The progress line (first after 250 ms) names a single try, not a wait "of 0ms".
  EXPECT_NE(r.err.find("(one attempt)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("(of 0ms)"), std::string::npos) << r.err;
}

// The progress line names the holder from Redis data: its control characters are escaped.
TEST(cli_exec, the_progress_line_escapes_control_characters_of_the_holder) {
  redis_server server;
  server.cli({"HSET", "esc",
              "\x1b[2J\x1b]0;pwned\x07"
              "evil:1",
              "1"});
  const auto r = run_rlock(
      {"exec", "esc", "--url", server.url(), "--wait", "400ms", "--verbose", "--", "true"});
  EXPECT_EQ(r.status, 75) << r.err;
  EXPECT_NE(r.err.find("held by \\x1b[2J\\x1b]0;...:1"), std::string::npos) << r.err;
  for (const char c : r.err) {
    EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << static_cast<int>(c);
  }
}

// --verbose logs the client's events: here the command itself closes rlock's connections on the
// server; rlock reconnects by itself, keeps the lock and releases it, and says so.
TEST(cli_exec, verbose_logs_a_dropped_connection_and_the_reconnect) {
  redis_server server;
  const auto r =
      run_rlock({"exec", "events", "--url", server.url(), "--verbose", "--", "redis-cli", "-p",
                 std::to_string(server.port()), "CLIENT", "KILL", "TYPE", "normal"});
  EXPECT_EQ(r.status, 0) << r.err;
  const std::string up = "rlock: connected to " + server.url() + "\n";
  const auto first = r.err.find(up);
  const auto down = r.err.find("rlock: disconnected from " + server.url() + ": ");
  ASSERT_NE(first, std::string::npos) << r.err;
  ASSERT_NE(down, std::string::npos) << r.err;
  EXPECT_LT(first, down) << r.err;
  // The release went out on the new connection, which was reported before rlock shut down.
  EXPECT_NE(r.err.find(up, down), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rlock: released lock 'events'"), std::string::npos) << r.err;
  EXPECT_EQ(server.cli({"EXISTS", "events"}), "0");
  // What the client did (client::stats()), after the release: the drop is counted.
  const auto stats = r.err.find("rlock: client: ");
  ASSERT_NE(stats, std::string::npos) << r.err;
  const std::string line = r.err.substr(stats, r.err.find('\n', stats) - stats);
  EXPECT_NE(line.find(" requests ("), std::string::npos) << line;
  EXPECT_EQ(line.find(" 0 dropped"), std::string::npos) << line;
  EXPECT_NE(line.find(" dropped"), std::string::npos) << line;
}

TEST(cli_exec, wait_expiry_exits_75_without_running_the_command) {
  redis_server server;
  temp_dir dir("rlock-cli");
  fifo_marker held(dir.path() / "held");
  child_process holder = start_holder(server, "busy", held);
  const auto ran = dir.path() / "ran";

  const auto r = run_rlock({"exec", "busy", "--url", server.url(), "--wait", "600ms", "--verbose",
                            "--", "touch", ran.string()});
  EXPECT_EQ(r.status, 75) << r.err;
  EXPECT_FALSE(std::filesystem::exists(ran));
  EXPECT_GE(r.ms, 600);
  EXPECT_LT(r.ms, 600 + 1500);
  EXPECT_NE(r.err.find("lock 'busy' not acquired within 600ms"), std::string::npos) << r.err;
  // --verbose without a terminal: the progress line, with the holder.
  EXPECT_NE(r.err.find("rlock: waiting"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("held by"), std::string::npos) << r.err;

  const auto once = run_rlock({"exec", "busy", "--url", server.url(), "--wait", "0s",
                               "--conflict-exit-code", "9", "--", "touch", ran.string()});
  EXPECT_EQ(once.status, 9) << once.err;
  EXPECT_FALSE(std::filesystem::exists(ran));

  holder.kill(SIGTERM);  // forwarded to `sleep`, which dies of it
  EXPECT_EQ(exit_status(holder), 128 + SIGTERM) << holder.error_output();
  EXPECT_EQ(server.cli({"EXISTS", "busy"}), "0");
}

TEST(cli_exec, lock_loss_signals_the_command_and_exits_76) {
  redis_server server;
  temp_dir dir("rlock-cli");
  fifo_marker held(dir.path() / "held");
  const auto marker = dir.path() / "marker";
  child_process p = start_rlock({"exec", "lost", "--url", server.url(), "--watchdog-timeout",
                                 "900ms", "--", "sh", "-c", trap_term_script("lost", 9)},
                                {"F=" + held.path().string(), "M=" + marker.string()});
  ASSERT_EQ(held.read_line(10s), std::optional<std::string>("held")) << p.error_output();
  const auto t0 = steady::now();
  EXPECT_EQ(server.cli({"DEL", "lost"}), "1");
  EXPECT_EQ(exit_status(p, 10s), 76) << p.error_output();
  const long long ms = ms_since(t0);
  EXPECT_LT(ms, 300 + 1000) << "renewal runs every 300 ms";
  EXPECT_EQ(read_file(marker), "lost\n");
  EXPECT_NE(p.error_output().find("lost lock 'lost'"), std::string::npos) << p.error_output();
  EXPECT_NE(p.error_output().find("SIGTERM"), std::string::npos) << p.error_output();
  std::cout << "[ timing ] loss noticed and command stopped " << ms << " ms after DEL\n";
}

TEST(cli_exec, a_command_that_ignores_the_loss_signal_is_killed_after_the_grace_period) {
  redis_server server;
  temp_dir dir("rlock-cli");
  fifo_marker held(dir.path() / "held");
  child_process p =
      start_rlock({"exec", "stubborn", "--url", server.url(), "--watchdog-timeout", "900ms",
                   "--grace", "300ms", "--on-loss", "INT", "--lost-exit-code", "42", "--", "sh",
                   "-c", "trap '' INT; echo held > \"$F\"; exec sleep 30"},
                  {"F=" + held.path().string()});
  ASSERT_EQ(held.read_line(10s), std::optional<std::string>("held")) << p.error_output();
  EXPECT_EQ(server.cli({"DEL", "stubborn"}), "1");
  EXPECT_EQ(exit_status(p, 10s), 42) << p.error_output();
  EXPECT_NE(p.error_output().find("SIGINT"), std::string::npos) << p.error_output();
  EXPECT_NE(p.error_output().find("sent SIGKILL"), std::string::npos) << p.error_output();
  EXPECT_NE(p.error_output().find("status 137"), std::string::npos) << p.error_output();
}

TEST(cli_exec, with_a_lease_the_loss_signal_fires_when_the_lease_runs_out) {
  redis_server server;
  temp_dir dir("rlock-cli");
  const auto marker = dir.path() / "marker";
  const auto t0 = steady::now();
  const auto r = run_rlock({"exec", "leased", "--url", server.url(), "--lease", "500ms", "--", "sh",
                            "-c", trap_term_script("lost", 9)},
                           {"M=" + marker.string()});
  EXPECT_EQ(r.status, 76) << r.err;
  EXPECT_GE(ms_since(t0), 500);
  EXPECT_LT(ms_since(t0), 500 + 1500);
  EXPECT_EQ(read_file(marker), "lost\n");
  EXPECT_NE(r.err.find("500ms lease ran out"), std::string::npos) << r.err;
}

TEST(cli_exec, sigterm_reaches_the_command_and_the_lock_is_released_afterwards) {
  redis_server server;
  temp_dir dir("rlock-cli");
  fifo_marker held(dir.path() / "held");
  const auto marker = dir.path() / "marker";
  child_process p = start_rlock(
      {"exec", "term", "--url", server.url(), "--", "sh", "-c", trap_term_script("term", 5)},
      {"F=" + held.path().string(), "M=" + marker.string()});
  ASSERT_EQ(held.read_line(10s), std::optional<std::string>("held")) << p.error_output();
  EXPECT_EQ(server.cli({"EXISTS", "term"}), "1");
  p.kill(SIGTERM);
  EXPECT_EQ(exit_status(p, 10s), 5) << p.error_output();
  EXPECT_EQ(read_file(marker), "term\n");
  EXPECT_EQ(server.cli({"EXISTS", "term"}), "0") << "released before rlock exited";
}

TEST(cli_exec, a_crashing_command_releases_the_lock) {
  redis_server server;
  const auto segv =
      run_rlock({"exec", "crash", "--url", server.url(), "--", "sh", "-c", "kill -SEGV $$"});
  EXPECT_EQ(segv.status, 128 + SIGSEGV) << segv.err;
  EXPECT_EQ(server.cli({"EXISTS", "crash"}), "0");
  const auto killed =
      run_rlock({"exec", "crash", "--url", server.url(), "--", "sh", "-c", "kill -9 $$"});
  EXPECT_EQ(killed.status, 128 + SIGKILL) << killed.err;
  EXPECT_EQ(server.cli({"EXISTS", "crash"}), "0");
}

TEST(cli_exec, sigint_or_sigterm_while_waiting_aborts_without_running_the_command) {
  redis_server server;
  temp_dir dir("rlock-cli");
  fifo_marker held(dir.path() / "held");
  child_process holder = start_holder(server, "wait-int", held);
  const auto ran = dir.path() / "ran";
  for (const int sig : {SIGINT, SIGTERM}) {
    const long long before = lock_listeners(server, "wait-int");
    child_process waiter =
        start_rlock({"exec", "wait-int", "--url", server.url(), "--", "touch", ran.string()});
    ASSERT_TRUE(wait_until([&] { return lock_listeners(server, "wait-int") > before; }, 10s))
        << waiter.error_output();
    waiter.kill(sig);
    EXPECT_EQ(exit_status(waiter, 10s), 128 + sig) << waiter.error_output();
    EXPECT_NE(waiter.error_output().find("while waiting for 'wait-int'"), std::string::npos)
        << waiter.error_output();
    EXPECT_FALSE(std::filesystem::exists(ran));
  }
  EXPECT_EQ(server.cli({"EXISTS", "wait-int"}), "1") << "the holder still holds it";
}

TEST(cli_exec, a_key_that_is_not_a_lock_is_refused_and_left_untouched) {
  redis_server server;
  server.cli({"SET", "plain", "5"});
  const auto exec = run_rlock({"exec", "plain", "--url", server.url(), "--", "echo", "ran"});
  EXPECT_EQ(exec.status, 65) << exec.err;
  EXPECT_EQ(exec.out, "");
  const auto fu = run_rlock({"force-unlock", "plain", "--url", server.url()});
  EXPECT_EQ(fu.status, 65) << fu.err;
  EXPECT_NE(fu.err.find("not a lock: left untouched"), std::string::npos) << fu.err;
  EXPECT_EQ(server.cli({"GET", "plain"}), "5");
}

// An application's hash is no lock: exec says so at once (65) instead of waiting for it (75).
TEST(cli_exec, a_hash_without_a_locks_fields_is_refused_at_once) {
  redis_server server;
  server.cli({"HSET", "apph", "name", "alice", "age", "30"});
  for (const char* wait : {"0s", "20s"}) {
    const auto r =
        run_rlock({"exec", "apph", "--url", server.url(), "--wait", wait, "--", "echo", "ran"});
    EXPECT_EQ(r.status, 65) << wait << ": " << r.err;
    EXPECT_NE(r.err.find("not a lock: left untouched"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_LT(r.ms, 5000) << "refused without waiting for the lock";
  }
  EXPECT_EQ(server.cli({"HGET", "apph", "name"}), "alice");
  EXPECT_EQ(server.cli({"HLEN", "apph"}), "2");
}

// --shared and --exclusive (flock -s / -x): two shared holders of the read-write lock hold it
// together, an exclusive one is kept out until both have ended, then holds it alone.
TEST(cli_exec, shared_holders_hold_together_and_an_exclusive_one_waits_for_them) {
  redis_server server;
  temp_dir dir("rlock-cli");
  fifo_marker held_a(dir.path() / "a");
  fifo_marker held_b(dir.path() / "b");
  child_process a = start_holder(server, "rw", held_a, {"--shared"});
  child_process b = start_holder(server, "rw", held_b, {"-s"});  // held while a holds
  EXPECT_EQ(server.cli({"HGET", "rw", "mode"}), "read");
  EXPECT_EQ(server.cli({"HLEN", "rw"}), "3") << "mode and two readers";
  const auto refused =
      run_rlock({"exec", "rw", "--exclusive", "--wait", "0s", "--url", server.url(), "--", "true"});
  EXPECT_EQ(refused.status, 75) << refused.err;
  a.kill(SIGTERM);
  EXPECT_EQ(exit_status(a, 10s), 128 + SIGTERM) << a.error_output();
  EXPECT_EQ(server.cli({"HGET", "rw", "mode"}), "read") << "b still reads";
  b.kill(SIGTERM);
  EXPECT_EQ(exit_status(b, 10s), 128 + SIGTERM) << b.error_output();
  const auto writer = run_rlock({"exec", "rw", "-x", "--wait", "5s", "--url", server.url(), "--",
                                 "sh", "-c", "redis-cli -p \"$P\" HGET rw mode"},
                                {"P=" + std::to_string(server.port())});
  EXPECT_EQ(writer.status, 0) << writer.err;
  EXPECT_EQ(writer.out, "write\n");
  EXPECT_EQ(server.cli({"EXISTS", "rw"}), "0");
}

TEST(cli_exec, an_exclusive_holder_keeps_shared_ones_out) {
  redis_server server;
  temp_dir dir("rlock-cli");
  fifo_marker held(dir.path() / "held");
  child_process w = start_holder(server, "rwx", held, {"--exclusive"});
  EXPECT_EQ(server.cli({"HGET", "rwx", "mode"}), "write");
  const auto reader = run_rlock(
      {"exec", "rwx", "--shared", "--wait", "300ms", "--url", server.url(), "--", "true"});
  EXPECT_EQ(reader.status, 75) << reader.err;
  EXPECT_GE(reader.ms, 300);
  w.kill(SIGTERM);
  EXPECT_EQ(exit_status(w, 10s), 128 + SIGTERM) << w.error_output();
  EXPECT_EQ(server.cli({"EXISTS", "rwx"}), "0");
}

// One kind per name: --shared on a reentrant lock's key is refused (65), the lock left as it is;
// the options exclude each other and --fenced.
TEST(cli_exec, shared_on_a_reentrant_locks_key_and_mixed_modes_are_refused) {
  redis_server server;
  temp_dir dir("rlock-cli");
  fifo_marker held(dir.path() / "held");
  child_process plain = start_holder(server, "kind", held);
  const auto shared =
      run_rlock({"exec", "kind", "--shared", "--wait", "0s", "--url", server.url(), "--", "true"});
  EXPECT_EQ(shared.status, 65) << shared.err;
  EXPECT_EQ(server.cli({"HLEN", "kind"}), "1") << "the reentrant lock's hash is left as it was";
  plain.kill(SIGTERM);
  EXPECT_EQ(exit_status(plain, 10s), 128 + SIGTERM) << plain.error_output();
  for (const std::vector<std::string>& both :
       {std::vector<std::string>{"--shared", "--exclusive"},
        std::vector<std::string>{"--shared", "--fenced"},
        std::vector<std::string>{"-x", "--fenced"}, std::vector<std::string>{"--shared", "--spin"},
        std::vector<std::string>{"-x", "--spin"}}) {
    std::vector<std::string> args{"exec", "kind", "--url", server.url()};
    args.insert(args.end(), both.begin(), both.end());
    args.insert(args.end(), {"--", "true"});
    const auto r = run_rlock(args);
    EXPECT_EQ(r.status, 64) << both[0] << " " << both[1] << ": " << r.err;
  }
}

TEST(cli_exec, force_unlock_wakes_a_waiting_exec_at_once) {
  redis_server server;
  temp_dir dir("rlock-cli");
  fifo_marker held(dir.path() / "held");
  // The holder's lease is 9 s, renewed every 3 s: the waiter's own retry comes when the lease it
  // was told of ends, at least 6 s after it queued, and its queue refresh (which also finds a
  // hand-off it missed) 2 s after it queued (a third of the 6 s default liveness), which is
  // just before the force-unlock below. So only the hand-off message wakes it within the 1 s
  // bound. (With force-unlock's message taken out, the waiter woke after 2,003-2,009 ms, 6 of
  // 6 times; at the 900 ms lease this test had before, its retry woke it after 865-876 ms, and
  // the test passed 4 of 4 times.) The holder learns of its loss at its next renewal, within 3 s.
  child_process holder = start_holder(server, "fu", held, {"--watchdog-timeout", "9s"});
  const long long before = lock_listeners(server, "fu");
  // The waiter's command holds the lock until the test writes to `go`: force-unlock reads the
  // lock after its script, and a command that ended at once (as `echo` can, in the few ms
  // between the two) would have released it by then (stop 21's CI: "released" alone).
  const auto go = dir.path() / "go";
  ASSERT_EQ(::mkfifo(go.c_str(), 0600), 0);
  child_process waiter = start_rlock({"exec", "fu", "--url", server.url(), "--wait", "20s", "--",
                                      "sh", "-c", "echo woke; read x < \"$G\""},
                                     {"G=" + go.string()});
  ASSERT_TRUE(wait_until([&] { return lock_listeners(server, "fu") > before; }, 10s))
      << waiter.error_output();
  // Queued too: it subscribes before its acquire script queues it, and a force-unlock in
  // between finds nobody to hand the lock to.
  ASSERT_TRUE(wait_until(
      [&] {
        return server.cli({"ZCARD", "rlock_queue:{fu}"}) == "1";
      },
      10s))
      << waiter.error_output();

  const raw_reply old_owner = server.cli_reply({"HKEYS", "fu"});
  ASSERT_EQ(old_owner.elements.size(), 1u);
  const auto t0 = steady::now();
  const auto fu = run_rlock({"force-unlock", "fu", "--url", server.url()});
  EXPECT_EQ(fu.status, 0) << fu.err;
  // The script handed the lock to the queued waiter: the output names it, not the old holder.
  const std::regex handed("released; now held by [0-9a-f-]{36}:[0-9]+\n");
  EXPECT_TRUE(std::regex_match(fu.out, handed)) << fu.out;
  EXPECT_EQ(fu.out.find(old_owner.elements[0].str), std::string::npos) << fu.out;
  ASSERT_TRUE(wait_until([&] { return waiter.output() == "woke\n"; }, 10s))
      << waiter.output() << waiter.error_output();
  const long long woke_ms = ms_since(t0);
  EXPECT_LT(woke_ms, 1000) << "woken by the hand-off message, not by its retry at the lease's end";
  std::cout << "[ timing ] force-unlock (its own process included) to waiter's command: " << woke_ms
            << " ms\n";
  std::ofstream(go) << "go\n";
  EXPECT_EQ(exit_status(waiter, 10s), 0) << waiter.error_output();

  // The old holder's watchdog finds its lock gone: it stops its command and exits 76.
  EXPECT_EQ(exit_status(holder, 10s), 76) << holder.error_output();
  const auto again = run_rlock({"force-unlock", "fu", "--url", server.url()});
  EXPECT_EQ(again.status, 0);
  EXPECT_EQ(again.out, "no lock\n");
}

// The release after the command, as an ACL user without PUBLISH: Redis deletes the lock and then
// refuses the PUBLISH. rlock says the lock was released but its waiters were not notified
// (before: "could not release lock ...; it expires when its lease ends", which was wrong).
TEST(cli_exec, a_release_whose_notification_is_refused_says_the_lock_was_released) {
  redis_server server(server_options{.acl_users = {"nopub on >pw ~* &* +@all -publish"}});
  temp_dir dir("rlock-cli");
  const auto pw = dir.path() / "pw";
  std::ofstream(pw) << "pw\n";
  const auto r = run_rlock({"exec", "free-nopub", "--url",
                            "redis://nopub@127.0.0.1:" + std::to_string(server.port()),
                            "--password-file", pw.string(), "--", "echo", "ran"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "ran\n");
  EXPECT_NE(r.err.find("released lock 'free-nopub', but its waiters could not be notified: the "
                       "ACL user lacks PUBLISH"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("could not release"), std::string::npos) << r.err;
  EXPECT_EQ(server.cli({"EXISTS", "free-nopub"}), "0");
}

}  // namespace
}  // namespace rlock::test
