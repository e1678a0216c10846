// hiredis handles for the bench tools that measure this machine without rlock
// (handoff_floor.cpp, bare_blocking.cpp): owned contexts and replies, a loopback connection
// with a timeout on every read and write, and one command at a time.
#pragma once

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace rlock::bench {

struct context_deleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using context_ptr = std::unique_ptr<redisContext, context_deleter>;
struct reply_deleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

/// Every connect, read and write of these connections gives up after this long.
constexpr timeval io_timeout{5, 0};

/// A connection to 127.0.0.1:`port`. Throws std::runtime_error if it cannot be made.
inline context_ptr connect(int port) {
  context_ptr c(redisConnectWithTimeout("127.0.0.1", port, io_timeout));
  if (!c || c->err != 0) {
    throw std::runtime_error("cannot connect to 127.0.0.1:" + std::to_string(port) + ": " +
                             (c ? c->errstr : "out of memory"));
  }
  redisSetTimeout(c.get(), io_timeout);
  return c;
}

/// Sends `args` and returns the reply. Throws std::runtime_error on a failed round trip or an
/// error reply.
inline reply_ptr command(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  reply_ptr r(static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data())));
  if (!r) throw std::runtime_error(args[0] + " failed: " + c->errstr);
  if (r->type == REDIS_REPLY_ERROR) throw std::runtime_error(args[0] + ": " + r->str);
  return r;
}

}  // namespace rlock::bench
