// connection, Sentinel mode: asking the Sentinels where the master is before each connect,
// checking during setup that the server connected to is the master, and moving to a master
// that a Sentinel announced.
#include <string_view>

#include "detail/connection.hpp"
#include "detail/whole_number.hpp"

namespace rlock::detail {

connection_options sentinel_connection_options(const connection_options& base,
                                               const server_address& sentinel) {
  connection_options so;
  so.address = sentinel;
  so.username = sentinel.username;
  so.password = sentinel.password;
  so.client_name = base.client_name;
  so.tls = base.tls;
  if (sentinel.kind == server_address::scheme::rediss) so.tls_context = base.tls_context;
  so.connect_timeout = base.connect_timeout;
  so.reconnect_delay_min = base.reconnect_delay_min;
  so.reconnect_delay_max = base.reconnect_delay_max;
  so.ping_timeout = base.ping_timeout;
  so.ping_interval = std::chrono::milliseconds(0);
  return so;
}

void connection::ask_sentinel(std::uint64_t gen, std::size_t tried,
                              std::vector<std::string> failures) {
  const std::size_t index = (sentinel_first_ + tried) % opts_.sentinels.size();
  const connection_options so = sentinel_connection_options(opts_, opts_.sentinels[index]);
  stop_sentinel_query();
  sentinel_query_ =
      std::make_shared<connection>(strand_.get_inner_executor().context(), so, handlers{});
  sentinel_query_->start();
  request r;
  const std::string_view args[] = {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", opts_.master_name};
  r.payload = encode_command(args);
  // Covers connecting to the Sentinel too: the request waits in its queue meanwhile.
  r.deadline = clock::now() + opts_.connect_timeout;
  r.done = [self = shared_from_this(), gen, tried, failures](exec_result answer) mutable {
    asio::post(self->strand_, [self, gen, tried, failures = std::move(failures),
                               answer = std::move(answer)]() mutable {
      self->on_sentinel_answer(gen, tried, std::move(failures), std::move(answer));
    });
  };
  sentinel_query_->submit(std::move(r));
}

void connection::stop_sentinel_query() {
  if (!sentinel_query_) return;
  sentinel_query_->close();
  sentinel_query_.reset();
}

void connection::on_sentinel_answer(std::uint64_t gen, std::size_t tried,
                                    std::vector<std::string> failures, exec_result answer) {
  {
    std::lock_guard lk(mu_);
    if (gen != generation_ || state_ != state::connecting) return;
  }
  stop_sentinel_query();
  const std::size_t index = (sentinel_first_ + tried) % opts_.sentinels.size();
  const server_address& sentinel = opts_.sentinels[index];
  std::string why;
  if (answer.ec) {
    why = answer.detail.empty() ? answer.ec.message() : answer.detail;
  } else if (answer.value.is_nil()) {
    why = "it monitors no master named '" + opts_.master_name + "'";
  } else if (answer.value.is_array() && answer.value.size() == 2 && answer.value[0].is_string() &&
             answer.value[1].is_string()) {
    const auto port = parse_whole_number(answer.value[1].str(), 1, 65535);
    if (port && !answer.value[0].str().empty()) {
      opts_.address.kind = sentinel.kind;
      opts_.address.host = std::string(answer.value[0].str());
      opts_.address.port = static_cast<std::uint16_t>(*port);
      sentinel_first_ = index;
      connect_to_address(gen);
      return;
    }
  }
  if (why.empty()) why = "unexpected answer " + answer.value.to_string();
  const std::string who = sentinel.to_string();
  failures.push_back(why.starts_with(who) ? why : who + ": " + why);
  if (tried + 1 < opts_.sentinels.size()) {
    ask_sentinel(gen, tried + 1, std::move(failures));
    return;
  }
  // None told. A name no Sentinel knows is a configuration error; otherwise the last
  // Sentinel's failure says what kind of trouble it is (refused, timed out, AUTH...).
  std::error_code ec = make_error_code(errc::server_error);
  if (answer.ec) ec = answer.ec;
  std::string detail = "no Sentinel named the address of master '" + opts_.master_name + "' (";
  for (std::size_t i = 0; i < failures.size(); ++i) {
    if (i > 0) detail += "; ";
    detail += failures[i];
  }
  detail += ")";
  setup_failed(gen, ec, std::move(detail), failure_report::no_address);
}

void connection::master_switched(std::string host, std::uint16_t port, std::string detail) {
  if (opts_.sentinels.empty() && !opts_.movable) return;
  {
    // From now on, until the move's connect begins, requests wait for it instead of failing
    // fast with the old server's failure (a caller told of the move resends at once).
    std::lock_guard lk(mu_);
    if (state_ == state::backoff) queue_for_connect_ = true;
  }
  asio::post(strand_, [self = shared_from_this(), host = std::move(host), port,
                       detail = std::move(detail)]() mutable {
    state now = state::idle;
    std::uint64_t gen = 0;
    {
      std::lock_guard lk(self->mu_);
      now = self->state_;
      gen = self->generation_;
    }
    if (now == state::closed || (self->opts_.sentinels.empty() && !self->opts_.movable)) return;
    // Already there (or going there after an answer that named it): nothing to do. While the
    // Sentinels are asked, opts_.address still holds the last answer, which may be the old
    // master: that query is abandoned too.
    const bool there = self->opts_.address.host == host && self->opts_.address.port == port &&
                       !self->sentinel_query_;
    if (there) return;
    self->switched_to_.emplace(std::move(host), port);
    // The move is no failure: its reconnect waits the shortest delay, not a backoff grown by
    // failed connects to a master that died.
    if (now == state::ready) {
      self->drop(gen, make_error_code(errc::connection_lost), std::move(detail));
    } else if (now == state::connecting) {
      self->stop_sentinel_query();
      {
        std::lock_guard lk(self->mu_);
        self->failures_ = 0;
      }
      self->setup_failed(gen, make_error_code(errc::not_connected), std::move(detail),
                         failure_report::none);
    } else if (now == state::backoff) {
      bool connect_now = false;
      {
        std::lock_guard lk(self->mu_);
        // cancel() is 0 when the timer has fired and its do_connect is queued: that one goes
        // there.
        if (self->state_ == state::backoff && self->reconnect_timer_.cancel() > 0) {
          self->failures_ = 0;
          connect_now = true;
        }
      }
      if (connect_now) self->do_connect();
    }
    // idle: the first connect goes there.
  });
}

std::optional<std::string> connection::not_master(const exec_result& role) const {
  if (role.ec) return std::nullopt;  // reported as any setup command's error
  const std::string_view what = role.value.is_array() ? role.value[0].str() : std::string_view();
  if (what == "master") return std::nullopt;
  return opts_.address.to_string() + " is not the master the Sentinels named (ROLE: " +
         (what.empty() ? role.value.to_string() : std::string(what)) +
         "): a failover is under way or their view is out of date";
}

}  // namespace rlock::detail
