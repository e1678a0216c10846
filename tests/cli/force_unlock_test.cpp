// `rlock force-unlock` end to end: what it deletes, what it refuses to touch, and how long it
// may take.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>

#include "cli_harness.hpp"
#include "marker_proxy.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

/// A Redisson-style holder of `name` (a v4 uuid) and an `rlock exec` queued behind it, whose
/// command writes "held" to `held` once it runs, then sleeps.
child_process queue_behind_a_holder(const redis_server& server, const std::string& name,
                                    const fifo_marker& held) {
  server.cli({"HSET", name, "6f1c2b9e-3a4d-4e5f-8a7b-1c2d3e4f5a6b:57", "1"});
  server.cli({"PEXPIRE", name, "60000"});
  child_process waiter = start_rlock({"exec", name, "--url", server.url(), "--wait", "30s", "--",
                                      "sh", "-c", "echo held > \"$F\"; exec sleep 30"},
                                     {"F=" + held.path().string()});
  EXPECT_TRUE(wait_until(
      [&] {
        return server.cli({"ZCARD", "rlock_queue:{" + name + "}"}) == "1";
      },
      10s))
      << waiter.error_output();
  return waiter;
}

class cli_force_unlock : public ::testing::Test {
 protected:
  run_result force_unlock(const std::string& name) {
    return run_rlock({"force-unlock", name, "--url", server_.url()});
  }

  redis_server server_;
};

