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
  char* target = nullptr;
  const int n = redisFormatCommandArgv(&target, static_cast<int>(args.size()), argv, lens);
  if (n < 0 || target == nullptr) throw std::bad_alloc();
  out.append(target, static_cast<std::size_t>(n));
  std::free(target);  // NOLINT: allocated by hiredis with malloc
}

std::string encode_command(std::span<const std::string_view> args) {
  std::string out;
  encode_command(args, out);
  return out;
}

resp_reader::resp_reader() : reader_(redisReaderCreate()) {
  if (reader_ == nullptr) throw std::bad_alloc();
}

resp_reader::~resp_reader() { redisReaderFree(reader_); }

void resp_reader::feed(const char* data, std::size_t n) { redisReaderFeed(reader_, data, n); }

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

void resp_reader::reset() {
  redisReaderFree(reader_);
  reader_ = redisReaderCreate();
  if (reader_ == nullptr) throw std::bad_alloc();
}

}  // namespace rlock::detail
