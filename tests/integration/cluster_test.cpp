// Cluster mode against a real Redis Cluster of this test's own redis-server processes
// (support/redis_cluster.hpp): every request goes to the master of its key's slot, MOVED and ASK
// are followed, the watchdog renews in batches of one slot, waiters on any node are woken, and a
// failover moves the client to the promoted replica.
#include <gtest/gtest.h>

#include <future>
#include <iostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "rlock/countdown_latch.hpp"
#include "rlock/fenced_lock.hpp"
#include "rlock/read_write_lock.hpp"
#include "rlock/semaphore.hpp"
#include "support/event_recorder.hpp"
#include "support/redis_cluster.hpp"
#include "support/replica_acks.hpp"
#include "support/rotating_secret.hpp"
#include "support/server_monitor.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

config cluster_config(const redis_cluster& cluster) {
  config c = fast_config("redis://127.0.0.1:1");  // unused in Cluster mode
  c.cluster_addresses = {cluster.seed_url()};
  return c;
}

/// One name per master of the cluster, each served by a different one.
std::vector<std::string> one_name_per_master(const redis_cluster& cluster, int masters,
                                             const std::string& prefix) {
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(masters));
  for (int m = 0; m < masters; ++m) {
    out.push_back(
        names_served_by(cluster, cluster.master(m), prefix + std::to_string(m) + "-", 1).front());
  }
  return out;
}

/// Moves `slot` from `from` to `to` the way redis-cli --cluster reshard does: IMPORTING and
/// MIGRATING, MIGRATE of every key in it, then the new owner told to every master.
void migrate_slot(const redis_cluster& cluster, int slot, redis_server& from, redis_server& to) {
  const std::string s = std::to_string(slot);
  ASSERT_EQ(to.cli({"CLUSTER", "SETSLOT", s, "IMPORTING", redis_cluster::id_of(from)}), "OK");
  ASSERT_EQ(from.cli({"CLUSTER", "SETSLOT", s, "MIGRATING", redis_cluster::id_of(to)}), "OK");
  for (;;) {
    const raw_reply keys = from.cli_reply({"CLUSTER", "GETKEYSINSLOT", s, "100"});
    if (keys.elements.empty()) break;
    std::vector<std::string> cmd = {"MIGRATE", "127.0.0.1", std::to_string(to.port()), "", "0",
                                    "5000",    "KEYS"};
    for (const raw_reply& k : keys.elements) cmd.push_back(k.str);
    ASSERT_EQ(from.cli(cmd), "OK");
  }
  const std::string id = redis_cluster::id_of(to);
  for (const auto& n : cluster.nodes()) {
    ASSERT_EQ(n->cli({"CLUSTER", "SETSLOT", s, "NODE", id}), "OK");
  }
}

