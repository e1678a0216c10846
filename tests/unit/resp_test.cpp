// Unit tests of RESP encoding and parsing (src/detail/resp.cpp) and of rlock::reply
// (src/reply.cpp), whose trees the parser produces.
#include "detail/resp.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "rlock/error.hpp"
#include "rlock/reply.hpp"

namespace {

using namespace std::string_literals;
using namespace std::string_view_literals;
using rlock::reply;
using rlock::reply_type;
using rlock::reply_view;
using rlock::detail::encode_command;
using rlock::detail::resp_reader;

std::string encode(std::vector<std::string_view> args) {
  return encode_command(std::span<const std::string_view>(args));
}

// Parses exactly one complete reply from `bytes` fed at once.
reply parse_one(std::string_view bytes) {
  resp_reader r;
  r.feed(bytes.data(), bytes.size());
  reply out;
  std::error_code ec;
  EXPECT_TRUE(r.next(out, ec)) << "incomplete: " << bytes;
  EXPECT_FALSE(ec) << ec.message();
  reply extra;
  EXPECT_FALSE(r.next(extra, ec)) << "more than one reply in: " << bytes;
  EXPECT_FALSE(ec);
  return out;
}

// ---- encode_command ----

TEST(resp_encode, encodes_simple_command) {
  EXPECT_EQ(encode({"SET", "key", "value"}), "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n");
}

TEST(resp_encode, encodes_single_argument) {
  EXPECT_EQ(encode({"PING"}), "*1\r\n$4\r\nPING\r\n");
}

TEST(resp_encode, encodes_empty_arguments) {
  EXPECT_EQ(encode({"SET", "", ""}), "*3\r\n$3\r\nSET\r\n$0\r\n\r\n$0\r\n\r\n");
}

TEST(resp_encode, encodes_binary_arguments_verbatim) {
  const std::string bin = "a\0b\r\nc\n\r$*"s;
  ASSERT_EQ(bin.size(), 10u);
  const std::string out = encode({"SET", "k\0"sv, bin});
  EXPECT_EQ(out, "*3\r\n$3\r\nSET\r\n$2\r\nk\0\r\n$10\r\na\0b\r\nc\n\r$*\r\n"s);
}

TEST(resp_encode, encodes_all_byte_values) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  const std::string out = encode({"X", all});
  EXPECT_EQ(out, "*2\r\n$1\r\nX\r\n$256\r\n"s + all + "\r\n");
}

TEST(resp_encode, encodes_more_than_sixteen_arguments) {
  for (std::size_t n : {15u, 16u, 17u, 40u, 1000u}) {
    std::vector<std::string> storage;
    storage.push_back("DEL");
    for (std::size_t i = 1; i < n; ++i) storage.push_back("key:" + std::to_string(i));
    std::vector<std::string_view> args(storage.begin(), storage.end());
    std::string expected = "*" + std::to_string(n) + "\r\n";
    for (const auto& s : storage) {
      expected += "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
    }
    EXPECT_EQ(encode(args), expected) << n << " args";
  }
}

TEST(resp_encode, encodes_long_argument) {
  const std::string big(100000, 'x');
  EXPECT_EQ(encode({"SET", "k", big}), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\n" + big + "\r\n");
}

TEST(resp_encode, appends_to_existing_output) {
  std::string out = "prefix";
  std::vector<std::string_view> a = {"PING"};
  encode_command(a, out);
  std::vector<std::string_view> b = {"ECHO", "hi"};
  encode_command(b, out);
  EXPECT_EQ(out, "prefix*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n");
}

TEST(resp_encode, encoded_command_parses_back_as_the_same_strings) {
  // A command is a RESP array of bulk strings, so the reader can check the encoder.
  std::mt19937 rng(77);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::string> storage(1 + rng() % 40);
    for (auto& s : storage) {
      s.resize(rng() % 64);
      for (auto& c : s) c = static_cast<char>(rng() % 256);
    }
    std::vector<std::string_view> args(storage.begin(), storage.end());
    const reply r = parse_one(encode(args));
    ASSERT_TRUE(r.is_array());
    ASSERT_EQ(r.size(), storage.size());
    for (std::size_t i = 0; i < storage.size(); ++i) {
      EXPECT_EQ(r[i].type(), reply_type::string);
      EXPECT_EQ(r[i].str(), storage[i]);
    }
  }
}

