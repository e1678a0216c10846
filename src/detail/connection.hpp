// A multiplexed, pipelined connection to one Redis server.
//
// Any thread may submit requests. Requests queued while a write is in flight go out together in
// the next write; replies are matched to requests in order. When the connection is idle and the
// stream is a plain socket, the submitting thread writes the command itself (one thread hand-off
// per round trip instead of two).
//
// On a plain socket a blocking caller may also read the replies itself while it polls for its
// result (poll_replies): the reply is taken as soon as it lands, instead of after the I/O thread
// has been woken, scheduled and has woken the caller in turn. Only while every request awaiting
// a reply allows it (request::completes_on_caller: blocking calls, whose completion only hands
// the result over); otherwise, and for TLS and pub/sub, the I/O thread reads. Reading happens
// under the connection's mutex, by one thread at a time, in stream order.
//
// Guarantees:
//   - every submitted request completes exactly once: with its reply, or with an error;
//   - a request never completes after its deadline plus the timer's scheduling delay;
//   - a request that timed out after being written has its later reply discarded, so replies
//     never shift to the wrong request;
//   - when the stream breaks, written requests fail with connection_lost (outcome unknown) and
//     unwritten ones with not_connected (certainly not run); the connection then reconnects
//     with exponential back-off until close() is called;
//   - while (re)connecting, new requests wait in the queue up to their deadline;
//   - in the back-off between connects, new requests fail at once, certainly not run, with
//     why the last connect failed where that says more than not_connected: a sticky error,
//     connection_refused, server_busy, or timeout (no answer to the setup within
//     connect_timeout), so a silent server reads the same whenever a request meets it.
//
// The connection sends its setup commands (AUTH, SELECT, CLIENT SETNAME, CLIENT INFO, SCRIPT
// LOAD) first on every (re)connect and reports `ready` only when all of them succeeded, all
// within the connect timeout. Failures that do not fix themselves are sticky: AUTH, TLS, NOPERM,
// and any other error reply to a setup command (SELECT of a database the server does not have,
// say). Requests fail fast with that error, and the failed step's text, until a later reconnect
// succeeds. CLIENT SETNAME, CLIENT KILL and CLIENT INFO are best effort: a server that refuses
// them (renamed away, not in the ACL, older than 6.2) is used anyway. CLIENT INFO tells the
// connection its id on the server, which the failure of a request whose outcome is unknown
// carries (exec_result::unknown_on) so that a resend can close it there first
// (server_client.hpp); after a drop with requests unanswered, the next setup closes the old
// connection there too (CLIENT KILL), before anything else goes out on the new one.
//
// Sentinel mode (connection_options::sentinels): each connect first asks the Sentinels where the
// master is (connection_sentinel.cpp), on a connection of its own to each Sentinel in turn, and
// the setup adds ROLE: a server that is not a master fails the connect with errc::read_only
// (not sticky), and the next connect asks again. When no Sentinel names the master, the connect
// fails with each one's reason in the detail. master_switched() (the client's sentinel_watch
// heard a Sentinel announce a new master) moves the connection there at once: one on another
// server is dropped (requests awaiting a reply fail with connection_lost, outcome unknown, as
// on any drop), a connect under way to another server is abandoned, and the next connect goes
// straight to the announced master (its ROLE is still checked; if it is no master, the connect
// after asks the Sentinels as usual).
#pragma once

#include <array>
#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "detail/client_counters.hpp"
#include "detail/exec_result.hpp"
#include "detail/replica_census.hpp"
#include "detail/resolver_thread.hpp"
#include "detail/resp.hpp"
#include "detail/server_client.hpp"
#include "detail/transport.hpp"
#include "rlock/config.hpp"

