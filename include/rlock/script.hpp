// rlock/script.hpp: a Lua script, run by EVALSHA.
//
// A script is registered once by its text; rlock names it by SHA1 on the wire and recovers from
// NOSCRIPT (a flushed or restarted server) by sending the text once with EVAL, which both loads
// and runs it. Scripts that the client knows in advance (all of rlock's own) are also loaded on
// every connect.
#pragma once

#include <string>
#include <string_view>

namespace rlock {

class script {
 public:
  /// Computes the SHA1 of `text` once.
  explicit script(std::string text);
  std::string_view text() const { return text_; }
  /// 40 lowercase hex characters, as SCRIPT LOAD returns.
  std::string_view sha1() const { return sha1_; }

 private:
  std::string text_;
  std::string sha1_;
};

}  // namespace rlock
