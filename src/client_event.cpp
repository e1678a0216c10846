#include "rlock/client_event.hpp"

namespace rlock {

std::string_view to_string(client_event_kind kind) {
  switch (kind) {
    case client_event_kind::connected:
      return "connected";
    case client_event_kind::disconnected:
      return "disconnected";
    case client_event_kind::connect_failed:
      return "connect_failed";
    case client_event_kind::master_switched:
      return "master_switched";
    case client_event_kind::topology_changed:
      return "topology_changed";
    case client_event_kind::script_reloaded:
      return "script_reloaded";
    case client_event_kind::lock_lost:
      return "lock_lost";
    case client_event_kind::pubsub_disconnected:
      return "pubsub_disconnected";
    case client_event_kind::pubsub_connected:
      return "pubsub_connected";
    case client_event_kind::write_not_confirmed:
      return "write_not_confirmed";
  }
  return "unknown";
}

namespace {

// ": <error's message> (<detail>)", or as much of it as there is.
std::string why(const client_event& e) {
  std::string out;
  if (e.error) out = ": " + e.error.message();
  if (!e.detail.empty()) out += e.error ? " (" + e.detail + ")" : ": " + e.detail;
  return out;
}

}  // namespace

std::string describe(const client_event& e) {
  switch (e.kind) {
    case client_event_kind::connected:
      // The detail, when there is one, is a warning about the server (its eviction policy).
      return "connected to " + e.server + (e.detail.empty() ? "" : ": " + e.detail);
    case client_event_kind::disconnected:
      // The code is connection_lost as a rule, whose message speaks of a request's outcome: the
      // detail (how the link ended) says more.
      return "disconnected from " + e.server + (e.detail.empty() ? why(e) : ": " + e.detail);
    case client_event_kind::connect_failed:
      // No server: none was named to try (Sentinel mode); the detail says why.
      return (e.server.empty() ? "cannot connect" : "cannot connect to " + e.server) + why(e);
    case client_event_kind::master_switched:
      return "master moved to " + e.server + why(e);
    case client_event_kind::topology_changed:
      return "cluster slots changed" + why(e);
    case client_event_kind::script_reloaded:
      return "reloaded script " + e.object + " on " + e.server + why(e);
    case client_event_kind::lock_lost:
      return "lost lock '" + e.object + "'" + why(e);
    case client_event_kind::pubsub_disconnected:
      // As for disconnected: the detail says how the link ended.
      return "pub/sub disconnected from " + e.server +
             (e.detail.empty() ? why(e) : ": " + e.detail);
    case client_event_kind::pubsub_connected:
      return "pub/sub connected to " + e.server + why(e);
    case client_event_kind::write_not_confirmed:
      // The code's message says the replicas did not confirm; the detail says what ran.
      return "change of '" + e.object + "' on " + e.server + " not confirmed" +
             (e.detail.empty() ? why(e) : ": " + e.detail);
  }
  return std::string(to_string(e.kind)) + why(e);
}

}  // namespace rlock
