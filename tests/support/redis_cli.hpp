// Running one command through the redis-cli tool, for servers raw_client cannot reach (TLS:
// hiredis 0.14 has no TLS support). The reply is read back from `redis-cli -2 --json` output.
//
// Guarantees: run_redis_cli() never uses a shell; it returns the reply as a raw_reply (error
// replies as kind::error; status replies come back as kind::string because the JSON output does
// not distinguish them; a failed AUTH shows up as the command's NOAUTH/WRONGPASS error reply).
// It throws std::runtime_error if redis-cli cannot connect (including a failed TLS handshake),
// exits with an error, or does not finish within `timeout` (it is then killed), and
// std::invalid_argument if an argument contains a NUL byte (not representable in argv).
// redis-cli prints the replies of a few commands raw whatever the output mode (INFO, CLIENT LIST,
// CLIENT INFO, LATENCY DOCTOR, ...): output that is not JSON is returned as one string reply
// (an error reply of those commands is then indistinguishable from a string).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/raw_reply.hpp"
#include "support/tls_certs.hpp"

namespace rlock::test {

struct redis_cli_target {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::string password{};          // AUTH as the default user when not empty
  const tls_files* tls = nullptr;  // when set: --tls with the CA and the good client certificate
};

raw_reply run_redis_cli(const redis_cli_target& target, const std::vector<std::string>& args,
                        std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Parses one reply printed by `redis-cli -2 --json`: null, integers, JSON strings (raw bytes are
// kept, \uXXXX escapes become UTF-8), arrays and error:"message". Throws std::runtime_error on
// anything else.
raw_reply parse_redis_cli_json(std::string_view text);

}  // namespace rlock::test