// ---- resp_reader ----

TEST(resp_reader, parses_status) {
  const reply r = parse_one("+OK\r\n");
  EXPECT_EQ(r.type(), reply_type::status);
  EXPECT_EQ(r.str(), "OK");
}

TEST(resp_reader, parses_error) {
  const reply r = parse_one("-ERR unknown command 'FOO'\r\n");
  EXPECT_EQ(r.type(), reply_type::error);
  EXPECT_TRUE(r.is_error());
  EXPECT_EQ(r.str(), "ERR unknown command 'FOO'");
}

TEST(resp_reader, parses_integers) {
  EXPECT_EQ(parse_one(":0\r\n").integer(), 0);
  EXPECT_EQ(parse_one(":42\r\n").integer(), 42);
  EXPECT_EQ(parse_one(":-7\r\n").integer(), -7);
  EXPECT_EQ(parse_one(":9223372036854775807\r\n").integer(), 9223372036854775807LL);
  EXPECT_EQ(parse_one(":-9223372036854775808\r\n").integer(), -9223372036854775807LL - 1);
  EXPECT_TRUE(parse_one(":1\r\n").is_integer());
}

TEST(resp_reader, parses_bulk_strings) {
  const reply r = parse_one("$5\r\nhello\r\n");
  EXPECT_EQ(r.type(), reply_type::string);
  EXPECT_EQ(r.str(), "hello");
  const reply e = parse_one("$0\r\n\r\n");
  EXPECT_TRUE(e.is_string());
  EXPECT_EQ(e.str(), "");
  const reply b = parse_one("$6\r\na\0\r\nb\n\r\n"sv);
  EXPECT_EQ(b.str(), "a\0\r\nb\n"sv);
}

TEST(resp_reader, parses_nil_bulk_and_nil_array) {
  const reply n1 = parse_one("$-1\r\n");
  EXPECT_TRUE(n1.is_nil());
  EXPECT_EQ(n1.type(), reply_type::nil);
  const reply n2 = parse_one("*-1\r\n");
  EXPECT_TRUE(n2.is_nil());
}

TEST(resp_reader, parses_empty_array) {
  const reply r = parse_one("*0\r\n");
  EXPECT_TRUE(r.is_array());
  EXPECT_EQ(r.size(), 0u);
}

TEST(resp_reader, parses_nested_arrays) {
  // [ "a", [ 1, nil, [ "deep", -ERR x ] ], +OK, [] ]
  const std::string bytes =
      "*4\r\n"
      "$1\r\na\r\n"
      "*3\r\n:1\r\n$-1\r\n*2\r\n$4\r\ndeep\r\n-ERR x\r\n"
      "+OK\r\n"
      "*0\r\n";
  const reply r = parse_one(bytes);
  ASSERT_TRUE(r.is_array());
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].str(), "a");
  const reply_view inner = r[1];
  ASSERT_TRUE(inner.is_array());
  ASSERT_EQ(inner.size(), 3u);
  EXPECT_EQ(inner[0].integer(), 1);
  EXPECT_TRUE(inner[1].is_nil());
  ASSERT_EQ(inner[2].size(), 2u);
  EXPECT_EQ(inner[2][0].str(), "deep");
  EXPECT_TRUE(inner[2][1].is_error());
  EXPECT_EQ(inner[2][1].str(), "ERR x");
  EXPECT_EQ(r[2].type(), reply_type::status);
  EXPECT_TRUE(r[3].is_array());
  EXPECT_EQ(r[3].size(), 0u);
}

// A pipelined stream of replies of every kind, checked reply by reply.
constexpr std::string_view stream =
    "+OK\r\n"
    ":12345\r\n"
    "$-1\r\n"
    "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    "$11\r\nhello\r\nworl\r\n"
    "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$0\r\n\r\n"
    "*2\r\n*1\r\n:1\r\n*0\r\n";

