// Unit tests of rlock::detail::channel_table (src/detail/channel_table.cpp): the sans-I/O
// reference counting of pub/sub channels on one subscriber connection.
#include "detail/channel_table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

using rlock::detail::channel_kind;
using rlock::detail::channel_table;
using actions = channel_table::actions;
using key = channel_table::channel_key;
using ids = std::vector<channel_table::listener_id>;
using keys = std::vector<key>;

key classic(const std::string& name) {
  return {channel_kind::classic, name};
}
key sharded(const std::string& name) {
  return {channel_kind::sharded, name};
}

bool no_actions(const actions& a) {
  return a.subscribe.empty() && a.unsubscribe.empty() && a.confirmed.empty() &&
         a.resubscribed.empty();
}

ids sorted(ids v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(channel_table, starts_empty) {
  channel_table t;
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.active_channels(), 0u);
  EXPECT_TRUE(t.listeners(channel_kind::classic, "c").empty());
}

TEST(channel_table, first_listener_subscribes) {
  channel_table t;
  actions a;
  const auto id = t.add(channel_kind::classic, "c", a);
  EXPECT_EQ(a.subscribe, keys{classic("c")});
  EXPECT_TRUE(a.unsubscribe.empty());
  EXPECT_TRUE(a.confirmed.empty()) << "not confirmed before the server says so";
  EXPECT_TRUE(a.resubscribed.empty());
  EXPECT_FALSE(t.empty());
  EXPECT_EQ(t.active_channels(), 0u);
  EXPECT_EQ(t.listeners(channel_kind::classic, "c"), ids{id});
}

TEST(channel_table, second_listener_does_not_subscribe_again) {
  channel_table t;
  actions a1;
  const auto id1 = t.add(channel_kind::classic, "c", a1);
  actions a2;
  const auto id2 = t.add(channel_kind::classic, "c", a2);
  EXPECT_NE(id1, id2);
  EXPECT_TRUE(no_actions(a2));
  EXPECT_EQ(sorted(t.listeners(channel_kind::classic, "c")), sorted({id1, id2}));
}

// A refused subscribe fails its waiting listeners and leaves the channel unsubscribed, without
// subscribing it again by itself; a later listener tries again. Before, the channel stayed
// "subscribing" for good: later listeners sent nothing and waited for a confirmation that never
// came.
TEST(channel_table, a_refused_subscribe_fails_its_listeners_and_a_later_listener_tries_again) {
  channel_table t;
  actions a1;
  const auto id1 = t.add(channel_kind::classic, "c", a1);
  actions a2;
  const auto id2 = t.add(channel_kind::classic, "c", a2);
  EXPECT_EQ(sorted(t.on_refused(channel_kind::classic, "c")), sorted({id1, id2}));
  EXPECT_TRUE(t.listeners(channel_kind::classic, "c").empty());
  EXPECT_TRUE(t.empty());
  actions a3;
  const auto id3 = t.add(channel_kind::classic, "c", a3);
  EXPECT_EQ(a3.subscribe, keys{classic("c")}) << "subscribed again for a new listener";
  actions a4;
  t.on_subscribed(channel_kind::classic, "c", a4);
  EXPECT_EQ(a4.confirmed, ids{id3});
  EXPECT_TRUE(t.on_refused(channel_kind::classic, "c").empty()) << "not being subscribed";
  EXPECT_EQ(t.active_channels(), 1u);
}

