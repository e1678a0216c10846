#include "rlock/error.hpp"

namespace rlock {
namespace {

class category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "rlock"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::invalid_argument:
        return "invalid argument";
      case errc::invalid_url:
        return "invalid URL";
      case errc::timeout:
        return "operation timed out";
      case errc::connection_lost:
        return "connection lost before the reply (outcome unknown)";
      case errc::not_connected:
        return "not connected to the server";
      case errc::connection_refused:
        return "connection refused or server unreachable";
      case errc::tls_error:
        return "TLS handshake failed";
      case errc::auth_failed:
        return "authentication failed (wrong password or unknown user)";
      case errc::auth_required:
        return "server requires authentication (NOAUTH)";
      case errc::no_permission:
        return "ACL user lacks permission (NOPERM)";
      case errc::wrong_type:
        return "key holds a value of the wrong type (WRONGTYPE)";
      case errc::out_of_memory:
        return "server out of memory (OOM)";
      case errc::script_error:
        return "script error or unexpected script reply";
      case errc::server_error:
        return "server error";
      case errc::protocol_error:
        return "protocol error in the reply stream";
      case errc::server_busy:
        return "server busy (LOADING, BUSY, NOREPLICAS, or maxclients reached)";
      case errc::not_owner:
        return "lock not held by this owner";
      case errc::lock_lost:
        return "lock lost";
      case errc::replication_not_confirmed:
        return "write not confirmed by replicas";
      case errc::stopped:
        return "stop requested";
      case errc::shutdown:
        return "client shut down";
      case errc::subscription_timeout:
        return "subscription timed out";
      case errc::read_only:
        return "server is a read-only replica (READONLY)";
      case errc::command_unavailable:
        return "server does not know the command (unknown, renamed or disabled)";
      case errc::cluster_redirect:
        return "cluster node does not serve the key's slot (MOVED, ASK or CROSSSLOT)";
    }
    return "unknown rlock error";
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const category_impl instance;
  return instance;
}

}  // namespace rlock
