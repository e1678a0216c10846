// `rlock force-unlock` end to end: what it deletes, and what it refuses to touch.
#include <gtest/gtest.h>

#include "cli_harness.hpp"
#include "support/redis_server.hpp"

namespace rlock::test {
namespace {

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

// rlock implements the plain lock only: a read-write or fair lock is refused, not deleted with
// a wake-up on the wrong channel.
TEST_F(cli_force_unlock, read_write_and_fair_locks_are_refused) {
  server_.cli({"HSET", "rw", "mode", "write", "6f1c2b9e:57:write", "1"});
  const auto rw = force_unlock("rw");
  EXPECT_EQ(rw.status, 65) << rw.err;
  EXPECT_NE(rw.err.find("'rw' is a Redisson read-write lock; rlock force-unlock handles plain "
                        "locks only: use Redisson's forceUnlock"),
            std::string::npos)
      << rw.err;
  EXPECT_EQ(rw.out, "");
  EXPECT_EQ(server_.cli({"EXISTS", "rw"}), "1");

  server_.cli({"HSET", "fl", "6f1c2b9e:1", "1"});
  server_.cli({"RPUSH", "redisson_lock_queue:{fl}", "w:2"});
  const auto fl = force_unlock("fl");
  EXPECT_EQ(fl.status, 65) << fl.err;
  EXPECT_NE(fl.err.find("'fl' is a Redisson fair lock"), std::string::npos) << fl.err;
  EXPECT_EQ(server_.cli({"EXISTS", "fl"}), "1");
}

}  // namespace
}  // namespace rlock::test