namespace rlock::detail {

using clock = std::chrono::steady_clock;
using exec_callback = std::function<void(exec_result)>;

/// One command (or several pipelined ones) on its way to the server.
struct request {
  std::string payload;  ///< RESP bytes, unless `external` is set
  /// RESP bytes owned by the caller, who keeps them alive until `done` runs (saves a copy).
  const std::string* external = nullptr;
  std::string_view bytes() const { return external != nullptr ? *external : payload; }
  clock::time_point deadline = clock::time_point::max();
  exec_callback done;        ///< empty for fire-and-forget commands
  int replies = 1;           ///< replies to expect; only the last one is reported (0: none)
  bool from_script = false;  ///< classify generic errors as script errors
  /// The last of `replies` answers a WAIT that follows the command: the reply before it is
  /// reported, and WAIT's count (or -1 for an error) as exec_result::replicas_acked.
  bool trailing_wait = false;
  /// With trailing_wait, when above 0: the WAIT is not in the payload; the connection appends
  /// `WAIT <replicas connected to its server> <wait_connected_timeout>` as it writes the request
  /// (config::all_connected_replicas), and reports the replicas counted as
  /// exec_result::replicas_connected. Only on connections with connection_options::census.
  std::chrono::milliseconds wait_connected_timeout{0};
  /// `done` may run on the thread that waits for it (a blocking call reading its own reply),
  /// not only on an I/O thread: it must be thread-safe, quick, and must not block.
  bool completes_on_caller = false;
};

struct connection_options {
  server_address address;
  std::optional<std::string> username;
  std::optional<std::string> password;
  /// When set, asked at each connect; its answer replaces username and password
  /// (config::credentials_resolver). Asked on `resolver_runner` when set (the client's
  /// resolver_thread), else on the connection's strand.
  std::function<credentials(const server_address&)> credentials_resolver;
  std::shared_ptr<resolver_thread> resolver_runner;
  std::string client_name;
  tls_options tls;
  std::shared_ptr<asio::ssl::context> tls_context;
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds reconnect_delay_min{50};
  std::chrono::milliseconds reconnect_delay_max{2000};
  std::chrono::milliseconds ping_interval{30000};
  std::chrono::milliseconds ping_timeout{3000};
  /// Script texts loaded with SCRIPT LOAD during setup.
  std::vector<std::string> scripts;
  /// Pub/sub mode: push messages go to on_push instead of completing requests.
  bool pubsub = false;
  /// Cluster mode: master_switched() moves the connection for good (the replica promoted in
  /// place of a dead master), as it does in Sentinel mode.
  bool movable = false;
  /// Sentinel mode, when not empty: on every (re)connect the connection asks these Sentinels
  /// (the one that answered last first, then the others in turn, each within connect_timeout)
  /// for the address of master `master_name`, connects there with the answering Sentinel's
  /// scheme and `address`'s credentials and database, and checks with ROLE during setup that
  /// the server is a master. `address`'s scheme, host and port are replaced by each answer;
  /// tls_context must be set if any Sentinel is rediss://. A READONLY reply (the master
  /// was demoted) drops the connection, which then asks the Sentinels again.
  std::vector<server_address> sentinels;
  std::string master_name;
  /// Set for Redisson's rule (config::all_connected_replicas): node.cpp then gives the
  /// connections to its server that WAIT a census.
  bool count_replicas = false;
  /// When set, the connection counts its server's connected replicas (INFO replication) into
  /// it during setup, and again when a WAIT of a wait_connected_timeout request got another
  /// count than it asked for or the count is stale (replica_census.hpp); its WAITs ask for that
  /// count. Best effort: while the server refuses INFO, they ask for 1. Shared by the
  /// connections to one server.
  std::shared_ptr<replica_census> census;
  /// When set, the connection counts its setups, failed setups and drops into it, and a pub/sub
  /// connection's subscriber the messages it receives (client::stats()). Not copied to Sentinel
  /// connections.
  std::shared_ptr<client_counters> counters;
};

/// Options for a connection to `sentinel`, one of `base`'s Sentinels: its address and
/// credentials, and `base`'s client name, TLS settings and connect and reconnect timing. No
/// pings (ping_interval 0): a caller that keeps the connection sets its own.
connection_options sentinel_connection_options(const connection_options& base,
                                               const server_address& sentinel);

/// A change of a connection's link (connection::handlers::on_link).
struct link_report {
  enum class change { up, down, connect_failed } what = change::up;
  std::string server;  ///< the address it connected (or tried to connect) to
  std::error_code error;
  std::string detail;
};

class connection : public std::enable_shared_from_this<connection> {
 public:
  enum class state { idle, connecting, ready, backoff, closed };

