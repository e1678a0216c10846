// parse_switch_master: the payload of a Sentinel's "+switch-master" announcement (no server).
#include <gtest/gtest.h>

#include <string>

#include "detail/sentinel_watch.hpp"

namespace rlock::detail {
namespace {

TEST(sentinel_switch, names_the_new_address_of_the_watched_master) {
  const auto to = parse_switch_master("mymaster 127.0.0.1 6379 10.0.0.7 6380", "mymaster");
  ASSERT_TRUE(to);
  EXPECT_EQ(to->first, "10.0.0.7");
  EXPECT_EQ(to->second, 6380);
}

TEST(sentinel_switch, keeps_a_host_name_or_ipv6_address_as_it_comes) {
  const auto to = parse_switch_master("m ::1 7000 fe80::1 7001", "m");
  ASSERT_TRUE(to);
  EXPECT_EQ(to->first, "fe80::1");
  EXPECT_EQ(to->second, 7001);
}

TEST(sentinel_switch, ignores_another_masters_switch) {
  EXPECT_FALSE(parse_switch_master("other 127.0.0.1 6379 127.0.0.1 6380", "mymaster"));
  // A name is matched whole, not as a prefix.
  EXPECT_FALSE(parse_switch_master("mymaster2 127.0.0.1 6379 127.0.0.1 6380", "mymaster"));
  EXPECT_FALSE(parse_switch_master("my 127.0.0.1 6379 127.0.0.1 6380", "mymaster"));
}

TEST(sentinel_switch, refuses_a_payload_of_another_shape) {
  for (const std::string payload : {
           "", "mymaster",
           "mymaster 127.0.0.1 6379 127.0.0.1",             // no new port
           "mymaster 127.0.0.1 6379 127.0.0.1 6380 extra",  // a word too many
           "mymaster 127.0.0.1 6379 127.0.0.1 0",           // port out of range
           "mymaster 127.0.0.1 6379 127.0.0.1 65536", "mymaster 127.0.0.1 6379 127.0.0.1 63a",
           "mymaster 127.0.0.1 6379  6380",            // an empty host
           "mymaster 127.0.0.1 6379 127.0.0.1 6380 ",  // a trailing space
       }) {
    EXPECT_FALSE(parse_switch_master(payload, "mymaster")) << '"' << payload << '"';
  }
}

}  // namespace
}  // namespace rlock::detail
