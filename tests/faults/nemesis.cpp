#include "faults/nemesis.hpp"

#include <array>
#include <cstdio>
#include <optional>
#include <random>
#include <thread>

#include "faults/cpu_starvation.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;

constexpr auto holder_search = 3000ms;

// Expires the lock only if `owner` still holds it (atomic: no other holder can be hit).
constexpr const char* expire_if_owner =
    "if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then "
    "return redis.call('pexpire', KEYS[1], 1) end return 0";

std::size_t record_fault(fault_context& ctx, fault_record f) {
  event e;
  e.kind = event_kind::fault_start;
  e.t_ns = f.start_ns;
  e.worker = f.target;
  e.detail = f.what;
  ctx.pool.record(e);
  ctx.faults.push_back(std::move(f));
  return ctx.faults.size() - 1;
}

void record_heal(fault_context& ctx, std::size_t index) {
  fault_record& f = ctx.faults[index];
  f.end_ns = now_ns();
  event e;
  e.kind = event_kind::fault_end;
  e.t_ns = f.end_ns;
  e.worker = f.target;
  e.detail = f.what;
  ctx.pool.record(e);
}

fault_record instant(std::string what, int target = 0) {
  fault_record f;
  f.what = std::move(what);
  f.target = target;
  f.start_ns = f.end_ns = f.recovery_from_ns = now_ns();
  return f;
}

// Stops a worker that is inside its critical section; see nemesis.hpp.
std::optional<int> stop_a_holder(fault_context& ctx, std::minstd_rand& rng) {
  const auto until = std::chrono::steady_clock::now() + holder_search;
  while (std::chrono::steady_clock::now() < until) {
    ctx.pool.pump();
    const auto holders = ctx.pool.holders();
    if (holders.empty()) {
      std::this_thread::sleep_for(1ms);
      continue;
    }
    const int id = holders[rng() % holders.size()];
    if (!ctx.pool.stop(id)) continue;
    if (ctx.pool.is_holding(id)) return id;
    ctx.pool.resume(id);  // caught between two critical sections: let it go, try again
    std::this_thread::sleep_for(2ms);
  }
  return std::nullopt;
}

// Waits (at most holder_search) until a worker acquired the lock less than `fresh_ns` ago,
// without stopping it. Returns its id.
std::optional<int> fresh_holder(fault_context& ctx) {
  constexpr std::int64_t fresh_ns = 30'000'000;
  const auto until = std::chrono::steady_clock::now() + holder_search;
  while (std::chrono::steady_clock::now() < until) {
    ctx.pool.pump();
    for (const int id : ctx.pool.holders()) {
      if (now_ns() - ctx.pool.holding_since(id) < fresh_ns) return id;
    }
    std::this_thread::sleep_for(1ms);
  }
  return std::nullopt;
}

class no_faults final : public nemesis {
 public:
  void inject(fault_context&, int) override {}
  void heal(fault_context&) override {}
};

class kill_holder final : public nemesis {
 public:
  void inject(fault_context& ctx, int) override {
    const auto id = stop_a_holder(ctx, rng_);
    if (!id) return;
    fault_record f = instant("kill -9 holder w" + std::to_string(*id), *id);
    f.exclude_target = true;
    ctx.pool.kill(*id, "nemesis: kill -9 holder");
    record_fault(ctx, std::move(f));
    ctx.pool.spawn();  // keep the number of contenders
  }
  void heal(fault_context&) override {}

 private:
  std::minstd_rand rng_{7};
};

class stop_holder final : public nemesis {
 public:
  void inject(fault_context& ctx, int) override {
    index_.reset();
    const auto id = stop_a_holder(ctx, rng_);
    if (!id) return;
    const bool outlasts = ctx.options.fault_on >= ctx.options.watchdog;
    fault_record f = instant("SIGSTOP holder w" + std::to_string(*id) + " for " +
                                 std::to_string(ctx.options.fault_on.count()) + " ms",
                             *id);
    // Past the lease another worker takes over: recovery counts from the stop. Otherwise the
    // holder keeps the lock and recovery counts from the resume.
    f.expect_loss = outlasts;
    f.exclude_target = outlasts;
    index_ = record_fault(ctx, std::move(f));
  }
  void heal(fault_context& ctx) override {
    if (!index_) return;
    fault_record& f = ctx.faults[*index_];
    const std::int64_t resumed = ctx.pool.resume(f.target);
    record_heal(ctx, *index_);
    f.end_ns = resumed;
    f.loss_from_ns = resumed;
    if (!f.expect_loss) f.recovery_from_ns = resumed;
  }

