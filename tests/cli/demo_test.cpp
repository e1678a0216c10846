// `rlock demo`: the README's main job, checked through its own summary.
#include <gtest/gtest.h>

#include <regex>

#include "cli_harness.hpp"
#include "support/redis_server.hpp"

namespace rlock::test {
namespace {

struct demo_figures {
  long long acquisitions = -1;
  long long counter = -2;
  long long overlaps = -1;
  long long incomplete = -1;
};

demo_figures figures_of(const std::string& out) {
  std::smatch m;
  demo_figures f;
  const std::regex line(
      "acquisitions=([0-9]+) counter=([0-9]+) overlaps=([0-9]+) incomplete=([0-9]+)");
  if (std::regex_search(out, m, line)) {
    f.acquisitions = std::stoll(m[1]);
    f.counter = std::stoll(m[2]);
    f.overlaps = std::stoll(m[3]);
    f.incomplete = std::stoll(m[4]);
  }
  return f;
}

TEST(cli_demo, three_workers_on_a_throwaway_server_pass_every_check) {
  const auto r = run_rlock({"demo", "--duration", "2s", "--workers", "3"}, {}, 60s);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("started a throwaway redis-server"), std::string::npos) << r.out;
  const demo_figures f = figures_of(r.out);
  EXPECT_GT(f.acquisitions, 0) << r.out;
  EXPECT_EQ(f.counter, f.acquisitions) << r.out;
  EXPECT_EQ(f.overlaps, 0) << r.out;
  EXPECT_EQ(f.incomplete, 0) << r.out;
  EXPECT_NE(r.out.find("hand-offs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("p99"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("result: ok"), std::string::npos) << r.out;
  EXPECT_LT(std::count(r.out.begin(), r.out.end(), '\n'), 40) << "bounded output:\n" << r.out;
  EXPECT_LT(r.ms, 2000 + 5000);
  std::cout << r.out;
}

TEST(cli_demo, takes_the_url_as_an_argument_and_leaves_no_keys_behind) {
  redis_server server;
  const auto r = run_rlock({"demo", "--duration", "1s", "--workers", "2", server.url()}, {}, 60s);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("throwaway"), std::string::npos) << r.out;
  const demo_figures f = figures_of(r.out);
  EXPECT_EQ(f.counter, f.acquisitions) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("lock '(rlock-demo:[0-9a-f]+)'"))) << r.out;
  EXPECT_EQ(server.cli({"EXISTS", m[1].str(), m[1].str() + ":counter"}), "0");
}

// A server URL with a password in $RLOCK_URL (the documented way to pass one) works. Before,
// demo copied $RLOCK_URL into --url and refused it: "--url must not contain a password".
TEST(cli_demo, takes_a_url_with_a_password_from_the_environment) {
  redis_server server(server_options{.requirepass = "s3cret"});
  const auto r =
      run_rlock({"demo", "--duration", "1s", "--workers", "2"},
                {"RLOCK_URL=redis://:s3cret@127.0.0.1:" + std::to_string(server.port())}, 60s);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("throwaway"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("s3cret"), std::string::npos) << r.out;
  const demo_figures f = figures_of(r.out);
  EXPECT_GT(f.acquisitions, 0) << r.out;
  EXPECT_EQ(f.counter, f.acquisitions) << r.out;
}

}  // namespace
}  // namespace rlock::test
