// What a `connected` event says of the server's eviction policy, read off INFO memory without a
// server; and the INFO line reader behind it (info_field).
#include "detail/eviction_warning.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>

namespace rlock::detail {
namespace {

TEST(info_field, a_whole_lines_value_up_to_its_line_end) {
  const std::string info =
      "# Memory\r\nused_memory:1000\r\nmaxmemory:0\r\nmaxmemory_human:0B\r\n"
      "maxmemory_policy:allkeys-lru\r\nallocator_frag_ratio:1.00\r\n";
  EXPECT_EQ(info_field(info, "maxmemory_policy"), std::optional<std::string_view>("allkeys-lru"));
  EXPECT_EQ(info_field(info, "maxmemory"), std::optional<std::string_view>("0"))
      << "not the line of a longer name that starts with it";
  EXPECT_EQ(info_field(info, "used_memory"), std::optional<std::string_view>("1000"));
  EXPECT_EQ(info_field("a:1\nb:2", "b"), std::optional<std::string_view>("2")) << "LF, and last";
  EXPECT_EQ(info_field("a:\r\n", "a"), std::optional<std::string_view>(""));
  EXPECT_EQ(info_field("xa:1\r\n", "a"), std::nullopt) << "mid-line";
  EXPECT_EQ(info_field("a\r\n", "a"), std::nullopt) << "no colon";
  EXPECT_EQ(info_field("", "a"), std::nullopt);
}

TEST(eviction_warning, every_policy_but_noeviction_is_named) {
  const auto info = [](std::string_view policy) {
    return "# Memory\r\nmaxmemory:104857600\r\nmaxmemory_policy:" + std::string(policy) +
           "\r\nmem_fragmentation_ratio:1.5\r\n";
  };
  EXPECT_EQ(eviction_warning(info("noeviction")), "");
  for (const std::string_view p : {"allkeys-lru", "volatile-lru", "allkeys-lfu", "volatile-lfu",
                                   "allkeys-random", "volatile-random", "volatile-ttl"}) {
    EXPECT_EQ(eviction_warning(info(p)),
              "maxmemory-policy is " + std::string(p) +
                  ": under memory pressure the server may evict keys, held locks included "
                  "(noeviction keeps them)");
  }
  // A reply that does not tell: no warning.
  EXPECT_EQ(eviction_warning("# Memory\r\nused_memory:1\r\n"), "");
  EXPECT_EQ(eviction_warning("maxmemory_policy:\r\n"), "");
  EXPECT_EQ(eviction_warning(""), "");
}

}  // namespace
}  // namespace rlock::detail
