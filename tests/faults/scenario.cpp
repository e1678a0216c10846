#include "faults/scenario.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include "faults/fault_proxy.hpp"
#include "faults/nemesis.hpp"
#include "faults/worker_networks.hpp"
#include "faults/worker_pool.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"

#ifndef RLOCK_FAULT_WORKER
#error "RLOCK_FAULT_WORKER must name the worker executable"
#endif

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// How long the end-of-run waits may take beyond the workers' own deadlines.
constexpr auto idle_slack = 10s;
constexpr auto exit_limit = 5s;

// $RLOCK_FAULTS_LONG: minutes per scenario (1 means 3), or nullopt.
std::optional<int> long_mode_minutes() {
  const char* v = std::getenv("RLOCK_FAULTS_LONG");  // NOLINT(concurrency-mt-unsafe): no setenv
  if (!v || !*v || std::string(v) == "0") return std::nullopt;
  const int n = std::atoi(v);
  return n <= 1 ? 3 : n;
}

void pump_until(worker_pool& pool, steady::time_point t) {
  const auto now = steady::now();
  if (t > now) pool.pump_for(std::chrono::ceil<std::chrono::milliseconds>(t - now));
}

// Recovery and loss latency of every fault, from the merged history.
void measure_faults(std::vector<fault_record>& faults, const std::vector<event>& events,
                    std::int64_t until_ns) {
  for (auto& f : faults) {
    const auto next =
        first_acquire_after(events, f.recovery_from_ns, f.exclude_target ? f.target : 0);
    if (next && *next <= until_ns) f.recovery_ns = *next - f.recovery_from_ns;
    if (f.target == 0) continue;
    // Detected by the first loss event (token or deadline) or not_owner from the unlock.
    std::optional<std::int64_t> first;
    bool release_ended = false;
    for (const auto& e : events) {
      if (e.worker != f.target || e.t_ns < f.start_ns) continue;
      if (e.kind == event_kind::release_invoke && f.release_after_ns < 0) {
        f.release_after_ns = e.t_ns - f.start_ns;
      }
      if (f.release_after_ns >= 0 && !release_ended &&
          (e.kind == event_kind::release_ok || e.kind == event_kind::release_fail)) {
        release_ended = true;
        f.released_ok = e.kind == event_kind::release_ok;
      }
      const bool detects = e.kind == event_kind::loss ||
                           (e.kind == event_kind::release_fail && e.error == "not_owner");
      if (detects && (!first || e.t_ns < *first)) first = e.t_ns;
    }
    if (first) {
      f.loss_detected = true;
      f.loss_latency_ns = *first - f.loss_from_ns;
    }
    // The server confirmed that the target's unlock released its hold: nothing was lost.
    if (f.unless_released_ok && f.released_ok) f.expect_loss = false;
  }
}

}  // namespace

std::string_view to_string(nemesis_kind k) {
  switch (k) {
    case nemesis_kind::none:
      return "none";
    case nemesis_kind::kill_holder:
      return "kill_holder";
    case nemesis_kind::kill_holder_and_pubsub:
      return "kill_holder_and_pubsub";
    case nemesis_kind::stop_holder:
      return "stop_holder";
    case nemesis_kind::server_restart:
      return "server_restart";
    case nemesis_kind::server_pause:
      return "server_pause";
    case nemesis_kind::client_kill_normal:
      return "client_kill_normal";
    case nemesis_kind::client_kill_pubsub:
      return "client_kill_pubsub";
    case nemesis_kind::client_pause_write:
      return "client_pause_write";
    case nemesis_kind::script_flush:
      return "script_flush";
    case nemesis_kind::early_expiry:
      return "early_expiry";
    case nemesis_kind::proxy:
      return "proxy";
    case nemesis_kind::starve_holder:
      return "starve_holder";
    case nemesis_kind::partition_holder:
      return "partition_holder";
    case nemesis_kind::deafen_holder:
      return "deafen_holder";
    case nemesis_kind::mute_holder:
      return "mute_holder";
  }
  return "unknown";
}