void check_stream(const std::vector<reply>& got) {
  ASSERT_EQ(got.size(), 7u);
  EXPECT_EQ(got[0].type(), reply_type::status);
  EXPECT_EQ(got[0].str(), "OK");
  EXPECT_EQ(got[1].integer(), 12345);
  EXPECT_TRUE(got[2].is_nil());
  EXPECT_TRUE(got[3].is_error());
  EXPECT_EQ(got[3].str(), "WRONGTYPE Operation against a key holding the wrong kind of value");
  EXPECT_EQ(got[4].str(), "hello\r\nworl");
  ASSERT_EQ(got[5].size(), 3u);
  EXPECT_EQ(got[5][0].str(), "message");
  EXPECT_EQ(got[5][1].str(), "ch");
  EXPECT_EQ(got[5][2].str(), "");
  ASSERT_EQ(got[6].size(), 2u);
  EXPECT_EQ(got[6][0][0].integer(), 1);
  EXPECT_EQ(got[6][1].size(), 0u);
}

TEST(resp_reader, parses_pipelined_replies_fed_at_once) {
  resp_reader r;
  r.feed(stream.data(), stream.size());
  std::vector<reply> got;
  std::error_code ec;
  for (reply x; r.next(x, ec);) got.push_back(std::move(x));
  EXPECT_FALSE(ec);
  check_stream(got);
}

TEST(resp_reader, parses_replies_fed_byte_by_byte) {
  resp_reader r;
  std::vector<reply> got;
  std::error_code ec;
  for (char c : stream) {
    r.feed(&c, 1);
    for (reply x; r.next(x, ec);) got.push_back(std::move(x));
    ASSERT_FALSE(ec);
  }
  check_stream(got);
}

TEST(resp_reader, parses_replies_fed_in_random_chunks) {
  std::mt19937 rng(2024);
  for (int round = 0; round < 200; ++round) {
    resp_reader r;
    std::vector<reply> got;
    std::error_code ec;
    std::size_t pos = 0;
    while (pos < stream.size()) {
      const std::size_t n = std::min<std::size_t>(1 + rng() % 13, stream.size() - pos);
      r.feed(stream.data() + pos, n);
      pos += n;
      for (reply x; r.next(x, ec);) got.push_back(std::move(x));
      ASSERT_FALSE(ec);
    }
    check_stream(got);
    if (HasFailure()) return;
  }
}

TEST(resp_reader, incomplete_reply_needs_more_bytes) {
  resp_reader r;
  reply out;
  std::error_code ec;
  EXPECT_FALSE(r.next(out, ec));  // nothing fed
  EXPECT_FALSE(ec);
  const std::string part = "*2\r\n$3\r\nfoo\r\n$3\r\nba";
  r.feed(part.data(), part.size());
  EXPECT_FALSE(r.next(out, ec));
  EXPECT_FALSE(ec);
  EXPECT_TRUE(out.is_nil()) << "out untouched";
  r.feed("r\r\n", 3);
  ASSERT_TRUE(r.next(out, ec));
  EXPECT_FALSE(ec);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].str(), "bar");
}

TEST(resp_reader, corrupt_type_byte_is_a_protocol_error) {
  resp_reader r;
  r.feed("?x\r\n", 4);
  reply out;
  std::error_code ec;
  EXPECT_FALSE(r.next(out, ec));
  EXPECT_EQ(ec, rlock::errc::protocol_error);
}

TEST(resp_reader, error_text_names_what_broke_the_stream_only_after_it_broke) {
  resp_reader r;
  EXPECT_EQ(r.error_text(), "");
  const std::string http = "HTTP/1.1 400 Bad Request\r\n";
  r.feed(http.data(), http.size());
  EXPECT_EQ(r.error_text(), "");  // fed, not parsed yet
  reply out;
  std::error_code ec;
  EXPECT_FALSE(r.next(out, ec));
  EXPECT_EQ(ec, rlock::errc::protocol_error);
  EXPECT_NE(r.error_text().find("Protocol error"), std::string::npos) << r.error_text();
  EXPECT_NE(r.error_text().find("\"H\""), std::string::npos) << r.error_text();
  r.reset();
  EXPECT_EQ(r.error_text(), "");
}