 private:
  std::minstd_rand rng_{11};
  std::optional<std::size_t> index_;
};

// Kills the server right after a worker acquired the lock, so that the holder renews and
// unlocks while the server is down or restarting.
class server_restart final : public nemesis {
 public:
  void inject(fault_context& ctx, int) override {
    const auto holder = fresh_holder(ctx);
    fault_record f =
        instant(std::string("kill -9 redis-server") +
                (holder ? " just after w" + std::to_string(*holder) + " acquired" : "") +
                ", restart after " + std::to_string(ctx.options.fault_on.count()) + " ms" +
                (ctx.options.persistence ? " (appendfsync always)" : " (no persistence)"));
    ctx.server.kill();
    index_ = record_fault(ctx, std::move(f));
  }
  void heal(fault_context& ctx) override {
    ctx.server.restart();
    record_heal(ctx, index_);
    ctx.faults[index_].recovery_from_ns = ctx.faults[index_].end_ns;
  }

 private:
  std::size_t index_ = 0;
};

class server_pause final : public nemesis {
 public:
  void inject(fault_context& ctx, int) override {
    ctx.server.pause();
    index_ = record_fault(ctx, instant("SIGSTOP redis-server for " +
                                       std::to_string(ctx.options.fault_on.count()) + " ms"));
  }
  void heal(fault_context& ctx) override {
    ctx.server.resume();
    record_heal(ctx, index_);
    ctx.faults[index_].recovery_from_ns = ctx.faults[index_].end_ns;
  }

 private:
  std::size_t index_ = 0;
};

// One server command per tick while the fault is on, each recorded as a fault.
class repeated_command final : public nemesis {
 public:
  explicit repeated_command(std::vector<std::string> command) : command_(std::move(command)) {}
  void inject(fault_context& ctx, int) override { tick(ctx); }
  void tick(fault_context& ctx) override {
    std::string what;
    for (const auto& a : command_) what += (what.empty() ? "" : " ") + a;
    fault_record f = instant(what);
    const auto reply = ctx.server.cli_reply(command_);
    if (reply.is_integer()) f.what += " (" + std::to_string(reply.integer) + " clients)";
    record_fault(ctx, std::move(f));
  }
  void heal(fault_context&) override {}

 private:
  std::vector<std::string> command_;
};

class client_pause_write final : public nemesis {
 public:
  void inject(fault_context& ctx, int) override {
    const std::string ms = std::to_string(ctx.options.fault_on.count());
    fault_record f = instant("CLIENT PAUSE " + ms + " WRITE");
    ctx.server.cli({"CLIENT", "PAUSE", ms, "WRITE"});
    index_ = record_fault(ctx, std::move(f));
  }
  void heal(fault_context& ctx) override {
    ctx.server.cli({"CLIENT", "UNPAUSE"});
    record_heal(ctx, index_);
    ctx.faults[index_].recovery_from_ns = ctx.faults[index_].end_ns;
  }

 private:
  std::size_t index_ = 0;
};

// Hits a holder right after its acquire-ok, so that it is still inside its critical section
// when its next renewal runs (the scenario holds longer than a renewal period).
class early_expiry final : public nemesis {
 public:
  void inject(fault_context& ctx, int) override {
    for (int attempt = 0; attempt < 3; ++attempt) {
      const auto id = fresh_holder(ctx);
      if (!id) return;
      fault_record f =
          instant("PEXPIRE lock 1 just after w" + std::to_string(*id) + " acquired", *id);
      const auto r = ctx.server.cli_reply(
          {"EVAL", expire_if_owner, "1", ctx.pool.config().name, ctx.pool.owner_of(*id)});
      if (r.is_integer() && r.integer == 1) {
        f.expect_loss = true;
        f.loss_from_ns = f.start_ns;
        f.exclude_target = true;
        record_fault(ctx, std::move(f));
        return;
      }
    }
  }
  void heal(fault_context&) override {}
};

