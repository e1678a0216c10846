// client_event's text: each kind's name and its one-line description, with and without an
// error code and a detail.
#include "rlock/client_event.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "rlock/error.hpp"

namespace rlock {
namespace {

TEST(client_event, every_kind_has_its_own_name) {
  const client_event_kind kinds[] = {
      client_event_kind::connected,        client_event_kind::disconnected,
      client_event_kind::connect_failed,   client_event_kind::master_switched,
      client_event_kind::topology_changed, client_event_kind::script_reloaded,
      client_event_kind::lock_lost,        client_event_kind::pubsub_disconnected,
      client_event_kind::pubsub_connected, client_event_kind::write_not_confirmed};
  std::set<std::string> names;
  for (const client_event_kind k : kinds) names.emplace(to_string(k));
  EXPECT_EQ(names.size(), std::size(kinds));
  EXPECT_EQ(to_string(client_event_kind::connect_failed), "connect_failed");
  EXPECT_EQ(to_string(client_event_kind::lock_lost), "lock_lost");
  EXPECT_EQ(to_string(client_event_kind::pubsub_disconnected), "pubsub_disconnected");
  EXPECT_EQ(to_string(client_event_kind::write_not_confirmed), "write_not_confirmed");
}

TEST(client_event, describe_gives_the_server_the_code_and_the_detail) {
  const std::string url = "redis://127.0.0.1:6379";
  EXPECT_EQ(describe({.kind = client_event_kind::connected,
                      .server = url,
                      .object = {},
                      .error = {},
                      .detail = {}}),
            "connected to " + url);
  const std::error_code refused = make_error_code(errc::auth_failed);
  EXPECT_EQ(describe({.kind = client_event_kind::connect_failed,
                      .server = url,
                      .object = {},
                      .error = refused,
                      .detail = "WRONGPASS invalid username-password pair"}),
            "cannot connect to " + url + ": " + refused.message() +
                " (WRONGPASS invalid username-password pair)");
  EXPECT_EQ(describe({.kind = client_event_kind::connect_failed,
                      .server = {},
                      .object = {},
                      .error = make_error_code(errc::server_error),
                      .detail = "no Sentinel named the address of master 'm'"}),
            "cannot connect: " + make_error_code(errc::server_error).message() +
                " (no Sentinel named the address of master 'm')");
  // A connect with a warning about the server.
  EXPECT_EQ(describe({.kind = client_event_kind::connected,
                      .server = url,
                      .object = {},
                      .error = {},
                      .detail = "maxmemory-policy is allkeys-lru"}),
            "connected to " + url + ": maxmemory-policy is allkeys-lru");
  // A drop: how the link ended, rather than connection_lost's words on a request's outcome.
  const std::error_code lost = make_error_code(errc::connection_lost);
  EXPECT_EQ(describe({.kind = client_event_kind::disconnected,
                      .server = url,
                      .object = {},
                      .error = lost,
                      .detail = "server closed the connection"}),
            "disconnected from " + url + ": server closed the connection");
  EXPECT_EQ(describe({.kind = client_event_kind::disconnected,
                      .server = url,
                      .object = {},
                      .error = lost,
                      .detail = {}}),
            "disconnected from " + url + ": " + lost.message());
  EXPECT_EQ(describe({.kind = client_event_kind::master_switched,
                      .server = "redis://10.0.0.2:6380",
                      .object = {},
                      .error = {},
                      .detail = "a Sentinel announced it"}),
            "master moved to redis://10.0.0.2:6380: a Sentinel announced it");
  EXPECT_EQ(describe({.kind = client_event_kind::topology_changed,
                      .server = {},
                      .object = {},
                      .error = {},
                      .detail = "3 masters serve the slots"}),
            "cluster slots changed: 3 masters serve the slots");
  EXPECT_EQ(describe({.kind = client_event_kind::script_reloaded,
                      .server = url,
                      .object = "0123456789abcdef0123456789abcdef01234567",
                      .error = {},
                      .detail = {}}),
            "reloaded script 0123456789abcdef0123456789abcdef01234567 on " + url);
  EXPECT_EQ(describe({.kind = client_event_kind::lock_lost,
                      .server = {},
                      .object = "orders",
                      .error = make_error_code(errc::lock_lost),
                      .detail = "its lease ran out while it was held"}),
            "lost lock 'orders': " + make_error_code(errc::lock_lost).message() +
                " (its lease ran out while it was held)");
  EXPECT_EQ(describe({.kind = client_event_kind::pubsub_disconnected,
                      .server = url,
                      .object = {},
                      .error = make_error_code(errc::connection_lost),
                      .detail = "closed by the server; 1 channel carried"}),
            "pub/sub disconnected from " + url + ": closed by the server; 1 channel carried");
  EXPECT_EQ(describe({.kind = client_event_kind::pubsub_connected,
                      .server = url,
                      .object = {},
                      .error = {},
                      .detail = "2 channels subscribed again"}),
            "pub/sub connected to " + url + ": 2 channels subscribed again");
  EXPECT_EQ(describe({.kind = client_event_kind::write_not_confirmed,
                      .server = url,
                      .object = "pool",
                      .error = make_error_code(errc::replication_not_confirmed),
                      .detail = "released on the master, but acknowledged by 0 of the 1 replicas"}),
            "change of 'pool' on " + url +
                " not confirmed: released on the master, but acknowledged by 0 of the 1 replicas");
  EXPECT_EQ(describe({.kind = client_event_kind::write_not_confirmed,
                      .server = url,
                      .object = "pool",
                      .error = make_error_code(errc::replication_not_confirmed),
                      .detail = {}}),
            "change of 'pool' on " + url +
                " not confirmed: " + make_error_code(errc::replication_not_confirmed).message());
}

}  // namespace
}  // namespace rlock
