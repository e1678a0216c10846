// server_client: a connection's id on the server, from CLIENT INFO, and the CLIENT KILL that
// closes it there (no server).
#include "detail/server_client.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rlock::detail {
namespace {

TEST(server_client, parses_id_and_addr_of_a_client_info_line) {
  // Redis 7.0's CLIENT INFO, as it ends (with a newline).
  const std::string info =
      "id=12 addr=127.0.0.1:51234 laddr=127.0.0.1:6379 fd=9 name= age=0 idle=0 flags=N db=0 "
      "sub=0 psub=0 ssub=0 multi=-1 qbuf=26 qbuf-free=20448 argv-mem=10 multi-mem=0 rbs=1024 "
      "rbp=0 obl=0 oll=0 omem=0 tot-mem=22298 events=r cmd=client|info user=default redir=-1 "
      "resp=2\n";
  const auto c = parse_client_info(info);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->id, "12");
  EXPECT_EQ(c->addr, "127.0.0.1:51234");  // addr=, not laddr=
}

TEST(server_client, takes_an_ipv6_address_whole) {
  const auto c = parse_client_info("id=3 addr=[::1]:40000 laddr=[::1]:6379 fd=8\n");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->addr, "[::1]:40000");
}

TEST(server_client, a_name_that_looks_like_a_field_is_not_taken_for_one) {
  // A field's value cannot hold a space, but a name can end in "id=": only whole items count.
  const auto c = parse_client_info("id=5 addr=10.0.0.1:1 laddr=10.0.0.2:6379 name=xid=9\n");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->id, "5");
}

TEST(server_client, refuses_a_reply_without_a_usable_id_or_addr) {
  EXPECT_FALSE(parse_client_info(""));
  EXPECT_FALSE(parse_client_info("addr=127.0.0.1:1 fd=3"));
  EXPECT_FALSE(parse_client_info("id=7 laddr=127.0.0.1:6379"));
  EXPECT_FALSE(parse_client_info("id=x7 addr=127.0.0.1:1"));
  EXPECT_FALSE(parse_client_info("id= addr=127.0.0.1:1"));
  EXPECT_FALSE(parse_client_info("id=7 addr="));
  EXPECT_FALSE(parse_client_info("id=123456789012345678901 addr=127.0.0.1:1"));
}

TEST(server_client, kill_matches_both_id_and_addr) {
  std::string out = "prefix";
  encode_kill({"12", "127.0.0.1:51234"}, out);
  EXPECT_EQ(out,
            "prefix*8\r\n$6\r\nCLIENT\r\n$4\r\nKILL\r\n$2\r\nID\r\n$2\r\n12\r\n$4\r\nADDR\r\n"
            "$15\r\n127.0.0.1:51234\r\n$6\r\nSKIPME\r\n$3\r\nyes\r\n");
}

TEST(server_client, add_unique_keeps_order_and_skips_what_is_there) {
  std::vector<server_client> to{{"1", "a:1"}, {"2", "a:2"}};
  add_unique(to, {{"2", "a:2"}, {"3", "a:3"}, {"1", "b:1"}, {"3", "a:3"}});
  const std::vector<server_client> want{{"1", "a:1"}, {"2", "a:2"}, {"3", "a:3"}, {"1", "b:1"}};
  EXPECT_EQ(to, want);
}

}  // namespace
}  // namespace rlock::detail