class proxy_faults final : public nemesis {
 public:
  void inject(fault_context& ctx, int cycle) override {
    static constexpr std::array<proxy_mode, 4> modes{proxy_mode::delay, proxy_mode::drop_replies,
                                                     proxy_mode::hang, proxy_mode::reset};
    const proxy_mode m = modes[static_cast<std::size_t>(cycle) % modes.size()];
    std::string what = "proxy " + std::string(to_string(m));
    if (m == proxy_mode::delay)
      what += " " + std::to_string(ctx.options.proxy_delay.count()) + " ms";
    what += " for " + std::to_string(ctx.options.fault_on.count()) + " ms";
    fault_record f = instant(what);
    ctx.proxy->set_mode(m, ctx.options.proxy_delay);
    index_ = record_fault(ctx, std::move(f));
  }
  void heal(fault_context& ctx) override {
    ctx.proxy->set_mode(proxy_mode::pass);
    record_heal(ctx, index_);
    ctx.faults[index_].recovery_from_ns = ctx.faults[index_].end_ns;
  }

 private:
  std::size_t index_ = 0;
};

// Starves a holder of CPU time for fault_on (fault N4): its threads are pinned to one CPU on
// which a SCHED_FIFO thread spins in bursts (cpu_starvation.hpp), so the holder runs only in
// the gaps. Bursts shorter than a third of the lease must not cost the lock: the renewal
// that was due runs in the next gap, long before the lease ends. Recovery counts from the heal.
class starve_holder final : public nemesis {
 public:
  void inject(fault_context& ctx, int) override {
    index_.reset();
    const auto id = stop_a_holder(ctx, rng_);
    if (!id) return;
    pid_ = ctx.pool.pid_of(*id);
    const int cpu = starvation_cpu();
    const bool pinned = pin(pid_, cpu);
    wait_before_ = cpu_wait_ns(pid_);
    hog_.emplace(cpu, ctx.options.starve_burst, ctx.options.starve_gap, ctx.options.fault_on);
    fault_record f =
        instant("starve holder w" + std::to_string(*id) + " on CPU " + std::to_string(cpu) +
                    (pinned ? "" : " (not pinned: gone)") + ": SCHED_FIFO bursts of " +
                    std::to_string(ctx.options.starve_burst.count()) + " ms, gaps of " +
                    std::to_string(ctx.options.starve_gap.count()) + " ms, for " +
                    std::to_string(ctx.options.fault_on.count()) + " ms",
                *id);
    index_ = record_fault(ctx, std::move(f));
    ctx.pool.resume(*id);
  }
  void heal(fault_context& ctx) override {
    if (!index_) return;
    const int bursts = hog_->bursts();
    hog_.reset();
    fault_record& f = ctx.faults[*index_];
    f.cpu_wait_ns = cpu_wait_ns(pid_) - wait_before_;
    unpin(pid_);
    record_heal(ctx, *index_);
    f.recovery_from_ns = f.end_ns;
    char text[96];
    std::snprintf(text, sizeof text, " (%d bursts; its threads waited %.0f ms for a CPU)", bursts,
                  static_cast<double>(f.cpu_wait_ns) / 1e6);
    f.what += text;
  }

 private:
  std::minstd_rand rng_{13};
  std::optional<std::size_t> index_;
  std::optional<cpu_hog> hog_;
  pid_t pid_ = 0;
  std::int64_t wait_before_ = 0;
};

// Cuts a holder off from the lock server for fault_on while the other workers stay connected
// (worker_networks.hpp), in both directions (faults N5 and N6: its end of its lock link goes
// down) or in one (an asymmetric partition): deafened, its requests still run on the server
// but nothing comes back (no reply, no message); muted, what it sends is dropped silently and
// times out. Either way it can no longer confirm a renewal. Longer than the lease, the lock
// expires and another worker takes it: the cut-off holder must learn of the loss by itself
// before its lease ends.
class cut_holder final : public nemesis {
 public:
  enum class direction { both, from_server, to_server };
  explicit cut_holder(direction d) : direction_(d) {}

