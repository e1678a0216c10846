// The outcome of one request, and how server error replies map onto rlock::errc.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "detail/server_client.hpp"
#include "rlock/error.hpp"
#include "rlock/reply.hpp"

namespace rlock::detail {

/// What a request came back with. `written` tells whether any byte of the command may have
/// reached the server: when it is false the command certainly did not run.
struct exec_result {
  std::error_code ec;
  bool written = false;
  /// When the attempt that produced this result was handed to the connection (retries
  /// included: the last one). Set by core; a lease granted by this reply started after it.
  std::chrono::steady_clock::time_point sent_at{};
  /// True when an attempt before the one that produced this result may have reached the server
  /// (it was written, then timed out or lost its connection): that attempt may still run, or
  /// have run. False when this result's attempt is the only one that can have run. Set by core.
  bool earlier_attempt_may_have_run = false;
  reply value;
  std::string detail;  ///< server error text or transport error text
  /// The server connections on which an attempt was written whose outcome is unknown (it timed
  /// out or lost its connection) and which may still run there, as far as their server told
  /// them (CLIENT INFO). Set by the connection for its attempt; in the result a request
  /// completes with, core lists those of all its attempts (whether or not closed since). A later
  /// request that must not be overtaken by them (the undo of an acquire) passes them as
  /// exec_options::fence.
  std::vector<server_client> unknown_on;
  /// When the request asked for replica acknowledgement (exec_options::sync_replicas): the
  /// replicas that acknowledged its writes within the timeout (WAIT's reply), or -1 when the
  /// server refused the WAIT (its error text is then in `detail`). -1 when not asked.
  long long replicas_acked = -1;
  /// When the WAIT asked for all connected replicas (request::wait_connected_timeout): the
  /// replicas it asked for (the server's count when it was written); after a WAIT that no
  /// replica acknowledged, those of them still connected when counted again; -1 when the
  /// server would not tell (INFO refused: WAIT asked for 1).
  long long replicas_connected = -1;
  /// How often the request was sent to have the replicas confirm it, the first send included
  /// (exec_options::confirm_tries): 1 unless it was sent again for that. Set by core.
  int confirm_sends = 1;
  /// When the request asked for replica acknowledgement: the server (a URL without
  /// credentials) that the attempt producing this result went to. Set by core.
  std::string synced_on;
};

/// A result that failed with `ec`, without a reply; `written` as in exec_result.
inline exec_result exec_failure(std::error_code ec, bool written, std::string detail = {}) {
  exec_result r;
  r.ec = ec;
  r.written = written;
  r.detail = std::move(detail);
  return r;
}

/// True when an attempt that failed with `ec` may have run, or may yet run: it was written, and
/// no reply proved that it did not run. A reply that the server gives without running the
/// command (BUSY, LOADING, NOREPLICAS and the like: errc::server_busy) proves it; an error reply
/// of a script proves nothing (a script may have written before it failed).
inline bool failed_attempt_may_have_run(std::error_code ec, bool written) {
  return ec && written && ec != errc::server_busy;
}

/// True when `r` failed and its request may still have run, or may yet run: its last attempt
/// (failed_attempt_may_have_run) or an earlier one.
inline bool outcome_unknown(const exec_result& r) {
  return r.ec && (failed_attempt_may_have_run(r.ec, r.written) || r.earlier_attempt_may_have_run);
}

/// Maps an error reply's text (e.g. "WRONGTYPE Operation against ...") to an rlock code.
/// `from_script` marks replies of EVAL/EVALSHA, whose generic errors are script errors.
inline errc classify_server_error(std::string_view text, bool from_script) {
  // Error codes are the first word: match it whole ("BUSY" is not "BUSYKEY").
  auto starts = [&](std::string_view p) {
    return text.starts_with(p) && (text.size() == p.size() || text[p.size()] == ' ');
  };
  if (starts("WRONGTYPE")) return errc::wrong_type;
  if (starts("OOM")) return errc::out_of_memory;
  if (starts("NOAUTH")) return errc::auth_required;
  if (starts("WRONGPASS")) return errc::auth_failed;
  if (starts("NOPERM")) return errc::no_permission;
  if (starts("READONLY")) return errc::read_only;
  // The server refused to persist (MISCONF): a server condition, not a script's fault.
  if (starts("MISCONF")) return errc::server_error;
  // "ERR unknown command 'EVALSHA', with args beginning with: ..." (Redis 6 quotes with `):
  // the command was renamed away or disabled; nothing ran.
  if (text.starts_with("ERR unknown command") || text.starts_with("ERR unknown subcommand")) {
    return errc::command_unavailable;
  }
  // A cluster node: the key's slot is served elsewhere, or is being migrated (nothing ran).
  if (starts("MOVED") || starts("ASK") || starts("CROSSSLOT")) return errc::cluster_redirect;
  // CLUSTERDOWN: the cluster cannot serve the slot right now (a failover, or no node serves
  // it); like MASTERDOWN, it may pass. NOREPLICAS: a master with min-replicas-to-write refuses
  // writes while too few replicas are connected; the refused write is a script's first (rlock's
  // scripts read, then write, then publish), so nothing ran, and it passes when the replicas
  // come back (Redisson retries it too: RedisNoReplicasException is a RedisRetryException).
  if (starts("LOADING") || starts("BUSY") || starts("MASTERDOWN") || starts("TRYAGAIN") ||
      starts("CLUSTERDOWN") || starts("NOREPLICAS")) {
    return errc::server_busy;
  }
  // maxclients: the server closes this connection; one may be free on a later attempt.
  if (text.starts_with("ERR max number of clients reached")) return errc::server_busy;
  if (text.find("WRONGTYPE") != std::string_view::npos) return errc::wrong_type;
  if (text.find("OOM command not allowed") != std::string_view::npos) return errc::out_of_memory;
  // Redis 6 wraps errors raised inside scripts ("ERR Error running script ...: -READONLY ...").
  if (text.find("READONLY You can't write") != std::string_view::npos) return errc::read_only;
  if (text.find("NOREPLICAS Not enough good replicas") != std::string_view::npos) {
    return errc::server_busy;
  }
  // An ACL check inside a script ("ERR The user executing the script can't publish to the
  // channel mentioned in the command ..."; also commands and keys) is NOPERM by another name.
  if (text.find("The user executing the script can't") != std::string_view::npos) {
    return errc::no_permission;
  }
  return from_script ? errc::script_error : errc::server_error;
}

/// True for failures that may go away by themselves (so a retry can help).
inline bool is_transient(std::error_code ec) {
  if (ec.category() != error_category()) return true;  // transport errors from the OS
  switch (static_cast<errc>(ec.value())) {
    case errc::timeout:
    case errc::connection_lost:
    case errc::not_connected:
    case errc::connection_refused:
    case errc::server_busy:
    case errc::protocol_error:
      return true;
    default:
      return false;
  }
}

}  // namespace rlock::detail
