// The server an example runs against: the URL on its command line, or else a throwaway
// redis-server on a free loopback port that lives as long as this object.
#pragma once

#include <optional>
#include <string>

#include "throwaway_server.hpp"

namespace rlock::examples {

class example_server {
 public:
  /// argv[1] when there is one (any URL rlock::config::address takes), else a server it starts.
  example_server(int argc, char** argv) {
    if (argc > 1) {
      url_ = argv[1];
    } else {
      throwaway_.emplace();
      url_ = throwaway_->url();
    }
  }

  const std::string& url() const { return url_; }
  /// True when this object started the server (and stops it when destroyed).
  bool throwaway() const { return throwaway_.has_value(); }

 private:
  std::optional<throwaway_server> throwaway_;
  std::string url_;
};

}  // namespace rlock::examples