// After a reconnect a confirmed listener's channel is subscribed again; if that is refused, the
// listeners still waiting are failed and the confirmed one stays, not resubscribed at once.
TEST(channel_table, a_refused_resubscribe_keeps_confirmed_listeners_without_a_retry_loop) {
  channel_table t;
  actions a;
  const auto old = t.add(channel_kind::classic, "c", a);
  t.on_subscribed(channel_kind::classic, "c", a);
  actions r;
  t.on_reconnected(r);
  actions a2;
  const auto fresh = t.add(channel_kind::classic, "c", a2);
  EXPECT_TRUE(no_actions(a2));
  EXPECT_EQ(t.on_refused(channel_kind::classic, "c"), ids{fresh});
  EXPECT_EQ(t.listeners(channel_kind::classic, "c"), ids{old});
  EXPECT_EQ(t.active_channels(), 0u);
  actions a3;
  t.add(channel_kind::classic, "c", a3);
  EXPECT_EQ(a3.subscribe, keys{classic("c")});
}

// Cluster mode: the server unsubscribed a sharded channel (its slot left the node) and refused
// the resubscription with MOVED: every listener, confirmed or waiting, is handed back to move
// to the slot's new node, and the channel is forgotten here.
TEST(channel_table, a_moved_channel_hands_back_every_listener) {
  channel_table t;
  actions a;
  const auto old = t.add(channel_kind::sharded, "s", a);
  t.on_subscribed(channel_kind::sharded, "s", a);
  actions u;
  t.on_unsubscribed(channel_kind::sharded, "s", u);  // not asked for: resubscribed at once
  EXPECT_EQ(u.subscribe, (keys{{channel_kind::sharded, "s"}}));
  actions a2;
  const auto fresh = t.add(channel_kind::sharded, "s", a2);
  EXPECT_EQ(sorted(t.on_moved(channel_kind::sharded, "s")), sorted({old, fresh}));
  EXPECT_TRUE(t.empty());
  EXPECT_TRUE(t.on_moved(channel_kind::sharded, "s").empty()) << "not being subscribed";
  actions a3;
  t.add(channel_kind::sharded, "s", a3);
  EXPECT_EQ(a3.subscribe, (keys{{channel_kind::sharded, "s"}})) << "a new listener subscribes";
}

TEST(channel_table, listener_ids_are_unique_across_channels) {
  channel_table t;
  actions a;
  std::set<channel_table::listener_id> seen;
  for (int i = 0; i < 50; ++i) {
    const auto id = t.add(i % 2 ? channel_kind::classic : channel_kind::sharded,
                          "c" + std::to_string(i % 5), a);
    EXPECT_NE(id, 0u);
    EXPECT_TRUE(seen.insert(id).second) << "duplicate id " << id;
  }
}

TEST(channel_table, confirm_delivers_confirmed_to_all_unconfirmed) {
  channel_table t;
  actions a;
  const auto id1 = t.add(channel_kind::classic, "c", a);
  const auto id2 = t.add(channel_kind::classic, "c", a);
  const auto id3 = t.add(channel_kind::classic, "c", a);
  actions c;
  t.on_subscribed(channel_kind::classic, "c", c);
  EXPECT_EQ(sorted(c.confirmed), sorted({id1, id2, id3}));
  EXPECT_TRUE(c.subscribe.empty());
  EXPECT_TRUE(c.unsubscribe.empty());
  EXPECT_TRUE(c.resubscribed.empty());
  EXPECT_EQ(t.active_channels(), 1u);
}

TEST(channel_table, duplicate_confirmation_confirms_nobody_twice) {
  channel_table t;
  actions a;
  t.add(channel_kind::classic, "c", a);
  actions c1;
  t.on_subscribed(channel_kind::classic, "c", c1);
  ASSERT_EQ(c1.confirmed.size(), 1u);
  actions c2;
  t.on_subscribed(channel_kind::classic, "c", c2);
  EXPECT_TRUE(no_actions(c2));
  EXPECT_EQ(t.active_channels(), 1u);
}