  struct handlers {
    /// After every successful (re)connect and setup, on the connection's strand.
    std::function<void()> on_ready;
    /// Pub/sub pushes ("message", "subscribe", ...) in pub/sub mode.
    std::function<void(reply)> on_push;
    /// When an established connection drops, with the reason.
    std::function<void(std::error_code)> on_down;
    /// What the link did, for the client's events (node.cpp): set up (after on_ready), dropped
    /// after it was set up (after on_down), or a connect failed. On the connection's strand.
    std::function<void(const link_report&)> on_link;
  };

  connection(asio::io_context& io, connection_options opts, handlers h);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Starts connecting (idempotent).
  void start();
  /// Submits a request; thread-safe. The callback runs on an I/O thread.
  void submit(request r);
  /// Closes for good: pending requests fail with errc::shutdown. Thread-safe, idempotent.
  void close();

  /// For a blocking caller polling for the result of a request it submitted here: reads the
  /// replies that have arrived and runs their completions on the calling thread, if the
  /// connection is ready, on a plain socket, not in use by another reader, and every request
  /// awaiting a reply has completes_on_caller. Never blocks. True if it read anything.
  bool poll_replies();
  /// poll_replies() on the connection this thread last submitted a completes_on_caller request
  /// to (false if there is none, or it is gone).
  static bool poll_replies_of_this_thread();

  /// Sentinel mode: a Sentinel announced that the master is now at `host`:`port` (reached with
  /// the scheme of the current address); Cluster mode (connection_options::movable): the
  /// cluster now serves this connection's slots there. No-op otherwise. Thread-safe; carried out on
  /// the connection's strand. `detail` says so in the errors of the requests that the move fails.
  void master_switched(std::string host, std::uint16_t port, std::string detail);

  state current_state() const;
  /// The error of the last failed connect and its description, if the connection is not ready
  /// (empty once a connect succeeds).
  std::pair<std::error_code, std::string> last_failure() const;

 private:
  struct entry {
    request req;
    bool abandoned = false;  // completed by its deadline; its reply will be discarded
    int remaining = 1;       // replies still to read
    reply kept;              // trailing_wait: the command's reply, while WAIT's is awaited
    // wait_connected_timeout: the count its WAIT asked for, and the replicas counted when it
    // was written (-1: the server would not tell; it asked for 1).
    long long wait_asked = -1;
    long long wait_counted = -1;
  };
  using completion = std::pair<exec_callback, exec_result>;
  using completions = std::vector<completion>;