TEST(cluster, every_object_lives_on_the_master_of_its_slot) {
  redis_cluster cluster;
  client c(cluster_config(cluster));
  const auto names = one_name_per_master(cluster, 3, "obj");
  for (std::size_t m = 0; m < names.size(); ++m) {
    SCOPED_TRACE(names[m]);
    redis_server& owner = cluster.master(m);
    auto l = c.get_lock(names[m]);
    ASSERT_TRUE(l.try_lock(5s, 30s));
    EXPECT_EQ(owner.cli({"HLEN", names[m]}), "1");
    l.unlock_or_throw();
    EXPECT_EQ(owner.cli({"EXISTS", names[m]}), "0");

    auto f = c.get_fenced_lock(names[m] + "{f}");
    auto& f_owner = cluster.owner_of(names[m] + "{f}");
    const auto token = f.try_lock_and_get_token();
    ASSERT_TRUE(token);
    EXPECT_EQ(f_owner.cli({"GET", f.token_key()}), std::to_string(*token));
    f.unlock_or_throw();

    auto sem = c.get_semaphore(names[m] + "-sem");
    ASSERT_TRUE(sem.try_set_permits(2));
    EXPECT_TRUE(sem.try_acquire(2));
    EXPECT_FALSE(sem.try_acquire());
    EXPECT_EQ(sem.release(2), 2);
    EXPECT_EQ(cluster.owner_of(names[m] + "-sem").cli({"GET", names[m] + "-sem"}), "2");

    auto latch = c.get_countdown_latch(names[m] + "-latch");
    ASSERT_TRUE(latch.try_set_count(1));
    EXPECT_EQ(latch.count_down(), 0);
    EXPECT_TRUE(latch.await_for(1s));

    auto rw = c.get_read_write_lock(names[m] + "-rw");
    rw.lock_shared();
    EXPECT_EQ(cluster.owner_of(names[m] + "-rw").cli({"HGET", names[m] + "-rw", "mode"}), "read");
    rw.unlock_shared();

    auto spin = c.get_spin_lock(names[m] + "-spin");
    ASSERT_TRUE(spin.try_lock(5s, 30s));
    EXPECT_EQ(cluster.owner_of(names[m] + "-spin").cli({"HLEN", names[m] + "-spin"}), "1");
    spin.unlock_or_throw();

    // The count and the lease set ("{<name>}:timeout") share the name's slot.
    const std::string pes_name = names[m] + "-pes";
    auto pes = c.get_permit_expirable_semaphore(pes_name);
    ASSERT_TRUE(pes.try_set_permits(1));
    const auto id = pes.try_acquire(10s);
    ASSERT_TRUE(id.has_value());
    EXPECT_FALSE(pes.try_acquire(10s));
    EXPECT_EQ(cluster.owner_of(pes_name).cli({"ZCARD", "{" + pes_name + "}:timeout"}), "1");
    EXPECT_TRUE(pes.try_release(*id));
    EXPECT_EQ(cluster.owner_of(pes_name).cli({"GET", pes_name}), "1");
  }
  EXPECT_TRUE(c.status().connected) << c.status().detail;
  // A name with a '{' but no hash tag: its keys would fall in different slots.
  EXPECT_EQ(code_of([&] { (void)c.get_lock("a{}b"); }), errc::invalid_argument);
  EXPECT_EQ(code_of([&] { (void)c.get_semaphore("a{b"); }), errc::invalid_argument);
  // A raw command goes to its key's master too.
  for (const auto& n : names) EXPECT_EQ(c.execute({"SET", n, "v"}).str(), "OK");
  for (std::size_t m = 0; m < names.size(); ++m) {
    EXPECT_EQ(cluster.master(m).cli({"GET", names[m]}), "v");
  }
}

// config::replica_sync in Cluster mode: each lock's WAIT goes to the master of its slot (on its
// own connections there) and counts that master's replica; each hold is on that replica when
// the acquire returns. Under Redisson's rule too, each WAIT asking for its master's replicas.
TEST(cluster, replica_sync_waits_for_the_replica_of_each_locks_master) {
  redis_cluster cluster(cluster_options{.masters = 3, .replicas_per_master = 1});
  for (std::size_t m = 0; m < 3; ++m) {
    ASSERT_TRUE(wait_until_replicas_acknowledge(cluster.master(m), 20s)) << "master " << m;
  }
  config cfg = cluster_config(cluster);
  cfg.replica_sync = 1;
  cfg.replica_sync_timeout = 2000ms;
  client c(cfg);
  const auto names = one_name_per_master(cluster, 3, "synced-");
  for (std::size_t m = 0; m < 3; ++m) {
    auto l = c.get_lock(names[m]);
    ASSERT_TRUE(l.try_lock(10s));
    raw_client on_replica = cluster.replica(m, 0).client();
    ASSERT_EQ(on_replica.command({"READONLY"}).str, "OK");
    EXPECT_EQ(on_replica.command({"EXISTS", names[m]}).integer, 1) << names[m];
    l.unlock_or_throw();
    EXPECT_EQ(calls_of(cluster.master(m), "wait"), 2) << "master " << m;
  }
  // Redisson's rule: each master's WAITs ask for its own replicas (one each here), counted by
  // the connections to that master.
  cfg.replica_sync = config::all_connected_replicas;
  client all(cfg);
  for (std::size_t m = 0; m < 3; ++m) {
    server_monitor watch(cluster.master(m));
    auto l = all.get_lock(names[m]);
    ASSERT_TRUE(l.try_lock(10s));
    const auto wait = watch.next_named("WAIT", 10s);
    ASSERT_TRUE(wait.has_value()) << "master " << m;
    EXPECT_EQ(wait->args.at(1), "1") << "master " << m;
    raw_client on_replica = cluster.replica(m, 0).client();
    ASSERT_EQ(on_replica.command({"READONLY"}).str, "OK");
    EXPECT_EQ(on_replica.command({"EXISTS", names[m]}).integer, 1) << names[m];
    l.unlock_or_throw();
  }
}

