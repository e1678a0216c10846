// A fork's child and the client its parent made (client.hpp, "Fork"). The child shares the
// parent's sockets and lock owner ids, not its threads: before, its try_lock re-entered the
// parent's lock as its owner (on the parent's connection), a lock guard unwound there released
// the parent's lock, and execute() hung. Now the child's calls fail at once, its releases do
// nothing, and letting go of the client there touches nothing of the parent's.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include <array>
#include <asio/use_future.hpp>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

/// How the child ends: _exit (no atexit handler, no destructor of the parent's objects), or
/// std::exit, which runs the static destructors (and, under AddressSanitizer, would report as
/// leaks the parent's objects that only the parent's other threads refer to: not checked).
enum class child_exit { quick, with_exit_handlers };

/// Runs `child` in a fork's child, which reports what went wrong (empty: nothing) through a
/// pipe and exits as `how` says. Returns that report; a child still running after 20 s is
/// killed and reported as hung.
template <class F>
std::string in_fork_child(F child, child_exit how = child_exit::quick) {
  std::array<int, 2> fds{};
  if (pipe(fds.data()) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string report;
    try {
      report = child();
    } catch (const std::exception& e) {
      report = std::string("child threw: ") + e.what();
    }
    if (!report.empty()) (void)!write(fds[1], report.data(), report.size());
    if (how == child_exit::quick) _exit(report.empty() ? 0 : 1);
#if defined(__SANITIZE_ADDRESS__)
    __lsan_disable();
#endif
    std::exit(report.empty() ? 0 : 1);  // NOLINT(concurrency-mt-unsafe): the child's only thread
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return "fork failed";
  }
  int status = 0;
  const bool ended = wait_until([&] { return waitpid(pid, &status, WNOHANG) == pid; }, 20s);
  if (!ended) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  std::string report;
  std::array<char, 512> buf{};
  for (ssize_t n = 0; (n = read(fds[0], buf.data(), buf.size())) > 0;) report.append(buf.data(), n);
  close(fds[0]);
  if (!ended) return "the child hung (killed after 20 s) " + report;
  if (!WIFEXITED(status)) return "the child died of signal " + std::to_string(WTERMSIG(status));
  return report;
}

/// What `f` throws, as "<code>" (the rlock code's message), or "no error".
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const error& e) {
    return e.code() == errc::invalid_argument ? std::string("invalid_argument")
                                              : e.code().message() + ": " + e.what();
  }
  return "no error";
}

TEST(fork, a_child_cannot_use_the_parents_client_nor_release_its_locks) {
  redis_server server;
  auto c = std::make_unique<client>(config_for(server));
  lock l = c->get_lock("forked");
  std::unique_lock guard(l);  // a guard the child unwinds: it must not release the lock
  auto sem = c->get_semaphore("forked-sem");
  ASSERT_TRUE(sem.try_set_permits(1));
  const std::string report = in_fork_child([&] {
    std::string wrong;
    const auto expect_refused = [&wrong](const char* what, const std::string& got) {
      if (got != "invalid_argument") wrong += std::string(what) + ": " + got + "; ";
    };
    expect_refused("try_lock", error_of([&] { (void)l.try_lock(); }));
    expect_refused("lock", error_of([&] { l.lock(); }));
    expect_refused("execute", error_of([&] { (void)c->execute({"PING"}); }));
    expect_refused("semaphore", error_of([&] { (void)sem.try_acquire(); }));
    expect_refused("unlock_or_throw", error_of([&] { l.unlock_or_throw(); }));
    const connection_status s = c->status();
    if (s.connected || s.error != errc::invalid_argument) wrong += "status: " + s.detail + "; ";
    guard.unlock();  // nothing: the hold is the parent's
    c.reset();       // kept, untouched, until the child exits
    return wrong;
  });
  EXPECT_EQ(report, "");
  // The parent's lock is still its own, once; its connections and threads still serve it.
  EXPECT_EQ(server.cli_reply({"HLEN", "forked"}).integer, 1);
  EXPECT_EQ(c->execute({"PING"}).str(), "PONG");
  EXPECT_TRUE(l.is_held_by_current_thread());
  EXPECT_EQ(l.hold_count(), 1);
  EXPECT_TRUE(sem.try_acquire());
  guard.unlock();
  EXPECT_EQ(server.cli_reply({"EXISTS", "forked"}).integer, 0);
  // Pub/sub too: a waiter is woken by the release of another client.
  client other(config_for(server));
  lock theirs = other.get_lock("forked");
  theirs.lock();
  auto waiter = try_lock_then_unlock_async(l, 10s);
  theirs.unlock();
  EXPECT_TRUE(waiter.get());
}

