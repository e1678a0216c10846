// A stop token stopped by either of two (the caller's own, and one an Asio cancellation slot
// stops): what the handles' async acquires wait on.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stop_token>

namespace rlock::detail {

/// A token stopped when `a` or `b` is; `keep` owns what links them and must live while the
/// token is in use. When one of them can never be stopped, the other is returned as it is.
inline std::stop_token stop_either(std::stop_token a, std::stop_token b,
                                   std::shared_ptr<void>& keep) {
  if (!b.stop_possible()) return a;
  if (!a.stop_possible()) return b;
  struct link {
    std::stop_source source;
    std::optional<std::stop_callback<std::function<void()>>> from_a;
    std::optional<std::stop_callback<std::function<void()>>> from_b;
  };
  auto l = std::make_shared<link>();
  auto forward = [s = l->source]() mutable { s.request_stop(); };
  l->from_a.emplace(std::move(a), std::function<void()>(forward));
  l->from_b.emplace(std::move(b), std::function<void()>(forward));
  keep = l;
  return l->source.get_token();
}

}  // namespace rlock::detail