TEST(cluster, a_waiter_is_woken_by_a_release_on_another_clients_connection) {
  redis_cluster cluster;
  client holder(cluster_config(cluster));
  client waiting(cluster_config(cluster));
  for (const auto& name : one_name_per_master(cluster, 3, "wake")) {
    SCOPED_TRACE(name);
    auto held = holder.get_lock(name);
    ASSERT_TRUE(held.try_lock(5s, 60s));  // a lease far longer than any wait below
    auto w = waiting.get_lock(name);
    auto got = try_lock_then_unlock_async(w, 30s);
    redis_server& owner = cluster.owner_of(name);
    ASSERT_TRUE(wait_until([&] { return zcard(owner, "rlock_queue:{" + name + "}") == 1; }, 10s));
    const auto released = steady::now();
    held.unlock_or_throw();
    EXPECT_TRUE(got.get());
    // Woken by the hand-off's message, not by the lease's end.
    EXPECT_LT(ms_since(released), 10000);

    // A permit-expirable semaphore's waiter hears the release (sharded: SPUBLISH from the
    // script's twin); the permit held never expires, so no retry at a lease's end wakes it.
    auto pes = holder.get_permit_expirable_semaphore(name + "-pes");
    ASSERT_TRUE(pes.try_set_permits(1));
    const auto id = pes.try_acquire();
    ASSERT_TRUE(id.has_value());
    auto taken = std::async(std::launch::async, [&] {
      return waiting.get_permit_expirable_semaphore(name + "-pes").try_acquire_for(30s, 10s);
    });
    redis_server& pes_owner = cluster.owner_of(name + "-pes");
    ASSERT_TRUE(wait_until(
        [&] {
          const std::string channel = "redisson_sc:{" + name + "-pes}";
          return pes_owner.cli_reply({"PUBSUB", "SHARDNUMSUB", channel}).elements.at(1).integer ==
                 1;
        },
        10s));
    pes.release(*id);
    EXPECT_TRUE(taken.get().has_value());

    // A fair lock's waiter hears the release on its own channel (a channel the script names
    // from its queue, in the lock's slot).
    auto fair = holder.get_fair_lock(name + "-fair");
    ASSERT_TRUE(fair.try_lock(5s, 60s));
    auto fair_w = waiting.get_fair_lock(name + "-fair");
    auto fair_got = try_lock_then_unlock_async(fair_w, 30s);
    redis_server& fair_owner = cluster.owner_of(name + "-fair");
    ASSERT_TRUE(wait_until(
        [&] {
          return fair_owner.cli_reply({"LLEN", "redisson_lock_queue:{" + name + "-fair}"})
                     .integer == 1;
        },
        10s));
    const auto fair_released = steady::now();
    fair.unlock_or_throw();
    EXPECT_TRUE(fair_got.get());
    EXPECT_LT(ms_since(fair_released), 10000) << "woken by the release, not the lease's end";
  }
}

// The watchdog renews holds on every master: a batch holds keys of one slot (a renewal of keys of
// two slots would be refused with CROSSSLOT, and the locks lost).
TEST(cluster, the_watchdog_renews_locks_of_every_slot) {
  redis_cluster cluster;
  config cfg = cluster_config(cluster);
  cfg.lock_watchdog_timeout = 1500ms;
  client c(cfg);
  std::vector<reentrant_lock> held;
  for (int i = 0; i < 12; ++i) {
    held.push_back(c.get_lock("renewed-" + std::to_string(i)));
    ASSERT_TRUE(held.back().try_lock());
  }
  // Past two watchdog leases: held only if renewed.
  const auto until = steady::now() + 3500ms;
  while (steady::now() < until) {
    for (auto& l : held) ASSERT_FALSE(l.loss_token().stop_requested()) << l.name();
    std::this_thread::sleep_for(100ms);
  }
  std::set<const redis_server*> owners;
  for (auto& l : held) {
    redis_server& owner = cluster.owner_of(l.name());
    owners.insert(&owner);
    EXPECT_GT(owner.cli_reply({"PTTL", l.name()}).integer, 0) << l.name();
    l.unlock_or_throw();
  }
  EXPECT_EQ(owners.size(), 3u);
}