// A hash is a lock only with Redisson's fields ("<id>:<thread id>" = positive holds): an
// application's hash is refused (exit 65) and left as it was.
TEST_F(cli_force_unlock, a_hash_without_a_locks_fields_is_left_untouched) {
  server_.cli({"HSET", "user:1000", "name", "alice", "age", "30"});
  server_.cli({"HSET", "mixed", "field", "notanumber", "other:5", "5"});
  server_.cli({"HSET", "zero", "6f1c2b9e:1", "0"});
  server_.cli({"HSET", "no-thread", "6f1c2b9e:x", "1"});
  server_.cli({"HSET", "write-without-mode", "6f1c2b9e:1:write", "1"});
  server_.cli({"HSET", "bad-mode", "mode", "exclusive", "6f1c2b9e:1", "1"});
  for (const char* name :
       {"user:1000", "mixed", "zero", "no-thread", "write-without-mode", "bad-mode"}) {
    const auto r = force_unlock(name);
    EXPECT_EQ(r.status, 65) << name << ": " << r.err;
    EXPECT_NE(r.err.find("not a lock: left untouched"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << name;
    EXPECT_EQ(server_.cli({"EXISTS", name}), "1") << name;
  }
  EXPECT_EQ(server_.cli({"HGET", "user:1000", "name"}), "alice");

  // A lock of several owners, one of them Java-style, is still a lock.
  server_.cli({"HSET", "lock", "6f1c2b9e-3a4d-4e5f-8a7b-1c2d3e4f5a6b:57", "3", "u:1", "1"});
  const auto r = force_unlock("lock");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "released\n");
  EXPECT_EQ(server_.cli({"EXISTS", "lock"}), "0");
}

// A read-write lock and a fair lock are released as Redisson's forceUnlock of their kind does:
// the read-write lock's waiters are told on its channel, the fair lock's queue head on its own.
TEST_F(cli_force_unlock, read_write_and_fair_locks_are_released_telling_their_waiters) {
  server_.cli({"HSET", "rw", "mode", "write", "6f1c2b9e:57:write", "1"});
  raw_client rw_waiter = server_.client();
  ASSERT_EQ(rw_waiter.command({"SUBSCRIBE", "redisson_rwlock:{rw}"}).elements.at(0).str,
            "subscribe");
  const auto rw = force_unlock("rw");
  EXPECT_EQ(rw.status, 0) << rw.err;
  EXPECT_EQ(server_.cli({"EXISTS", "rw"}), "0");
  EXPECT_TRUE(rw_waiter.read(5s).has_value()) << "the read-write lock's waiters were not told";

  server_.cli({"HSET", "fl", "6f1c2b9e:1", "1"});
  server_.cli({"RPUSH", "redisson_lock_queue:{fl}", "w:2"});
  const auto far =
      std::to_string(std::stoll(server_.cli_reply({"TIME"}).elements.at(0).str) + 600) + "000";
  server_.cli({"ZADD", "redisson_lock_timeout:{fl}", far, "w:2"});
  raw_client head = server_.client();
  ASSERT_EQ(head.command({"SUBSCRIBE", "redisson_lock__channel:{fl}:w:2"}).elements.at(0).str,
            "subscribe");
  const auto fl = force_unlock("fl");
  EXPECT_EQ(fl.status, 0) << fl.err;
  EXPECT_EQ(server_.cli({"EXISTS", "fl"}), "0");
  const auto told = head.read(5s);
  ASSERT_TRUE(told.has_value()) << "the fair lock's head was not told";
  EXPECT_EQ(told->elements.at(2).str, "0");
  EXPECT_EQ(server_.cli({"LLEN", "redisson_lock_queue:{fl}"}), "1") << "the live head stays";
}

// A server that holds writes (CLIENT PAUSE WRITE) cannot hold force-unlock beyond the bound its
// help states: after connecting, each step gets one --timeout and nothing is resent.
TEST_F(cli_force_unlock, a_server_that_holds_writes_cannot_hold_it_beyond_its_bound) {
  server_.cli({"HSET", "paused", "6f1c2b9e:1", "1"});
  server_.cli({"CLIENT", "PAUSE", "30000", "WRITE"});
  const auto r =
      run_rlock({"force-unlock", "paused", "--url", server_.url(), "--timeout", "1s"}, {}, 60s);
  server_.cli({"CLIENT", "UNPAUSE"});
  EXPECT_EQ(r.status, 69) << r.err;
  EXPECT_LT(r.ms, 2 * 1000 + 1000) << r.err;
  EXPECT_NE(r.err.find("nothing was deleted"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(server_.cli({"EXISTS", "paused"}), "1");
  std::cout << "[ timing ] force-unlock against CLIENT PAUSE WRITE, --timeout 1s: exit " << r.status
            << " after " << r.ms << " ms\n";
}

// A marker_proxy hook: makes the server busy. It starts an endless script on a connection of
// its own and waits 0.3 s, so that the server (with a short busy-reply-threshold) answers BUSY
// to everything but SCRIPT KILL.
constexpr const char* make_busy_hook = R"(
import socket, time
side = []
def hook(rport, arg):
    s = socket.create_connection(('127.0.0.1', rport))
    s.sendall(b'*3\r\n$4\r\nEVAL\r\n$17\r\nwhile true do end\r\n$1\r\n0\r\n')
    side.append(s)
    time.sleep(0.3)
)";

// The server turns busy (a script that does not end) once force-unlock has connected: it
// answers BUSY at once, and the library retries such a request within its retry budget (13
// attempts for the default --connect-timeout). force-unlock still ends within one --timeout
// per step. Before, it took 5.9 s with --timeout 1s.
TEST(cli_force_unlock_busy, a_server_that_turns_busy_cannot_hold_it_beyond_its_bound) {
  redis_server server(server_options{.extra_args = {"--busy-reply-threshold", "100"}});
  temp_dir dir("rlock-cli");
  // Before it forwards the first command naming the lock (the read), the server turns busy.
  auto proxy = start_marker_proxy(dir, server.port(), "turns-busy", make_busy_hook, "");
  ASSERT_TRUE(proxy.has_value());
  server.cli({"HSET", "turns-busy", "6f1c2b9e:1", "1"});
  const auto r = run_rlock({"force-unlock", "turns-busy", "--url",
                            "redis://127.0.0.1:" + proxy->port, "--timeout", "1s"},
                           {}, 60s);
  server.cli({"SCRIPT", "KILL"});
  ASSERT_TRUE(wait_until([&] { return server.cli({"PING"}) == "PONG"; }, 10s));
  EXPECT_EQ(r.status, 69) << r.err;
  EXPECT_LT(r.ms, 2 * 1000 + 1000) << r.err;
  EXPECT_NE(r.err.find("no answer within 1s"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(server.cli({"EXISTS", "turns-busy"}), "1");
  std::cout << "[ timing ] force-unlock against a server turned BUSY, --timeout 1s: exit "
            << r.status << " after " << r.ms << " ms\n";
}

// With a queued waiter the script hands the lock to it: the output says who holds the lock now
// (read right after the script), not only "released".
TEST_F(cli_force_unlock, says_who_holds_the_lock_after_the_release) {
  temp_dir dir("rlock-cli");
  fifo_marker held(dir.path() / "held");
  child_process waiter = queue_behind_a_holder(server_, "handed", held);
  const auto r = force_unlock("handed");
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(held.read_line(10s), std::optional<std::string>("held")) << waiter.error_output();
  const raw_reply owners = server_.cli_reply({"HKEYS", "handed"});
  ASSERT_EQ(owners.elements.size(), 1u);
  EXPECT_EQ(r.out, "released; now held by " + owners.elements[0].str + "\n");
  EXPECT_NE(owners.elements[0].str.find("6f1c2b9e"), 0u) << "the waiter, not the old holder";

  // Without waiters the lock is free afterwards.
  server_.cli({"HSET", "alone", "6f1c2b9e:1", "1"});
  EXPECT_EQ(force_unlock("alone").out, "released\n");
}

// --json: one object on one line; held_by is read right after a release, null when nothing was
// released.
TEST_F(cli_force_unlock, json_says_whether_it_released_and_who_holds_the_lock_now) {
  const auto json = [this](const std::string& name) {
    const auto r = run_rlock({"force-unlock", name, "--json", "--url", server_.url()});
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out;
  };
  EXPECT_EQ(json("none"), "{\"name\":\"none\",\"released\":false,\"held_by\":null}\n");
  server_.cli({"HSET", "we\"ird", "6f1c2b9e:1", "1"});
  EXPECT_EQ(json("we\"ird"), "{\"name\":\"we\\\"ird\",\"released\":true,\"held_by\":[]}\n");

  temp_dir dir("rlock-cli");
  fifo_marker held(dir.path() / "held");
  child_process waiter = queue_behind_a_holder(server_, "jh", held);
  const std::string out = json("jh");
  ASSERT_EQ(held.read_line(10s), std::optional<std::string>("held")) << waiter.error_output();
  const raw_reply owners = server_.cli_reply({"HKEYS", "jh"});
  ASSERT_EQ(owners.elements.size(), 1u);
  EXPECT_EQ(out, "{\"name\":\"jh\",\"released\":true,\"held_by\":[\"" + owners.elements[0].str +
                     "\"]}\n");
}

// An ACL user without PUBLISH: Redis refuses the script at its PUBLISH, after the DEL (and the
// hand-over to a queued waiter), and keeps what it did. force-unlock says that it released the
// lock but could not notify the waiters (before: only the NOPERM error, as if nothing had
// happened). A user refused before the DEL still gets the plain error, and the lock stays.
TEST(cli_force_unlock_acl, a_release_whose_notification_is_refused_says_so) {
  redis_server server(server_options{.acl_users = {"nopub on >pw ~* &* +@all -publish",
                                                   "nochan on >pw ~* resetchannels +@all",
                                                   "nodel on >pw ~* &* +@all -del"}});
  temp_dir dir("rlock-cli");
  const auto pw = dir.path() / "pw";
  std::ofstream(pw) << "pw\n";
  const std::string host = "127.0.0.1:" + std::to_string(server.port());
  const auto force_unlock_as = [&](const std::string& user, const std::string& name) {
    return run_rlock({"force-unlock", name, "--url", "redis://" + user + "@" + host,
                      "--password-file", pw.string()});
  };
  for (const char* user : {"nopub", "nochan"}) {
    SCOPED_TRACE(user);
    server.cli({"HSET", "fh", "6f1c2b9e:1", "1"});
    const auto r = force_unlock_as(user, "fh");
    EXPECT_EQ(r.status, 77) << r.err;
    EXPECT_EQ(r.out, "released\n");
    EXPECT_NE(r.err.find("released 'fh', but its waiters could not be notified: the ACL user "
                         "lacks PUBLISH"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(server.cli({"EXISTS", "fh"}), "0");
  }
  // Handed to a queued waiter before the PUBLISH was refused: the output names the new holder.
  fifo_marker held(dir.path() / "held");
  child_process waiter = queue_behind_a_holder(server, "fq", held);
  const auto handed = force_unlock_as("nopub", "fq");
  EXPECT_EQ(handed.status, 77) << handed.err;
  const raw_reply owners = server.cli_reply({"HKEYS", "fq"});
  ASSERT_EQ(owners.elements.size(), 1u);
  EXPECT_EQ(handed.out, "released; now held by " + owners.elements[0].str + "\n");

  server.cli({"HSET", "kept", "6f1c2b9e:1", "1"});
  const auto refused = force_unlock_as("nodel", "kept");
  EXPECT_EQ(refused.status, 77) << refused.err;
  EXPECT_EQ(refused.out, "");
  EXPECT_EQ(refused.err.find("released"), std::string::npos) << refused.err;
  EXPECT_EQ(server.cli({"EXISTS", "kept"}), "1");
}

}  // namespace
}  // namespace rlock::test