TEST(channel_table, add_after_confirm_is_confirmed_at_once) {
  channel_table t;
  actions a;
  t.add(channel_kind::classic, "c", a);
  actions c;
  t.on_subscribed(channel_kind::classic, "c", c);
  actions a2;
  const auto id2 = t.add(channel_kind::classic, "c", a2);
  EXPECT_EQ(a2.confirmed, ids{id2});
  EXPECT_TRUE(a2.subscribe.empty());
  EXPECT_TRUE(a2.unsubscribe.empty());
  // A later duplicate confirmation does not confirm it again.
  actions c2;
  t.on_subscribed(channel_kind::classic, "c", c2);
  EXPECT_TRUE(c2.confirmed.empty());
}

TEST(channel_table, removing_one_of_two_listeners_keeps_subscription) {
  channel_table t;
  actions a;
  const auto id1 = t.add(channel_kind::classic, "c", a);
  const auto id2 = t.add(channel_kind::classic, "c", a);
  t.on_subscribed(channel_kind::classic, "c", a);
  actions r;
  t.remove(id1, r);
  EXPECT_TRUE(no_actions(r));
  EXPECT_EQ(t.listeners(channel_kind::classic, "c"), ids{id2});
  EXPECT_EQ(t.active_channels(), 1u);
}

TEST(channel_table, last_remove_unsubscribes) {
  channel_table t;
  actions a;
  const auto id1 = t.add(channel_kind::classic, "c", a);
  const auto id2 = t.add(channel_kind::classic, "c", a);
  t.on_subscribed(channel_kind::classic, "c", a);
  actions r1;
  t.remove(id1, r1);
  EXPECT_TRUE(r1.unsubscribe.empty());
  actions r2;
  t.remove(id2, r2);
  EXPECT_EQ(r2.unsubscribe, keys{classic("c")});
  EXPECT_TRUE(r2.subscribe.empty());
  EXPECT_EQ(t.active_channels(), 0u) << "an unsubscribing channel is not active";
  EXPECT_FALSE(t.empty()) << "kept until the server confirms the unsubscribe";
  actions u;
  t.on_unsubscribed(channel_kind::classic, "c", u);
  EXPECT_TRUE(no_actions(u));
  EXPECT_TRUE(t.empty());
  EXPECT_TRUE(t.listeners(channel_kind::classic, "c").empty());
}

TEST(channel_table, remove_of_unknown_or_removed_id_is_ignored) {
  channel_table t;
  actions a;
  const auto id = t.add(channel_kind::classic, "c", a);
  t.on_subscribed(channel_kind::classic, "c", a);
  actions r;
  t.remove(id + 1000, r);
  EXPECT_TRUE(no_actions(r));
  t.remove(id, r);
  EXPECT_EQ(r.unsubscribe, keys{classic("c")});
  actions r2;
  t.remove(id, r2);  // twice
  EXPECT_TRUE(no_actions(r2));
}

TEST(channel_table, remove_during_subscribing_then_confirm_unsubscribes) {
  channel_table t;
  actions a;
  const auto id = t.add(channel_kind::classic, "c", a);
  ASSERT_EQ(a.subscribe, keys{classic("c")});
  actions r;
  t.remove(id, r);
  EXPECT_TRUE(no_actions(r)) << "wait for the subscribe confirmation before unsubscribing";
  EXPECT_FALSE(t.empty());
  actions c;
  t.on_subscribed(channel_kind::classic, "c", c);
  EXPECT_TRUE(c.confirmed.empty()) << "the removed listener must not be confirmed";
  EXPECT_EQ(c.unsubscribe, keys{classic("c")});
  EXPECT_TRUE(c.subscribe.empty());
  EXPECT_EQ(t.active_channels(), 0u);
  actions u;
  t.on_unsubscribed(channel_kind::classic, "c", u);
  EXPECT_TRUE(no_actions(u));
  EXPECT_TRUE(t.empty());
}

