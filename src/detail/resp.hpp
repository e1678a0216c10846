// RESP encoding and incremental parsing, both done by hiredis.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

#include "rlock/reply.hpp"

struct redisReader;

namespace rlock::detail {

/// Appends the RESP encoding of one command (binary-safe arguments) to `out`.
void encode_command(std::span<const std::string_view> args, std::string& out);

/// Convenience for a single command.
std::string encode_command(std::span<const std::string_view> args);

/// An error reply (`-text`) made locally, for failures the server never answered (a failed
/// connection setup, a transport error). CR and LF in `text` become spaces.
reply make_error_reply(std::string_view text);

/// Incremental reply parser over hiredis' redisReader.
class resp_reader {
 public:
  resp_reader();
  ~resp_reader();
  resp_reader(const resp_reader&) = delete;
  resp_reader& operator=(const resp_reader&) = delete;

  /// Feeds bytes read from the socket.
  void feed(const char* data, std::size_t n);
  /// Takes the next complete reply into `out` and returns true; false when more bytes are needed.
  /// Sets ec to errc::protocol_error when the stream is corrupt (the connection must be closed).
  bool next(reply& out, std::error_code& ec);
  /// After next() reported a corrupt stream: hiredis's account of it (for example `Protocol
  /// error, got "H" as reply type byte`); empty before.
  std::string error_text() const;
  /// Drops all buffered state (after a reconnect).
  void reset();

 private:
  ::redisReader* reader_ = nullptr;
};

}  // namespace rlock::detail
