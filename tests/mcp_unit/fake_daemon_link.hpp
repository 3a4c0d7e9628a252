// FakeDaemonLink: a DaemonLink for tests of McpSession and its transports.
// It records every request, answers tool.list with a small catalog, and
// keeps each tool.call open as a FakeCall until the test finishes it: the
// test pushes looprd events into the call (delivered on the call's own
// thread, as the real link does), ends it with an outcome, or sees it aborted
// through CallControl. A tool.cancel naming a call the test has started ends
// that call as looprd would (status cancelled).
//
// RecordingOutbox: an Outbox that keeps what it is sent and whether finish()
// ran, and lets a test wait for either.
//
// Every wait is bounded (30 s) so a broken session fails the test instead of
// hanging it; none of them is a timed assertion.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "mcp/daemon_link.hpp"
#include "mcp/session.hpp"

namespace loopr::mcp::test {

inline constexpr auto kWait = std::chrono::seconds(30);

struct RecordedRequest {
  std::string method;
  nlohmann::json params;
};

class FakeCall {
 public:
  explicit FakeCall(nlohmann::json params) : params_(std::move(params)) {}
  const nlohmann::json& params() const { return params_; }

  // Delivers `event` on the call's thread and returns once it was handled.
  // Any event with data.call_id names the call, as McpSession takes it
  // (looprd sends the link tool.output and approval.requested).
  void emit(const std::string& name, nlohmann::json data);
  // Ends the call with looprd's `outcome`.
  void finish(nlohmann::json outcome);
  // True once the session's CallControl aborted the call (within kWait).
  bool wait_aborted();
  bool aborted() const;
  std::string call_id() const;

  // The link's side.
  Result<nlohmann::json> run(const DaemonLink::EventHandler& on_event, CallControl& control);
  void abort();

 private:
  nlohmann::json params_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<DaemonEvent> events_;
  std::size_t emitted_ = 0, delivered_ = 0;
  std::optional<nlohmann::json> outcome_;
  bool aborted_ = false;
  bool returned_ = false;
  std::string call_id_;
};

class FakeDaemonLink final : public DaemonLink {
 public:
  FakeDaemonLink();

  Result<nlohmann::json> request(const std::string& method, const nlohmann::json& params) override;
  Result<nlohmann::json> call_tool(const nlohmann::json& params, const EventHandler& on_event,
                                   CallControl& control) override;

  // looprd's tool.list `tools`.
  void set_catalog(nlohmann::json tools);
  // Ends every call still open (status cancelled), so that a session whose
  // cancellation is broken fails its test instead of hanging it.
  void finish_all_calls();
  // Calls that finish at once with `outcome` instead of waiting for the test.
  void finish_calls_at_once(nlohmann::json outcome);

  // The n-th tool.call (0-based), once it has started (nullptr after kWait).
  std::shared_ptr<FakeCall> wait_for_call(std::size_t n);
  std::size_t call_count() const;
  std::vector<RecordedRequest> requests() const;
  // The requests with this method, in order.
  std::vector<nlohmann::json> requests_of(const std::string& method) const;
  // Waits (bounded) until a request with `method` was made.
  bool wait_for_request(const std::string& method);

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  nlohmann::json catalog_;
  std::optional<nlohmann::json> immediate_outcome_;
  std::vector<RecordedRequest> requests_;
  std::vector<std::shared_ptr<FakeCall>> calls_;
};

class RecordingOutbox final : public Outbox {
 public:
  void send(const nlohmann::json& message) override;
  void finish() override;

  // Runs for each message sent, on the sender's thread, after it is recorded.
  void on_send(std::function<void(const nlohmann::json&)> hook);

  std::vector<nlohmann::json> messages() const;
  bool finished() const;
  // Waits (bounded) for finish(); false if it did not come.
  bool wait_finished();
  // Waits (bounded) for a message `match` accepts; nullopt if none came.
  std::optional<nlohmann::json> wait_for(const std::function<bool(const nlohmann::json&)>& match);
  // The first message that is a request with `method` (waits, bounded).
  std::optional<nlohmann::json> wait_for_request(const std::string& method);
  // The response to request `id` (waits, bounded).
  std::optional<nlohmann::json> wait_for_response(const nlohmann::json& id);
  // Whether a successful response to request `id` came (waits, bounded).
  bool wait_response_ok(const nlohmann::json& id);
  // The messages with this method, in order.
  std::vector<nlohmann::json> with_method(const std::string& method) const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<nlohmann::json> messages_;
  std::function<void(const nlohmann::json&)> hook_;
  bool finished_ = false;
};

// The catalog FakeDaemonLink answers with: read_file (no-net, read-only,
// with an output schema), write_file and run_command.
nlohmann::json sample_catalog();

// JSON-RPC messages from a client.
nlohmann::json client_request(const nlohmann::json& id, const std::string& method,
                              nlohmann::json params = nlohmann::json::object());
nlohmann::json client_notification(const std::string& method,
                                   nlohmann::json params = nlohmann::json::object());

}  // namespace loopr::mcp::test