TEST(channel_table, remove_and_readd_during_subscribing_confirms_new_listener) {
  channel_table t;
  actions a;
  const auto id1 = t.add(channel_kind::classic, "c", a);
  t.remove(id1, a);
  actions a2;
  const auto id2 = t.add(channel_kind::classic, "c", a2);
  EXPECT_TRUE(no_actions(a2)) << "a SUBSCRIBE is already in flight";
  actions c;
  t.on_subscribed(channel_kind::classic, "c", c);
  EXPECT_EQ(c.confirmed, ids{id2});
  EXPECT_TRUE(c.unsubscribe.empty());
  EXPECT_EQ(t.active_channels(), 1u);
}

TEST(channel_table, readd_during_unsubscribing_resubscribes_after_unsubscribe_confirm) {
  channel_table t;
  actions a;
  const auto id1 = t.add(channel_kind::classic, "c", a);
  t.on_subscribed(channel_kind::classic, "c", a);
  actions r;
  t.remove(id1, r);
  ASSERT_EQ(r.unsubscribe, keys{classic("c")});

  actions a2;
  const auto id2 = t.add(channel_kind::classic, "c", a2);
  EXPECT_TRUE(no_actions(a2)) << "must not be confirmed nor subscribed while unsubscribing";

  actions u;
  t.on_unsubscribed(channel_kind::classic, "c", u);
  EXPECT_EQ(u.subscribe, keys{classic("c")});
  EXPECT_TRUE(u.confirmed.empty());
  EXPECT_TRUE(u.unsubscribe.empty());
  EXPECT_EQ(t.active_channels(), 0u);

  actions c;
  t.on_subscribed(channel_kind::classic, "c", c);
  EXPECT_EQ(c.confirmed, ids{id2});
  EXPECT_TRUE(c.resubscribed.empty());
  EXPECT_EQ(t.active_channels(), 1u);
}

TEST(channel_table, readd_and_remove_during_unsubscribing_does_not_resubscribe) {
  channel_table t;
  actions a;
  const auto id1 = t.add(channel_kind::classic, "c", a);
  t.on_subscribed(channel_kind::classic, "c", a);
  t.remove(id1, a);
  actions a2;
  const auto id2 = t.add(channel_kind::classic, "c", a2);
  t.remove(id2, a2);
  EXPECT_TRUE(no_actions(a2));
  actions u;
  t.on_unsubscribed(channel_kind::classic, "c", u);
  EXPECT_TRUE(no_actions(u));
  EXPECT_TRUE(t.empty());
}

TEST(channel_table, on_reconnected_resubscribes_channels_with_listeners) {
  channel_table t;
  actions a;
  const auto c1 = t.add(channel_kind::classic, "confirmed", a);
  t.on_subscribed(channel_kind::classic, "confirmed", a);
  const auto p1 = t.add(channel_kind::classic, "pending", a);  // never confirmed
  const auto gone = t.add(channel_kind::classic, "gone", a);
  t.on_subscribed(channel_kind::classic, "gone", a);
  t.remove(gone, a);  // unsubscribing, no listeners
  ASSERT_EQ(t.active_channels(), 1u);

  actions r;
  t.on_reconnected(r);
  EXPECT_EQ(r.subscribe.size(), 2u);
  EXPECT_NE(std::find(r.subscribe.begin(), r.subscribe.end(), classic("confirmed")),
            r.subscribe.end());
  EXPECT_NE(std::find(r.subscribe.begin(), r.subscribe.end(), classic("pending")),
            r.subscribe.end());
  EXPECT_TRUE(r.unsubscribe.empty());
  EXPECT_TRUE(r.confirmed.empty());
  EXPECT_TRUE(r.resubscribed.empty()) << "only after the server confirms";
  EXPECT_EQ(t.active_channels(), 0u) << "nothing is confirmed on the new connection yet";
  EXPECT_TRUE(t.listeners(channel_kind::classic, "gone").empty());

  // The previously confirmed listener reports resubscribed, not confirmed.
  actions s1;
  t.on_subscribed(channel_kind::classic, "confirmed", s1);
  EXPECT_EQ(s1.resubscribed, ids{c1});
  EXPECT_TRUE(s1.confirmed.empty());
  // The never-confirmed listener reports confirmed, not resubscribed.
  actions s2;
  t.on_subscribed(channel_kind::classic, "pending", s2);
  EXPECT_EQ(s2.confirmed, ids{p1});
  EXPECT_TRUE(s2.resubscribed.empty());
  EXPECT_EQ(t.active_channels(), 2u);

  // The dropped channel's late unsubscribe confirmation is harmless.
  actions u;
  t.on_unsubscribed(channel_kind::classic, "gone", u);
  EXPECT_TRUE(no_actions(u));
}