// A slot moved to another master under the client: its cached owner answers MOVED, which the
// client follows (and learns); a hold taken before the move is released on the new owner.
TEST(cluster, a_moved_slot_is_followed) {
  redis_cluster cluster;
  client c(cluster_config(cluster));
  const std::string name = names_served_by(cluster, cluster.master(0), "moving-", 1).front();
  const int slot = std::stoi(cluster.master(0).cli({"CLUSTER", "KEYSLOT", name}));
  auto l = c.get_lock(name);
  ASSERT_TRUE(l.try_lock(5s, 30s));
  migrate_slot(cluster, slot, cluster.master(0), cluster.master(1));
  EXPECT_EQ(cluster.master(1).cli({"HLEN", name}), "1");
  EXPECT_TRUE(l.is_locked());
  l.unlock_or_throw();
  EXPECT_EQ(cluster.master(1).cli({"EXISTS", name}), "0");
  ASSERT_TRUE(l.try_lock(5s, 30s));
  EXPECT_EQ(cluster.master(1).cli({"HLEN", name}), "1");
  EXPECT_TRUE(cluster.master(0).cli({"EXISTS", name}).starts_with("(error) MOVED"));
  l.unlock_or_throw();
}

// A slot half-way through a migration: the old owner answers ASK for a key it does not have,
// which the client follows with ASKING to the importing node. A lock asked for meanwhile is
// taken there once the migration has ended.
TEST(cluster, a_slot_being_migrated_is_served_through_ask) {
  redis_cluster cluster;
  client c(cluster_config(cluster));
  redis_server& from = cluster.master(0);
  redis_server& to = cluster.master(2);
  const std::string name = names_served_by(cluster, from, "asked-", 1).front();
  const std::string s = from.cli({"CLUSTER", "KEYSLOT", name});
  c.execute({"GET", name});  // the client knows the slot's owner
  ASSERT_EQ(to.cli({"CLUSTER", "SETSLOT", s, "IMPORTING", redis_cluster::id_of(from)}), "OK");
  ASSERT_EQ(from.cli({"CLUSTER", "SETSLOT", s, "MIGRATING", redis_cluster::id_of(to)}), "OK");
  // A new key of that slot goes to the importing node.
  EXPECT_EQ(c.execute({"SET", name, "v"}).str(), "OK");
  EXPECT_TRUE(from.cli({"EXISTS", name}).starts_with("(error) ASK"));  // not there
  EXPECT_EQ(c.execute({"GET", name}).str(), "v");
  c.execute({"DEL", name});

  // A lock's scripts name several keys, which the importing node serves only once they are
  // all there (TRYAGAIN meanwhile, nothing run): the acquire waits for the migration's end.
  auto l = c.get_lock(name);
  std::string held_there;
  auto got = std::async(std::launch::async, [&] {
    if (!l.try_lock(20s, 30s)) return false;
    held_there = to.cli({"HLEN", name});
    l.unlock_or_throw();  // on the thread that owns the hold
    return true;
  });
  ASSERT_TRUE(wait_until(
      [&] {
        return to.cli({"INFO", "errorstats"}).find("TRYAGAIN") != std::string::npos;
      },
      10s));
  ASSERT_EQ(got.wait_for(0s), std::future_status::timeout);
  const std::string id = redis_cluster::id_of(to);
  for (const auto& n : cluster.nodes()) {
    ASSERT_EQ(n->cli({"CLUSTER", "SETSLOT", s, "NODE", id}), "OK");
  }
  ASSERT_TRUE(got.get());
  EXPECT_EQ(held_there, "1");
  EXPECT_EQ(to.cli({"EXISTS", name}), "0");
}