TEST(resp_reader, corrupt_after_good_reply_returns_good_reply_first) {
  resp_reader r;
  const std::string bytes = "+OK\r\n?garbage\r\n";
  r.feed(bytes.data(), bytes.size());
  reply out;
  std::error_code ec;
  ASSERT_TRUE(r.next(out, ec));
  EXPECT_FALSE(ec);
  EXPECT_EQ(out.str(), "OK");
  EXPECT_FALSE(r.next(out, ec));
  EXPECT_EQ(ec, rlock::errc::protocol_error);
}

TEST(resp_reader, malformed_lengths_and_integers_are_protocol_errors) {
  for (std::string_view bad :
       {"$abc\r\n"sv, ":abc\r\n"sv, ":12x\r\n"sv, "*abc\r\n"sv, "$-2\r\n"sv, "*1\r\n?\r\n"sv}) {
    resp_reader r;
    r.feed(bad.data(), bad.size());
    reply out;
    std::error_code ec;
    EXPECT_FALSE(r.next(out, ec)) << bad;
    EXPECT_EQ(ec, rlock::errc::protocol_error) << bad;
  }
}

TEST(resp_reader, protocol_error_is_sticky_until_reset) {
  resp_reader r;
  r.feed("?x\r\n", 4);
  reply out;
  std::error_code ec;
  EXPECT_FALSE(r.next(out, ec));
  ASSERT_EQ(ec, rlock::errc::protocol_error);
  // Even well-formed bytes afterwards do not resynchronise the stream.
  r.feed("+OK\r\n", 5);
  std::error_code ec2;
  EXPECT_FALSE(r.next(out, ec2));
  EXPECT_EQ(ec2, rlock::errc::protocol_error);
  // reset() recovers.
  r.reset();
  r.feed("+OK\r\n", 5);
  std::error_code ec3;
  ASSERT_TRUE(r.next(out, ec3));
  EXPECT_FALSE(ec3);
  EXPECT_EQ(out.str(), "OK");
}

TEST(resp_reader, reset_drops_partial_input) {
  resp_reader r;
  r.feed("$10\r\nabc", 8);
  reply out;
  std::error_code ec;
  EXPECT_FALSE(r.next(out, ec));
  r.reset();
  r.feed(":5\r\n", 4);
  ASSERT_TRUE(r.next(out, ec));
  EXPECT_FALSE(ec);
  EXPECT_EQ(out.integer(), 5);
}

TEST(resp_reader, large_bulk_in_chunks) {
  const std::string payload(200000, 'z');
  const std::string bytes = "$200000\r\n" + payload + "\r\n";
  resp_reader r;
  reply out;
  std::error_code ec;
  for (std::size_t pos = 0; pos < bytes.size(); pos += 4096) {
    const std::size_t n = std::min<std::size_t>(4096, bytes.size() - pos);
    EXPECT_FALSE(r.next(out, ec));
    r.feed(bytes.data() + pos, n);
  }
  ASSERT_TRUE(r.next(out, ec));
  EXPECT_FALSE(ec);
  EXPECT_EQ(out.str().size(), payload.size());
  EXPECT_EQ(out.str(), payload);
}

// ---- reply ----

TEST(reply, default_is_nil) {
  const reply r;
  EXPECT_TRUE(r.is_nil());
  EXPECT_EQ(r.type(), reply_type::nil);
  EXPECT_EQ(r.str(), "");
  EXPECT_EQ(r.integer(), 0);
  EXPECT_EQ(r.size(), 0u);
  EXPECT_TRUE(r[0].is_nil());
  EXPECT_EQ(r.to_string(), "(nil)");
  const reply_view v;
  EXPECT_TRUE(v.is_nil());
  EXPECT_EQ(v.to_string(), "(nil)");
}

TEST(reply, type_predicates) {
  const reply s = parse_one("$1\r\nx\r\n");
  EXPECT_TRUE(s.is_string());
  EXPECT_FALSE(s.is_array() || s.is_integer() || s.is_nil() || s.is_error());
  const reply a = parse_one("*1\r\n:1\r\n");
  EXPECT_TRUE(a.is_array());
  EXPECT_FALSE(a.is_string() || a.is_integer() || a.is_nil() || a.is_error());
  const reply st = parse_one("+PONG\r\n");
  EXPECT_EQ(st.type(), reply_type::status);
  EXPECT_FALSE(st.is_string() || st.is_array() || st.is_integer() || st.is_nil() || st.is_error());
}

