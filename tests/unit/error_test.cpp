// Unit tests of rlock::errc, rlock::error_category and rlock::error (include/rlock/error.hpp,
// src/error.cpp).
#include "rlock/error.hpp"

#include <gtest/gtest.h>

#include <exception>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "all_errc.hpp"

namespace {

using rlock::errc;

using rlock::test::all_errc;

TEST(error, values_are_stable_and_start_at_one) {
  EXPECT_EQ(static_cast<int>(errc::invalid_argument), 1);
  EXPECT_EQ(static_cast<int>(errc::invalid_url), 2);
  EXPECT_EQ(static_cast<int>(errc::timeout), 3);
  EXPECT_EQ(static_cast<int>(errc::connection_lost), 4);
  EXPECT_EQ(static_cast<int>(errc::not_connected), 5);
  EXPECT_EQ(static_cast<int>(errc::connection_refused), 6);
  EXPECT_EQ(static_cast<int>(errc::tls_error), 7);
  EXPECT_EQ(static_cast<int>(errc::auth_failed), 8);
  EXPECT_EQ(static_cast<int>(errc::auth_required), 9);
  EXPECT_EQ(static_cast<int>(errc::no_permission), 10);
  EXPECT_EQ(static_cast<int>(errc::wrong_type), 11);
  EXPECT_EQ(static_cast<int>(errc::out_of_memory), 12);
  EXPECT_EQ(static_cast<int>(errc::script_error), 13);
  EXPECT_EQ(static_cast<int>(errc::server_error), 14);
  EXPECT_EQ(static_cast<int>(errc::protocol_error), 15);
  EXPECT_EQ(static_cast<int>(errc::server_busy), 16);
  EXPECT_EQ(static_cast<int>(errc::not_owner), 17);
  EXPECT_EQ(static_cast<int>(errc::lock_lost), 18);
  EXPECT_EQ(static_cast<int>(errc::replication_not_confirmed), 19);
  EXPECT_EQ(static_cast<int>(errc::stopped), 20);
  EXPECT_EQ(static_cast<int>(errc::shutdown), 21);
  EXPECT_EQ(static_cast<int>(errc::subscription_timeout), 22);
  EXPECT_EQ(static_cast<int>(errc::read_only), 23);
  EXPECT_EQ(static_cast<int>(errc::command_unavailable), 24);
  EXPECT_EQ(static_cast<int>(errc::cluster_redirect), 25);
}

TEST(error, category_name_is_rlock) {
  EXPECT_STREQ(rlock::error_category().name(), "rlock");
  EXPECT_EQ(&rlock::error_category(), &rlock::error_category()) << "a single instance";
  EXPECT_EQ(rlock::make_error_code(errc::timeout).category(), rlock::error_category());
}

TEST(error, every_code_has_a_distinct_non_empty_message) {
  const std::string unknown = rlock::error_category().message(0);
  std::set<std::string> seen;
  for (errc e : all_errc()) {
    const std::string m = rlock::make_error_code(e).message();
    EXPECT_FALSE(m.empty()) << static_cast<int>(e);
    EXPECT_NE(m, unknown) << "code " << static_cast<int>(e) << " has no message of its own";
    EXPECT_TRUE(seen.insert(m).second) << "duplicate message: " << m;
  }
  EXPECT_EQ(seen.size(), all_errc().size());
  // all_errc() ends at the last value: one past it has no message of its own.
  EXPECT_EQ(rlock::error_category().message(static_cast<int>(all_errc().back()) + 1), unknown)
      << "an errc value after " << static_cast<int>(all_errc().back())
      << ": name it in all_errc.hpp";
}

TEST(error, unknown_values_have_a_generic_message) {
  EXPECT_FALSE(rlock::error_category().message(0).empty());
  EXPECT_FALSE(rlock::error_category().message(999).empty());
  EXPECT_FALSE(rlock::error_category().message(-1).empty());
  EXPECT_EQ(rlock::error_category().message(999), rlock::error_category().message(0));
}

TEST(error, messages_mention_their_redis_error_code) {
  EXPECT_NE(rlock::make_error_code(errc::auth_required).message().find("NOAUTH"),
            std::string::npos);
  EXPECT_NE(rlock::make_error_code(errc::no_permission).message().find("NOPERM"),
            std::string::npos);
  EXPECT_NE(rlock::make_error_code(errc::wrong_type).message().find("WRONGTYPE"),
            std::string::npos);
  EXPECT_NE(rlock::make_error_code(errc::out_of_memory).message().find("OOM"), std::string::npos);
}

TEST(error, errc_is_an_error_code_enum) {
  static_assert(std::is_error_code_enum_v<errc>);
  // Implicit conversion through ADL make_error_code.
  std::error_code ec = errc::timeout;
  EXPECT_TRUE(ec);
  EXPECT_EQ(ec.value(), static_cast<int>(errc::timeout));
  EXPECT_EQ(ec.category(), rlock::error_category());
  EXPECT_EQ(ec.message(), rlock::error_category().message(static_cast<int>(errc::timeout)));
}

TEST(error, error_code_compares_with_errc) {
  const std::error_code ec = rlock::make_error_code(errc::connection_lost);
  EXPECT_EQ(ec, errc::connection_lost);
  EXPECT_TRUE(ec == errc::connection_lost);
  EXPECT_FALSE(ec == errc::timeout);
  EXPECT_NE(ec, errc::timeout);
  EXPECT_EQ(ec, rlock::make_error_code(errc::connection_lost));
  for (errc a : all_errc()) {
    for (errc b : all_errc()) {
      EXPECT_EQ(rlock::make_error_code(a) == b, a == b);
    }
  }
}

TEST(error, codes_differ_from_other_categories_with_same_value) {
  // errc::timeout == 3, but it is not the generic or system error 3.
  const std::error_code ours = errc::timeout;
  EXPECT_NE(ours, std::error_code(3, std::generic_category()));
  EXPECT_NE(ours, std::error_code(3, std::system_category()));
  EXPECT_FALSE(ours == std::errc::timed_out);
  const std::error_code theirs = std::make_error_code(std::errc::timed_out);
  EXPECT_FALSE(theirs == errc::timeout);
}

TEST(error, default_error_code_is_not_an_rlock_error) {
  const std::error_code ec;
  EXPECT_FALSE(ec);
  for (errc e : all_errc()) EXPECT_NE(ec, e);
}

TEST(error, exception_is_a_system_error_carrying_the_code) {
  static_assert(std::is_base_of_v<std::system_error, rlock::error>);
  static_assert(std::is_base_of_v<std::runtime_error, rlock::error>);
  try {
    throw rlock::error(rlock::make_error_code(errc::not_owner));
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), errc::not_owner);
    EXPECT_NE(std::string(e.what()).find(rlock::make_error_code(errc::not_owner).message()),
              std::string::npos)
        << e.what();
  }
}

