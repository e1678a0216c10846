// Unit tests of Redis Cluster's key space without a server (src/detail/cluster_slots.cpp): key
// slots with hash tags, CLUSTER SLOTS replies, MOVED and ASK replies.
#include "detail/cluster_slots.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <system_error>

#include "detail/lock_keys.hpp"
#include "detail/resp.hpp"

namespace {

using rlock::detail::cluster_endpoint;
using rlock::detail::key_slot;
using rlock::detail::parse_cluster_slots;
using rlock::detail::parse_redirect;

rlock::reply parse(std::string_view bytes) {
  rlock::detail::resp_reader r;
  r.feed(bytes.data(), bytes.size());
  rlock::reply out;
  std::error_code ec;
  EXPECT_TRUE(r.next(out, ec)) << bytes;
  EXPECT_FALSE(ec);
  return out;
}

// The values redis-server 7.0's CLUSTER KEYSLOT gives (and the cluster spec's CRC16 check
// value: CRC16("123456789") = 0x31C3, 12739 modulo 16384).
TEST(cluster_slots, key_slot_is_redis_crc16_modulo_16384) {
  EXPECT_EQ(key_slot("123456789"), 12739);
  EXPECT_EQ(key_slot("foo"), 12182);
  EXPECT_EQ(key_slot("bar"), 5061);
  EXPECT_EQ(key_slot(""), 0);
  EXPECT_EQ(key_slot(std::string_view("\0\xff", 2)), key_slot(std::string_view("\0\xff", 2)));
}

TEST(cluster_slots, a_hash_tag_decides_the_slot) {
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("user1000"));
  EXPECT_EQ(key_slot("{user1000}.followers"), key_slot("user1000"));
  EXPECT_EQ(key_slot("foo{bar}{zap}"), key_slot("bar"));      // the first tag only
  EXPECT_EQ(key_slot("foo{{bar}}zap"), key_slot("{bar"));     // up to the first '}'
  EXPECT_EQ(key_slot("foo{}{bar}"), key_slot("foo{}{bar}"));  // empty tag: the whole key
  EXPECT_NE(key_slot("foo{}{bar}"), key_slot("bar"));
  EXPECT_EQ(key_slot("foo{bar"), key_slot("foo{bar"));  // unclosed: the whole key
  EXPECT_NE(key_slot("foo{bar"), key_slot("bar"));
}

// Every key and channel of an object shares the slot of the lock key, with or without a tag in
// the name: each script runs on one node. Not for a name with a '{' and no tag, which Cluster
// mode refuses.
TEST(cluster_slots, an_objects_keys_and_channels_share_its_slot) {
  for (const std::string name : {"plain", "a{b}", "{tagged}", "x}{y}"}) {
    EXPECT_TRUE(rlock::detail::keeps_one_slot(name)) << name;
    const auto slot = key_slot(name);
    EXPECT_EQ(key_slot(rlock::detail::lock_channel(name)), slot) << name;
    EXPECT_EQ(key_slot(rlock::detail::unlock_latch(name, "0123456789abcdef0123456789abcdef")), slot)
        << name;
    EXPECT_EQ(key_slot(rlock::detail::token_key(name)), slot) << name;
    EXPECT_EQ(key_slot(rlock::detail::queue_key(name)), slot) << name;
    EXPECT_EQ(key_slot(rlock::detail::process_handoff_channel(name, "uuid")), slot) << name;
  }
  for (const std::string name : {"x{}y", "a{b", "{", "{}"}) {
    EXPECT_FALSE(rlock::detail::keeps_one_slot(name)) << name;
    EXPECT_NE(key_slot(rlock::detail::lock_channel(name)), key_slot(name)) << name;
  }
}

TEST(cluster_slots, cluster_slots_reply_gives_each_range_its_master) {
  // Redis 7: [first, last, [host, port, id, {metadata}], [replica ...]].
  const auto reply = parse(
      "*2\r\n"
      "*4\r\n:0\r\n:8191\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n"
      "*3\r\n$9\r\n127.0.0.1\r\n:7003\r\n$3\r\nid2\r\n"
      "*3\r\n:8192\r\n:16383\r\n*2\r\n$0\r\n\r\n:7001\r\n");
  std::string why;
  const auto map = parse_cluster_slots(reply, "10.0.0.9", &why);
  ASSERT_TRUE(map) << why;
  ASSERT_EQ(map->size(), 2u);
  EXPECT_EQ((*map)[0].first, 0);
  EXPECT_EQ((*map)[0].last, 8191);
  EXPECT_EQ((*map)[0].master, (cluster_endpoint{"127.0.0.1", 7000}));
  EXPECT_EQ((*map)[1].first, 8192);
  EXPECT_EQ((*map)[1].last, 16383);
  // An empty host: the node that answered.
  EXPECT_EQ((*map)[1].master, (cluster_endpoint{"10.0.0.9", 7001}));
}

TEST(cluster_slots, malformed_cluster_slots_replies_are_refused_with_a_reason) {
  const char* bad[] = {
      "+OK\r\n",                                              // not an array
      "*0\r\n",                                               // no slot served
      "*1\r\n*2\r\n:0\r\n:1\r\n",                             // no master
      "*1\r\n*3\r\n:5\r\n:4\r\n*2\r\n$1\r\nh\r\n:1\r\n",      // first > last
      "*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:1\r\n",  // slot out of range
      "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\nh\r\n:0\r\n",      // port 0
      "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n:1\r\n:1\r\n",           // host not a string
  };
  for (const char* bytes : bad) {
    std::string why;
    EXPECT_FALSE(parse_cluster_slots(parse(bytes), "h", &why)) << bytes;
    EXPECT_FALSE(why.empty()) << bytes;
  }
}

TEST(cluster_slots, moved_and_ask_replies_name_the_slot_and_the_node) {
  auto r = parse_redirect("MOVED 3999 127.0.0.1:6381", "x");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->ask);
  EXPECT_EQ(r->slot, 3999);
  EXPECT_EQ(r->to, (cluster_endpoint{"127.0.0.1", 6381}));
  r = parse_redirect("ASK 0 [::1]:7000", "x");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ask);
  EXPECT_EQ(r->to, (cluster_endpoint{"::1", 7000}));
  EXPECT_EQ(r->to.name(), "[::1]:7000");
  r = parse_redirect("ASK 16383 ::1:7000", "x");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->to, (cluster_endpoint{"::1", 7000}));
  r = parse_redirect("MOVED 1 :7000", "10.1.2.3");  // unknown endpoint: the node asked
  ASSERT_TRUE(r);
  EXPECT_EQ(r->to, (cluster_endpoint{"10.1.2.3", 7000}));
  for (const char* bad :
       {"MOVED", "MOVED 16384 h:1", "MOVED -1 h:1", "MOVED 1 h", "MOVED 1 h:0", "MOVED 1 h:65536",
        "MOVEDX 1 h:1", "CROSSSLOT Keys in request", "ASK x h:1", "MOVED 1 h :1"}) {
    EXPECT_FALSE(parse_redirect(bad, "x")) << bad;
  }
}

}  // namespace
