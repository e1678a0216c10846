// libFuzzer target: every reply-decoding path. Arbitrary bytes go through the RESP parser;
// every reply that comes out is handed to each lock script's decoder. None may crash, and only
// a nil reply may ever be read as "acquired".
#include <cstdint>
#include <cstdlib>

#include "detail/exec_result.hpp"
#include "detail/lock_replies.hpp"
#include "detail/resp.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  rlock::detail::resp_reader reader;
  reader.feed(reinterpret_cast<const char*>(data), size);  // NOLINT
  for (int i = 0; i < 64; ++i) {
    rlock::reply r;
    std::error_code perr;
    if (!reader.next(r, perr)) break;
    const bool nil = r.is_nil();
    const bool error_reply = r.is_error();
    rlock::detail::exec_result res;
    res.written = true;
    if (error_reply) {
      res.ec = make_error_code(rlock::detail::classify_server_error(r.str(), true));
    }
    (void)r.to_string();
    res.value = std::move(r);

    long long server_ms = 0;
    const auto acquire = rlock::detail::decode_acquire(res, server_ms);
    if (acquire.acquired && (!nil || acquire.ec)) std::abort();
    if (error_reply && !acquire.ec) std::abort();

    const auto unlock = rlock::detail::decode_unlock(res);
    if (error_reply && !unlock.ec) std::abort();

    std::error_code ec;
    (void)rlock::detail::decode_force_unlock(res, ec);
    // A counter is a value only when the request succeeded; absent or refused reads as 0.
    if (const auto [counter_ec, n] = rlock::detail::decode_counter(res); counter_ec && n != 0) {
      std::abort();
    }
    for (std::size_t n : {0u, 1u, 3u, 100u}) {
      if (auto renew = rlock::detail::decode_renew(res, n); renew && renew->size() != n) {
        std::abort();
      }
      if (auto refresh = rlock::detail::decode_refresh(res, n);
          refresh && refresh->status.size() != n) {
        std::abort();
      }
    }
  }
  return 0;
}
