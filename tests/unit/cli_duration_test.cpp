// The CLI's duration syntax (tools/cli/duration.hpp): what it accepts and what it refuses.
// The refusals' wording is checked end to end in tests/cli/usage_test.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "duration.hpp"

namespace rlock::cli {
namespace {

using namespace std::chrono_literals;

TEST(cli_duration, terms_add_up_largest_unit_first) {
  EXPECT_EQ(parse_duration("0s"), 0ms);
  EXPECT_EQ(parse_duration("250ms"), 250ms);
  EXPECT_EQ(parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(parse_duration("1m30s"), 90s);
  EXPECT_EQ(parse_duration("1h30m"), 90min);
  EXPECT_EQ(parse_duration("1h2m3s4ms"), 1h + 2min + 3s + 4ms);
  EXPECT_EQ(parse_duration("2m5s"), 125s);
  EXPECT_EQ(parse_duration("87600h"), max_duration);
}

TEST(cli_duration, a_repeated_or_misordered_unit_is_refused) {
  for (const char* text : {"1h1h", "1s1s", "500ms500ms", "30s1m", "1m1h", "1h5ms2s", "1s1.5s"}) {
    std::string why;
    EXPECT_EQ(parse_duration(text, &why), std::nullopt) << text;
    EXPECT_NE(why.find(text), std::string::npos) << why;
  }
}

TEST(cli_duration, what_it_formats_it_reads_back) {
  for (const std::chrono::milliseconds d : {250ms, 1000ms, 59000ms, 125000ms, 3720000ms}) {
    EXPECT_EQ(parse_duration(format_duration(d)), d) << format_duration(d);
  }
}

}  // namespace
}  // namespace rlock::cli