TEST(channel_table, on_reconnected_separates_resubscribed_from_newly_added) {
  channel_table t;
  actions a;
  const auto old1 = t.add(channel_kind::sharded, "c", a);
  const auto old2 = t.add(channel_kind::sharded, "c", a);
  t.on_subscribed(channel_kind::sharded, "c", a);
  actions r;
  t.on_reconnected(r);
  ASSERT_EQ(r.subscribe, keys{sharded("c")});
  actions a2;
  const auto fresh = t.add(channel_kind::sharded, "c", a2);
  EXPECT_TRUE(no_actions(a2)) << "a new listener waits for the re-subscription";
  actions s;
  t.on_subscribed(channel_kind::sharded, "c", s);
  EXPECT_EQ(sorted(s.resubscribed), sorted({old1, old2}));
  EXPECT_EQ(s.confirmed, ids{fresh});
  // Resync happens once: a further duplicate confirmation reports nothing.
  actions s2;
  t.on_subscribed(channel_kind::sharded, "c", s2);
  EXPECT_TRUE(no_actions(s2));
}

TEST(channel_table, listener_removed_before_resubscribe_confirm_is_not_reported) {
  channel_table t;
  actions a;
  const auto keep = t.add(channel_kind::classic, "c", a);
  const auto drop = t.add(channel_kind::classic, "c", a);
  t.on_subscribed(channel_kind::classic, "c", a);
  actions r;
  t.on_reconnected(r);
  actions rm;
  t.remove(drop, rm);
  EXPECT_TRUE(no_actions(rm));
  actions s;
  t.on_subscribed(channel_kind::classic, "c", s);
  EXPECT_EQ(s.resubscribed, ids{keep});
}

TEST(channel_table, all_listeners_removed_before_resubscribe_confirm_unsubscribes) {
  channel_table t;
  actions a;
  const auto id = t.add(channel_kind::classic, "c", a);
  t.on_subscribed(channel_kind::classic, "c", a);
  actions r;
  t.on_reconnected(r);
  t.remove(id, r);
  actions s;
  t.on_subscribed(channel_kind::classic, "c", s);
  EXPECT_TRUE(s.resubscribed.empty());
  EXPECT_TRUE(s.confirmed.empty());
  EXPECT_EQ(s.unsubscribe, keys{classic("c")});
}

TEST(channel_table, reconnect_while_unsubscribing_with_new_listener_resubscribes) {
  channel_table t;
  actions a;
  const auto id1 = t.add(channel_kind::classic, "c", a);
  t.on_subscribed(channel_kind::classic, "c", a);
  t.remove(id1, a);  // unsubscribing
  actions a2;
  const auto id2 = t.add(channel_kind::classic, "c", a2);
  actions r;
  t.on_reconnected(r);
  EXPECT_EQ(r.subscribe, keys{classic("c")});
  actions s;
  t.on_subscribed(channel_kind::classic, "c", s);
  EXPECT_EQ(s.confirmed, ids{id2});
  EXPECT_TRUE(s.resubscribed.empty()) << "the removed listener must not be reported";
}