scenario_result run_scenario(scenario_options o) {
  const auto started = steady::now();
  if (const auto minutes = long_mode_minutes()) {
    const auto cycle = o.fault_on + o.fault_off;
    o.cycles = std::max<int>(o.cycles, static_cast<int>(std::chrono::minutes(*minutes) / cycle));
  }
  scenario_result result;
  result.options = o;

  // partition_holder, deafen_holder, mute_holder: each worker in a network namespace of its
  // own, the servers listening on the namespaces' links as well as on loopback
  // (worker_networks.hpp).
  std::optional<worker_networks> networks;
  if (o.nemesis == nemesis_kind::partition_holder || o.nemesis == nemesis_kind::deafen_holder ||
      o.nemesis == nemesis_kind::mute_holder) {
    networks.emplace(o.workers);
  }
  const auto bind_also = [](const std::vector<std::string>& hosts) {
    std::vector<std::string> args{"--protected-mode", "no", "--bind", "127.0.0.1"};
    args.insert(args.end(), hosts.begin(), hosts.end());
    return args;
  };
  test::server_options lock_server_options;
  lock_server_options.persistence = o.persistence;
  if (networks) lock_server_options.extra_args = bind_also(networks->lock_hosts());
  test::redis_server server(lock_server_options);
  test::server_options register_server_options;
  if (networks) register_server_options.extra_args = bind_also(networks->register_hosts());
  test::redis_server register_server(register_server_options);  // the resource: never faulted
  std::optional<fault_proxy> proxy;
  if (o.nemesis == nemesis_kind::proxy) proxy.emplace(server.port());

  std::optional<test::temp_dir> tmp;
  std::filesystem::path dir;
  // NOLINTNEXTLINE(concurrency-mt-unsafe): the tests never call setenv
  if (const char* keep = std::getenv("RLOCK_FAULTS_HISTORY_DIR"); keep && *keep) {
    dir = std::filesystem::path(keep) / o.name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  } else {
    tmp.emplace("rlock-faults");
    dir = tmp->path();
  }

  const auto t0 = steady::now();
  const auto cycle_length = o.fault_on + o.fault_off;
  const auto end = t0 + o.warmup + cycle_length * o.cycles + o.quiet;
  worker_config wc;
  wc.program = RLOCK_FAULT_WORKER;
  wc.dir = dir;
  wc.lock_url = proxy ? proxy->url() : server.url();
  wc.register_url = register_server.url();
  wc.name = "faults";
  wc.until_ns = to_ns(end);
  wc.watchdog = o.watchdog;
  wc.wait = o.wait;
  wc.hold = o.hold;
  wc.fenced = o.fenced;
  wc.careless = o.careless;
  wc.queue = o.lock_queue;
  wc.liveness = o.liveness;
  if (networks) {
    wc.place = [&networks, &server, &register_server](int id) {
      worker_placement where;
      where.prefix = networks->exec_prefix(id);
      const auto url = [](const std::string& host, std::uint16_t port) {
        return "redis://" + host + ":" + std::to_string(port);
      };
      where.lock_url = url(networks->lock_host(id), server.port());
      where.register_url = url(networks->register_host(id), register_server.port());
      return where;
    };
  }
  worker_pool pool(wc);
  for (int i = 0; i < o.workers; ++i) pool.spawn();

  auto nem = make_nemesis(o.nemesis);
  fault_context ctx{server, pool,          proxy ? &*proxy : nullptr,
                    o,      result.faults, networks ? &*networks : nullptr};
  for (int cycle = 0; cycle < o.cycles; ++cycle) {
    pump_until(pool, t0 + o.warmup + cycle_length * cycle);
    nem->inject(ctx, cycle);
    // The on phase counts from the injection (finding a holder may take a moment).
    const auto on_end = steady::now() + o.fault_on;
    for (auto next_tick = steady::now() + o.tick; next_tick < on_end; next_tick += o.tick) {
      pump_until(pool, next_tick);
      nem->tick(ctx);
    }
    pump_until(pool, on_end);
    nem->heal(ctx);
  }
  pump_until(pool, end);

  // Every worker stops at `end` after its current operation (at most wait + hold + unlock).
  if (!pool.wait_all_idle(o.wait + o.hold * 2 + o.deadline_margin + idle_slack)) {
    pool.pump();
    for (std::size_t id = 1; id <= pool.spawned(); ++id) {
      pool.kill(static_cast<int>(id), "not idle at the end (stuck)");
    }
  }
  {
    // Nothing is held or awaited: no script may run for two renewal periods.
    const long long before = script_calls(server);
    pool.pump_for(std::chrono::duration_cast<std::chrono::milliseconds>(o.watchdog * 2 / 3));
    result.end.idle_renewals = script_calls(server) - before;
  }
  pool.terminate_all(exit_limit);
  check_leftovers(server, wc.name, std::max(o.watchdog, o.liveness * 2), o.fenced, result.end);

  checker_options co;
  co.deadline_margin = o.deadline_margin;
  const auto reg = register_server.cli_reply({"GET", wc.name + ":register"});
  co.final_register = reg.is_nil() ? 0 : std::stoll(reg.str);
  result.check = check_history(pool.events(), co);
  measure_faults(result.faults, pool.events(), to_ns(end));
  result.crashes = pool.crashes();
  result.malformed_lines = pool.malformed_lines();
  result.seconds = std::chrono::duration<double>(steady::now() - started).count();

  {
    // The runner's events next to the workers' histories, for a human reading them.
    std::ofstream runner(dir / "runner.jsonl");
    for (const auto& e : pool.events()) {
      if (e.kind >= event_kind::fault_start) runner << to_json(e) << '\n';
    }
  }
  std::cout << result.summary() << std::endl;
  // NOLINTNEXTLINE(concurrency-mt-unsafe): the tests never call setenv
  if (const char* report = std::getenv("RLOCK_FAULTS_REPORT"); report && *report) {
    std::ofstream out(report, std::ios::app);
    out << result.json() << '\n';
  }
  return result;
}

}  // namespace rlock::faults