// A master killed: its replica is promoted (cluster-node-timeout 1 s), and the client moves the
// dead master's connections there once a scan names it. A hold replicated before the kill is
// still renewed and released there; a waiter subscribed before the kill is woken there.
TEST(cluster, a_failover_moves_the_client_to_the_promoted_replica) {
  redis_cluster cluster(cluster_options{.masters = 3, .replicas_per_master = 1});
  config cfg = cluster_config(cluster);
  // A lease that outlasts the failover (2-3 s here, more on a loaded machine): the hold is kept.
  // A shorter one ends on the promoted replica first, the queue hands the lock to the waiter, and
  // the holder is told it lost it (as it should be).
  cfg.lock_watchdog_timeout = 20000ms;
  cfg.cluster_scan_interval = 500ms;
  // Redisson's retry delays (1-2 s), where fast_config's would be spent before the failover
  // ends, and twice Redisson's attempts: 4 (4.5-6 s) outlast the failover's few seconds on an
  // idle machine, but once under TSan on a loaded one they did not (the acquire below failed
  // with connection_lost). Riding out a failover is what retry_attempts is for (config.hpp).
  cfg.retry_delay_base = 1000ms;
  cfg.retry_delay_max = 2000ms;
  cfg.retry_attempts = 8;
  client other(cfg);
  event_recorder rec;
  cfg.on_event = rec.handler();
  client c(cfg);
  redis_server& dying = cluster.master(1);
  redis_server& heir = cluster.replica(1, 0);
  const auto names = names_served_by(cluster, dying, "failover-", 2);
  auto held = c.get_lock(names[0]);
  ASSERT_TRUE(held.try_lock());
  auto w = other.get_lock(names[0]);
  auto got = try_lock_then_unlock_async(w, 40s);
  ASSERT_TRUE(wait_until([&] { return zcard(dying, "rlock_queue:{" + names[0] + "}") == 1; }, 10s));
  // The hold and the queue are on the replica (read there, with READONLY) before the kill.
  raw_client on_heir = heir.client();
  ASSERT_EQ(on_heir.command({"READONLY"}).str, "OK");
  ASSERT_TRUE(wait_until(
      [&] {
        return on_heir.command({"EXISTS", names[0], "rlock_queue:{" + names[0] + "}"}).integer == 2;
      },
      10s));
  const auto killed = steady::now();
  dying.kill();
  ASSERT_TRUE(wait_until([&] { return heir.cli({"ROLE"}).starts_with("master"); }, 20s, 50ms))
      << heir.cli({"CLUSTER", "NODES"});
  const long long promoted = ms_since(killed);
  // A lock of the failed-over slots, taken on the new master.
  auto fresh = c.get_lock(names[1]);
  ASSERT_TRUE(fresh.try_lock(20s, 30s));
  const long long promoted_to_locked = ms_since(killed);
  EXPECT_EQ(heir.cli({"HLEN", names[1]}), "1");
  fresh.unlock_or_throw();
  // The hold survived (it was replicated) and its release hands the lock to the waiter.
  EXPECT_FALSE(held.loss_token().stop_requested());
  held.unlock_or_throw();
  EXPECT_TRUE(got.get());
  std::cout << "[ timing ] master killed: its replica a master " << promoted
            << " ms later, a lock of its slots taken there at " << promoted_to_locked
            << " ms, the waiter woken there at " << ms_since(killed) << " ms\n";
  EXPECT_EQ(heir.cli({"EXISTS", names[0]}), "0");
  EXPECT_TRUE(wait_until([&] { return c.status().connected; }, 10s)) << c.status().detail;
  // config::on_event: the first scan's map, the dead master's link going down, and the move of
  // its connections to the heir, which the map then names.
  const auto mapped = rec.wait_for(client_event_kind::topology_changed, 1s);
  ASSERT_TRUE(mapped) << rec.kinds();
  EXPECT_EQ(mapped->detail, "3 masters serve the slots");
  const auto down = rec.wait_for(
      [&](const client_event& e) {
        return e.kind == client_event_kind::disconnected && e.server == dying.url();
      },
      1s);
  EXPECT_TRUE(down) << rec.kinds();
  const auto moved = rec.wait_for(client_event_kind::master_switched, 1s);
  ASSERT_TRUE(moved) << rec.kinds();
  EXPECT_EQ(moved->server, heir.url());
  EXPECT_GE(rec.count(client_event_kind::topology_changed), 2U) << rec.kinds();
}

/// Subscribers of a sharded channel on `node` (PUBSUB SHARDNUMSUB).
long long shardnumsub_of(const redis_server& node, const std::string& channel) {
  return node.cli_reply({"PUBSUB", "SHARDNUMSUB", channel}).elements.at(1).integer;
}

