// ControlClient: one blocking connection to looprd's control socket
// (DESIGN.md §3, docs/control-protocol.md), for looprctl and tests.
//
// Contract:
//  - open() connects and sends `initialize {client, version}` before anything
//    else; a 1004 answer or another `protocol` is failure::version_mismatch.
//  - call() sends one request and reads until the reply with the same id
//    arrives. Replies with other ids are skipped (none are outstanding: calls
//    are sequential); events that arrive meanwhile are queued for
//    next_event(). The queue holds at most kMaxQueuedEvents; beyond that the
//    oldest are dropped and counted (dropped_events()).
//  - Every wait has a deadline (nullopt: wait without limit). Every line is
//    capped by proto::LineReader (16 MiB); an oversize or non-JSON line, or a
//    message of the wrong shape, is errc::protocol.
//  - Errors follow client/failure.hpp: connect refused / no socket / EOF /
//    timeout are failure::daemon_unreachable (exit 3), an {"error"} reply is
//    failure::rpc_error.
//  - After any failure other than rpc_error the connection is in an unknown
//    state; the owner drops the client.
// Owns its socket fd (SOCK_CLOEXEC). Not thread-safe: one thread uses it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "proto/control_messages.hpp"
#include "proto/control_methods.hpp"
#include "proto/line_codec.hpp"

namespace loopr::client {

using Milliseconds = std::chrono::milliseconds;

struct ClientTimeouts {
  Milliseconds connect{5000};
  // For initialize and every call() that passes no timeout of its own.
  Milliseconds reply{30000};
};

class ControlClient {
 public:
  static constexpr std::size_t kMaxQueuedEvents = 4096;
  static constexpr std::string_view kClientName = "looprctl";

  // Connects to `socket_path` and initializes the session.
  static Result<ControlClient> open(const std::string& socket_path,
                                    const ClientTimeouts& timeouts = {});
  // Connects only; the caller sends initialize itself (tests of the protocol).
  static Result<ControlClient> connect(const std::string& socket_path,
                                       const ClientTimeouts& timeouts = {});

  // Sends initialize and checks the protocol version it answers.
  Result<proto::InitializeResult> initialize();

  // The `result` of `method`. `timeout`: how long to wait for the reply;
  // unset: the reply timeout of ClientTimeouts; Milliseconds::max(): no limit.
  Result<nlohmann::json> call(const std::string& method,
                              nlohmann::json params = nlohmann::json::object(),
                              std::optional<Milliseconds> timeout = std::nullopt);
  // The `result` of control method M (a descriptor of
  // proto/control_methods.hpp), the request written from M's typed Params.
  template <class M>
  Result<nlohmann::json> call(const typename M::Params& params,
                              std::optional<Milliseconds> timeout = std::nullopt) {
    return call(std::string(M::name), proto::to_json(params), timeout);
  }
  // The same, but each event that arrives while waiting goes to `on_event`
  // (on this thread, before the reply is returned) instead of the queue.
  using EventHandler = std::function<void(const proto::Event&)>;
  Result<nlohmann::json> call(const std::string& method, nlohmann::json params,
                              std::optional<Milliseconds> timeout, const EventHandler& on_event);

  // Shuts the socket down in both directions: a call() waiting on another
  // thread returns daemon_unreachable, and looprd cancels this connection's
  // calls. The only member another thread may use while one waits.
  void abort() const;

  // The next pushed event: a queued one first, else the next to arrive.
  // nullopt when none arrived within `timeout` (Milliseconds::max(): no limit).
  Result<std::optional<proto::Event>> next_event(Milliseconds timeout);

  const std::string& socket_path() const { return socket_path_; }
  // What initialize answered (set by open() and initialize()).
  const std::optional<proto::InitializeResult>& session() const { return session_; }
  std::uint64_t dropped_events() const { return dropped_events_; }

 private:
  using Clock = std::chrono::steady_clock;
  using Deadline = std::optional<Clock::time_point>;
  using Message = std::variant<proto::Response, proto::Event>;

  ControlClient(UniqueFd fd, std::string socket_path, ClientTimeouts timeouts);

  Deadline deadline_after(std::optional<Milliseconds> timeout) const;
  Result<void> send_request(const proto::Request& request, Deadline deadline);
  // The next whole message, reading from the socket as needed.
  Result<Message> receive(Deadline deadline, std::string_view waiting_for);
  // Reads once (after waiting for readability up to `deadline`).
  Result<void> fill(Deadline deadline, std::string_view waiting_for);
  void queue_event(proto::Event event);
  Error closed_error(std::string_view waiting_for) const;

  UniqueFd fd_;
  std::string socket_path_;
  ClientTimeouts timeouts_;
  proto::LineReader reader_;
  std::deque<proto::Event> events_;
  std::uint64_t dropped_events_ = 0;
  std::int64_t next_id_ = 1;
  std::optional<proto::InitializeResult> session_;
};

// The hint printed with every unreachable failure.
std::string start_hint();

}  // namespace loopr::client