  void inject(fault_context& ctx, int) override {
    index_.reset();
    const auto id = stop_a_holder(ctx, rng_);
    if (!id) return;
    std::string what;
    switch (direction_) {
      case direction::both:
        ctx.networks->cut(*id);
        what = "partition holder w" + std::to_string(*id) + " from the lock server";
        break;
      case direction::from_server:
        ctx.networks->deafen(*id);
        what = "deafen holder w" + std::to_string(*id) + " on its lock link";
        break;
      case direction::to_server:
        ctx.networks->mute(*id);
        what = "mute holder w" + std::to_string(*id) + " on its lock link";
        break;
    }
    const bool outlasts = ctx.options.fault_on >= ctx.options.watchdog;
    fault_record f =
        instant(what + " for " + std::to_string(ctx.options.fault_on.count()) + " ms", *id);
    f.expect_loss = outlasts;
    // Deafened, its unlock may still run on the server before its lease ends (until TCP,
    // which sees no ACK, stops sending new data): then nothing is lost, and the server says so
    // once the unlock's outcome gets through (a resend after the heal finds its latch).
    f.unless_released_ok = direction_ == direction::from_server;
    f.exclude_target = outlasts;
    f.loss_from_ns = f.start_ns;
    index_ = record_fault(ctx, std::move(f));
    ctx.pool.resume(*id);
  }
  void heal(fault_context& ctx) override {
    if (!index_) return;
    fault_record& f = ctx.faults[*index_];
    if (direction_ == direction::both) {
      ctx.networks->heal(f.target);
    } else {
      ctx.networks->restore(f.target);
    }
    record_heal(ctx, *index_);
    if (!f.expect_loss) f.recovery_from_ns = f.end_ns;
  }

 private:
  direction direction_;
  std::minstd_rand rng_{17};
  std::optional<std::size_t> index_;
};

// Even cycles: kill -9 a holder. Odd cycles: CLIENT KILL TYPE pubsub every tick.
class kill_holder_and_pubsub final : public nemesis {
 public:
  void inject(fault_context& ctx, int cycle) override {
    pubsub_cycle_ = cycle % 2 == 1;
    if (pubsub_cycle_) {
      pubsub_.inject(ctx, cycle);
    } else {
      kill_.inject(ctx, cycle);
    }
  }
  void tick(fault_context& ctx) override {
    if (pubsub_cycle_) pubsub_.tick(ctx);
  }
  void heal(fault_context&) override {}

 private:
  kill_holder kill_;
  repeated_command pubsub_{{"CLIENT", "KILL", "TYPE", "pubsub"}};
  bool pubsub_cycle_ = false;
};

}  // namespace

std::unique_ptr<nemesis> make_nemesis(nemesis_kind kind) {
  switch (kind) {
    case nemesis_kind::none:
      return std::make_unique<no_faults>();
    case nemesis_kind::kill_holder:
      return std::make_unique<kill_holder>();
    case nemesis_kind::kill_holder_and_pubsub:
      return std::make_unique<kill_holder_and_pubsub>();
    case nemesis_kind::stop_holder:
      return std::make_unique<stop_holder>();
    case nemesis_kind::server_restart:
      return std::make_unique<server_restart>();
    case nemesis_kind::server_pause:
      return std::make_unique<server_pause>();
    case nemesis_kind::client_kill_normal:
      return std::make_unique<repeated_command>(
          std::vector<std::string>{"CLIENT", "KILL", "TYPE", "normal"});
    case nemesis_kind::client_kill_pubsub:
      return std::make_unique<repeated_command>(
          std::vector<std::string>{"CLIENT", "KILL", "TYPE", "pubsub"});
    case nemesis_kind::client_pause_write:
      return std::make_unique<client_pause_write>();
    case nemesis_kind::script_flush:
      return std::make_unique<repeated_command>(std::vector<std::string>{"SCRIPT", "FLUSH"});
    case nemesis_kind::early_expiry:
      return std::make_unique<early_expiry>();
    case nemesis_kind::proxy:
      return std::make_unique<proxy_faults>();
    case nemesis_kind::starve_holder:
      return std::make_unique<starve_holder>();
    case nemesis_kind::partition_holder:
      return std::make_unique<cut_holder>(cut_holder::direction::both);
    case nemesis_kind::deafen_holder:
      return std::make_unique<cut_holder>(cut_holder::direction::from_server);
    case nemesis_kind::mute_holder:
      return std::make_unique<cut_holder>(cut_holder::direction::to_server);
  }
  return std::make_unique<no_faults>();
}

}  // namespace rlock::faults
