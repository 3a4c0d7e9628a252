// ClientSession: one control-socket connection (DESIGN.md §3), as two
// coroutines in the manner of asio's chat server: reader() decodes NDJSON
// requests (proto::LineReader, lines capped at 16 MiB) and starts each one as
// its own coroutine, so a slow tool call never blocks the next request;
// writer() drains the outbound queue of replies and events.
//
// Caps: at most kMaxRequestsInFlight requests run at once per client (the
// reader stops reading until one finishes: backpressure, not errors), and the outbound queue holds
// at most `max_queued_bytes`: a client that stops reading is disconnected, never allowed to grow
// the daemon. Lifetime: owned by shared_ptr; the coroutines and running requests hold a reference,
// so a reply to a closed session is dropped, not a crash. Threads: io thread only.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/local/stream_protocol.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "daemon/event_bus.hpp"
#include "daemon/wakeup.hpp"
#include "proto/control_messages.hpp"

namespace loopr::daemon {

class ClientSession;

// Turns one request into its reply; never throws (the dispatch boundary).
using RequestDispatcher =
    std::function<asio::awaitable<proto::Response>(ClientSession&, proto::Request)>;

class ClientSession : public std::enable_shared_from_this<ClientSession> {
 public:
  static constexpr std::size_t kMaxRequestsInFlight = 1024;

  ClientSession(asio::local::stream_protocol::socket socket, std::uint64_t id,
                RequestDispatcher dispatcher, std::size_t max_queued_bytes);
  ~ClientSession();

  void start();
  // Queues one encoded line; past the queue cap the session is closed.
  void send_line(std::string line);
  void send(const proto::Response& response);
  // Closes at once; queued lines are dropped.
  void close(const std::string& why);
  // Stops taking requests; closes once every running request has been
  // answered and everything queued is written.
  void close_after_flush();
  bool closed() const { return closed_; }

  std::uint64_t id() const { return id_; }
  // The read-before-edit scope of calls without a loop id.
  const std::string& name() const { return name_; }
  bool initialized = false;
  std::optional<EventBus::SubscriptionId> subscription;
  std::function<void(ClientSession&)> on_close;  // unsubscribes, forgets reads

 private:
  asio::awaitable<void> reader();
  asio::awaitable<void> writer();
  asio::awaitable<void> handle(proto::Request request);

  asio::local::stream_protocol::socket socket_;
  std::uint64_t id_;
  std::string name_;
  RequestDispatcher dispatcher_;
  std::size_t max_queued_bytes_;
  std::deque<std::string> outbox_;
  std::size_t queued_bytes_ = 0;
  std::size_t in_flight_ = 0;
  Wakeup wake_writer_;
  Wakeup request_done_;  // a request finished: the reader may take another
  bool closed_ = false;
  bool closing_ = false;
};

}  // namespace loopr::daemon
