#include "faults/checker.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <sstream>

namespace rlock::faults {
namespace {

constexpr std::size_t max_samples = 20;
constexpr std::int64_t unbounded = std::numeric_limits<std::int64_t>::max();

bool written_by_worker(event_kind k) {
  return k < event_kind::fault_start;
}

std::string ms_text(std::int64_t ns) {
  std::ostringstream out;
  out.precision(1);
  out << std::fixed << static_cast<double>(ns) / 1e6 << " ms";
  return out.str();
}

class report_builder {
 public:
  report_builder(check_report& r, const checker_options& o) : r_(r), o_(o) {}

  void sample(const std::string& text) {
    if (r_.samples.size() < max_samples) r_.samples.push_back(text);
  }

  // One worker's events, in time order.
  void run_worker(int worker, const std::vector<event>& evs) {
    std::optional<event> pending;  // an acquire-invoke without its result yet
    bool stopped_now = false;
    bool stopped_since_invoke = false;
    std::optional<critical_section> cs;
    constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
    std::size_t releasing = none;  // the section whose unlock is in flight
    bool killed = false;
    const std::int64_t margin = o_.deadline_margin.count();

    auto finish_section = [&](critical_section s) {
      r_.sections.push_back(std::move(s));
      return r_.sections.size() - 1;
    };

    for (const auto& e : evs) {
      switch (e.kind) {
        case event_kind::stopped:
          stopped_now = true;
          if (pending) stopped_since_invoke = true;
          break;
        case event_kind::resumed:
          stopped_now = false;
          break;
        case event_kind::killed:
          killed = true;
          if (cs) {
            cs->end_ns = e.t_ns;
            cs->killed = true;
            finish_section(std::move(*cs));
            cs.reset();
          }
          if (pending) {
            if (e.t_ns > pending->deadline_ns + margin && !stopped_since_invoke) {
              ++r_.stuck_acquires;
              sample("stuck: worker " + std::to_string(worker) +
                     " acquire still waiting when killed, " +
                     ms_text(e.t_ns - pending->deadline_ns) + " past its deadline");
            } else {
              ++r_.excused_acquires;
            }
            pending.reset();
          }
          break;
        case event_kind::acquire_invoke:
          ++r_.acquires;
          if (pending) {
            ++r_.stuck_acquires;
            sample("stuck: worker " + std::to_string(worker) + " invoked a new acquire before " +
                   "the previous one returned");
          }
          pending = e;
          stopped_since_invoke = stopped_now;
          break;
        case event_kind::acquire_ok:
        case event_kind::acquire_fail:
          if (pending) {
            const std::int64_t late = e.t_ns - pending->deadline_ns;
            if (!stopped_since_invoke) r_.max_overshoot_ns = std::max(r_.max_overshoot_ns, late);
            if (late > margin) {
              if (stopped_since_invoke) {
                ++r_.excused_acquires;
              } else {
                ++r_.late_acquires;
                sample("late: worker " + std::to_string(worker) + " acquire returned " +
                       ms_text(late) + " after its deadline (" + std::string(to_string(e.kind)) +
                       (e.error.empty() ? "" : " " + e.error) + ")");
              }
            }
            pending.reset();
          }
          if (e.kind == event_kind::acquire_ok) {
            ++r_.acquired;
            if (e.valid_until_ns <= e.t_ns) {
              ++r_.invalid_leases;
              sample("invalid lease: worker " + std::to_string(worker) +
                     " acquired the lock with valid_until() " +
                     (e.valid_until_ns < 0 ? std::string("= min()")
                                           : ms_text(e.t_ns - e.valid_until_ns) + " in the past"));
            }
            critical_section s;
            s.worker = worker;
            s.owner = e.owner;
            s.start_ns = e.t_ns;
            s.token = e.token;
            cs = std::move(s);
          } else if (e.error == "not-acquired") {
            ++r_.not_acquired;
          } else {
            ++r_.acquire_errors;
          }
          break;
        case event_kind::read:
          if (cs) cs->read = e.value;
          break;
        case event_kind::write_invoke:
          if (cs) {
            cs->write = write_outcome::indeterminate;  // until acknowledged
            cs->written = e.value.value_or(0);
          }
          break;
        case event_kind::write_ok:
          if (cs) cs->write = write_outcome::ok;
          break;
        case event_kind::write_fail:
          if (e.error == refused_by_fence) ++r_.fenced_refusals;
          if (cs)
            cs->write = e.indeterminate ? write_outcome::indeterminate : write_outcome::failed;
          break;
        case event_kind::read_fail:
          if (e.error == refused_by_fence) ++r_.fenced_refusals;
          break;
        case event_kind::write_skip:
          if (cs) cs->write = write_outcome::skipped;
          break;
        case event_kind::loss: {
          const bool by_deadline = e.detail == loss_by_deadline;
          ++(by_deadline ? r_.deadline_losses : r_.loss_signals);
          critical_section* s = cs ? &*cs : releasing != none ? &r_.sections[releasing] : nullptr;
          if (s) {
            if (!s->token_fired && !s->deadline_passed) s->loss_ns = e.t_ns;
            (by_deadline ? s->deadline_passed : s->token_fired) = true;
          }
          break;
        }
        case event_kind::release_invoke:
          if (cs) {
            cs->end_ns = e.t_ns;
            cs->lost_at_release = e.lost;
            releasing = finish_section(std::move(*cs));
            cs.reset();
          }
          break;
        case event_kind::release_ok:
          releasing = none;
          break;
        case event_kind::release_fail:
          if (releasing != none && e.error == "not_owner") {
            r_.sections[releasing].unlock_not_owner = true;
          }
          releasing = none;
          break;
        default:
          break;
      }
    }
    if (cs) {
      cs->end_ns = unbounded;
      cs->unterminated = true;
      sample("unterminated: worker " + std::to_string(worker) +
             " history ends inside a critical section without a kill");
      finish_section(std::move(*cs));
    }
    if (pending && !killed) {
      if (stopped_now) {
        ++r_.excused_acquires;
      } else {
        ++r_.stuck_acquires;
        sample("stuck: worker " + std::to_string(worker) + " acquire never returned");
      }
    }
  }