// A process that used the library and then forks: the child's exit() runs the static
// destructors. Completions of a shut-down client (and a multi lock's pauses) used to run on
// Asio's system executor, whose thread pool is joined there: the child has none of those
// threads, and it hung in exit() for good. They run on the library's own fallback thread now,
// which nothing joins.
TEST(fork, a_child_of_a_process_that_shut_a_client_down_can_exit) {
  redis_server server;
  {
    client c(config_for(server));
    EXPECT_EQ(c.execute({"PING"}).str(), "PONG");
    c.shutdown();
    // Completed on the thread that takes over once the client's threads have ended.
    std::promise<std::error_code> refused;
    c.async_execute({"PING"},
                    [&refused](std::error_code ec, const reply&) { refused.set_value(ec); });
    EXPECT_EQ(refused.get_future().get(), errc::shutdown);
  }
  EXPECT_EQ(in_fork_child([] { return std::string(); }, child_exit::with_exit_handlers), "");
}

// Asynchronous calls in the child: each completes, refused (errc::invalid_argument), with
// nothing sent. Before, the client's own executor (its io_context, which only the parent's
// threads run) was where their handlers went: they never ran, and a caller waiting for one
// waited for ever. The child now runs them on a fallback context of its own.
TEST(fork, a_childs_asynchronous_calls_complete_refused) {
  redis_server server;
  {
    // The parent's fallback context is in use (a shut-down client's refusals run there): the
    // child inherits it without its threads.
    client gone(config_for(server));
    gone.shutdown();
    std::promise<std::error_code> refused;
    gone.async_execute({"PING"},
                       [&refused](std::error_code ec, const reply&) { refused.set_value(ec); });
    ASSERT_EQ(refused.get_future().get(), errc::shutdown);
  }
  auto live = std::make_unique<client>(config_for(server));
  lock held = live->get_lock("forked-async-held");
  held.lock();
  const std::string report = in_fork_child([&] {
    std::string wrong;
    const auto expect_refused = [&wrong](const char* what, std::future<std::error_code> f) {
      if (f.wait_for(5s) != std::future_status::ready) {
        wrong += std::string(what) + ": no completion within 5 s; ";
      } else if (const std::error_code ec = f.get(); ec != errc::invalid_argument) {
        wrong += std::string(what) + ": " + ec.message() + "; ";
      }
    };
    const std::uint64_t owner = new_owner_id();
    // Handlers on the client's executor (the default), the case that hung.
    const auto code = [](std::promise<std::error_code>& p) {
      return [&p](std::error_code ec, auto&&...) { p.set_value(ec); };
    };
    std::promise<std::error_code> execute, locked, unlocked, acquired, counted, read_locked;
    live->async_execute({"PING"}, code(execute));
    expect_refused("async_execute", execute.get_future());
    held.async_lock(owner, code(locked));
    expect_refused("async_lock", locked.get_future());
    held.async_unlock(owner, code(unlocked));
    expect_refused("async_unlock", unlocked.get_future());
    live->get_semaphore("forked-async-sem").async_try_acquire_for(1s, 1, code(acquired));
    expect_refused("semaphore async_try_acquire_for", acquired.get_future());
    live->get_countdown_latch("forked-async-latch").async_count_down(code(counted));
    expect_refused("latch async_count_down", counted.get_future());
    live->get_read_write_lock("forked-async-rw")
        .async_acquire(rw_mode::read, owner, acquire_options{}, code(read_locked));
    expect_refused("read lock async_acquire", read_locked.get_future());
    // A future as the completion token (a handler whose executor is not the client's).
    auto pinged = live->async_execute({"PING"}, asio::use_future);
    if (pinged.wait_for(5s) != std::future_status::ready) {
      wrong += "async_execute(use_future): no completion within 5 s; ";
    } else {
      try {
        (void)pinged.get();
        wrong += "async_execute(use_future): no error; ";
      } catch (const std::system_error& e) {
        if (e.code() != errc::invalid_argument) wrong += std::string("use_future: ") + e.what();
      }
    }
    live.reset();  // kept, untouched, until the child exits
    return wrong;
  });
  EXPECT_EQ(report, "");
  // Nothing of the parent's was touched: its hold is still its own, once, and it still serves.
  EXPECT_EQ(server.cli_reply({"HLEN", "forked-async-held"}).integer, 1);
  EXPECT_TRUE(held.is_held_by_current_thread());
  EXPECT_EQ(live->execute({"PING"}).str(), "PONG");
  held.unlock_or_throw();
}

}  // namespace
}  // namespace rlock::test