// Redisson's default on Redis 7 (shardedSubscriptionMode AUTO) is sharded pub/sub, and so is
// rlock's (automatic): a Java waiter's SSUBSCRIBE hears rlock's release, and a Java holder's
// SPUBLISH wakes an rlock waiter, which waits on the master of the channel's slot.
TEST(cluster, pub_sub_is_sharded_as_redissons_on_redis_7) {
  redis_cluster cluster;
  client c(cluster_config(cluster));
  const std::string name = names_served_by(cluster, cluster.master(1), "sharded-", 1).front();
  const std::string channel = "redisson_lock__channel:{" + name + "}";
  redis_server& owner = cluster.master(1);

  raw_client java_waiter = owner.client();
  const raw_reply subscribed = java_waiter.command({"SSUBSCRIBE", channel});
  ASSERT_EQ(subscribed.elements.at(0).str, "ssubscribe") << subscribed;
  auto l = c.get_lock(name);
  ASSERT_TRUE(l.try_lock(5s, 30s));
  l.unlock_or_throw();
  const auto message = java_waiter.read(5s);
  ASSERT_TRUE(message);
  EXPECT_EQ(*message,
            raw_reply::make_array({raw_reply::make_string("smessage"),
                                   raw_reply::make_string(channel), raw_reply::make_string("0")}));

  // A Java Redisson peer's hold (a version-4 client uuid), released the way its unlock does.
  owner.cli({"HSET", name, "2f0c2a3e-8d0c-4c7e-9a55-6a1b2c3d4e5f:42", "1"});
  owner.cli({"PEXPIRE", name, "60000"});
  auto got = try_lock_then_unlock_async(l, 30s);
  ASSERT_TRUE(wait_until([&] { return shardnumsub_of(owner, channel) == 2; }, 10s));
  EXPECT_EQ(numsub_of(owner, channel), 0);  // not a classic subscriber
  const auto released = steady::now();
  owner.cli({"DEL", name});
  owner.cli({"SPUBLISH", channel, "0"});
  EXPECT_TRUE(got.get());
  EXPECT_LT(ms_since(released), 10000);  // woken by the message, not the 60 s TTL
}

// A slot that moves to another master takes its sharded channels with it: the old master
// unsubscribes them, and the waiter's subscription follows the slot, so the release on the new
// master still wakes it by its message, not at its timed re-check (every 20 s here).
TEST(cluster, a_waiters_sharded_subscription_follows_its_slot_to_another_master) {
  redis_cluster cluster;
  config cfg = cluster_config(cluster);
  cfg.lock_queue_liveness = 60000ms;
  client holder(cfg);
  client waiting(cfg);
  redis_server& from = cluster.master(0);
  redis_server& to = cluster.master(1);
  const std::string name = names_served_by(cluster, from, "follow-", 1).front();
  const std::string handoff = "rlock_handoff:{" + name + "}:" + waiting.id();
  auto held = holder.get_lock(name);
  ASSERT_TRUE(held.try_lock(5s, 60s));
  auto w = waiting.get_lock(name);
  auto got = try_lock_then_unlock_async(w, 40s);
  ASSERT_TRUE(wait_until([&] { return shardnumsub_of(from, handoff) == 1; }, 10s));
  migrate_slot(cluster, std::stoi(from.cli({"CLUSTER", "KEYSLOT", name})), from, to);
  EXPECT_TRUE(wait_until([&] { return shardnumsub_of(to, handoff) == 1; }, 10s));
  EXPECT_EQ(shardnumsub_of(from, handoff), 0);
  const auto released = steady::now();
  held.unlock_or_throw();
  EXPECT_TRUE(got.get());
  EXPECT_LT(ms_since(released), 5000);
}

// cluster_sharded_subscription off: classic pub/sub, as Redisson's shardedSubscriptionMode OFF.
TEST(cluster, pub_sub_is_classic_when_sharding_is_off) {
  redis_cluster cluster;
  config cfg = cluster_config(cluster);
  cfg.cluster_sharded_subscription = sharded_subscription_mode::off;
  client c(cfg);
  client holder(cfg);
  const std::string name = names_served_by(cluster, cluster.master(2), "classic-", 1).front();
  const std::string channel = "redisson_lock__channel:{" + name + "}";
  redis_server& owner = cluster.master(2);
  raw_client java_waiter = cluster.master(0).client();  // classic messages reach every node
  ASSERT_EQ(java_waiter.command({"SUBSCRIBE", channel}).elements.at(0).str, "subscribe");
  auto held = holder.get_lock(name);
  ASSERT_TRUE(held.try_lock(5s, 60s));
  auto l = c.get_lock(name);
  auto got = try_lock_then_unlock_async(l, 30s);
  ASSERT_TRUE(wait_until([&] { return zcard(owner, "rlock_queue:{" + name + "}") == 1; }, 10s));
  EXPECT_EQ(shardnumsub_of(owner, channel), 0);
  held.unlock_or_throw();
  EXPECT_TRUE(got.get());
  const auto message = java_waiter.read(5s);
  ASSERT_TRUE(message);
  EXPECT_EQ(message->elements.at(0).str, "message") << *message;
  EXPECT_EQ(message->elements.at(2).str, "0") << *message;
}