  void find_overlaps() {
    auto& s = r_.sections;
    for (const auto& c : s) r_.tokens_missed += c.token_missed() ? 1 : 0;
    std::stable_sort(s.begin(), s.end(), [](const critical_section& a, const critical_section& b) {
      return a.start_ns < b.start_ns;
    });
    for (std::size_t i = 0; i < s.size(); ++i) {
      for (std::size_t j = i + 1; j < s.size() && s[j].start_ns < s[i].end_ns; ++j) {
        if (s[j].worker == s[i].worker && s[j].owner == s[i].owner) continue;
        overlap o;
        o.first = i;
        o.second = j;
        o.from_ns = s[j].start_ns;
        o.to_ns = std::min(s[i].end_ns, s[j].end_ns);
        o.detected = s[i].aware_of_loss() || s[j].aware_of_loss();
        r_.overlaps.push_back(o);
        if (!o.detected) {
          sample("overlap (undetected): workers " + std::to_string(s[i].worker) + " and " +
                 std::to_string(s[j].worker) + " both held the lock for " +
                 (o.to_ns == unbounded ? std::string("an unbounded time")
                                       : ms_text(o.to_ns - o.from_ns)));
        }
      }
    }
  }

  // Sections are sorted by acquire-ok time (find_overlaps ran first).
  void check_tokens() {
    const auto& s = r_.sections;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i].token == 0 || s[i].aware_of_loss()) continue;
      for (std::size_t j = i + 1; j < s.size(); ++j) {
        if (s[j].token == 0 || s[j].aware_of_loss() || s[j].start_ns < s[i].end_ns) continue;
        if (s[j].token > s[i].token) continue;
        ++r_.fencing_order_violations;
        sample("token order: worker " + std::to_string(s[j].worker) + " got token " +
               std::to_string(s[j].token) + " after worker " + std::to_string(s[i].worker) +
               " released the lock it held with token " + std::to_string(s[i].token));
      }
    }
  }

  // Sections are sorted by acquire-ok time (find_overlaps ran first).
  void check_register() {
    long long expected = o_.initial_register;
    std::vector<long long> pending;  // values of writes whose outcome is still unknown
    long long applied = 0;
    auto is_pending = [&](long long v) {
      return std::find(pending.begin(), pending.end(), v) != pending.end();
    };
    for (const auto& s : r_.sections) {
      if (s.read) {
        const long long r = *s.read;
        if (r != expected) {
          if (is_pending(r)) {
            ++r_.writes_confirmed;
            ++applied;
          } else {
            ++r_.stale_reads;
            sample("stale read: worker " + std::to_string(s.worker) + " read " + std::to_string(r) +
                   ", the last write left " + std::to_string(expected));
          }
          expected = r;
        }
        pending.clear();
      }
      switch (s.write) {
        case write_outcome::ok:
          ++r_.writes_ok;
          ++applied;
          expected = s.written;
          pending.clear();
          break;
        case write_outcome::indeterminate:
          ++r_.writes_indeterminate;
          pending.push_back(s.written);
          break;
        case write_outcome::skipped:
          ++r_.writes_skipped;
          break;
        case write_outcome::failed:
          ++r_.writes_failed;
          break;
        case write_outcome::none:
          break;
      }
    }
    if (!o_.final_register) return;
    const long long final_value = *o_.final_register;
    if (final_value != expected) {
      if (is_pending(final_value)) {
        ++r_.writes_confirmed;
        ++applied;
      } else {
        r_.register_explained = false;
        sample("final register " + std::to_string(final_value) + ", the last write left " +
               std::to_string(expected));
      }
    }
    const long long lost = o_.initial_register + applied - final_value;
    r_.lost_updates = std::max(0LL, lost);
    if (lost < 0) r_.register_explained = false;
  }

 private:
  check_report& r_;
  const checker_options& o_;
};

}  // namespace

