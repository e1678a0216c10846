// spent_keys' batching: which DEL commands delete a set of spent request keys (no server).
#include "detail/spent_keys.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "detail/cluster_slots.hpp"

namespace rlock::detail {
namespace {

using keys = std::vector<std::string>;

keys numbered(const std::string& tag, int n) {
  keys out;
  for (int i = 0; i < n; ++i)
    out.push_back("rlock_semaphore_latch:{" + tag + "}:" + std::to_string(i));
  return out;
}

TEST(spent_keys_batches, one_server_takes_keys_of_any_slot_in_one_del_up_to_the_bound) {
  keys all = numbered("a", 3);
  const keys b = numbered("b", 2);
  all.insert(all.end(), b.begin(), b.end());
  const auto batches = del_batches(all, false, 64);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0], all) << "in the order given";
  const auto small = del_batches(all, false, 2);
  ASSERT_EQ(small.size(), 3u);
  EXPECT_EQ(small[0], (keys{all[0], all[1]}));
  EXPECT_EQ(small[1], (keys{all[2], all[3]}));
  EXPECT_EQ(small[2], (keys{all[4]}));
}

TEST(spent_keys_batches, cluster_mode_puts_only_keys_of_one_slot_in_each_del) {
  keys all;
  for (const char* tag : {"a", "b", "c", "a", "b"}) {
    const keys k = numbered(tag, 3);
    all.insert(all.end(), k.begin(), k.end());
  }
  const auto batches = del_batches(all, true, 4);
  std::size_t total = 0;
  for (const auto& batch : batches) {
    ASSERT_FALSE(batch.empty());
    EXPECT_LE(batch.size(), 4u);
    for (const auto& k : batch) EXPECT_EQ(key_slot(k), key_slot(batch.front())) << k;
    total += batch.size();
  }
  EXPECT_EQ(total, all.size()) << "every key, once";
  // Three slots (a, b, c): a and b have 6 keys each (two DELs), c 3 (one).
  EXPECT_EQ(batches.size(), 5u);
}

TEST(spent_keys_batches, nothing_gives_no_del) {
  EXPECT_TRUE(del_batches({}, false, 64).empty());
  EXPECT_TRUE(del_batches({}, true, 64).empty());
}

}  // namespace
}  // namespace rlock::detail
