// `rlock status` and its JSON, end to end. JSON validity is checked by Python's parser.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <regex>

#include "cli_harness.hpp"
#include "marker_proxy.hpp"
#include "support/lock_listeners.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

// Prints the sorted field names, then the values the tests compare, from a JSON file.
constexpr const char* summarize_json = R"(
import json, sys
d = json.load(open(sys.argv[1], encoding='utf-8'))
print(' '.join(sorted(d)))
o = d['owners']
print(d['state'], d['kind'], len(o), o[0]['holds'] if o else '-',
      'ttl' if isinstance(d['ttl_ms'], int) and d['ttl_ms'] > 0 else d['ttl_ms'],
      d['listeners'], d['channel'], d['mode'], d['value'], d['queued'])
print(o[0]['owner'] if o else '-')
print(d['name'])
print(d['taken'])
)";

// A marker_proxy hook: deletes the key `key` through a connection of its own, so that the key
// goes away between the commands of a reader.
constexpr const char* delete_key_hook = R"(
import socket
def hook(rport, key):
    s = socket.create_connection(('127.0.0.1', rport))
    k = key.encode()
    s.sendall(b'*2\r\n$3\r\nDEL\r\n$%d\r\n%s\r\n' % (len(k), k))
    s.recv(64)
    s.close()
)";

constexpr const char* all_fields =
    "channel key kind listeners mode name owners queued state taken ttl_ms value";

class cli_status : public ::testing::Test {
 protected:
  /// `rlock status NAME --json`, summarized by Python: {fields, values, owner, name, taken}.
  std::vector<std::string> status_json(const std::string& name) {
    const auto r = run_rlock({"status", name, "--json", "--url", server_.url()});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "one line: " << r.out;
    const auto file = dir_.path() / "status.json";
    std::ofstream(file, std::ios::binary) << r.out;
    child_process py(find_program("python3"), {"-c", summarize_json, file.string()},
                     child_options{.capture_stderr = true});
    const auto status = py.wait_for(30s);
    EXPECT_EQ(status, std::optional<int>(0)) << "not valid JSON: " << r.out << "\n"
                                             << py.error_output();
    std::vector<std::string> lines;
    std::istringstream in(py.output());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    lines.resize(5);
    return lines;
  }

  redis_server server_;
  temp_dir dir_{"rlock-cli"};
};