// Redis Cluster over TLS (tls-cluster yes, plaintext ports closed): from a rediss:// seed the
// client reaches every master CLUSTER SLOTS names (their TLS ports) with the same tls options;
// locks live on their slot's master and a waiter is woken through sharded pub/sub over TLS. A
// client that does not trust the nodes' CA fails in the TLS handshake, within its wait.
TEST(cluster, tls_nodes_serve_locks_and_wake_waiters_on_every_master) {
  redis_cluster cluster(cluster_options{.masters = 3, .tls = true});
  config cfg = cluster_config(cluster);
  ASSERT_TRUE(cfg.cluster_addresses.front().starts_with("rediss://"));
  cfg.tls.ca_file = cluster.tls().ca_cert.string();
  client holder(cfg);
  client waiting(cfg);
  for (const auto& name : one_name_per_master(cluster, 3, "tls")) {
    SCOPED_TRACE(name);
    auto held = holder.get_lock(name);
    ASSERT_TRUE(held.try_lock(5s, 60s));
    redis_server& owner = cluster.owner_of(name);
    EXPECT_EQ(owner.cli({"HLEN", name}), "1");
    auto w = waiting.get_lock(name);
    auto got = try_lock_then_unlock_async(w, 30s);
    ASSERT_TRUE(wait_until([&] { return zcard(owner, "rlock_queue:{" + name + "}") == 1; }, 10s));
    const auto released = steady::now();
    held.unlock_or_throw();
    EXPECT_TRUE(got.get());
    EXPECT_LT(ms_since(released), 10000) << "woken by the hand-off's message";
  }
  EXPECT_TRUE(holder.status().connected) << holder.status().detail;

  config untrusting = cfg;
  untrusting.tls.ca_file = cluster.tls().bad_ca_cert.string();
  client stranger(untrusting);
  const auto t0 = steady::now();
  const std::error_code ec = code_of([&] { (void)stranger.get_lock("tls-x").try_lock(1s, 10s); });
  EXPECT_TRUE(ec) << "an untrusted node was used";
  EXPECT_LT(ms_since(t0), 3000);
  ASSERT_TRUE(wait_until([&] { return static_cast<bool>(stranger.status().error); }, 5s));
  EXPECT_NE(stranger.status().detail.find("TLS"), std::string::npos) << stranger.status().detail;
}

TEST(cluster, no_reachable_seed_fails_within_the_deadline) {
  redis_server dead(server_options{.cluster = true});
  const std::string url = dead.url();
  dead.kill();
  config cfg = fast_config("redis://127.0.0.1:1");
  cfg.cluster_addresses = {url};
  client c(cfg);
  auto l = c.get_lock("nowhere");
  const auto t0 = steady::now();
  EXPECT_EQ(code_of([&] { (void)l.try_lock(1s, 10s); }), errc::connection_refused);
  EXPECT_LT(ms_since(t0), 3000);
  ASSERT_TRUE(wait_until([&] { return static_cast<bool>(c.status().error); }, 5s));
  EXPECT_FALSE(c.status().connected);
  EXPECT_NE(c.status().detail.find("no cluster node told its slots"), std::string::npos)
      << c.status().detail;
}

TEST(cluster, a_bad_cluster_config_is_refused) {
  const auto refused = [](config cfg) { return code_of([&] { client c(std::move(cfg)); }); };
  config base = fast_config("redis://127.0.0.1:1");
  config unix_seed = base;
  unix_seed.cluster_addresses = {"unix:///tmp/x.sock"};
  EXPECT_EQ(refused(unix_seed), errc::invalid_argument);
  config mixed = base;
  mixed.cluster_addresses = {"redis://127.0.0.1:1", "rediss://127.0.0.1:2"};
  EXPECT_EQ(refused(mixed), errc::invalid_argument);
  config db = base;
  db.cluster_addresses = {"redis://127.0.0.1:1"};
  db.database = 2;
  EXPECT_EQ(refused(db), errc::invalid_argument);
  config url_db = base;
  url_db.cluster_addresses = {"redis://127.0.0.1:1/3"};
  EXPECT_EQ(refused(url_db), errc::invalid_argument);
  config with_sentinel = base;
  with_sentinel.cluster_addresses = {"redis://127.0.0.1:1"};
  with_sentinel.master_name = "m";
  with_sentinel.sentinel_addresses = {"redis://127.0.0.1:2"};
  EXPECT_EQ(refused(with_sentinel), errc::invalid_argument);
  config bad_url = base;
  bad_url.cluster_addresses = {"redis://127.0.0.1:notaport"};
  EXPECT_EQ(refused(bad_url), errc::invalid_url);
}

