// The watchdog's renewal script (src/lua/lock_renew.lua), run directly against a real server on
// both of its paths: PEXPIRE ... GT, which Redis 7.0 and later take (this server), and PTTL then
// PEXPIRE, which older servers take (forced here by replacing the script's version line, the
// only difference between the two runs). Each path must lengthen a held lock's TTL to the lease,
// never shorten a longer one, give a TTL to a held key that has none, and report and leave alone
// every key its owner no longer holds.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common.hpp"
#include "detail/lock_scripts.hpp"

namespace rlock::test {
namespace {

enum class renew_path { pexpire_gt, pttl_then_pexpire };

std::string renew_text(renew_path path) {
  std::string text(detail::lock_renew_script().text());
  if (path == renew_path::pttl_then_pexpire) {
    const std::string line = "local version = redis.REDIS_VERSION_NUM or 0";
    const std::size_t at = text.find(line);
    if (at == std::string::npos) return {};  // the script changed: the test says so below
    text.replace(at, line.size(), "local version = 0");
  }
  return text;
}

class renew_script : public ::testing::TestWithParam<renew_path> {};

TEST_P(renew_script, lengthens_never_shortens_gives_a_ttl_and_skips_lost_keys) {
  const std::string text = renew_text(GetParam());
  ASSERT_FALSE(text.empty()) << "lock_renew.lua no longer has its version line";
  redis_server server;
  const std::string owner = "owner:1";
  const auto ok = [&](const std::vector<std::string>& args) {
    const raw_reply r = server.cli_reply(args);
    ASSERT_FALSE(r.is_error()) << r.text();
  };
  ok({"HSET", "held", owner, "1"});  // renewed: 1 s left, the lease is 30 s
  ok({"PEXPIRE", "held", "1000"});
  ok({"HSET", "longer", owner, "1"});  // an inner hold's longer lease: kept
  ok({"PEXPIRE", "longer", "600000"});
  ok({"HSET", "persistent", owner, "1"});  // held without a TTL: gets the lease
  ok({"HSET", "other", "owner:2", "1"});   // another owner's: lost, left alone
  ok({"PEXPIRE", "other", "1000"});
  ok({"SET", "string", "x"});  // re-created as another type: lost, left alone

  const raw_reply r =
      server.cli_reply({"EVAL", text, "6", "held", "longer", "persistent", "other", "string",
                        "missing", "30000", owner, owner, owner, owner, owner, owner});
  ASSERT_EQ(r.elements.size(), 6U) << r.text();
  const std::vector<long long> expected{1, 1, 1, 0, 0, 0};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(r.elements[i].integer, expected[i]) << "key " << i;
  }
  const auto pttl = [&](const std::string& key) { return server.cli_reply({"PTTL", key}).integer; };
  EXPECT_GT(pttl("held"), 29000);
  EXPECT_LE(pttl("held"), 30000);
  EXPECT_GT(pttl("longer"), 590000);
  EXPECT_GT(pttl("persistent"), 29000);
  EXPECT_LE(pttl("persistent"), 30000);
  EXPECT_LE(pttl("other"), 1000);
  EXPECT_EQ(pttl("string"), -1);
  EXPECT_EQ(pttl("missing"), -2);
}

INSTANTIATE_TEST_SUITE_P(, renew_script,
                         ::testing::Values(renew_path::pexpire_gt, renew_path::pttl_then_pexpire),
                         [](const ::testing::TestParamInfo<renew_path>& p) {
                           return p.param == renew_path::pexpire_gt ? "pexpire_gt"
                                                                    : "pttl_then_pexpire";
                         });

}  // namespace
}  // namespace rlock::test