TEST(channel_table, two_reconnects_before_confirmation) {
  channel_table t;
  actions a;
  const auto id = t.add(channel_kind::classic, "c", a);
  t.on_subscribed(channel_kind::classic, "c", a);
  actions r1;
  t.on_reconnected(r1);
  actions r2;
  t.on_reconnected(r2);
  EXPECT_EQ(r2.subscribe, keys{classic("c")});
  actions s;
  t.on_subscribed(channel_kind::classic, "c", s);
  EXPECT_EQ(s.resubscribed, ids{id});
  EXPECT_TRUE(s.confirmed.empty());
}

TEST(channel_table, on_reconnected_on_empty_table_does_nothing) {
  channel_table t;
  actions r;
  t.on_reconnected(r);
  EXPECT_TRUE(no_actions(r));
  EXPECT_TRUE(t.empty());
}

TEST(channel_table, sharded_and_classic_channels_with_same_name_are_distinct) {
  channel_table t;
  actions a1;
  const auto c = t.add(channel_kind::classic, "same", a1);
  EXPECT_EQ(a1.subscribe, keys{classic("same")});
  actions a2;
  const auto s = t.add(channel_kind::sharded, "same", a2);
  EXPECT_EQ(a2.subscribe, keys{sharded("same")}) << "the sharded channel needs its own SSUBSCRIBE";

  actions c1;
  t.on_subscribed(channel_kind::sharded, "same", c1);
  EXPECT_EQ(c1.confirmed, ids{s});
  EXPECT_EQ(t.active_channels(), 1u);
  EXPECT_EQ(t.listeners(channel_kind::classic, "same"), ids{c});
  EXPECT_EQ(t.listeners(channel_kind::sharded, "same"), ids{s});

  actions c2;
  t.on_subscribed(channel_kind::classic, "same", c2);
  EXPECT_EQ(c2.confirmed, ids{c});
  EXPECT_EQ(t.active_channels(), 2u);

  actions r;
  t.remove(c, r);
  EXPECT_EQ(r.unsubscribe, keys{classic("same")});
  EXPECT_EQ(t.active_channels(), 1u);
  EXPECT_EQ(t.listeners(channel_kind::sharded, "same"), ids{s});
}

TEST(channel_table, unknown_subscribe_confirmation_is_undone) {
  channel_table t;
  actions c;
  t.on_subscribed(channel_kind::classic, "stray", c);
  EXPECT_EQ(c.unsubscribe, keys{classic("stray")});
  EXPECT_TRUE(c.subscribe.empty());
  EXPECT_TRUE(c.confirmed.empty());
  EXPECT_EQ(t.active_channels(), 0u);
  actions u;
  t.on_unsubscribed(channel_kind::classic, "stray", u);
  EXPECT_TRUE(no_actions(u));
  EXPECT_TRUE(t.empty());
}

TEST(channel_table, unknown_sharded_confirmation_is_undone_as_sharded) {
  channel_table t;
  actions a;
  t.add(channel_kind::classic, "x", a);
  actions c;
  t.on_subscribed(channel_kind::sharded, "x", c);
  EXPECT_EQ(c.unsubscribe, keys{sharded("x")});
  EXPECT_TRUE(c.confirmed.empty()) << "the classic listener must not be confirmed";
}

TEST(channel_table, add_while_undoing_unknown_confirmation_subscribes_afterwards) {
  channel_table t;
  actions c;
  t.on_subscribed(channel_kind::classic, "stray", c);
  actions a;
  const auto id = t.add(channel_kind::classic, "stray", a);
  EXPECT_TRUE(no_actions(a));
  actions u;
  t.on_unsubscribed(channel_kind::classic, "stray", u);
  EXPECT_EQ(u.subscribe, keys{classic("stray")});
  actions s;
  t.on_subscribed(channel_kind::classic, "stray", s);
  EXPECT_EQ(s.confirmed, ids{id});
}

