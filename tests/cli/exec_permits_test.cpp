// `rlock exec --permits N` end to end: real rlock processes holding permits of one
// permit-expirable semaphore on a real redis-server (Redisson's layout: the count in the key
// NAME, the permits taken in the sorted set "{NAME}:timeout").
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>

#include "cli_harness.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

/// The subscribers of the semaphore's channel: a waiter has subscribed once this has grown.
long long permit_waiters(const redis_server& server, const std::string& name) {
  return server.cli_reply({"PUBSUB", "NUMSUB", "redisson_sc:{" + name + "}"})
      .elements.at(1)
      .integer;
}

std::string taken(const redis_server& server, const std::string& name) {
  return server.cli({"ZCARD", "{" + name + "}:timeout"});
}

/// `rlock exec NAME --permits N [extra] -- sh -c 'echo $$ > FIFO; exec sleep 30'`, once its
/// command runs; `pid` gets the command's pid.
child_process start_permit_holder(const redis_server& server, const std::string& name, int n,
                                  fifo_marker& held, std::vector<std::string> extra = {},
                                  std::string* pid = nullptr) {
  std::vector<std::string> args{"exec",  name,        "--permits", std::to_string(n),
                                "--url", server.url()};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--", "sh", "-c", "echo $$ > \"$F\"; exec sleep 30"});
  child_process p = start_rlock(args, {"F=" + held.path().string()});
  const auto line = held.read_line(10s);
  EXPECT_TRUE(line.has_value()) << p.error_output();
  if (pid != nullptr && line) *pid = *line;
  return p;
}

TEST(cli_exec_permits, at_most_n_commands_run_at_once) {
  redis_server server;
  temp_dir dir("rlock-cli");
  fifo_marker held_a(dir.path() / "a");
  fifo_marker held_b(dir.path() / "b");
  child_process a = start_permit_holder(server, "jobs", 2, held_a);
  child_process b = start_permit_holder(server, "jobs", 2, held_b);
  EXPECT_EQ(server.cli({"GET", "jobs"}), "0");
  EXPECT_EQ(taken(server, "jobs"), "2");
  const auto refused = run_rlock(
      {"exec", "jobs", "--permits", "2", "--wait", "0s", "--url", server.url(), "--", "true"});
  EXPECT_EQ(refused.status, 75) << refused.err;
  EXPECT_NE(refused.err.find("no permit of 'jobs' is free"), std::string::npos) << refused.err;
  // -v: the status line (first at 250 ms) tells the permits taken and free.
  const auto shown = run_rlock({"exec", "jobs", "--permits", "2", "--wait", "600ms", "-v", "--url",
                                server.url(), "--", "true"});
  EXPECT_EQ(shown.status, 75) << shown.err;
  EXPECT_NE(shown.err.find("for a permit of 'jobs' (of 600ms): 2 taken, 0 free"), std::string::npos)
      << shown.err;

  // A third waits (subscribed to the semaphore's channel) and runs once a holder ends.
  const auto ran = dir.path() / "ran";
  child_process c = start_rlock(
      {"exec", "jobs", "--permits", "2", "--url", server.url(), "--", "touch", ran.string()});
  ASSERT_TRUE(wait_until([&] { return permit_waiters(server, "jobs") > 0; }, 10s))
      << c.error_output();
  EXPECT_FALSE(std::filesystem::exists(ran));
  a.kill(SIGTERM);
  EXPECT_EQ(exit_status(a, 10s), 128 + SIGTERM) << a.error_output();
  EXPECT_EQ(exit_status(c, 10s), 0) << c.error_output();
  EXPECT_TRUE(std::filesystem::exists(ran));
  b.kill(SIGTERM);
  EXPECT_EQ(exit_status(b, 10s), 128 + SIGTERM) << b.error_output();
  EXPECT_EQ(server.cli({"GET", "jobs"}), "2") << "every permit given back";
  EXPECT_EQ(taken(server, "jobs"), "0");
}

