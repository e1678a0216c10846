#include "detail/resp.hpp"

#include <hiredis/hiredis.h>

#include <cstdlib>
#include <new>
#include <vector>

#include "rlock/error.hpp"

namespace rlock::detail {

void encode_command(std::span<const std::string_view> args, std::string& out) {
  constexpr std::size_t small = 16;
  const char* argv_small[small];
  std::size_t len_small[small];
  std::vector<const char*> argv_big;
  std::vector<std::size_t> len_big;
  const char** argv = argv_small;
  std::size_t* lens = len_small;
  if (args.size() > small) {
    argv_big.resize(args.size());
    len_big.resize(args.size());
    argv = argv_big.data();
    lens = len_big.data();
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    argv[i] = args[i].data();
    lens[i] = args[i].size();
  }
  // The sds form: hiredis formats the length headers with its own sdscatfmt instead of libc's
  // sprintf, which took a third of a lock+unlock cycle's CPU time (callgrind).
  sds target = nullptr;
  const int n = redisFormatSdsCommandArgv(&target, static_cast<int>(args.size()), argv, lens);
  if (n < 0 || target == nullptr) throw std::bad_alloc();
  out.append(target, static_cast<std::size_t>(n));
  redisFreeSdsCommand(target);
}

std::string encode_command(std::span<const std::string_view> args) {
  std::string out;
  encode_command(args, out);
  return out;
}

namespace {

// hiredis 0.14 allocates an array's element table as soon as it reads the "*<n>" header, so a
// corrupt or hostile stream claiming billions of elements would make the client allocate
// gigabytes (found by tests/fuzz/replies_fuzz.cpp; hiredis 1.x added a similar cap). Arrays
// beyond this many elements are refused: the reader reports an error and the connection is
// dropped as a protocol error.
constexpr int max_array_elements = 1 << 24;

void* (*default_create_array)(const redisReadTask*, int) = nullptr;

void* checked_create_array(const redisReadTask* task, int elements) {
  if (elements > max_array_elements) return nullptr;  // the reader turns this into an error
  return default_create_array(task, elements);
}

const redisReplyObjectFunctions* limited_functions(const redisReplyObjectFunctions* defaults) {
  static const redisReplyObjectFunctions limited = [defaults] {
    redisReplyObjectFunctions f = *defaults;
    default_create_array = f.createArray;
    f.createArray = &checked_create_array;
    return f;
  }();
  return &limited;
}

::redisReader* make_reader() {
  ::redisReader* r = redisReaderCreate();
  if (r == nullptr) throw std::bad_alloc();
  r->fn = const_cast<redisReplyObjectFunctions*>(limited_functions(r->fn));  // NOLINT
  return r;
}

}  // namespace

reply make_error_reply(std::string_view text) {
  std::string line = "-";
  line.reserve(text.size() + 3);
  for (const char c : text) line += (c == '\r' || c == '\n') ? ' ' : c;
  line += "\r\n";
  resp_reader reader;
  reader.feed(line.data(), line.size());
  reply out;
  std::error_code ec;
  if (!reader.next(out, ec)) throw std::bad_alloc();  // a complete error line always parses
  return out;
}

resp_reader::resp_reader() : reader_(make_reader()) {}

resp_reader::~resp_reader() {
  redisReaderFree(reader_);
}

void resp_reader::feed(const char* data, std::size_t n) {
  redisReaderFeed(reader_, data, n);
}

bool resp_reader::next(reply& out, std::error_code& ec) {
  void* r = nullptr;
  if (redisReaderGetReply(reader_, &r) != REDIS_OK) {
    ec = make_error_code(errc::protocol_error);
    return false;
  }
  if (r == nullptr) return false;
  out = reply(static_cast<::redisReply*>(r));
  return true;
}

std::string resp_reader::error_text() const {
  return reader_->err != 0 ? std::string(reader_->errstr) : std::string();
}

void resp_reader::reset() {
  redisReaderFree(reader_);
  reader_ = make_reader();
}

}  // namespace rlock::detail
