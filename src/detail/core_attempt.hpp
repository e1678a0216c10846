// The state of one command of core::exec or core::eval across its attempts: what it sends,
// where it went, its retry state machine and its completion. Shared by core.cpp (shutdown
// cancels the sleeping ones) and core_requests.cpp (sending, redirects, retries).
#pragma once

#include <asio.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "detail/core.hpp"
#include "detail/retry_fsm.hpp"

namespace rlock::detail {

struct core::attempt {
  std::string payload;
  const script* via_script = nullptr;  // set for EVALSHA: the text for NOSCRIPT recovery
  bool from_script = false;
  bool noscript_retried = false;
  bool written_once = false;         // some attempt may have reached the server
  bool completes_on_caller = false;  // see exec_options
  bool close_unknown = false;        // see exec_options
  // A WAIT follows the script (exec_options::sync_replicas): at the end of `payload`, or, with
  // wait_connected_timeout (config::all_connected_replicas: the WAIT's timeout), appended by
  // the connection, which knows how many replicas its server has.
  bool trailing_wait = false;
  std::chrono::milliseconds wait_connected_timeout{0};
  std::vector<server_client> fence;  // see exec_options
  // Connections on which an attempt was written whose outcome is unknown (exec_result).
  std::vector<server_client> unknown_on;
  // CLIENT KILLs of `fence` (and of `unknown_on` with close_unknown) followed by `payload`:
  // what an attempt that closes connections first sends.
  std::string fenced_payload;
  clock::time_point last_sent{};
  std::chrono::milliseconds timeout{0};
  std::string route_key;
  // Cluster mode: redirections followed so far, the node the last attempt went to, and the
  // node an ASK reply named (this attempt only: sent there after ASKING).
  int redirects = 0;
  int tryagains = 0;
  // Its retry delay was cut short by a new slot map (wake_sleepers); under core::mu_.
  bool woken = false;
  // Cluster mode: the script's sharded twin was considered (on the first send after settling).
  bool twin_checked = false;
  node* sent_to = nullptr;
  std::optional<cluster_endpoint> ask_target;
  retry_fsm fsm;
  // exec_options::confirm_tries: sends left for it, and the last answered attempt that the
  // replicas did not confirm (the result, should no later one be answered).
  int confirm_sends_left = 0;
  int confirm_resends = 0;
  std::optional<exec_result> unconfirmed;
  exec_callback done;
  // Completed (core::finish): counted once, its callback run once.
  bool finished = false;
  std::unique_ptr<asio::steady_timer> timer;
  // When the caller handed the command over: the first attempt's timeout counts from here, so
  // that encoding a large command is inside the deadline too.
  std::optional<clock::time_point> started;

  attempt(int attempts, bool idempotent, clock::time_point deadline, clock::time_point start_by)
      : fsm(attempts, idempotent, deadline, start_by), started(clock::now()) {}
};

}  // namespace rlock::detail
