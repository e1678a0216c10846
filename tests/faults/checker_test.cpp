// The checker and the history format on hand-made histories (no server).
#include "faults/checker.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "faults/history.hpp"
#include "support/temp_dir.hpp"

namespace rlock::faults {
namespace {

constexpr std::int64_t ms = 1'000'000;  // one millisecond in ns

event ev(event_kind k, int worker, std::int64_t t_ms) {
  event e;
  e.kind = k;
  e.worker = worker;
  e.t_ns = t_ms * ms;
  e.owner = "uuid-" + std::to_string(worker) + ":1";
  return e;
}

// Builds histories: each worker's events in order, at millisecond times.
class history {
 public:
  std::vector<event> events;

  void add(event_kind k, int w, std::int64_t t_ms) { events.push_back(ev(k, w, t_ms)); }
  void invoke(int w, std::int64_t t_ms, std::int64_t wait_ms = 2000) {
    event e = ev(event_kind::acquire_invoke, w, t_ms);
    e.deadline_ns = (t_ms + wait_ms) * ms;
    events.push_back(e);
  }
  void acquired(int w, std::int64_t t_ms, std::int64_t lease_ms = 1500, std::int64_t token = 0) {
    event e = ev(event_kind::acquire_ok, w, t_ms);
    e.valid_until_ns = (t_ms + lease_ms) * ms;
    e.token = token;
    events.push_back(e);
  }
  void read(int w, std::int64_t t_ms, long long v) {
    event e = ev(event_kind::read, w, t_ms);
    e.value = v;
    events.push_back(e);
  }
  void write(int w, std::int64_t t_ms, long long v) {
    event e = ev(event_kind::write_invoke, w, t_ms);
    e.value = v;
    events.push_back(e);
  }
  void fail(event_kind k, int w, std::int64_t t_ms, std::string error, bool unknown = false) {
    event e = ev(k, w, t_ms);
    e.error = std::move(error);
    e.indeterminate = unknown;
    events.push_back(e);
  }
  // A whole critical section: acquired at t, reads `read`, writes read + 1, releases at t + len.
  void section(int w, std::int64_t t, std::int64_t len, long long value) {
    invoke(w, t - 1);
    acquired(w, t);
    read(w, t + 1, value);
    write(w, t + 2, value + 1);
    add(event_kind::write_ok, w, t + 3);
    add(event_kind::release_invoke, w, t + len);
    add(event_kind::release_ok, w, t + len + 1);
  }
};

check_report check(const history& h, std::optional<long long> final_value) {
  checker_options o;
  o.final_register = final_value;
  return check_history(h.events, o);
}

TEST(fault_checker, sequential_sections_are_clean) {
  history h;
  h.section(1, 100, 50, 0);
  h.section(2, 160, 50, 1);
  h.section(3, 220, 50, 2);
  h.section(1, 280, 50, 3);
  const auto r = check(h, 4);
  EXPECT_EQ(r.histories, 3u);
  EXPECT_EQ(r.acquires, 4);
  EXPECT_EQ(r.acquired, 4);
  EXPECT_EQ(r.writes_ok, 4);
  EXPECT_EQ(r.lost_updates, 0);
  EXPECT_EQ(r.stale_reads, 0);
  EXPECT_TRUE(r.register_explained);
  EXPECT_TRUE(r.overlaps.empty());
  EXPECT_EQ(r.late_acquires, 0);
  EXPECT_EQ(r.stuck_acquires, 0);
  EXPECT_TRUE(r.samples.empty());
}

TEST(fault_checker, an_acquire_without_a_lease_deadline_ahead_is_an_invalid_lease) {
  history h;
  h.section(1, 100, 50, 0);
  h.invoke(2, 199);
  h.acquired(2, 200, -1);  // valid_until() 1 ms in the past
  h.add(event_kind::release_invoke, 2, 250);
  event no_deadline = ev(event_kind::acquire_ok, 3, 300);
  no_deadline.valid_until_ns = -1;  // time_point::min() as the worker logs it
  h.invoke(3, 299);
  h.events.push_back(no_deadline);
  h.add(event_kind::release_invoke, 3, 350);
  const auto r = check(h, 1);
  EXPECT_EQ(r.invalid_leases, 2);
  EXPECT_EQ(r.samples.size(), 2u);
}

TEST(fault_checker, touching_sections_do_not_overlap) {
  history h;
  h.section(1, 100, 50, 0);  // released (release-invoke) at 150
  h.section(2, 150, 50, 1);  // acquired at 150
  EXPECT_TRUE(check(h, 2).overlaps.empty());
}

TEST(fault_checker, a_race_is_an_undetected_overlap_a_stale_read_and_a_lost_update) {
  history h;
  h.section(1, 100, 100, 0);  // 100..200, reads 0 writes 1
  h.section(2, 150, 100, 0);  // 150..250, also reads 0 and writes 1
  const auto r = check(h, 1);
  ASSERT_EQ(r.overlaps.size(), 1u);
  EXPECT_FALSE(r.overlaps[0].detected);
  EXPECT_EQ(r.overlaps[0].from_ns, 150 * ms);
  EXPECT_EQ(r.overlaps[0].to_ns, 200 * ms);
  EXPECT_EQ(r.undetected_overlaps(), 1);
  EXPECT_EQ(r.stale_reads, 1);
  EXPECT_EQ(r.lost_updates, 1);
  EXPECT_FALSE(r.samples.empty());
}

TEST(fault_checker, an_overlap_is_detected_when_a_holder_got_the_loss_signal) {
  history h;
  h.section(1, 100, 100, 0);
  h.add(event_kind::loss, 1, 180);  // inside worker 1's section
  h.section(2, 150, 100, 1);
  const auto r = check(h, 2);
  ASSERT_EQ(r.overlaps.size(), 1u);
  EXPECT_TRUE(r.overlaps[0].detected);
  EXPECT_EQ(r.detected_overlaps(), 1);
  EXPECT_EQ(r.undetected_overlaps(), 0);
  EXPECT_EQ(r.loss_signals, 1);
}

TEST(fault_checker, an_unlock_that_reports_not_owner_also_detects_the_loss) {
  history h;
  h.invoke(1, 99);
  h.acquired(1, 100);
  h.add(event_kind::release_invoke, 1, 200);
  h.fail(event_kind::release_fail, 1, 201, "not_owner");
  h.section(2, 150, 100, 0);
  const auto r = check(h, 1);
  ASSERT_EQ(r.overlaps.size(), 1u);
  EXPECT_TRUE(r.overlaps[0].detected);
  EXPECT_TRUE(r.sections[0].unlock_not_owner);
}

TEST(fault_checker, a_deadline_seen_by_the_holder_detects_and_counts_a_missed_token) {
  history h;
  h.invoke(1, 99);
  h.acquired(1, 100);
  h.read(1, 101, 0);
  event seen = ev(event_kind::loss, 1, 2600);
  seen.detail = std::string(loss_by_deadline);
  h.events.push_back(seen);
  h.add(event_kind::write_skip, 1, 2600);
  h.add(event_kind::release_invoke, 1, 2601);
  h.fail(event_kind::release_fail, 1, 2602, "not_owner");
  h.section(2, 1700, 50, 0);
  auto r = check(h, 1);
  ASSERT_EQ(r.overlaps.size(), 1u);
  EXPECT_TRUE(r.overlaps[0].detected);
  EXPECT_EQ(r.deadline_losses, 1);
  EXPECT_EQ(r.loss_signals, 0);
  EXPECT_EQ(r.tokens_missed, 1);
  EXPECT_EQ(r.writes_skipped, 1);
  EXPECT_EQ(r.lost_updates, 0);

  event token = ev(event_kind::loss, 1, 2599);
  token.detail = std::string(loss_by_token);
  h.events.push_back(token);
  r = check(h, 1);
  EXPECT_EQ(r.loss_signals, 1);
  EXPECT_EQ(r.tokens_missed, 0);
}

TEST(fault_checker, final_value_below_the_applied_writes_counts_lost_updates) {
  history h;
  h.section(1, 100, 50, 0);
  h.section(2, 160, 50, 1);
  h.section(3, 220, 50, 2);
  const auto r = check(h, 2);  // someone's increment vanished after the last read
  EXPECT_EQ(r.lost_updates, 1);
  EXPECT_FALSE(r.register_explained);
  EXPECT_EQ(check(h, 7).lost_updates, 0);
  EXPECT_FALSE(check(h, 7).register_explained) << "more increments than writes";
  EXPECT_EQ(check(h, std::nullopt).lost_updates, 0) << "no final value: not computed";
}

TEST(fault_checker, an_indeterminate_write_is_settled_by_the_next_read) {
  for (const long long next_read : {0LL, 1LL}) {
    history h;
    h.invoke(1, 99);
    h.acquired(1, 100);
    h.read(1, 101, 0);
    h.write(1, 102, 1);
    h.fail(event_kind::write_fail, 1, 110, "timeout", true);
    h.add(event_kind::release_invoke, 1, 120);
    h.add(event_kind::release_ok, 1, 121);
    h.section(2, 200, 50, next_read);
    const auto r = check(h, next_read + 1);
    EXPECT_EQ(r.writes_indeterminate, 1) << next_read;
    EXPECT_EQ(r.writes_confirmed, next_read) << next_read;
    EXPECT_EQ(r.stale_reads, 0) << next_read;
    EXPECT_EQ(r.lost_updates, 0) << next_read;
    EXPECT_TRUE(r.register_explained) << next_read;
  }
}

TEST(fault_checker, a_definite_write_failure_is_not_applied) {
  history h;
  h.invoke(1, 99);
  h.acquired(1, 100);
  h.read(1, 101, 0);
  h.write(1, 102, 1);
  h.fail(event_kind::write_fail, 1, 103, "wrong_type", false);
  h.add(event_kind::release_invoke, 1, 120);
  h.section(2, 200, 50, 1);  // sees a write that cannot have happened
  const auto r = check(h, 2);
  EXPECT_EQ(r.writes_failed, 1);
  EXPECT_EQ(r.stale_reads, 1);
}

TEST(fault_checker, a_killed_holder_ends_its_section_at_the_kill) {
  history h;
  h.invoke(1, 99);
  h.acquired(1, 100);
  h.read(1, 101, 0);
  h.write(1, 102, 1);  // killed before the acknowledgement: outcome unknown
  h.add(event_kind::stopped, 1, 140);
  h.add(event_kind::killed, 1, 141);
  h.section(2, 1700, 50, 1);  // the lease ran out; the killed write had been applied
  auto r = check(h, 2);
  EXPECT_TRUE(r.overlaps.empty());
  EXPECT_TRUE(r.sections[0].killed);
  EXPECT_EQ(r.sections[0].end_ns, 141 * ms);
  EXPECT_EQ(r.writes_confirmed, 1);
  EXPECT_EQ(r.lost_updates, 0);
  EXPECT_EQ(r.stuck_acquires, 0);

  history early = h;
  early.section(3, 120, 10, 0);  // someone acquired while the killed worker still held it
  r = check(early, 2);
  EXPECT_EQ(r.undetected_overlaps(), 1);
}

TEST(fault_checker, a_history_that_ends_inside_a_section_overlaps_everything_after) {
  history h;
  h.invoke(1, 99);
  h.acquired(1, 100);
  h.section(2, 5000, 50, 0);
  const auto r = check(h, 1);
  EXPECT_TRUE(r.sections[0].unterminated);
  EXPECT_EQ(r.undetected_overlaps(), 1);
}

TEST(fault_checker, an_acquire_returning_past_its_deadline_and_margin_is_late) {
  history h;
  h.invoke(1, 0, 1000);
  h.fail(event_kind::acquire_fail, 1, 1240, "not-acquired");  // within the 250 ms margin
  h.invoke(1, 2000, 1000);
  h.fail(event_kind::acquire_fail, 1, 3300, "timeout");  // 300 ms late
  const auto r = check(h, std::nullopt);
  EXPECT_EQ(r.late_acquires, 1);
  EXPECT_EQ(r.max_overshoot_ns, 300 * ms);
  EXPECT_EQ(r.not_acquired, 1);
  EXPECT_EQ(r.acquire_errors, 1);
}

TEST(fault_checker, a_stopped_worker_is_excused_for_returning_late) {
  history h;
  h.invoke(1, 0, 1000);
  h.add(event_kind::stopped, 1, 500);
  h.add(event_kind::resumed, 1, 3000);
  h.fail(event_kind::acquire_fail, 1, 3001, "not-acquired");
  const auto r = check(h, std::nullopt);
  EXPECT_EQ(r.late_acquires, 0);
  EXPECT_EQ(r.excused_acquires, 1);
}

TEST(fault_checker, an_acquire_that_never_returns_is_stuck_unless_killed_in_time) {
  history h;
  h.invoke(1, 0, 1000);
  EXPECT_EQ(check(h, std::nullopt).stuck_acquires, 1);

  history killed_in_time = h;
  killed_in_time.add(event_kind::stopped, 1, 400);
  killed_in_time.add(event_kind::killed, 1, 401);
  EXPECT_EQ(check(killed_in_time, std::nullopt).stuck_acquires, 0);

  history killed_late = h;
  killed_late.add(event_kind::killed, 1, 5000);
  EXPECT_EQ(check(killed_late, std::nullopt).stuck_acquires, 1);
}

TEST(fault_checker, events_are_ordered_per_worker_whatever_the_input_order) {
  history h;
  h.section(1, 100, 50, 0);
  h.section(2, 160, 50, 1);
  std::reverse(h.events.begin(), h.events.end());
  const auto r = check(h, 2);
  EXPECT_TRUE(r.overlaps.empty());
  EXPECT_EQ(r.stale_reads, 0);
  EXPECT_EQ(r.lost_updates, 0);
}

TEST(fault_checker, first_acquire_after_skips_the_excluded_worker) {
  history h;
  h.section(1, 100, 50, 0);
  h.section(2, 300, 50, 1);
  EXPECT_EQ(first_acquire_after(h.events, 50 * ms), 100 * ms);
  EXPECT_EQ(first_acquire_after(h.events, 50 * ms, 1), 300 * ms);
  EXPECT_EQ(first_acquire_after(h.events, 300 * ms), std::nullopt);
}

// Fenced holders: a later clean hold with a lower token is reported, unless either hold was
// lost (a stale holder's token is lower by design); refused accesses are counted, and a refused
// write is not applied.
TEST(fault_checker, fencing_tokens_out_of_order_between_clean_holds_are_reported) {
  auto run = [](std::int64_t second_token, bool first_lost) {
    history h;
    auto fenced_acquire = [&h](int w, std::int64_t t_ms, std::int64_t token) {
      h.invoke(w, t_ms - 1);
      h.acquired(w, t_ms, 1500, token);
    };
    fenced_acquire(1, 10, 5);
    h.read(1, 11, 0);
    h.write(1, 12, 1);
    h.add(event_kind::write_ok, 1, 13);
    event r = ev(event_kind::release_invoke, 1, 20);
    r.lost = first_lost;
    h.events.push_back(r);
    h.add(event_kind::release_ok, 1, 21);
    fenced_acquire(2, 30, second_token);
    h.fail(event_kind::read_fail, 2, 31, std::string(refused_by_fence));
    h.add(event_kind::release_invoke, 2, 40);
    h.add(event_kind::release_ok, 2, 41);
    fenced_acquire(3, 50, 9);
    h.read(3, 51, 1);
    h.write(3, 52, 2);
    h.fail(event_kind::write_fail, 3, 53, std::string(refused_by_fence));
    h.add(event_kind::release_invoke, 3, 60);
    h.add(event_kind::release_ok, 3, 61);
    return check(h, 1);
  };
  const auto in_order = run(6, false);
  EXPECT_EQ(in_order.fencing_order_violations, 0);
  EXPECT_EQ(in_order.fenced_refusals, 2);
  EXPECT_EQ(in_order.lost_updates, 0);
  EXPECT_EQ(in_order.writes_failed, 1);
  EXPECT_TRUE(in_order.register_explained);
  const auto reversed = run(3, false);
  EXPECT_EQ(reversed.fencing_order_violations, 1);
  ASSERT_FALSE(reversed.samples.empty());
  EXPECT_NE(reversed.samples.front().find("token order"), std::string::npos);
  EXPECT_EQ(run(3, true).fencing_order_violations, 0);  // the first hold was lost
}

TEST(fault_history, json_lines_round_trip) {
  event e;
  e.kind = event_kind::write_fail;
  e.t_ns = 123456789012345;
  e.worker = 7;
  e.owner = "6f1c:1";
  e.value = -42;
  e.deadline_ns = 5;
  e.valid_until_ns = -1;
  e.token = 77;
  e.lost = true;
  e.indeterminate = true;
  e.error = "say \"hi\"\\\n\x01";
  e.detail = "pid=1";
  const std::string line = to_json(e);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const auto back = parse_event(line);
  ASSERT_TRUE(back.has_value()) << line;
  EXPECT_EQ(*back, e);

  event minimal;
  minimal.kind = event_kind::idle;
  minimal.t_ns = 1;
  EXPECT_EQ(to_json(minimal), R"({"ev":"idle","t":1,"w":0})");
  EXPECT_EQ(parse_event(to_json(minimal)), minimal);
}

TEST(fault_history, malformed_lines_are_rejected_and_counted) {
  EXPECT_FALSE(parse_event(""));
  EXPECT_FALSE(parse_event("{}"));
  EXPECT_FALSE(parse_event(R"({"ev":"nonsense","t":1})"));
  EXPECT_FALSE(parse_event(R"({"ev":"idle"})"));
  EXPECT_FALSE(parse_event(R"({"ev":"idle","t":1} trailing)"));
  EXPECT_TRUE(parse_event(R"({ "ev" : "idle", "t" : 1, "unknown" : null, "x": "y" })"));
  std::size_t bad = 0;
  const auto evs = parse_history(
      "{\"ev\":\"idle\",\"t\":1}\ngarbage\n{\"ev\":\"exit\",\"t\":2}\n"
      "{\"ev\":\"exit\",\"t\":3",
      &bad);
  EXPECT_EQ(evs.size(), 2u) << "the unterminated last line is not an event yet";
  EXPECT_EQ(bad, 1u);
}

TEST(fault_history, reader_returns_only_complete_lines_as_the_file_grows) {
  test::temp_dir dir("rlock-history");
  const auto path = dir.path() / "h.jsonl";
  history_reader reader(path);
  EXPECT_TRUE(reader.poll().empty()) << "no file yet";
  std::ofstream out(path);
  out << R"({"ev":"start","t":1,"w":1})"
      << "\n"
      << R"({"ev":"acquire-in)" << std::flush;
  auto first = reader.poll();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].kind, event_kind::start);
  out << R"(voke","t":2,"w":1})"
      << "\n"
      << std::flush;
  auto second = reader.poll();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].kind, event_kind::acquire_invoke);
  EXPECT_TRUE(reader.poll().empty());
  EXPECT_EQ(reader.malformed(), 0u);
}

}  // namespace
}  // namespace rlock::faults