TEST(cluster, spent_request_keys_of_many_slots_are_deleted_slot_by_slot) {
  redis_cluster cluster;
  client c(cluster_config(cluster));
  // 40 semaphores: their names fall in many slots on every master, and each acquire and
  // release leaves a request key in its semaphore's slot (a DEL of keys of several slots would
  // be refused with CROSSSLOT, and leave them to their 16 s TTL).
  for (int i = 0; i < 40; ++i) {
    auto s = c.get_semaphore("spent-" + std::to_string(i));
    ASSERT_TRUE(s.try_set_permits(1));
    ASSERT_TRUE(s.try_acquire());
    s.release();
  }
  auto request_keys = [&] {
    std::size_t n = 0;
    for (int m = 0; m < 3; ++m) {
      n += cluster.master(m).cli_reply({"KEYS", "rlock_semaphore_latch:*"}).elements.size();
    }
    return n;
  };
  EXPECT_TRUE(wait_until([&] { return request_keys() == 0; }, 3s, 20ms))
      << request_keys() << " request keys left";
  for (int i = 0; i < 40; i += 13) {
    const std::string name = "spent-" + std::to_string(i);
    EXPECT_EQ(cluster.owner_of(name).cli({"GET", name}), "1") << name;
  }
}

// config::credentials_resolver in Cluster mode: asked with each node's own address, and every
// command and pub/sub connection to a master logs in as the user it names.
TEST(cluster, a_credentials_resolver_is_asked_for_every_node) {
  redis_cluster cluster;
  for (const auto& node : cluster.nodes()) {
    ASSERT_EQ(node->cli({"ACL", "SETUSER", "rot", "on", ">pw", "~*", "&*", "+@all"}), "OK");
  }
  rotating_secret secret("pw");
  config cfg = cluster_config(cluster);
  cfg.client_name = "resolved";
  cfg.credentials_resolver = secret.resolver();
  client holder(cfg);
  client waiter(cfg);
  // A wait woken by the release on every master: commands and subscriptions on each.
  for (const std::string& name : one_name_per_master(cluster, 3, "resolved-")) {
    auto held = holder.get_lock(name);
    held.lock();
    auto wanted = waiter.get_lock(name);
    auto got = try_lock_then_unlock_async(wanted, 20s);
    // It listens on its process's hand-off channel (the holder hands the lock over through the
    // queue) or on the lock's Redisson channel.
    const redis_server& owner = cluster.owner_of(name);
    ASSERT_TRUE(wait_until(
        [&] {
          const auto handoff =
              owner.cli_reply({"PUBSUB", "SHARDCHANNELS", "rlock_handoff:{" + name + "}:*"});
          return !handoff.elements.empty() ||
                 shardnumsub_of(owner, "redisson_lock__channel:{" + name + "}") > 0;
        },
        10s));
    held.unlock_or_throw();
    EXPECT_TRUE(got.get()) << name;
  }
  for (int m = 0; m < 3; ++m) {
    const redis_server& master = cluster.master(m);
    EXPECT_TRUE(secret.ports_asked().contains(master.port()))
        << "master " << m << " was not asked about";
    // Each of the client's connections there is the resolver's user.
    const std::string list = master.cli({"CLIENT", "LIST"});
    int ours = 0;
    for (std::size_t at = list.find("name=resolved "); at != std::string::npos;
         at = list.find("name=resolved ", at + 1)) {
      ++ours;
      const std::size_t end = list.find('\n', at);
      EXPECT_NE(list.substr(at, end - at).find(" user=rot "), std::string::npos)
          << list.substr(at, end - at);
    }
    EXPECT_GE(ours, 2) << "a command and a pub/sub connection on master " << m;
  }
}

}  // namespace
}  // namespace rlock::test
