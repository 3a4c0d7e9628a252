// MethodRegistry: the control methods (DESIGN.md §3, docs/control-protocol.md)
// as a table of name → handler, in the manner of watchman's command registry.
// dispatch() is looprd's one dispatch boundary (common/error.hpp): a handler's
// Error becomes an error reply, and so does any exception that escaped by
// mistake, so a bug is an error reply, never a crash.
// Threads: io thread only.
#pragma once

#include <asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "daemon/approval_gate.hpp"
#include "daemon/client_session.hpp"
#include "daemon/event_bus.hpp"
#include "daemon/metrics.hpp"
#include "daemon/runner_link.hpp"
#include "daemon/tool_router.hpp"
#include "loops/loop_engine.hpp"
#include "memory/notebook.hpp"

namespace loopr::daemon {

// What the handlers reach. Everything is owned by the Daemon.
struct DaemonServices {
  ToolRouter& router;
  loops::LoopEngine& loops;
  ApprovalGate& approvals;
  EventBus& events;
  Metrics& metrics;
  std::vector<RunnerLink*> lanes;
  std::function<std::size_t()> client_count;
  std::function<void()> request_shutdown;
  std::chrono::steady_clock::time_point started;
  // True once looprd is shutting down: new requests other than ping are
  // refused, so nothing starts that would be cut off.
  std::function<bool()> shutting_down;
  // The memory notes, for the memory.* methods (the person's view).
  memory::Notebook& notebook;
  // repo.* (repo_methods.cpp): the trust records and the settings they resolve.
  store::Store& store;
  const config::Settings& settings;
};

// CMake's project version (LOOPR_DAEMON_VERSION, daemon_sources.cmake).
extern const char* const kDaemonVersion;

class MethodRegistry {
 public:
  explicit MethodRegistry(DaemonServices services);

  asio::awaitable<proto::Response> dispatch(ClientSession& session, proto::Request request);
  std::vector<std::string> method_names() const;

 private:
  using Handler = asio::awaitable<Result<nlohmann::json>> (MethodRegistry::*)(
      ClientSession&, const nlohmann::json&);
  struct Method {
    Handler handler;
    bool needs_initialize = true;
  };

  asio::awaitable<Result<nlohmann::json>> initialize(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> ping(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> tool_list(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> tool_call(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> tool_batch(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> tool_cancel(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> approval_list(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> approval_approve(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> approval_deny(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> events_subscribe(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> metrics_get(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> daemon_shutdown(ClientSession&, const nlohmann::json&);
  // loop.* (loop_methods.cpp)
  asio::awaitable<Result<nlohmann::json>> loop_create(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> loop_list(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> loop_get(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> loop_transcript(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> loop_export(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> loop_diff(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> loop_pause(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> loop_resume(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> loop_cancel(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> loop_delete(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> loop_create_plan(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> loop_gc(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> loop_rerun(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> plan_get(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> plan_approve(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> plan_reject(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> plan_iterate(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> plan_merge(ClientSession&, const nlohmann::json&);
  // memory.* (memory_methods.cpp)
  asio::awaitable<Result<nlohmann::json>> memory_list(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> memory_search(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> memory_get(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> memory_delete(ClientSession&, const nlohmann::json&);
  // repo.* (repo_methods.cpp)
  asio::awaitable<Result<nlohmann::json>> repo_trust(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> repo_untrust(ClientSession&, const nlohmann::json&);
  asio::awaitable<Result<nlohmann::json>> repo_show(ClientSession&, const nlohmann::json&);

  DaemonServices services_;
  std::map<std::string, Method, std::less<>> methods_;
};

}  // namespace loopr::daemon