TEST(channel_table, stray_subscribe_confirmation_while_unsubscribing_is_ignored) {
  channel_table t;
  actions a;
  const auto id1 = t.add(channel_kind::classic, "c", a);
  t.on_subscribed(channel_kind::classic, "c", a);
  t.remove(id1, a);  // UNSUBSCRIBE in flight
  actions a2;
  t.add(channel_kind::classic, "c", a2);
  actions s;
  t.on_subscribed(channel_kind::classic, "c", s);  // late duplicate of the old SUBSCRIBE
  EXPECT_TRUE(no_actions(s)) << "the new listener must wait for the UNSUBSCRIBE to complete";
  EXPECT_EQ(t.active_channels(), 0u);
}

TEST(channel_table, repeated_stray_confirmation_is_undone_once) {
  channel_table t;
  actions c1;
  t.on_subscribed(channel_kind::classic, "stray", c1);
  ASSERT_EQ(c1.unsubscribe.size(), 1u);
  actions c2;
  t.on_subscribed(channel_kind::classic, "stray", c2);
  EXPECT_TRUE(no_actions(c2)) << "an UNSUBSCRIBE is already in flight";
}

TEST(channel_table, unknown_unsubscribe_confirmation_is_ignored) {
  channel_table t;
  actions u;
  t.on_unsubscribed(channel_kind::classic, "never", u);
  EXPECT_TRUE(no_actions(u));
  EXPECT_TRUE(t.empty());
}

TEST(channel_table, unsolicited_unsubscribe_of_wanted_channel_resubscribes) {
  channel_table t;
  actions a;
  const auto id = t.add(channel_kind::classic, "c", a);
  t.on_subscribed(channel_kind::classic, "c", a);
  actions u;
  t.on_unsubscribed(channel_kind::classic, "c", u);
  EXPECT_EQ(u.subscribe, keys{classic("c")});
  EXPECT_EQ(t.listeners(channel_kind::classic, "c"), ids{id});
}

TEST(channel_table, active_channels_counts_only_confirmed_channels) {
  channel_table t;
  actions a;
  std::vector<channel_table::listener_id> first;
  first.reserve(5);
  for (int i = 0; i < 5; ++i)
    first.push_back(t.add(channel_kind::classic, "c" + std::to_string(i), a));
  EXPECT_EQ(t.active_channels(), 0u);
  for (int i = 0; i < 3; ++i) {
    t.on_subscribed(channel_kind::classic, "c" + std::to_string(i), a);
    EXPECT_EQ(t.active_channels(), static_cast<std::size_t>(i + 1));
  }
  // A second listener on a confirmed channel does not add a channel.
  t.add(channel_kind::classic, "c0", a);
  EXPECT_EQ(t.active_channels(), 3u);
  // Unsubscribing c1 drops it from the count at once.
  t.remove(first[1], a);
  EXPECT_EQ(t.active_channels(), 2u);
  t.on_unsubscribed(channel_kind::classic, "c1", a);
  EXPECT_EQ(t.active_channels(), 2u);
  // Removing one of c0's two listeners keeps it.
  t.remove(first[0], a);
  EXPECT_EQ(t.active_channels(), 2u);
  t.on_subscribed(channel_kind::classic, "c3", a);
  t.on_subscribed(channel_kind::classic, "c4", a);
  EXPECT_EQ(t.active_channels(), 4u);
  actions r;
  t.on_reconnected(r);
  EXPECT_EQ(t.active_channels(), 0u);
  EXPECT_EQ(r.subscribe.size(), 4u);  // c0, c2, c3, c4
}

TEST(channel_table, actions_are_appended_not_replaced) {
  channel_table t;
  actions a;
  t.add(channel_kind::classic, "a", a);
  t.add(channel_kind::classic, "b", a);
  EXPECT_EQ(a.subscribe, (keys{classic("a"), classic("b")}));
}