TEST_F(cli_status, a_held_lock_shows_owner_holds_ttl_and_listeners) {
  fifo_marker held(dir_.path() / "held");
  child_process holder = start_rlock(
      {"exec", "st", "--url", server_.url(), "--", "sh", "-c", "echo held > \"$F\"; exec sleep 30"},
      {"F=" + held.path().string()});
  ASSERT_EQ(held.read_line(10s), std::optional<std::string>("held")) << holder.error_output();
  const std::string channel = "redisson_lock__channel:{st}";
  child_process waiter = start_rlock({"exec", "st", "--url", server_.url(), "--", "true"});
  // The waiter's process listens on its own hand-off channel only (the holder hands over
  // through the queue): status counts it as queued, not as a listener of the lock's channel.
  ASSERT_TRUE(wait_until([&] { return lock_listeners(server_, "st") >= 1; }, 10s));

  const auto j = status_json("st");
  EXPECT_EQ(j[0], std::string(all_fields));
  EXPECT_EQ(j[1], "held lock 1 1 ttl 0 " + channel + " None None 1");
  EXPECT_TRUE(std::regex_match(j[2], std::regex("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                                                "[0-9a-f]{12}:[0-9]+")))
      << j[2];
  EXPECT_EQ(j[3], "st");

  const auto text = run_rlock({"status", "st", "--url", server_.url()});
  EXPECT_EQ(text.status, 0);
  EXPECT_NE(text.out.find("state:      held"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(j[2] + " (1 hold)"), std::string::npos) << text.out;

  holder.kill(SIGTERM);
  EXPECT_EQ(exit_status(holder), 128 + SIGTERM);
  EXPECT_EQ(exit_status(waiter), 0) << waiter.error_output();
  EXPECT_EQ(status_json("st")[1], "free free 0 - None 0 " + channel + " None None 0");
}

TEST_F(cli_status, tells_the_kind_of_object_from_redissons_key_layout) {
  // A read-write lock's waiters listen on redisson_rwlock:{NAME}; a fair lock's each on a
  // channel of their own, which status does not count (null).
  server_.cli({"HSET", "rw", "mode", "write", "u:1:write", "2"});
  raw_client rw_waiter = server_.client();
  rw_waiter.send({"SUBSCRIBE", "redisson_rwlock:{rw}"});
  ASSERT_TRUE(rw_waiter.read(5s).has_value());  // subscribed
  EXPECT_EQ(status_json("rw")[1],
            "held read_write_lock 1 2 None 1 redisson_rwlock:{rw} write None 0");
  const auto rw_text = run_rlock({"status", "rw", "--url", server_.url()});
  EXPECT_NE(rw_text.out.find("listeners:  1 on redisson_rwlock:{rw}\n"), std::string::npos)
      << rw_text.out;

  server_.cli({"HSET", "fair", "u:1", "1"});
  server_.cli({"RPUSH", "redisson_lock_queue:{fair}", "w:2"});
  raw_client fair_waiter = server_.client();
  fair_waiter.send({"SUBSCRIBE", "redisson_lock__channel:{fair}:w:2"});
  ASSERT_TRUE(fair_waiter.read(5s).has_value());  // subscribed
  EXPECT_EQ(status_json("fair")[1],
            "held fair_lock 1 1 None None redisson_lock__channel:{fair} None None 0");
  const auto fair_text = run_rlock({"status", "fair", "--url", server_.url()});
  EXPECT_NE(fair_text.out.find("listeners:  not counted"), std::string::npos) << fair_text.out;

  server_.cli({"HSET", "fenced", "u:1", "1"});
  server_.cli({"SET", "redisson_lock_token:{fenced}", "7"});
  EXPECT_EQ(status_json("fenced")[1],
            "held fenced_lock 1 1 None 0 redisson_lock__channel:{fenced} None None 0");

  // The semaphores' waiters listen on redisson_sc:{NAME}, a latch's on its own channel.
  server_.cli({"SET", "sem", "3"});
  raw_client sem_waiter = server_.client();
  sem_waiter.send({"SUBSCRIBE", "redisson_sc:{sem}"});
  ASSERT_TRUE(sem_waiter.read(5s).has_value());  // subscribed
  const auto sem = status_json("sem");
  EXPECT_EQ(sem[1], "other semaphore_or_latch 0 - None 1 redisson_sc:{sem} None 3 0");
  EXPECT_EQ(sem[4], "None");

  server_.cli({"SET", "pes", "2"});
  server_.cli({"ZADD", "{pes}:timeout", "1", "x", "2", "y"});
  const auto pes = status_json("pes");
  EXPECT_EQ(pes[1], "other permit_expirable_semaphore 0 - None 0 redisson_sc:{pes} None 2 0");
  EXPECT_EQ(pes[4], "2") << "permits taken";
  const auto pes_text = run_rlock({"status", "pes", "--url", server_.url()});
  EXPECT_NE(pes_text.out.find("taken:      2 permits\n"), std::string::npos) << pes_text.out;

  server_.cli({"SET", "latch", "2"});
  raw_client sub = server_.client();
  sub.send({"SUBSCRIBE", "redisson_countdownlatch__channel__{latch}"});
  ASSERT_TRUE(sub.read(5s).has_value());  // subscribed
  EXPECT_EQ(status_json("latch")[1],
            "other count_down_latch 0 - None 1 redisson_countdownlatch__channel__{latch} None 2 0");

  server_.cli({"RPUSH", "lst", "a"});
  EXPECT_EQ(status_json("lst")[1],
            "other other:list 0 - None 0 redisson_lock__channel:{lst} None None 0");

  // A name with a hash tag keeps it: the channel is prefix:NAME.
  server_.cli({"HSET", "{tag}x", "u:1", "1"});
  server_.cli({"PEXPIRE", "{tag}x", "60000"});
  EXPECT_EQ(status_json("{tag}x")[1],
            "held lock 1 1 ttl 0 redisson_lock__channel:{tag}x None None 0");
}

// One rlock process waiting behind a Redisson (Java-style) holder listens on the lock's channel
// and on its hand-off channel: it is one listener, and one waiter in rlock's queue.
TEST_F(cli_status, a_waiting_rlock_process_counts_once_and_its_queue_entry_is_shown) {
  server_.cli({"HSET", "jw", "6f1c2b9e-3a4d-4e5f-8a7b-1c2d3e4f5a6b:57", "1"});
  server_.cli({"PEXPIRE", "jw", "60000"});
  child_process waiter =
      start_rlock({"exec", "jw", "--url", server_.url(), "--wait", "30s", "--", "true"});
  ASSERT_TRUE(wait_until([&] { return lock_listeners(server_, "jw") >= 2; }, 10s))
      << waiter.error_output();
  ASSERT_EQ(server_.cli({"ZCARD", "rlock_queue:{jw}"}), "1");

  EXPECT_EQ(status_json("jw")[1], "held lock 1 1 ttl 1 redisson_lock__channel:{jw} None None 1");
  const auto text = run_rlock({"status", "jw", "--url", server_.url()});
  EXPECT_NE(text.out.find("listeners:  1 on redisson_lock__channel:{jw}\n"
                          "queued:     1 in rlock's wait queue\n"),
            std::string::npos)
      << text.out;

  server_.cli({"DEL", "jw"});
  server_.cli({"PUBLISH", "redisson_lock__channel:{jw}", "0"});
  EXPECT_EQ(exit_status(waiter), 0) << waiter.error_output();
}

// An application's hash is not a lock: "other", kind other:hash, its fields are not owners.
TEST_F(cli_status, a_hash_without_a_locks_fields_is_other) {
  server_.cli({"HSET", "user:1000", "name", "alice", "age", "30"});
  EXPECT_EQ(status_json("user:1000")[1],
            "other other:hash 0 - None 0 redisson_lock__channel:{user:1000} None None 0");
  server_.cli({"HSET", "mixed", "field", "notanumber", "other:5", "5"});
  EXPECT_EQ(status_json("mixed")[1],
            "other other:hash 0 - None 0 redisson_lock__channel:{mixed} None None 0");
  const auto text = run_rlock({"status", "user:1000", "--url", server_.url()});
  EXPECT_EQ(text.status, 0);
  EXPECT_NE(text.out.find("state:      other"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("owners:"), std::string::npos) << text.out;
}

// The key is read as one snapshot: a lock that goes away while status reads it is shown either
// as it was (held, its owner, its TTL) or as free, never as held without owners or TTL (nor,
// reading an empty hash, as other:hash).
TEST_F(cli_status, a_lock_that_goes_away_during_status_reads_as_it_was_or_free) {
  // Before it forwards a client's first PTTL, the proxy deletes the key.
  auto proxy = start_marker_proxy(dir_, server_.port(), "\r\nPTTL\r\n", delete_key_hook, "race");
  ASSERT_TRUE(proxy.has_value());
  server_.cli({"HSET", "race", "6f1c2b9e-3a4d-4e5f-8a7b-1c2d3e4f5a6b:1", "1"});
  server_.cli({"PEXPIRE", "race", "60000"});

  const auto r =
      run_rlock({"status", "race", "--json", "--url", "redis://127.0.0.1:" + proxy->port});
  EXPECT_EQ(r.status, 0) << r.err;
  const bool as_it_was =
      r.out.find("\"state\":\"held\"") != std::string::npos &&
      r.out.find("\"owner\":\"6f1c2b9e-3a4d-4e5f-8a7b-1c2d3e4f5a6b:1\"") != std::string::npos &&
      r.out.find("\"ttl_ms\":null") == std::string::npos;
  const bool free = r.out.find("\"state\":\"free\"") != std::string::npos &&
                    r.out.find("\"owners\":[]") != std::string::npos;
  EXPECT_TRUE(as_it_was || free) << r.out;
}

// Owners come from Redis and names from the command line: their control characters (a
// terminal's escape sequences) are escaped in text output; printable UTF-8 is kept.
TEST_F(cli_status, text_output_escapes_control_characters) {
  const std::string name = "esc\nname\x1b[31m\xc3\xa9";
  server_.cli({"HSET", name,
               "\x1b[2J\x1b]0;pwned\x07"
               "ev\xc2\x9bil\xc3\xa9:1",
               "1"});
  const auto r = run_rlock({"status", name, "--url", server_.url()});
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char c : r.out) {
    EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << static_cast<int>(c);
  }
  EXPECT_NE(r.out.find("name:       esc\\x0aname\\x1b[31m\xc3\xa9\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\\x1b[2J\\x1b]0;pwned\\x07ev\\xc2\\x9bil\xc3\xa9:1 (1 hold)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 7) << r.out;

  // Errors name the lock the same way.
  server_.cli({"RPUSH", "l\x1bst", "a"});
  const auto fu = run_rlock({"force-unlock", "l\x1bst", "--url", server_.url()});
  EXPECT_EQ(fu.status, 65);
  EXPECT_NE(fu.err.find("'l\\x1bst' is a Redis list"), std::string::npos) << fu.err;
}

TEST_F(cli_status, json_escapes_any_bytes_of_names_and_owners) {
  const std::string name = std::string("we\"ird\\n\x01") + "\xff" + "\xc3\xa9";
  server_.cli({"HSET", name, "own\ter:1", "1"});
  const auto j = status_json(name);
  EXPECT_EQ(j[0], std::string(all_fields));
  EXPECT_EQ(j[1].substr(0, 13), "held lock 1 1");
  // Python decodes the escapes: invalid UTF-8 became U+FFFD, the rest is intact.
  EXPECT_EQ(j[3], std::string("we\"ird\\n\x01") + "\xef\xbf\xbd" + "\xc3\xa9");
}

}  // namespace
}  // namespace rlock::test
