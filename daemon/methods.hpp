// MethodRegistry: looprd's handlers of the control methods, one per
// descriptor of proto/control_methods.hpp (DESIGN.md §3,
// docs/control-protocol.md). dispatch() is looprd's one dispatch boundary
// (common/error.hpp): it looks the method up, applies its flags (initialize
// first, nothing new while shutting down), reads the params into the
// method's Params type and writes its Reply; a handler's Error becomes an
// error reply, and so does any exception that escaped by mistake, so a bug is
// an error reply, never a crash.
// Threads: io thread only.
#pragma once

#include <asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>
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
#include "proto/control_methods.hpp"

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
  // Workers on other machines ([cluster]); null without one.
  cluster::ClusterLink* cluster = nullptr;
};

// CMake's project version (LOOPR_DAEMON_VERSION, daemon_sources.cmake).
extern const char* const kDaemonVersion;

class MethodRegistry {
 public:
  explicit MethodRegistry(DaemonServices services);

  asio::awaitable<proto::Response> dispatch(ClientSession& session, proto::Request request);
  std::vector<std::string> method_names() const;

 private:
  // What dispatch() runs once the method's flags allowed the request: reads
  // the params into the method's Params, calls its handler, writes the reply.
  using Call =
      std::function<asio::awaitable<Result<nlohmann::json>>(ClientSession&, const nlohmann::json&)>;
  struct Entry {
    proto::MethodFlags flags;
    Call call;
  };

  // Registers the handler of method M (a descriptor of proto/control_methods.hpp):
  // a callable (ClientSession&, M::Params) returning Result<M::Reply>, or an
  // awaitable of it. It is kept for the registry's lifetime, so a coroutine
  // it starts may refer to what it captured.
  template <class M, class Handler>
  void add(Handler handler);
  template <class M, class Handler>
  static asio::awaitable<Result<nlohmann::json>> call_typed(const Handler& handler,
                                                            ClientSession& session,
                                                            const nlohmann::json& params);
  void add_core_methods();
  void add_loop_methods();    // loop_methods.cpp
  void add_memory_methods();  // memory_methods.cpp
  void add_repo_methods();    // repo_methods.cpp
  void add_policy_methods();  // policy_methods.cpp

  asio::awaitable<Result<proto::InitializeResult>> initialize(ClientSession&,
                                                              proto::InitializeParams);
  asio::awaitable<Result<proto::Document>> tool_call(ClientSession&, proto::ToolCallParams);
  asio::awaitable<Result<proto::Document>> tool_batch(ClientSession&, proto::ToolBatchParams);
  asio::awaitable<Result<proto::SubscribeParams>> events_subscribe(ClientSession&,
                                                                   proto::SubscribeParams);
  Result<proto::Document> metrics_get() const;
  // memory.* (memory_methods.cpp)
  Result<proto::Document> memory_list(const proto::MemoryListParams& params);
  Result<proto::Document> memory_search(const proto::MemorySearchParams& params);
  // repo.* (repo_methods.cpp)
  Result<proto::Document> repo_trust(const proto::RepoParams& params);
  Result<proto::Document> repo_untrust(const proto::RepoParams& params);
  Result<proto::Document> repo_show(const proto::RepoParams& params);
  // approval.always, policy.* (policy_methods.cpp)
  Result<proto::Document> approval_always(const proto::ApprovalAlwaysParams& params);
  Result<proto::Document> policy_rules(const proto::PolicyRulesParams& params);
  Result<proto::Document> policy_forget(const proto::PolicyForgetParams& params);

  DaemonServices services_;
  std::map<std::string, Entry, std::less<>> methods_;
};

// A request that cannot be done as asked (no such folder, no file to trust,
// a command no rule can be offered for) as -32602, its message and hint
// kept; a store failure (errc::io) stays as it is.
Error as_invalid_params(Error error);

// ---- add() and call_typed(), used by every *_methods.cpp ----

namespace method_detail {

template <class T>
inline constexpr bool is_awaitable = false;
template <class T>
inline constexpr bool is_awaitable<asio::awaitable<T>> = true;

// A handler's reply as the result a response carries.
template <class Reply>
Result<nlohmann::json> reply_json(Result<Reply> reply) {
  if (!reply) return std::move(reply).error();
  if constexpr (std::is_same_v<Reply, nlohmann::json>) {
    return std::move(*reply);
  } else {
    return proto::to_json(*reply);
  }
}

}  // namespace method_detail

template <class M, class Handler>
void MethodRegistry::add(Handler handler) {
  methods_[std::string(M::name)] =
      Entry{M::flags,
            [handler = std::move(handler)](ClientSession& session, const nlohmann::json& params) {
              return call_typed<M>(handler, session, params);
            }};
}

template <class M, class Handler>
asio::awaitable<Result<nlohmann::json>> MethodRegistry::call_typed(const Handler& handler,
                                                                   ClientSession& session,
                                                                   const nlohmann::json& params) {
  using Params = typename M::Params;
  using Reply = typename M::Reply;
  Result<Params> parsed = M::parse(params);
  if (!parsed) co_return std::move(parsed).error();
  if constexpr (method_detail::is_awaitable<
                    std::invoke_result_t<const Handler&, ClientSession&, Params>>) {
    Result<Reply> reply = co_await handler(session, std::move(*parsed));
    co_return method_detail::reply_json(std::move(reply));
  } else {
    Result<Reply> reply = handler(session, std::move(*parsed));
    co_return method_detail::reply_json(std::move(reply));
  }
}

}  // namespace loopr::daemon
