// Permit ids and key names of the permit-expirable semaphore (no server).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "detail/expirable_semaphore_ops.hpp"

namespace rlock::detail {
namespace {

TEST(permit_id, hex_and_bytes_round_trip_as_java_prints_them) {
  const std::string bytes("\x00\x01\x7f\x80\xff\x10\x20\x30\x40\x50\x60\x70\x8a\x9b\xac\xbd", 16);
  const std::string hex = permit_id_hex(bytes);
  EXPECT_EQ(hex, "00017f80ff102030405060708a9bacbd");
  EXPECT_EQ(permit_id_bytes(hex), bytes);
  EXPECT_EQ(permit_id_bytes("00017F80FF102030405060708A9BACBD"), bytes);  // either case
}

TEST(permit_id, anything_but_32_hex_characters_is_refused) {
  EXPECT_FALSE(permit_id_bytes(""));
  EXPECT_FALSE(permit_id_bytes(std::string(31, 'a')));
  EXPECT_FALSE(permit_id_bytes(std::string(33, 'a')));
  EXPECT_FALSE(permit_id_bytes(std::string(31, 'a') + "g"));
  EXPECT_FALSE(permit_id_bytes(std::string(31, 'a') + " "));
  EXPECT_FALSE(permit_id_bytes(std::string(30, 'a') + "-0"));
}

TEST(permit_id, random_ids_are_16_bytes_and_do_not_repeat) {
  std::set<std::string> seen;
  for (int i = 0; i < 10'000; ++i) {
    const std::string id = random_permit_id();
    ASSERT_EQ(id.size(), 16u);
    ASSERT_TRUE(seen.insert(id).second) << "repeated after " << i;
  }
}

TEST(permit_id, the_lease_set_is_named_as_redissons_suffix_name) {
  EXPECT_EQ(expirable_semaphore_timeout_key("pool"), "{pool}:timeout");
  EXPECT_EQ(expirable_semaphore_timeout_key("a{b}c"), "a{b}c:timeout");
  EXPECT_EQ(expirable_semaphore_timeout_key("{x}"), "{x}:timeout");
}

}  // namespace
}  // namespace rlock::detail
