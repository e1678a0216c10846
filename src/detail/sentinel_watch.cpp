#include "detail/sentinel_watch.hpp"

#include "detail/subscriber.hpp"
#include "detail/whole_number.hpp"

namespace rlock::detail {
namespace {

constexpr std::string_view switch_channel = "+switch-master";

// The next space-separated word of `text`, taken off its front.
std::string_view next_word(std::string_view& text) {
  const auto end = text.find(' ');
  const std::string_view word = text.substr(0, end);
  text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  return word;
}

}  // namespace

std::optional<std::pair<std::string, std::uint16_t>> parse_switch_master(
    std::string_view payload, std::string_view master_name) {
  // Single spaces between the words, none around them (an empty word is refused below).
  if (payload.ends_with(' ')) return std::nullopt;
  std::string_view words[5];
  for (auto& w : words) {
    w = next_word(payload);
    if (w.empty()) return std::nullopt;
  }
  if (!payload.empty() || words[0] != master_name) return std::nullopt;
  const auto port = parse_whole_number(words[4], 1, 65535);
  if (!port) return std::nullopt;
  return std::pair{std::string(words[3]), static_cast<std::uint16_t>(*port)};
}

sentinel_watch::sentinel_watch(asio::io_context& io, const connection_options& opts, on_switch f)
    : io_(io), master_name_(opts.master_name), shared_(std::make_shared<shared>()) {
  shared_->f = std::move(f);
  for (const server_address& s : opts.sentinels) {
    connection_options so = sentinel_connection_options(opts, s);
    // Kept open: pinged like the client's own connections, so that a Sentinel that went away
    // without a word is noticed and reconnected to.
    so.ping_interval = opts.ping_interval;
    sentinels_.push_back(std::move(so));
  }
}

sentinel_watch::~sentinel_watch() {
  close();
}

void sentinel_watch::start() {
  for (const connection_options& so : sentinels_) {
    auto sub = std::make_shared<subscriber>(io_, so);
    sub->start();
    pubsub_listener listener = [state = shared_, name = master_name_](const pubsub_event& e) {
      if (e.what != pubsub_event::kind::message) return;
      const auto to = parse_switch_master(e.payload, name);
      if (!to) return;
      std::lock_guard lk(state->mu);
      if (!state->closed) state->f(to->first, to->second);
    };
    // No deadline: the subscription waits for the Sentinel to come up, however long. A refusal
    // (an ACL user without the channel) leaves this Sentinel unheard; see the header.
    sub->async_subscribe(channel_kind::classic, std::string(switch_channel), std::move(listener),
                         clock::time_point::max(),
                         [](std::error_code, channel_table::listener_id) {});
    subs_.push_back(std::move(sub));
  }
}

void sentinel_watch::close() {
  {
    std::lock_guard lk(shared_->mu);
    if (shared_->closed) return;
    shared_->closed = true;
  }
  for (const auto& sub : subs_) sub->close();
}

}  // namespace rlock::detail
