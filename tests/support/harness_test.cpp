// Self-test of the test harness: if these fail, no other test result can be trusted.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "support/loopback_address.hpp"
#include "support/process.hpp"
#include "support/raw_client.hpp"
#include "support/redis_cli.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// Helper mode for RedisServer.DiesWithTheTestProcess: this binary, started with
// RLOCK_HARNESS_HELPER=server, starts a server, prints its pid and waits to be killed.
// It runs before main(), so gtest never starts in the helper.
bool run_helper_mode() noexcept {
  const char* mode = std::getenv("RLOCK_HARNESS_HELPER");  // NOLINT(concurrency-mt-unsafe)
  if (mode == nullptr || std::string_view(mode) != "server") return false;
  try {
    const redis_server server;
    std::printf("%d %s\n", static_cast<int>(server.pid()), server.dir().c_str());
    std::fflush(stdout);
    for (;;) ::pause();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "helper: %s\n", e.what());
  } catch (...) {
    std::fputs("helper: unknown exception\n", stderr);
  }
  std::_Exit(1);
}
[[maybe_unused]] const bool helper_mode = run_helper_mode();

// true if `pid` no longer exists or is a zombie nobody reaped (PID 1 in a container may not).
bool process_gone(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = stat.rfind(')');
  return !in.is_open() || stat.empty() ||
         (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z');
}

TEST(RedisServer, StartsAndAnswersPing) {
  redis_server server;
  EXPECT_TRUE(server.running());
  EXPECT_GT(server.pid(), 0);
  EXPECT_GE(server.port(), 1024);
  EXPECT_EQ(server.host(), "127.0.0.1");
  EXPECT_EQ(server.url(), "redis://127.0.0.1:" + std::to_string(server.port()));
  EXPECT_TRUE(std::filesystem::is_regular_file(server.dir() / "redis.conf"));

  raw_client client(server.host(), server.port());
  const raw_reply pong = client.command({"PING"});
  EXPECT_TRUE(pong.is_status());
  EXPECT_EQ(pong.str, "PONG");
  EXPECT_EQ(server.cli({"PING"}), "PONG");
  EXPECT_EQ(server.cli({"DEBUG", "SLEEP", "0"}), "OK");  // debug command enabled
}

TEST(RedisServer, DestructorKillsServerAndRemovesDir) {
  pid_t pid = 0;
  std::filesystem::path dir;
  {
    redis_server server;
    pid = server.pid();
    dir = server.dir();
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_NE(::kill(pid, 0), 0);  // reaped: no such process
}

TEST(RedisServer, TwoServersGetDistinctPorts) {
  redis_server a;
  redis_server b;
  EXPECT_NE(a.port(), b.port());
  EXPECT_NE(a.dir(), b.dir());
  a.cli({"SET", "which", "a"});
  b.cli({"SET", "which", "b"});
  EXPECT_EQ(a.cli({"GET", "which"}), "a");
  EXPECT_EQ(b.cli({"GET", "which"}), "b");
}

TEST(RedisServer, PauseBlocksRepliesAndResumeRestoresThem) {
  redis_server server;
  raw_client before(server.host(), server.port(), 300ms);
  server.pause();
  EXPECT_TRUE(server.paused());
  EXPECT_TRUE(server.running());

  const auto start = clock_type::now();
  EXPECT_THROW(before.command({"PING"}), std::runtime_error);
  const auto waited = clock_type::now() - start;
  EXPECT_GE(waited, 290ms);
  EXPECT_LT(waited, 2s);
  EXPECT_TRUE(before.broken());
  EXPECT_THROW(before.command({"PING"}), std::runtime_error);  // stays broken

  // The port still accepts connections (kernel backlog), but nothing answers.
  raw_client during(server.host(), server.port(), 300ms);
  EXPECT_THROW(during.command({"PING"}), std::runtime_error);

  server.resume();
  EXPECT_FALSE(server.paused());
  before.reconnect();
  EXPECT_EQ(before.command({"PING"}).str, "PONG");
  raw_client after(server.host(), server.port(), 300ms);
  EXPECT_EQ(after.command({"PING"}).str, "PONG");
}

TEST(RedisServer, KillThenRestartOnSamePort) {
  redis_server server;
  const auto port = server.port();
  const auto old_pid = server.pid();
  server.cli({"SET", "k", "v"});

  server.kill();
  EXPECT_FALSE(server.running());
  EXPECT_EQ(server.pid(), -1);
  EXPECT_THROW(raw_client(server.host(), port, 300ms), std::runtime_error);

  server.restart();
  EXPECT_TRUE(server.running());
  EXPECT_EQ(server.port(), port);
  EXPECT_NE(server.pid(), old_pid);
  EXPECT_EQ(server.cli({"PING"}), "PONG");
  EXPECT_EQ(server.cli({"GET", "k"}), "(nil)");  // no persistence: data is gone
}

TEST(RedisServer, RestartWhileRunningAndAfterStop) {
  redis_server server;
  const auto port = server.port();
  server.restart();  // kills the running server first
  EXPECT_EQ(server.port(), port);
  EXPECT_EQ(server.cli({"PING"}), "PONG");

  server.stop();
  EXPECT_FALSE(server.running());
  server.restart();
  EXPECT_EQ(server.cli({"PING"}), "PONG");
}

TEST(RedisServer, PausedServerCanBeKilledAndRestarted) {
  redis_server server;
  server.pause();
  server.restart();
  EXPECT_FALSE(server.paused());
  EXPECT_EQ(server.cli({"PING"}), "PONG");
}

TEST(RedisServer, PersistenceKeepsDataAcrossKill9) {
  redis_server server(server_options{.persistence = true});
  EXPECT_EQ(server.cli({"CONFIG", "GET", "appendfsync"}), "appendfsync\nalways");
  server.cli({"SET", "survivor", "yes"});
  server.cli({"HSET", "h", "f", "1"});
  server.kill();
  server.restart();
  EXPECT_EQ(server.cli({"GET", "survivor"}), "yes");
  EXPECT_EQ(server.cli({"HGET", "h", "f"}), "1");
}

TEST(RedisServer, RequirePass) {
  redis_server server(server_options{.requirepass = "s3cr3t \"quoted\""});
  raw_client anonymous(server.host(), server.port());
  const raw_reply denied = anonymous.command({"GET", "k"});
  ASSERT_TRUE(denied.is_error()) << denied;
  EXPECT_EQ(denied.str.rfind("NOAUTH", 0), 0U) << denied.str;

  raw_client authed(server.host(), server.port(), 5s, "s3cr3t \"quoted\"");
  EXPECT_EQ(authed.command({"PING"}).str, "PONG");
  EXPECT_EQ(server.cli({"PING"}), "PONG");
  EXPECT_THROW(raw_client(server.host(), server.port(), 5s, "wrong"), std::runtime_error);
}

TEST(RedisServer, AclUsers) {
  redis_server server(server_options{
      .acl_users = {"alice on >wonderland ~* &* +@all", "bob on >builder ~bob:* -@all +get"}});
  raw_client alice(server.host(), server.port(), 5s, "wonderland", "alice");
  EXPECT_EQ(alice.command({"SET", "bob:x", "1"}).str, "OK");
  EXPECT_EQ(alice.command({"ACL", "WHOAMI"}).str, "alice");

  raw_client bob(server.host(), server.port(), 5s, "builder", "bob");
  EXPECT_EQ(bob.command({"GET", "bob:x"}).str, "1");
  const raw_reply denied = bob.command({"SET", "bob:x", "2"});
  ASSERT_TRUE(denied.is_error());
  EXPECT_EQ(denied.str.rfind("NOPERM", 0), 0U) << denied.str;

  EXPECT_THROW(raw_client(server.host(), server.port(), 5s, "wrong", "alice"), std::runtime_error);
}

TEST(RedisServer, TlsServer) {
  redis_server server(server_options{.tls = true});
  EXPECT_EQ(server.url(), "rediss://127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(server.cli({"PING"}), "PONG");
  EXPECT_EQ(server.cli({"SET", "k", "v"}), "OK");
  EXPECT_EQ(server.cli({"GET", "k"}), "v");
  EXPECT_EQ(server.cli({"CONFIG", "GET", "port"}), "port\n0");  // TLS only
  EXPECT_THROW(server.client(), std::logic_error);

  const tls_files& files = server.tls();
  for (const auto& path :
       {files.ca_cert, files.server_cert, files.server_key, files.client_cert, files.client_key,
        files.bad_ca_cert, files.bad_client_cert, files.bad_client_key}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(path)) << path;
  }

  // Plain TCP to the TLS port does not get an answer.
  raw_client plain(server.host(), server.port(), 500ms);
  EXPECT_THROW(plain.command({"PING"}), std::runtime_error);

  // The good client certificate is accepted, one from the bad CA is refused, and a client that
  // trusts only the bad CA refuses the server.
  const auto redis_cli = find_program("redis-cli", "/usr/bin/redis-cli");
  auto tls_ping = [&](const std::filesystem::path& ca, const std::filesystem::path& cert,
                      const std::filesystem::path& key) {
    child_process cli(redis_cli,
                      {"--tls", "--cacert", ca.string(), "--cert", cert.string(), "--key",
                       key.string(), "-p", std::to_string(server.port()), "PING"},
                      child_options{.merge_stderr = true});
    return cli.wait_for(10s);
  };
  EXPECT_EQ(tls_ping(files.ca_cert, files.client_cert, files.client_key), 0);
  EXPECT_NE(tls_ping(files.ca_cert, files.bad_client_cert, files.bad_client_key), 0);
  EXPECT_NE(tls_ping(files.bad_ca_cert, files.client_cert, files.client_key), 0);

  // The server certificate names 127.0.0.1 and localhost.
  child_process openssl(
      find_program("openssl", "/usr/bin/openssl"),
      {"x509", "-in", files.server_cert.string(), "-noout", "-ext", "subjectAltName"});
  ASSERT_EQ(openssl.wait_for(10s), 0);
  EXPECT_NE(openssl.output().find("IP Address:127.0.0.1"), std::string::npos) << openssl.output();
  EXPECT_NE(openssl.output().find("DNS:localhost"), std::string::npos) << openssl.output();

  server.kill();
  server.restart();
  EXPECT_EQ(server.cli({"PING"}), "PONG");
}

TEST(RedisServer, TlsServerWithPassword) {
  redis_server server(server_options{.tls = true, .requirepass = "pw"});
  EXPECT_EQ(server.cli({"PING"}), "PONG");
}

TEST(RedisServer, ExtraArgsArePassed) {
  redis_server server(server_options{.extra_args = {"--maxmemory", "12345678"}});
  EXPECT_EQ(server.cli({"CONFIG", "GET", "maxmemory"}), "maxmemory\n12345678");
}

TEST(RedisServer, BadConfigFailsFastWithLog) {
  try {
    redis_server server(server_options{.extra_args = {"--no-such-option", "1"}});
    FAIL() << "started with a bad option";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-option"), std::string::npos) << e.what();
  }
}

TEST(RedisServer, DiesWithTheTestProcess) {
  child_process helper("/proc/self/exe", {},
                       child_options{.extra_env = {"RLOCK_HARNESS_HELPER=server"}});
  // The helper's stdout is external state without an event: poll it.
  ASSERT_TRUE(wait_until([&] { return helper.output().find('\n') != std::string::npos; }, 10s))
      << "helper did not report a server pid; status " << helper.wait_for(0ms).value_or(-2);
  std::istringstream report(helper.output());
  pid_t server_pid = 0;
  std::string server_dir;
  report >> server_pid >> server_dir;
  ASSERT_GT(server_pid, 0);
  ASSERT_FALSE(server_dir.empty());
  EXPECT_FALSE(process_gone(server_pid));
  helper.kill(SIGKILL);
  EXPECT_EQ(helper.wait_for(5s), 128 + SIGKILL);
  EXPECT_TRUE(wait_until([&] { return process_gone(server_pid); }, 5s));
  std::filesystem::remove_all(server_dir);  // the killed helper could not clean up
}

TEST(RedisServer, RestartFailsClearlyWhenPortWasTaken) {
  redis_server server;
  server.kill();
  // Occupy the port the way another program would.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  const sockaddr_in addr = loopback_address(server.port());
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  try {
    server.restart();
    ADD_FAILURE() << "restart succeeded on a taken port";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("used by another process"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(server.running());
  ::close(fd);
  server.restart();
  EXPECT_EQ(server.cli({"PING"}), "PONG");
}

TEST(RedisServer, ManyServersStartedConcurrently) {
  constexpr std::size_t count = 4;
  std::vector<std::optional<redis_server>> servers(count);
  std::vector<std::thread> threads;
  threads.reserve(count);
  for (std::size_t i = 0; i < count; ++i)
    threads.emplace_back([&servers, i] { servers[i].emplace(); });
  for (auto& t : threads) t.join();
  std::set<std::uint16_t> ports;
  for (auto& server : servers) {
    ASSERT_TRUE(server.has_value());
    EXPECT_EQ(server->cli({"PING"}), "PONG");
    ports.insert(server->port());
  }
  EXPECT_EQ(ports.size(), count);
}

TEST(RedisServer, ServerCreatedInShortLivedThreadSurvivesThreadExit) {
  // PR_SET_PDEATHSIG fires when the forking *thread* exits; the harness forks on a thread that
  // lives as long as the process.
  std::optional<redis_server> server;
  std::thread([&] { server.emplace(); }).join();
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(server->running());
  EXPECT_EQ(server->cli({"PING"}), "PONG");
}

TEST(RawClient, RepliesOfEveryKindAndBinarySafety) {
  redis_server server;
  raw_client client(server.host(), server.port());
  const std::string binary("a\0b\xff\r\n", 6);
  EXPECT_EQ(client.command({"SET", binary, binary}), raw_reply::make_status("OK"));
  EXPECT_EQ(client.command({"GET", binary}), raw_reply::make_string(binary));
  EXPECT_EQ(client.command({"GET", "missing"}), raw_reply::make_nil());
  EXPECT_EQ(client.command({"INCRBY", "n", "-5"}), raw_reply::make_integer(-5));
  EXPECT_TRUE(client.command({"NOSUCHCOMMAND"}).is_error());
  client.command({"HSET", "h", "f1", "v1", "f2", "v2"});
  const raw_reply all = client.command({"HGETALL", "h"});
  ASSERT_TRUE(all.is_array());
  EXPECT_EQ(all.as_map(), (std::map<std::string, std::string>{{"f1", "v1"}, {"f2", "v2"}}));
  client.command({"PEXPIRE", "h", "100000"});
  const raw_reply pttl = client.command({"PTTL", "h"});
  EXPECT_GT(pttl.integer, 90000);
  EXPECT_EQ(client.command({"EVAL", "return {1, 'x', {2}, false}", "0"}).text(), "1\nx\n2\n(nil)");
}

TEST(RawClient, PubSubReadWithTimeoutKeepsClientUsable) {
  redis_server server;
  raw_client subscriber(server.host(), server.port());
  subscriber.send({"SUBSCRIBE", "chan"});
  const auto confirmation = subscriber.read(2s);
  ASSERT_TRUE(confirmation);
  EXPECT_EQ(confirmation->text(), "subscribe\nchan\n1");

  const auto start = clock_type::now();
  EXPECT_FALSE(subscriber.read(100ms));
  EXPECT_GE(clock_type::now() - start, 95ms);
  EXPECT_FALSE(subscriber.broken());
  EXPECT_FALSE(subscriber.read(0ms));

  raw_client publisher(server.host(), server.port());
  EXPECT_EQ(publisher.command({"PUBSUB", "NUMSUB", "chan"}).text(), "chan\n1");
  EXPECT_EQ(publisher.command({"PUBLISH", "chan", "hello"}).integer, 1);
  const auto message = subscriber.read(2s);
  ASSERT_TRUE(message);
  EXPECT_EQ(message->text(), "message\nchan\nhello");
}

TEST(RawClient, PipelinedSendThenRead) {
  redis_server server;
  raw_client client(server.host(), server.port());
  client.send({"SET", "a", "1"});
  client.send({"INCR", "a"});
  client.send({"GET", "a"});
  EXPECT_EQ(client.read(2s)->str, "OK");
  EXPECT_EQ(client.read(2s)->integer, 2);
  EXPECT_EQ(client.read(2s)->str, "2");
}

TEST(RawClient, KilledConnectionThrowsWithoutSigpipe) {
  redis_server server;
  raw_client victim(server.host(), server.port());
  const auto id = victim.command({"CLIENT", "ID"}).integer;
  raw_client admin(server.host(), server.port());
  EXPECT_EQ(admin.command({"CLIENT", "KILL", "ID", std::to_string(id)}).integer, 1);
  // The first write may still succeed (the peer's close is not known yet); a second one gets
  // EPIPE. Either way: an exception, not a SIGPIPE that kills the test process.
  EXPECT_THROW(
      {
        victim.command({"PING"});
        victim.command({"PING"});
      },
      std::runtime_error);
  victim.reconnect();
  EXPECT_EQ(victim.command({"PING"}).str, "PONG");
}

TEST(RawClient, ConnectFailureThrows) {
  EXPECT_THROW(raw_client("127.0.0.1", 1, 300ms), std::runtime_error);
}

TEST(RedisCli, ParsesJsonReplies) {
  EXPECT_EQ(parse_redis_cli_json("\"PONG\"\n"), raw_reply::make_string("PONG"));
  EXPECT_EQ(parse_redis_cli_json("null"), raw_reply::make_nil());
  EXPECT_EQ(parse_redis_cli_json("-42"), raw_reply::make_integer(-42));
  EXPECT_EQ(parse_redis_cli_json("error:\"ERR x\""), raw_reply::make_error("ERR x"));
  EXPECT_EQ(
      parse_redis_cli_json("[1,[],\"a\\\"\\n\\u0001\\u00e9\",null]"),
      raw_reply::make_array({raw_reply::make_integer(1), raw_reply::make_array({}),
                             raw_reply::make_string("a\"\n\x01\xc3\xa9"), raw_reply::make_nil()}));
  EXPECT_THROW(parse_redis_cli_json("[1,"), std::runtime_error);
  EXPECT_THROW(parse_redis_cli_json("Could not connect"), std::runtime_error);
}

TEST(RedisCli, SameRepliesAsRawClient) {
  redis_server server;
  raw_client client(server.host(), server.port());
  const redis_cli_target target{server.host(), server.port(), "", nullptr};
  const std::string binary("x\xff\x01\ty\\\"", 7);
  client.command({"SET", "b", binary});
  client.command({"RPUSH", "l", "1", "2"});
  const std::vector<std::vector<std::string>> commands{
      {"GET", "b"},  {"GET", "missing"}, {"LRANGE", "l", "0", "-1"},
      {"LLEN", "l"}, {"NOSUCHCOMMAND"},  {"HGETALL", "missing"}};
  for (const auto& command : commands) {
    EXPECT_EQ(run_redis_cli(target, command).text(), client.command(command).text())
        << command.front();
  }
}

TEST(ChildProcess, ExitStatusAndOutput) {
  child_process ok("/bin/sh", {"-c", "echo hello; echo oops >&2; exit 3"},
                   child_options{.merge_stderr = true});
  EXPECT_EQ(ok.wait_for(5s), 3);
  EXPECT_EQ(ok.output(), "hello\noops\n");
  EXPECT_FALSE(ok.running());
  EXPECT_EQ(ok.wait_for(0ms), 3);  // status is remembered
  ok.kill(SIGKILL);                // no-op after reaping
}

TEST(ChildProcess, KillReportsSignal) {
  child_process sleeper("/bin/sleep", {"30"});
  EXPECT_TRUE(sleeper.running());
  EXPECT_EQ(sleeper.wait_for(50ms), std::nullopt);
  sleeper.kill(SIGTERM);
  EXPECT_EQ(sleeper.wait_for(5s), 128 + SIGTERM);
}

TEST(ChildProcess, DestructorKillsAndReaps) {
  pid_t pid = 0;
  {
    child_process sleeper("/bin/sleep", {"30"});
    pid = sleeper.pid();
  }
  EXPECT_NE(::kill(pid, 0), 0);
}

TEST(ChildProcess, OutputToFileAndEnvironment) {
  temp_dir dir;
  const auto file = dir.path() / "out.txt";
  child_options options;
  options.stdout_file = file;
  options.extra_env = {"RLOCK_HARNESS_VALUE=42"};
  child_process child("/bin/sh", {"-c", "echo \"value=$RLOCK_HARNESS_VALUE\""}, options);
  EXPECT_EQ(child.wait_for(5s), 0);
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "value=42");
}

TEST(ChildProcess, DoesNotInheritTestDescriptors) {
  redis_server server;
  raw_client client(server.host(), server.port());
  // /proc/self/fd of the child lists 0, 1, 2 and the fd ls itself opens.
  child_process ls("/bin/ls", {"/proc/self/fd"});
  ASSERT_EQ(ls.wait_for(5s), 0);
  EXPECT_EQ(ls.output(), "0\n1\n2\n3\n");
}

TEST(ChildProcess, ExecFailureThrows) {
  EXPECT_THROW(child_process("/nonexistent/program", {}), std::runtime_error);
  EXPECT_THROW(find_program("rlock-no-such-program"), std::runtime_error);
  EXPECT_EQ(find_program("sh").filename(), "sh");
}

TEST(ChildProcess, ManyConcurrentWorkers) {
  std::vector<child_process> workers;
  workers.reserve(4);
  for (int i = 0; i < 4; ++i) {
    workers.emplace_back("/bin/sh", std::vector<std::string>{"-c", "exit " + std::to_string(i)});
  }
  for (int i = 0; i < 4; ++i) EXPECT_EQ(workers[static_cast<std::size_t>(i)].wait_for(5s), i);
}

TEST(WaitUntil, SeesExternalState) {
  redis_server server;
  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);
    server.cli({"SET", "appeared", "1"});
  });
  EXPECT_TRUE(wait_until([&] { return server.cli({"EXISTS", "appeared"}) == "1"; }, 5s));
  writer.join();
  int calls = 0;
  const auto start = clock_type::now();
  EXPECT_FALSE(wait_until([&] { return ++calls < 0; }, 50ms, 10ms));
  EXPECT_GE(clock_type::now() - start, 50ms);
  EXPECT_GE(calls, 2);
}

}  // namespace
}  // namespace rlock::test