TEST(reply, to_string_renders_like_redis_cli) {
  EXPECT_EQ(parse_one("$-1\r\n").to_string(), "(nil)");
  EXPECT_EQ(parse_one(":42\r\n").to_string(), "(integer) 42");
  EXPECT_EQ(parse_one(":-1\r\n").to_string(), "(integer) -1");
  EXPECT_EQ(parse_one("-ERR no such key\r\n").to_string(), "(error) ERR no such key");
  EXPECT_EQ(parse_one("+OK\r\n").to_string(), "OK");
  EXPECT_EQ(parse_one("$5\r\nhello\r\n").to_string(), "\"hello\"");
  EXPECT_EQ(parse_one("$0\r\n\r\n").to_string(), "\"\"");
  EXPECT_EQ(parse_one("*0\r\n").to_string(), "(empty array)");
  EXPECT_EQ(parse_one("*3\r\n$1\r\na\r\n:2\r\n$-1\r\n").to_string(),
            "1) \"a\"\n2) (integer) 2\n3) (nil)");
}

TEST(reply, to_string_numbers_beyond_nine_elements) {
  std::string bytes = "*11\r\n";
  std::string expected;
  for (int i = 1; i <= 11; ++i) {
    bytes += ":" + std::to_string(i) + "\r\n";
    if (i != 1) expected += '\n';
    // redis-cli right-aligns the indices to the widest one: " 1)" ... "11)".
    expected += (i < 10 ? " " : "") + std::to_string(i) + ") (integer) " + std::to_string(i);
  }
  EXPECT_EQ(parse_one(bytes).to_string(), expected);
}

// BUG (src/reply.cpp, reply_view::to_string, array case): nested arrays are not indented as
// redis-cli does, so different replies render identically. redis-cli prints [[1,2],3] as
//   1) 1) (integer) 1
//      2) (integer) 2
//   2) (integer) 3
// but to_string() gives "1) 1) (integer) 1\n2) (integer) 2\n2) (integer) 3"; and [[1,2]] and
// [[1],2] both render as "1) 1) (integer) 1\n2) (integer) 2".
// Regression test: this was a bug in the library, found by this test and since fixed.
TEST(reply, to_string_indents_nested_arrays_like_redis_cli) {
  EXPECT_EQ(parse_one("*2\r\n*2\r\n:1\r\n:2\r\n:3\r\n").to_string(),
            "1) 1) (integer) 1\n   2) (integer) 2\n2) (integer) 3");
  EXPECT_NE(parse_one("*1\r\n*2\r\n:1\r\n:2\r\n").to_string(),
            parse_one("*2\r\n*1\r\n:1\r\n:2\r\n").to_string());
}

// Deviation (src/reply.cpp, reply_view::to_string, string case): redis-cli escapes
// non-printable bytes and quotes ("a\nb" is shown as "a\\nb", a quote as \"); to_string() copies
// the raw bytes between quotes, so a value with a newline or a quote is ambiguous in logs.
// Regression test: this was a bug in the library, found by this test and since fixed.
TEST(reply, to_string_escapes_binary_strings_like_redis_cli) {
  EXPECT_EQ(parse_one("$3\r\na\nb\r\n").to_string(), "\"a\\nb\"");
  EXPECT_EQ(parse_one("$3\r\na\"b\r\n").to_string(), "\"a\\\"b\"");
  EXPECT_EQ(parse_one("$2\r\n\0\x01\r\n"sv).to_string(), "\"\\x00\\x01\"");
}

