#include "exit_codes.hpp"

#include <rlock/error.hpp>

namespace rlock::cli {

int exit_code_for(std::error_code ec) noexcept {
  if (ec.category() != rlock::error_category()) return exit_codes::software;
  switch (static_cast<rlock::errc>(ec.value())) {
    case rlock::errc::connection_refused:
    case rlock::errc::not_connected:
    case rlock::errc::connection_lost:
    case rlock::errc::timeout:
    case rlock::errc::auth_failed:
    case rlock::errc::auth_required:
    case rlock::errc::tls_error:
    case rlock::errc::subscription_timeout:
    case rlock::errc::server_busy:
    case rlock::errc::read_only:
    case rlock::errc::command_unavailable:
    case rlock::errc::cluster_redirect:
    case rlock::errc::replication_not_confirmed:
      return exit_codes::unavailable;
    case rlock::errc::wrong_type:
      return exit_codes::data_error;
    case rlock::errc::no_permission:
      return exit_codes::no_permission;
    case rlock::errc::invalid_url:
    case rlock::errc::invalid_argument:
      return exit_codes::usage;
    default:
      return exit_codes::software;
  }
}

}  // namespace rlock::cli
