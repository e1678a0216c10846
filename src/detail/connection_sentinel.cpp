// connection, Sentinel mode: asking the Sentinels where the master is before each connect, and
// checking during setup that the server connected to is the master.
#include <string_view>

#include "detail/connection.hpp"
#include "detail/whole_number.hpp"

namespace rlock::detail {

void connection::ask_sentinel(std::uint64_t gen, std::size_t tried,
                              std::vector<std::string> failures) {
  const std::size_t index = (sentinel_first_ + tried) % opts_.sentinels.size();
  connection_options so;
  so.address = opts_.sentinels[index];
  so.username = so.address.username;
  so.password = so.address.password;
  so.client_name = opts_.client_name;
  so.tls = opts_.tls;
  if (so.address.kind == server_address::scheme::rediss) so.tls_context = opts_.tls_context;
  so.connect_timeout = opts_.connect_timeout;
  so.ping_interval = std::chrono::milliseconds(0);
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
  setup_failed(gen, ec, std::move(detail));
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