  void do_connect();
  // Connects to opts_.address (the master the Sentinels named, in Sentinel mode).
  void connect_to_address(std::uint64_t gen);
  // Sentinel mode (connection_sentinel.cpp): asks the `tried`-th Sentinel after the one that
  // answered last for the master's address; `failures` says why the ones before did not tell.
  void ask_sentinel(std::uint64_t gen, std::size_t tried, std::vector<std::string> failures);
  void on_sentinel_answer(std::uint64_t gen, std::size_t tried, std::vector<std::string> failures,
                          exec_result answer);
  // Closes the query to a Sentinel under way, if any (on the strand).
  void stop_sentinel_query();
  // Sentinel mode: the server's answer to ROLE during setup, as an error when it is no master.
  std::optional<std::string> not_master(const exec_result& role) const;
  void on_transport_connected(std::uint64_t gen, std::error_code ec, std::string detail);
  // Sends the setup commands of connect `gen` with the user and password the resolver gives
  // (asked on opts_.resolver_runner when there is one, the setup going on when its answer is
  // back on the strand), or with those of opts_.
  void send_setup(std::uint64_t gen);
  // The resolver's answer, or the reason it gave none (what it threw).
  using resolved = std::variant<credentials, std::string>;
  static resolved ask_resolver(const std::function<credentials(const server_address&)>& resolver,
                               server_address server);
  // Goes on with the setup of connect `gen` once the resolver answered (fails it with
  // errc::auth_failed when the resolver threw).
  void send_setup_as(std::uint64_t gen, const resolved& login);
  // How a failed connect reads in handlers::on_link: a failure at opts_.address; no address
  // to try (no Sentinel named the master: the report names no server); or not reported (a
  // connect abandoned for a move, which is no failure).
  enum class failure_report { at_address, no_address, none };
  void setup_failed(std::uint64_t gen, std::error_code ec, std::string detail,
                    failure_report report = failure_report::at_address);
  void become_ready(std::uint64_t gen);
  void start_write_locked(std::unique_lock<std::mutex>& lk);
  void on_written(std::uint64_t gen, std::error_code ec);
  // Decides how this generation reads (once per connect): recv on readiness for plain
  // sockets (arm_readable), Asio's reads for TLS and pub/sub (read_some, again after each).
  void start_reading(std::uint64_t gen);
  void read_some(std::uint64_t gen);
  void on_read(std::uint64_t gen, std::error_code ec, std::size_t n);
  void handle_reply(reply r, completions& out);
  void handle_reply_locked(reply r, completions& out);
  /// Pub/sub mode: routes a reply or an error, which answers the oldest command unanswered.
  void handle_pubsub_reply(reply r, completions& out);
  // Plain sockets: the I/O thread waits for readability and reads with recv itself, so that a
  // polling caller can read too (both under mu_).
  void arm_readable(std::uint64_t gen);
  void on_readable(std::uint64_t gen, std::error_code ec);
  struct read_outcome {
    enum class kind { drained, eof, failed, corrupt } what = kind::drained;
    bool any = false;      // some bytes were read
    int error = 0;         // errno, for failed
    std::string detail{};  // for corrupt: what the parser found
  };
  read_outcome read_available_locked(completions& out);
  void after_read(std::uint64_t gen, const read_outcome& o);
  /// A pending entry's bytes were written (or handed to the write in flight): it awaits its
  /// replies, or, in pub/sub mode, the push that answers it.
  void written_locked(entry e);
  void push_awaiting_locked(entry e);
  entry take_awaiting_front_locked();
  void clear_awaiting_locked();
  void abandon_locked(entry& e);  // completed by its deadline; sets entry::abandoned
  /// The failure of a written request whose outcome is unknown, naming this generation's
  /// connection on the server (exec_result::unknown_on) when its setup learnt it.
  exec_result unknown_outcome_locked(std::error_code ec, std::string detail) const;
  void drop(std::uint64_t gen, std::error_code ec, std::string detail);
  /// Reconnects after the back-off's jittered delay, which grows with failures_.
  void schedule_reconnect_locked();
  /// Enters state::backoff and connects again after `delay` (0: at once, for a drop after
  /// stable_link).
  void arm_reconnect_locked(std::chrono::milliseconds delay);
  void arm_deadline_locked(clock::time_point tp);
  void on_deadline(std::error_code ec);
  void on_ping_timer(std::error_code ec);
  bool try_direct_send_locked();
  // A request with request::wait_connected_timeout, about to be written: its WAIT appended,
  // asking for the replicas this connection last counted (1 when it could not count them).
  void append_wait_locked(entry& e) const;
  // The reply to such a request's WAIT (`res`): completed at once, unless no replica
  // acknowledged a WAIT that asked for some: then only after INFO replication counted them
  // again, with the replicas asked for that are still connected (one gone is not waited for).
  // A WAIT that got another count than it asked for, or a stale count, starts a recount too.
  void complete_counted(entry done, exec_result res, completions& out);
  // Counts the replicas (INFO replication), then calls `then` with the count, or nullopt.
  void recount(clock::time_point deadline, std::function<void(std::optional<long long>)> then);
  static void run(completions& c);

