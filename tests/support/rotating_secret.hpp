// rotating_secret: a config::credentials_resolver for tests, whose answer a test changes while
// the client runs, and which records the servers it was asked about.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "rlock/config.hpp"

namespace rlock::test {

/// Answers user "rot" with the password set last, or throws std::runtime_error with the failure
/// set last (when not empty). Must outlive the clients whose resolver it is.
class rotating_secret {
 public:
  explicit rotating_secret(std::string password) : password_(std::move(password)) {}

  void set(std::string password, std::string failure = {}) {
    std::lock_guard lk(mu_);
    password_ = std::move(password);
    failure_ = std::move(failure);
  }

  std::function<credentials(const server_address&)> resolver() {
    return [this](const server_address& server) {
      std::lock_guard lk(mu_);
      asked_.push_back(server);
      if (!failure_.empty()) throw std::runtime_error(failure_);
      return credentials{"rot", password_};
    };
  }

  /// The servers it was asked about, in order.
  std::vector<server_address> asked() const {
    std::lock_guard lk(mu_);
    return asked_;
  }

  /// The ports of the servers it was asked about.
  std::set<std::uint16_t> ports_asked() const {
    std::lock_guard lk(mu_);
    std::set<std::uint16_t> out;
    for (const server_address& a : asked_) out.insert(a.port);
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::string password_;
  std::string failure_;
  std::vector<server_address> asked_;
};

}  // namespace rlock::test