TEST(cli_exec_permits, the_permit_is_renewed_while_the_command_runs) {
  redis_server server;
  // A 600 ms lease, renewed every 200 ms, held for 2 s: more than three leases.
  const auto r = run_rlock({"exec", "long", "--permits", "1", "--watchdog-timeout", "600ms",
                            "--url", server.url(), "--", "sleep", "2"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_GE(r.ms, 2000);
  EXPECT_EQ(server.cli({"GET", "long"}), "1");
  EXPECT_EQ(taken(server, "long"), "0");
}

TEST(cli_exec_permits, a_permit_that_is_gone_signals_the_command_and_exits_76) {
  redis_server server;
  temp_dir dir("rlock-cli");
  fifo_marker held(dir.path() / "held");
  child_process p =
      start_permit_holder(server, "gone", 1, held, {"--watchdog-timeout", "3s", "--grace", "5s"});
  const auto t0 = steady::now();
  EXPECT_EQ(server.cli({"DEL", "{gone}:timeout"}), "1");  // as if its lease had been reclaimed
  EXPECT_EQ(exit_status(p, 10s), 76) << p.error_output();
  EXPECT_LT(ms_since(t0), 2500) << "a renewal (every 1 s) finds it gone before the 3 s lease ends";
  EXPECT_NE(p.error_output().find("lost the permit of 'gone'"), std::string::npos)
      << p.error_output();
  EXPECT_NE(p.error_output().find("SIGTERM"), std::string::npos) << p.error_output();
}

// A paused server confirms no renewal: the command is stopped once the lease could have ended,
// before the server (once it runs again) can give the permit to anyone else.
TEST(cli_exec_permits, no_renewal_confirmed_before_the_lease_ends_is_a_loss) {
  redis_server server;
  temp_dir dir("rlock-cli");
  fifo_marker held(dir.path() / "held");
  child_process p =
      start_permit_holder(server, "paused", 1, held,
                          {"--watchdog-timeout", "1500ms", "--timeout", "500ms", "--grace", "5s"});
  server.pause();
  const auto t0 = steady::now();
  const int status = exit_status(p, 30s);
  const long long ms = ms_since(t0);
  server.resume();
  EXPECT_EQ(status, 76) << p.error_output();
  EXPECT_NE(p.error_output().find("lost the permit of 'paused'"), std::string::npos)
      << p.error_output();
  // The loss at the lease's end (at most 1.5 s after the pause), then the release's bound of
  // two request timeouts (1 s) against the paused server.
  EXPECT_LT(ms, 1500 + 1000 + 1500) << p.error_output();
}

TEST(cli_exec_permits, with_a_lease_the_permit_is_not_renewed) {
  redis_server server;
  const auto t0 = steady::now();
  const auto r = run_rlock({"exec", "leased", "--permits", "1", "--lease", "500ms", "--url",
                            server.url(), "--", "sleep", "5"});
  EXPECT_EQ(r.status, 76) << r.err;
  EXPECT_GE(ms_since(t0), 500);
  EXPECT_NE(r.err.find("500ms lease ran out"), std::string::npos) << r.err;
}

TEST(cli_exec_permits, a_killed_holders_permit_returns_when_its_lease_ends) {
  redis_server server;
  temp_dir dir("rlock-cli");
  fifo_marker held(dir.path() / "held");
  std::string command_pid;
  child_process holder =
      start_permit_holder(server, "crash", 1, held, {"--watchdog-timeout", "900ms"}, &command_pid);
  holder.kill(SIGKILL);  // rlock itself: nobody releases the permit or renews it
  EXPECT_EQ(exit_status(holder, 10s), 128 + SIGKILL);
  const auto next = run_rlock(
      {"exec", "crash", "--permits", "1", "--wait", "10s", "--url", server.url(), "--", "true"});
  EXPECT_EQ(next.status, 0) << next.err;
  EXPECT_LT(next.ms, 900 + 2000) << "the waiter wakes when the lease it saw ends";
  if (!command_pid.empty()) ::kill(std::stoi(command_pid), SIGKILL);  // the orphaned sleep
}

TEST(cli_exec_permits, an_interrupted_waiter_takes_nothing) {
  redis_server server;
  temp_dir dir("rlock-cli");
  fifo_marker held(dir.path() / "held");
  child_process holder = start_permit_holder(server, "intr", 1, held);
  const auto ran = dir.path() / "ran";
  child_process waiter = start_rlock(
      {"exec", "intr", "--permits", "1", "--url", server.url(), "--", "touch", ran.string()});
  ASSERT_TRUE(wait_until([&] { return permit_waiters(server, "intr") > 0; }, 10s))
      << waiter.error_output();
  waiter.kill(SIGINT);
  EXPECT_EQ(exit_status(waiter, 10s), 128 + SIGINT) << waiter.error_output();
  EXPECT_FALSE(std::filesystem::exists(ran));
  EXPECT_EQ(taken(server, "intr"), "1") << "only the holder's";
  holder.kill(SIGTERM);
  EXPECT_EQ(exit_status(holder, 10s), 128 + SIGTERM) << holder.error_output();
  EXPECT_EQ(server.cli({"GET", "intr"}), "1");
}

TEST(cli_exec_permits, an_existing_semaphore_keeps_its_count) {
  redis_server server;
  server.cli({"SET", "pool", "1"});
  const auto r = run_rlock(
      {"exec", "pool", "--permits", "3", "--url", server.url(), "--", "sh", "-c", "echo ran"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "ran\n");
  EXPECT_NE(r.err.find("has 1 permits, not 3"), std::string::npos) << r.err;
  EXPECT_EQ(server.cli({"GET", "pool"}), "1");
}

TEST(cli_exec_permits, a_key_of_another_kind_is_refused_and_left_as_it_was) {
  redis_server server;
  server.cli({"HSET", "h", "a", "1"});
  const auto r =
      run_rlock({"exec", "h", "--permits", "2", "--url", server.url(), "--", "echo", "ran"});
  EXPECT_EQ(r.status, 65) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(server.cli({"HGET", "h", "a"}), "1");
}

TEST(cli_exec_permits, bad_counts_and_other_kinds_are_usage_errors) {
  redis_server server;
  for (const char* n : {"0", "-1", "x", "2147483648"}) {
    const auto r = run_rlock({"exec", "u", "--permits", n, "--url", server.url(), "--", "true"});
    EXPECT_EQ(r.status, 64) << n << ": " << r.err;
  }
  for (const char* kind : {"--fair", "--spin", "--shared", "--exclusive", "--fenced"}) {
    const auto r =
        run_rlock({"exec", "u", "--permits", "1", kind, "--url", server.url(), "--", "true"});
    EXPECT_EQ(r.status, 64) << kind << ": " << r.err;
  }
  EXPECT_EQ(server.cli({"EXISTS", "u"}), "0");
}

}  // namespace
}  // namespace rlock::test