TEST(reply, accessors_on_wrong_types_return_empty_or_zero) {
  const reply i = parse_one(":99\r\n");
  EXPECT_EQ(i.str(), "");
  EXPECT_EQ(i.size(), 0u);
  EXPECT_TRUE(i[0].is_nil());

  const reply s = parse_one("$3\r\n123\r\n");
  EXPECT_EQ(s.integer(), 0) << "a string is not converted to an integer";
  EXPECT_EQ(s.size(), 0u);
  EXPECT_TRUE(s[0].is_nil());

  const reply a = parse_one("*2\r\n:1\r\n:2\r\n");
  EXPECT_EQ(a.str(), "");
  EXPECT_EQ(a.integer(), 0);
  EXPECT_TRUE(a[2].is_nil()) << "out of range";
  EXPECT_TRUE(a[static_cast<std::size_t>(-1)].is_nil());
  EXPECT_EQ(a[2].to_string(), "(nil)");

  const reply n = parse_one("$-1\r\n");
  EXPECT_EQ(n.str(), "");
  EXPECT_EQ(n.integer(), 0);
  EXPECT_EQ(n.size(), 0u);

  const reply e = parse_one("-ERR boom\r\n");
  EXPECT_EQ(e.integer(), 0);
  EXPECT_EQ(e.size(), 0u);
  EXPECT_EQ(e.str(), "ERR boom");
}

TEST(reply, is_move_only) {
  static_assert(!std::is_copy_constructible_v<reply>);
  static_assert(!std::is_copy_assignable_v<reply>);
  static_assert(std::is_nothrow_move_constructible_v<reply>);
  static_assert(std::is_nothrow_move_assignable_v<reply>);
  static_assert(std::is_copy_constructible_v<reply_view>);
}

TEST(reply, move_construction_transfers_ownership) {
  reply a = parse_one("*2\r\n$3\r\nfoo\r\n:7\r\n");
  const reply_view elem = a[0];
  reply b(std::move(a));
  EXPECT_TRUE(a.is_nil());  // NOLINT(bugprone-use-after-move): moved-from is defined as nil
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move)
  ASSERT_TRUE(b.is_array());
  EXPECT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1].integer(), 7);
  // Views into the tree stay valid: the tree itself did not move.
  EXPECT_EQ(elem.str(), "foo");
}

TEST(reply, move_assignment_frees_old_and_takes_new) {
  reply a = parse_one("$3\r\nold\r\n");
  reply b = parse_one(":5\r\n");
  a = std::move(b);
  EXPECT_TRUE(b.is_nil());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.integer(), 5);
  a = reply{};
  EXPECT_TRUE(a.is_nil());
}

TEST(reply, self_move_assignment_keeps_value) {
  reply a = parse_one("+OK\r\n");
  reply& alias = a;
  a = std::move(alias);
  EXPECT_EQ(a.str(), "OK");
}

TEST(reply, replies_in_a_vector_survive_reallocation) {
  std::vector<reply> v;  // not reserved: the point is that it reallocates
  // NOLINTNEXTLINE(performance-inefficient-vector-operation)
  for (int i = 0; i < 100; ++i) v.push_back(parse_one(":" + std::to_string(i) + "\r\n"));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(v[static_cast<std::size_t>(i)].integer(), i);
}

}  // namespace

// Found by tests/fuzz/replies_fuzz.cpp: a "*<huge>" header made hiredis allocate the whole
// element table up front (gigabytes). Such a stream is now a protocol error.
TEST(resp_reader, refuses_arrays_claiming_more_than_sixteen_million_elements) {
  rlock::detail::resp_reader reader;
  const std::string header = "*3477120104\r\n";
  reader.feed(header.data(), header.size());
  rlock::reply r;
  std::error_code ec;
  EXPECT_FALSE(reader.next(r, ec));
  EXPECT_EQ(ec, rlock::errc::protocol_error);
}

// An error reply made locally (a failure the server never answered): one line, whatever the text.
TEST(resp, make_error_reply_keeps_the_text_on_one_line) {
  const rlock::reply r = rlock::detail::make_error_reply("SELECT failed\r\nERR x\n");
  EXPECT_TRUE(r.is_error());
  EXPECT_EQ(r.str(), "SELECT failed  ERR x ");
  const std::string binary("a\0b", 3);
  EXPECT_EQ(rlock::detail::make_error_reply(binary).str(), binary);
  EXPECT_TRUE(rlock::detail::make_error_reply("").is_error());
}
