#include "support/raw_client.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <sys/time.h>

#include <cerrno>
#include <csignal>
#include <ctime>
#include <stdexcept>
#include <utility>

namespace rlock::test {

namespace {

timeval to_timeval(std::chrono::milliseconds d) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(d.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((d.count() % 1000) * 1000);
  return tv;
}

raw_reply convert(const redisReply& r) {
  switch (r.type) {
    case REDIS_REPLY_STRING:
      return raw_reply::make_string(std::string(r.str, r.len));
    case REDIS_REPLY_STATUS:
      return raw_reply::make_status(std::string(r.str, r.len));
    case REDIS_REPLY_ERROR:
      return raw_reply::make_error(std::string(r.str, r.len));
    case REDIS_REPLY_INTEGER:
      return raw_reply::make_integer(r.integer);
    case REDIS_REPLY_ARRAY: {
      std::vector<raw_reply> elements;
      elements.reserve(r.elements);
      for (std::size_t i = 0; i < r.elements; ++i) elements.push_back(convert(*r.element[i]));
      return raw_reply::make_array(std::move(elements));
    }
    default:
      return raw_reply::make_nil();
  }
}

// Blocks SIGPIPE in this thread while hiredis writes (it uses write(2), not send(MSG_NOSIGNAL)),
// and discards a SIGPIPE raised meanwhile, so a write to a closed socket is a plain EPIPE.
class sigpipe_guard {
 public:
  sigpipe_guard() {
    sigset_t pending;
    ::sigemptyset(&pending);
    ::sigpending(&pending);
    was_pending_ = ::sigismember(&pending, SIGPIPE) == 1;
    sigset_t block;
    ::sigemptyset(&block);
    ::sigaddset(&block, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &block, &old_mask_);
  }
  ~sigpipe_guard() {
    if (!was_pending_) {
      sigset_t pending;
      ::sigemptyset(&pending);
      ::sigpending(&pending);
      if (::sigismember(&pending, SIGPIPE) == 1) {
        sigset_t pipe_only;
        ::sigemptyset(&pipe_only);
        ::sigaddset(&pipe_only, SIGPIPE);
        const timespec zero{};
        while (::sigtimedwait(&pipe_only, nullptr, &zero) < 0 && errno == EINTR) {
        }
      }
    }
    ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  sigpipe_guard(const sigpipe_guard&) = delete;
  sigpipe_guard& operator=(const sigpipe_guard&) = delete;

 private:
  sigset_t old_mask_{};
  bool was_pending_ = false;
};

}  // namespace

void raw_client::context_deleter::operator()(redisContext* context) const {
  redisFree(context);
}

raw_client::raw_client(std::string host, std::uint16_t port, std::chrono::milliseconds timeout,
                       std::string password, std::string username)
    : host_(std::move(host)),
      port_(port),
      timeout_(timeout),
      password_(std::move(password)),
      username_(std::move(username)) {
  connect();
}

raw_client::~raw_client() = default;
raw_client::raw_client(raw_client&&) noexcept = default;
raw_client& raw_client::operator=(raw_client&&) noexcept = default;

void raw_client::connect() {
  context_.reset();
  broken_ = true;
  const timeval tv = to_timeval(timeout_);
  context_.reset(redisConnectWithTimeout(host_.c_str(), port_, tv));
  if (!context_) fail("cannot allocate a hiredis context");
  if (context_->err != 0) fail(std::string("connect failed: ") + context_->errstr);
  if (redisSetTimeout(context_.get(), tv) != REDIS_OK) {
    fail(std::string("cannot set socket timeout: ") + context_->errstr);
  }
  broken_ = false;
  if (!password_.empty()) {
    raw_reply reply =
        username_.empty() ? command({"AUTH", password_}) : command({"AUTH", username_, password_});
    if (reply.is_error()) {
      broken_ = true;
      fail("AUTH failed: " + reply.str);
    }
  }
}

void raw_client::reconnect() {
  connect();
}

void raw_client::fail(const std::string& what) {
  broken_ = true;
  throw std::runtime_error("raw_client " + host_ + ":" + std::to_string(port_) + ": " + what);
}

raw_reply raw_client::command(const std::vector<std::string>& args) {
  const std::string name = args.empty() ? std::string() : args.front();
  send(args);
  std::optional<raw_reply> reply = read(timeout_);
  if (!reply) {
    fail("no reply to " + name + " within " + std::to_string(timeout_.count()) + " ms");
  }
  return std::move(*reply);
}

void raw_client::send(const std::vector<std::string>& args) {
  if (broken_ || !context_) fail("connection is broken; call reconnect()");
  if (args.empty()) throw std::invalid_argument("raw_client::send: empty command");
  std::vector<const char*> argv;
  std::vector<std::size_t> argv_len;
  argv.reserve(args.size());
  argv_len.reserve(args.size());
  for (const auto& a : args) {
    argv.push_back(a.data());
    argv_len.push_back(a.size());
  }
  if (redisAppendCommandArgv(context_.get(), static_cast<int>(argv.size()), argv.data(),
                             argv_len.data()) != REDIS_OK) {
    fail("cannot queue command");
  }
}

void raw_client::flush() {
  const sigpipe_guard guard;
  int done = 0;
  while (done == 0) {
    if (redisBufferWrite(context_.get(), &done) != REDIS_OK) {
      fail(std::string("write failed: ") + context_->errstr);
    }
  }
}

std::optional<raw_reply> raw_client::read(std::chrono::milliseconds timeout) {
  if (broken_ || !context_) fail("connection is broken; call reconnect()");
  flush();
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + timeout;
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(context_->reader, &raw) != REDIS_OK) {
      fail(std::string("protocol error: ") + context_->reader->errstr);
    }
    if (raw != nullptr) {
      auto* reply = static_cast<redisReply*>(raw);
      raw_reply result = convert(*reply);
      freeReplyObject(reply);
      return result;
    }
    const auto now = clock::now();
    const auto remaining = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    pollfd pfd{context_->fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, remaining > 0 ? static_cast<int>(remaining) : 0);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) fail("poll failed");
    if (ready == 0) {
      if (clock::now() >= deadline) return std::nullopt;
      continue;
    }
    if (redisBufferRead(context_.get()) != REDIS_OK) {
      fail(std::string("read failed: ") + context_->errstr);
    }
  }
}

}  // namespace rlock::test