  connection_options opts_;
  handlers handlers_;
  transport::executor strand_;
  transport transport_;
  asio::steady_timer connect_timer_;
  asio::steady_timer reconnect_timer_;
  asio::steady_timer deadline_timer_;
  asio::steady_timer ping_timer_;
  resp_reader reader_;
  std::unique_ptr<std::array<char, 65536>> read_buf_;  // guarded by mu_ when direct_read_
  // This generation reads with recv (plain socket, not pub/sub). Written under mu_; read without
  // it by poll_replies() only to skip taking mu_ when it cannot read.
  std::atomic<bool> direct_read_{false};
  // Requests awaiting a reply whose completion must run on an I/O thread (not
  // completes_on_caller) and that are not abandoned: an abandoned entry's late reply completes
  // nothing, so a blocking caller may read past it. Written under mu_ (push_awaiting_locked,
  // take_awaiting_front_locked, abandon_locked, clear_awaiting_locked); read as direct_read_.
  std::atomic<int> others_awaiting_{0};

  mutable std::mutex mu_;
  state state_ = state::idle;
  std::uint64_t generation_ = 0;
  std::deque<entry> pending_;   // not yet written
  std::deque<entry> awaiting_;  // written, reply expected (in order)
  // Pub/sub mode: how each written command is answered, oldest first (true: by a push, as a
  // SUBSCRIBE or UNSUBSCRIBE is confirmed; false: by a reply). An error answers the oldest one
  // either way, so this tells a refused SUBSCRIBE (for on_push) from a refused PING (for its
  // request). Cleared with awaiting_.
  std::deque<bool> answered_by_push_;
  std::string write_buf_;  // bytes of the write in flight
  bool writing_ = false;
  clock::time_point armed_deadline_ = clock::time_point::max();
  std::error_code last_error_;
  std::string last_error_detail_;
  bool sticky_error_ = false;  // a failure that does not fix itself: fail fast until reconnected
  // Requests queue for the coming connect instead of failing fast (cleared when a connect
  // begins): master_switched() came in the back-off, or a link that had been up for
  // stable_link dropped and connects again at once (drop()).
  bool queue_for_connect_ = false;
  // This generation's connection as the server knows it (CLIENT INFO during setup); empty
  // until then, after a drop, and when the server would not tell.
  std::optional<server_client> server_client_;
  // With events wanted: the server's maxmemory-policy, as a warning when it may evict held
  // locks (INFO memory during setup; empty when it does not, or the server would not tell).
  std::string eviction_warning_;
  // Earlier generations' connections, dropped with requests unanswered, that the next setup
  // closes on the server (send_setup); at most max_left_behind, the latest.
  std::vector<server_client> left_behind_;
  static constexpr std::size_t max_left_behind = 8;
  // Connects failed in a row since the link was last up: the back-off grows with them
  // (schedule_reconnect_locked).
  int failures_ = 0;
  // When the link was last set up (become_ready).
  clock::time_point ready_at_{};
  // A link up for at least this long that drops reconnects at once, keeping the requests not
  // yet written for the new link; one that drops sooner waits reconnect_delay_min's jitter
  // first, as before, so that a server (or a proxy) that closes each connection soon after
  // its setup is not met with a connect loop.
  static constexpr std::chrono::seconds stable_link{1};
  // Sentinel mode, on the strand: the connection to the Sentinel being asked, and the index of
  // the Sentinel to ask first (the one that answered last).
  std::shared_ptr<connection> sentinel_query_;
  std::size_t sentinel_first_ = 0;
  // Sentinel mode, on the strand: where the last announcement that this connection acted on
  // put the master; the next connect goes there without asking the Sentinels.
  std::optional<std::pair<std::string, std::uint16_t>> switched_to_;
  clock::time_point last_read_ = clock::now();
  std::minstd_rand rng_{std::random_device{}()};
};

}  // namespace rlock::detail
