// spent_latches: the bounded table of answered unlocks' latches (no server).
#include "detail/spent_latches.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rlock::detail {
namespace {

using latches = std::vector<std::string>;

TEST(spent_latches, take_returns_a_locks_latches_once) {
  spent_latches s;
  EXPECT_EQ(s.take("a"), latches{});
  EXPECT_EQ(s.put("a", "l1"), latches{});
  EXPECT_EQ(s.put("b", "l2"), latches{});
  EXPECT_EQ(s.put("a", "l3"), latches{});
  EXPECT_EQ(s.size(), 2u);
  EXPECT_EQ(s.take("a"), (latches{"l1", "l3"}));
  EXPECT_EQ(s.take("a"), latches{});
  EXPECT_EQ(s.take("b"), latches{"l2"});
  EXPECT_EQ(s.size(), 0u);
}

TEST(spent_latches, a_lock_keeps_at_most_max_per_lock_and_returns_the_rest) {
  spent_latches s(8, 2);
  EXPECT_EQ(s.put("a", "l1"), latches{});
  EXPECT_EQ(s.put("a", "l2"), latches{});
  EXPECT_EQ(s.put("a", "l3"), latches{"l3"}) << "not kept: for the caller to delete";
  EXPECT_EQ(s.take("a"), (latches{"l1", "l2"}));
}

TEST(spent_latches, a_full_table_returns_another_locks_latches_for_a_new_lock) {
  spent_latches s(2, 4);
  EXPECT_EQ(s.put("a", "la"), latches{});
  EXPECT_EQ(s.put("b", "lb"), latches{});
  EXPECT_EQ(s.put("a", "la2"), latches{}) << "a lock already in the table is not a new entry";
  EXPECT_EQ(s.size(), 2u);
  const latches dropped = s.put("c", "lc");
  EXPECT_EQ(s.size(), 2u);
  EXPECT_EQ(s.take("c"), latches{"lc"});
  const latches a = s.take("a");
  const latches b = s.take("b");
  EXPECT_NE(a.empty(), b.empty()) << "exactly one of a and b was dropped, whole";
  if (!a.empty()) {
    EXPECT_EQ(a, (latches{"la", "la2"}));
    EXPECT_EQ(dropped, latches{"lb"});
  } else {
    EXPECT_EQ(b, latches{"lb"});
    EXPECT_EQ(dropped, (latches{"la", "la2"}));
  }
  EXPECT_EQ(s.size(), 0u);
}

}  // namespace
}  // namespace rlock::detail