TEST(error, exception_what_includes_context_and_message) {
  const rlock::error e(rlock::make_error_code(errc::wrong_type), "lock 'orders'");
  EXPECT_EQ(e.code(), errc::wrong_type);
  const std::string what = e.what();
  EXPECT_NE(what.find("lock 'orders'"), std::string::npos) << what;
  EXPECT_NE(what.find("WRONGTYPE"), std::string::npos) << what;
}

TEST(error, exception_is_catchable_as_std_exception) {
  bool caught = false;
  try {
    throw rlock::error(rlock::make_error_code(errc::shutdown), "ctx");
  } catch (const std::exception& e) {
    caught = true;
    EXPECT_NE(dynamic_cast<const rlock::error*>(&e), nullptr);
  }
  EXPECT_TRUE(caught);
}

TEST(error, throw_if_does_nothing_without_error) {
  EXPECT_NO_THROW(rlock::throw_if(std::error_code{}));
  EXPECT_NO_THROW(rlock::throw_if(std::error_code{}, "context"));
}

TEST(error, throw_if_throws_with_code_and_context) {
  try {
    rlock::throw_if(rlock::make_error_code(errc::lock_lost), "lock 'a'");
    FAIL() << "no exception";
  } catch (const rlock::error& e) {
    EXPECT_EQ(e.code(), errc::lock_lost);
    EXPECT_NE(std::string(e.what()).find("lock 'a'"), std::string::npos);
  }
  try {
    rlock::throw_if(rlock::make_error_code(errc::stopped));
    FAIL() << "no exception";
  } catch (const rlock::error& e) {
    EXPECT_EQ(e.code(), errc::stopped);
    EXPECT_FALSE(std::string(e.what()).empty());
  }
}

TEST(error, throw_if_rethrows_foreign_codes_as_rlock_error) {
  try {
    rlock::throw_if(std::make_error_code(std::errc::connection_reset));
    FAIL() << "no exception";
  } catch (const rlock::error& e) {
    EXPECT_EQ(e.code(), std::errc::connection_reset);
  }
}

}  // namespace