// Drives the table with a seeded random sequence of operations, acting as a well-behaved server
// (confirming pending (un)subscribes in order), and checks the invariants after every step:
// a channel the server ends up subscribed to has listeners, every listener gets exactly one
// `confirmed`, and no listener is confirmed while its channel is not subscribed on the server.
TEST(channel_table, randomized_against_a_model_server) {
  std::mt19937 rng(12345);
  channel_table t;
  struct pending_op {
    bool subscribe;
    key k;
  };
  std::vector<pending_op> in_flight;  // sent to the server, not yet confirmed (FIFO)
  std::set<key> server;               // what the server has subscribed
  std::map<channel_table::listener_id, key> live;
  std::map<channel_table::listener_id, int> confirmations;
  const std::vector<key> universe = {classic("a"), classic("b"), sharded("a"), sharded("z")};
  int quiescent_checks = 0;
  int empty_checks = 0;
  std::size_t max_live = 0;

  auto apply = [&](const actions& a) {
    for (const auto& k : a.subscribe) in_flight.push_back({true, k});
    for (const auto& k : a.unsubscribe) in_flight.push_back({false, k});
    for (auto id : a.confirmed) {
      ++confirmations[id];
      ASSERT_TRUE(live.count(id)) << "confirmed a removed listener " << id;
      ASSERT_TRUE(server.count(live[id])) << "confirmed before the server subscribed";
    }
  };

  for (int step = 0; step < 20000; ++step) {
    actions a;
    const int op = static_cast<int>(rng() % 10);
    if (op < 4 && live.size() < 12) {  // keep the table small so it often empties
      const key& k = universe[rng() % universe.size()];
      const auto id = t.add(k.first, k.second, a);
      live[id] = k;
      confirmations[id] = 0;
    } else if (op < 7 && !live.empty()) {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      const auto id = it->first;
      live.erase(it);
      t.remove(id, a);
    } else if (op < 9 && !in_flight.empty()) {
      const pending_op p = in_flight.front();
      in_flight.erase(in_flight.begin());
      if (p.subscribe) {
        server.insert(p.k);
        t.on_subscribed(p.k.first, p.k.second, a);
      } else {
        server.erase(p.k);
        t.on_unsubscribed(p.k.first, p.k.second, a);
      }
    } else if (op == 9 && rng() % 20 == 0) {
      // Reconnect: the server forgets everything, in-flight requests are lost.
      server.clear();
      in_flight.clear();
      t.on_reconnected(a);
    }
    apply(a);
    if (HasFatalFailure()) return;
    max_live = std::max(max_live, live.size());

    // Quiescent check: with nothing in flight the server matches exactly what listeners want.
    if (in_flight.empty()) {
      ++quiescent_checks;
      if (live.empty()) {
        ++empty_checks;
        ASSERT_TRUE(t.empty()) << "entries left behind, step " << step;
      }
      std::set<key> wanted;
      for (const auto& [id, k] : live) wanted.insert(k);
      ASSERT_EQ(server, wanted) << "step " << step;
      ASSERT_EQ(t.active_channels(), wanted.size()) << "step " << step;
      for (const auto& [id, k] : live) {
        ASSERT_EQ(confirmations[id], 1) << "listener " << id << " step " << step;
      }
    }
  }
  // Drain, then everything must be confirmed exactly once.
  while (!in_flight.empty()) {
    actions a;
    const pending_op p = in_flight.front();
    in_flight.erase(in_flight.begin());
    if (p.subscribe) {
      server.insert(p.k);
      t.on_subscribed(p.k.first, p.k.second, a);
    } else {
      server.erase(p.k);
      t.on_unsubscribed(p.k.first, p.k.second, a);
    }
    apply(a);
    if (HasFatalFailure()) return;
  }
  for (const auto& [id, k] : live) EXPECT_EQ(confirmations[id], 1) << id;
  // The walk must actually exercise quiescent states, and empty and busy tables.
  EXPECT_GT(quiescent_checks, 1000);
  EXPECT_EQ(max_live, 12u);
  EXPECT_GT(empty_checks, 10);
}

}  // namespace