long long check_report::undetected_overlaps() const {
  return std::count_if(overlaps.begin(), overlaps.end(),
                       [](const overlap& o) { return !o.detected; });
}

long long check_report::detected_overlaps() const {
  return std::count_if(overlaps.begin(), overlaps.end(),
                       [](const overlap& o) { return o.detected; });
}

check_report check_history(std::vector<event> events, const checker_options& options) {
  check_report r;
  r.events = events.size();
  std::map<int, std::vector<event>> by_worker;
  std::map<int, bool> has_own;
  for (auto& e : events) {
    if (e.worker == 0) continue;
    if (written_by_worker(e.kind)) has_own[e.worker] = true;
    by_worker[e.worker].push_back(std::move(e));
  }
  report_builder b(r, options);
  for (auto& [worker, evs] : by_worker) {
    if (!has_own[worker]) continue;
    ++r.histories;
    std::stable_sort(evs.begin(), evs.end(),
                     [](const event& a, const event& c) { return a.t_ns < c.t_ns; });
    b.run_worker(worker, evs);
  }
  b.find_overlaps();
  b.check_tokens();
  b.check_register();
  return r;
}

std::optional<std::int64_t> first_acquire_after(const std::vector<event>& events, std::int64_t t_ns,
                                                int exclude_worker) {
  std::optional<std::int64_t> best;
  for (const auto& e : events) {
    if (e.kind != event_kind::acquire_ok || e.t_ns <= t_ns) continue;
    if (exclude_worker != 0 && e.worker == exclude_worker) continue;
    if (!best || e.t_ns < *best) best = e.t_ns;
  }
  return best;
}

}  // namespace rlock::faults
