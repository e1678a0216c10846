// rlock::permit_keeper against a real server: a kept permit outlives many leases, and its
// holder is told when it is lost (found gone, a server that does not answer, shutdown); a
// stopped keeper sends nothing more; bad arguments are refused.
#include "rlock/permit_keeper.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "common.hpp"
#include "support/event_recorder.hpp"
#include "support/wait.hpp"

namespace rlock::test {
// Named, not anonymous: the unity build puts this file beside other tests' helpers.
namespace permit_keeper_test {

/// When a stop token was stopped: waits for it (an event, not a sleep) up to `limit`.
class stop_watch {
 public:
  explicit stop_watch(std::stop_token token)
      : on_stop_(std::move(token), [this] {
          const std::lock_guard lk(mu_);
          at_ = steady::now();
          cv_.notify_all();
        }) {}
  std::optional<steady::time_point> wait_for(std::chrono::milliseconds limit) {
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, limit, [this] { return at_.has_value(); });
    return at_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<steady::time_point> at_;
  std::stop_callback<std::function<void()>> on_stop_;  // last: its callback uses the others
};

/// A config for `server` whose events go to `rec`.
config recording_config(const redis_server& server, event_recorder& rec) {
  config cfg = config_for(server);
  cfg.on_event = rec.handler();
  return cfg;
}

/// Expects that `rec` has heard the loss of a permit of semaphore `name`, as `how`.
void expect_permit_lost(event_recorder& rec, const std::string& name, const std::string& how) {
  const auto lost = rec.wait_for(client_event_kind::lock_lost, 1s);
  ASSERT_TRUE(lost) << rec.kinds();
  EXPECT_EQ(lost->object, name);
  EXPECT_EQ(lost->error, errc::lock_lost);
  EXPECT_EQ(lost->detail, how);
}

permit_expirable_semaphore one_permit(client& c, const std::string& name) {
  auto s = c.get_permit_expirable_semaphore(name);
  EXPECT_TRUE(s.try_set_permits(1));
  return s;
}

// Without renewal a 300 ms permit is reclaimed within a second; kept, it stays the holder's
// for as long as the keeper runs (here: until its bound has moved on by more than 5 leases).
TEST(permit_keeper, a_kept_permit_outlives_many_leases) {
  redis_server server;
  client c(config_for(server));
  auto s = one_permit(c, "kept");
  const auto id = s.try_acquire(300ms);
  ASSERT_TRUE(id.has_value());
  const steady::time_point start = steady::now();
  permit_keeper keeper(s, *id, 300ms);
  EXPECT_GE(keeper.valid_until(), start + 300ms);
  EXPECT_EQ(keeper.id(), *id);
  ASSERT_TRUE(wait_until([&] { return keeper.valid_until() > start + 1800ms; }, 10s))
      << "the bound moves on with each confirmed renewal";
  EXPECT_FALSE(keeper.loss_token().stop_requested());
  client other(config_for(server));
  auto seen = other.get_permit_expirable_semaphore("kept");
  EXPECT_EQ(seen.available_permits(), 0) << "not reclaimed";
  const auto left = seen.lease_time(*id);
  ASSERT_TRUE(left.has_value());
  EXPECT_GT(*left, 0ms);
  EXPECT_LE(*left, 300ms);
  EXPECT_TRUE(keeper.release());
  EXPECT_EQ(seen.available_permits(), 1);
  EXPECT_FALSE(keeper.loss_token().stop_requested()) << "a release is not a loss";
}

// Someone else releases the permit (or deletes the semaphore): the next renewal, at most a third
// of the lease later, finds it gone and stops the token, long before the lease would have ended.
TEST(permit_keeper, a_permit_taken_away_is_reported_by_the_next_renewal) {
  redis_server server;
  event_recorder rec;
  client c(recording_config(server, rec));
  auto s = one_permit(c, "taken");
  const auto id = s.try_acquire(3s);
  ASSERT_TRUE(id.has_value());
  permit_keeper keeper(s, *id, 3s);
  stop_watch lost(keeper.loss_token());
  client other(config_for(server));
  const steady::time_point gone = steady::now();
  ASSERT_TRUE(other.get_permit_expirable_semaphore("taken").try_release(*id));
  const auto at = lost.wait_for(10s);
  ASSERT_TRUE(at.has_value()) << "never told";
  EXPECT_LT(ms_between(gone, *at), 2500) << "the renewal a third of the lease on finds it gone";
  EXPECT_FALSE(keeper.release()) << "not the holder's any more";
  expect_permit_lost(rec, "taken", "a renewal found the permit gone");
}

// A server that answers nothing (SIGSTOP): no renewal is confirmed, and the token stops when
// the bound passes, not before, and not much after (the holder must stop before the permit can
// be given to anyone else).
TEST(permit_keeper, a_paused_server_ends_the_permit_at_its_bound) {
  redis_server server;
  event_recorder rec;
  client c(recording_config(server, rec));
  auto s = one_permit(c, "paused");
  const auto id = s.try_acquire(900ms);
  ASSERT_TRUE(id.has_value());
  permit_keeper keeper(s, *id, 900ms);
  stop_watch lost(keeper.loss_token());
  server.pause();
  const auto at = lost.wait_for(10s);
  server.resume();
  ASSERT_TRUE(at.has_value()) << "never told";
  const steady::time_point bound = keeper.valid_until();
  EXPECT_GE(*at, bound) << "not before the bound";
  EXPECT_LT(ms_between(bound, *at), 500) << "the bound's own timer";
  expect_permit_lost(rec, "paused", "its lease ended with no successful renewal");
}

// renewal::off: a fixed lease, watched. Nothing is sent; the token stops at the bound and the
// permit is reclaimed after its lease.
TEST(permit_keeper, without_renewal_the_lease_is_only_watched) {
  redis_server server;
  event_recorder rec;
  client c(recording_config(server, rec));
  auto s = one_permit(c, "watched");
  const steady::time_point before = steady::now();
  const auto id = s.try_acquire(400ms);
  ASSERT_TRUE(id.has_value());
  const long scripts = calls_of(server, "evalsha");
  permit_keeper keeper(s, *id, 400ms, before + 400ms, permit_keeper::renewal::off);
  stop_watch lost(keeper.loss_token());
  const auto at = lost.wait_for(10s);
  ASSERT_TRUE(at.has_value());
  EXPECT_GE(*at, before + 400ms);
  EXPECT_EQ(calls_of(server, "evalsha"), scripts) << "nothing sent";
  EXPECT_TRUE(wait_until([&] { return s.available_permits() == 1; }, 5s));
  expect_permit_lost(rec, "watched", "its lease ran out while it was held");
}

// stop() (and the destructor) ends the renewal without telling anything: the permit keeps the
// lease it had and is reclaimed after it.
TEST(permit_keeper, a_stopped_keeper_renews_no_more) {
  redis_server server;
  client c(config_for(server));
  auto s = one_permit(c, "stopped");
  const auto id = s.try_acquire(300ms);
  ASSERT_TRUE(id.has_value());
  permit_keeper keeper(s, *id, 300ms);
  ASSERT_TRUE(wait_until([&] { return keeper.valid_until() > steady::now() + 250ms; }, 5s))
      << "renewed at least once";
  keeper.stop();
  const steady::time_point stopped = steady::now();
  ASSERT_TRUE(wait_until([&] { return s.available_permits() == 1; }, 5s)) << "reclaimed";
  EXPECT_LT(ms_since(stopped), 2000);
  EXPECT_FALSE(keeper.loss_token().stop_requested());
  EXPECT_FALSE(keeper.release());
}

// At shutdown nothing keeps the permit any more: the token stops, and shutdown does not wait for
// the next renewal (10 s away). The keeper may outlive its client.
TEST(permit_keeper, shutdown_stops_the_token_at_once_and_the_keeper_may_outlive_the_client) {
  redis_server server;
  auto c = std::make_unique<client>(config_for(server));
  auto s = one_permit(*c, "shut");
  const auto id = s.try_acquire(30s);
  ASSERT_TRUE(id.has_value());
  std::optional<permit_keeper> keeper;
  keeper.emplace(s, *id, 30s);
  const steady::time_point start = steady::now();
  c->shutdown();
  EXPECT_LT(ms_since(start), 5000);
  EXPECT_TRUE(keeper->loss_token().stop_requested());
  c.reset();
  EXPECT_THROW(keeper->release(), error);  // errc::shutdown
  keeper.reset();
}

TEST(permit_keeper, a_moved_keeper_keeps_renewing) {
  redis_server server;
  client c(config_for(server));
  auto s = one_permit(c, "moved");
  const auto id = s.try_acquire(300ms);
  ASSERT_TRUE(id.has_value());
  permit_keeper first(s, *id, 300ms);
  permit_keeper second(std::move(first));
  const steady::time_point start = steady::now();
  ASSERT_TRUE(wait_until([&] { return second.valid_until() > start + 900ms; }, 10s));
  EXPECT_FALSE(second.loss_token().stop_requested());
  EXPECT_EQ(s.available_permits(), 0);
  // NOLINTBEGIN(bugprone-use-after-move): what a moved-from keeper does is the point here
  EXPECT_FALSE(first.loss_token().stop_possible());
  EXPECT_EQ(first.valid_until(), steady::time_point::min());
  EXPECT_FALSE(first.release());
  // NOLINTEND(bugprone-use-after-move)
  EXPECT_TRUE(second.release());
}

TEST(permit_keeper, bad_arguments_are_refused) {
  redis_server server;
  client c(config_for(server));
  auto s = one_permit(c, "bad");
  const auto id = s.try_acquire(10s);
  ASSERT_TRUE(id.has_value());
  const auto code = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const error& e) {
      return e.code();
    }
    return std::error_code{};
  };
  EXPECT_EQ(code([&] { permit_keeper k(s, "not-an-id", 10s); }), errc::invalid_argument);
  EXPECT_EQ(code([&] { permit_keeper k(s, *id, 0ms); }), errc::invalid_argument);
  EXPECT_EQ(code([&] { permit_keeper k(s, *id, -1ms, steady::now()); }), errc::invalid_argument);
  s.release(*id);
  EXPECT_EQ(code([&] { permit_keeper k(s, *id, 10s); }), errc::not_owner) << "not held";
  // A bound already past: lost at once.
  const auto again = s.try_acquire(10s);
  ASSERT_TRUE(again.has_value());
  permit_keeper late(s, *again, 10s, steady::now() - 1ms);
  stop_watch lost(late.loss_token());
  EXPECT_TRUE(lost.wait_for(5s).has_value());
}

}  // namespace permit_keeper_test
}  // namespace rlock::test
