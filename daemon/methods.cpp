#include "daemon/methods.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <stdexcept>

#include "proto/control_messages.hpp"

namespace loopr::daemon {

const char* const kDaemonVersion = LOOPR_DAEMON_VERSION;

namespace {

using nlohmann::json;

Error rpc_error(proto::ControlErrorCode code, std::string message, std::string hint = {}) {
  Error error = make_error(code == proto::ControlErrorCode::invalid_params
                               ? std::string(errc::invalid_arguments)
                               : std::string(errc::protocol),
                           std::move(message), std::move(hint));
  error.details = {{"rpc_code", static_cast<int>(code)}};
  return error;
}

using proto::invalid_params;

// tool.batch: one model turn's calls. Its reply is one line (16 MiB at
// most): past kMaxBatchReplyBytes the largest outputs are dropped, each with
// an error saying to run that call alone.
constexpr std::size_t kMaxBatchReplyBytes = std::size_t{12} * 1024 * 1024;

// Ties a call to the connection that made it: cancelled when it disconnects.
void bind_to_session(ToolCallRequest& request, ClientSession& session) {
  request.client_id = session.id();
  std::weak_ptr<ClientSession> weak = session.shared_from_this();
  request.caller_gone = [weak] {
    auto live = weak.lock();
    return !live || live->closed();
  };
}

void fit_batch_reply(json& results) {
  std::vector<std::size_t> sizes;
  std::size_t total = 0;
  for (const json& result : results) {
    sizes.push_back(result.dump().size());
    total += sizes.back();
  }
  while (total > kMaxBatchReplyBytes) {
    const auto largest =
        static_cast<std::size_t>(std::max_element(sizes.begin(), sizes.end()) - sizes.begin());
    json& result = results[largest];
    const std::size_t was = sizes[largest];
    result["output"] = nullptr;
    result["ok"] = false;
    result["error"] = make_error(errc::too_large,
                                 "this call ran, but its output (" + std::to_string(was) +
                                     " bytes) did not fit in the batch's reply",
                                 "run this call alone to see its output")
                          .to_json();
    sizes[largest] = result.dump().size();
    total = total - was + sizes[largest];
    if (sizes[largest] >= was) break;  // nothing left to drop
  }
}

const std::vector<std::string_view> kEventTopics = {"tool",
                                                    "tool.started",
                                                    "tool.output",
                                                    "tool.finished",
                                                    "approval",
                                                    "approval.requested",
                                                    "approval.resolved",
                                                    "loop",
                                                    "loop.created",
                                                    "loop.updated",
                                                    "loop.iteration",
                                                    "loop.step",
                                                    "chat",
                                                    "chat.chunk",
                                                    "provider",
                                                    "provider.retry",
                                                    "provider.fallback",
                                                    "loop.artifact",
                                                    "loop.merged",
                                                    "loop.merge_conflict",
                                                    "loop.rerun",
                                                    "plan",
                                                    "plan.awaiting_approval",
                                                    "plan.approved",
                                                    "plan.rejected",
                                                    "plan.iterating",
                                                    "plan.completed",
                                                    "net",
                                                    "net.connect",
                                                    "hook",
                                                    "hook.failed",
                                                    "worktree",
                                                    "worktree.created"};

}  // namespace

Error as_invalid_params(Error error) {
  if (error.code == errc::io) return error;
  if (!error.details.is_object()) error.details = json::object();
  error.details["rpc_code"] = static_cast<int>(proto::ControlErrorCode::invalid_params);
  return error;
}

MethodRegistry::MethodRegistry(DaemonServices services) : services_(std::move(services)) {
  add_core_methods();
  add_loop_methods();
  add_memory_methods();
  add_repo_methods();
  add_policy_methods();
  // Start-up, not a request: a descriptor without its handler is a bug that
  // stops looprd before it listens.
  for (const proto::MethodInfo& method : proto::kControlMethodInfos) {
    if (!methods_.count(method.name)) {
      throw std::logic_error("no handler for control method " + std::string(method.name));
    }
  }
  if (methods_.size() != proto::kControlMethodInfos.size()) {
    throw std::logic_error("a control method is handled that has no descriptor");
  }
}

void MethodRegistry::add_core_methods() {
  namespace methods = proto::methods;
  add<methods::Initialize>([this](ClientSession& session, proto::InitializeParams params) {
    return initialize(session, std::move(params));
  });
  add<methods::Ping>([this](ClientSession&, proto::NoParams) -> Result<proto::PingResult> {
    const auto uptime = std::chrono::steady_clock::now() - services_.started;
    return proto::PingResult{std::chrono::duration_cast<std::chrono::milliseconds>(uptime).count()};
  });
  add<methods::ToolList>([this](ClientSession&, proto::NoParams) -> Result<proto::Document> {
    return json{{"tools", services_.router.tools_json()}};
  });
  add<methods::ToolCall>([this](ClientSession& session, proto::ToolCallParams params) {
    return tool_call(session, std::move(params));
  });
  add<methods::ToolBatch>([this](ClientSession& session, proto::ToolBatchParams params) {
    return tool_batch(session, std::move(params));
  });
  add<methods::ToolCancel>(
      [this](ClientSession&, proto::ToolCancelParams params) -> Result<proto::ToolCancelResult> {
        return proto::ToolCancelResult{services_.router.cancel(params.call_id)};
      });
  add<methods::ApprovalList>([this](ClientSession&, proto::NoParams) -> Result<proto::Document> {
    return json{{"approvals", services_.approvals.pending_json()}};
  });
  add<methods::ApprovalApprove>(
      [this](ClientSession&,
             proto::ApprovalDecisionParams params) -> Result<proto::ApprovalDecisionResult> {
        auto decided = services_.approvals.decide(params.id, true, "");
        if (!decided) return std::move(decided).error();
        return proto::ApprovalDecisionResult{params.id, true};
      });
  add<methods::ApprovalDeny>([this](ClientSession&, proto::ApprovalDecisionParams params)
                                 -> Result<proto::ApprovalDecisionResult> {
    auto decided =
        services_.approvals.decide(params.id, false, params.reason.value_or("denied by the user"));
    if (!decided) return std::move(decided).error();
    return proto::ApprovalDecisionResult{params.id, false};
  });
  add<methods::EventsSubscribe>([this](ClientSession& session, proto::SubscribeParams params) {
    return events_subscribe(session, std::move(params));
  });
  add<methods::MetricsGet>([this](ClientSession&, proto::NoParams) { return metrics_get(); });
  add<methods::DaemonShutdown>(
      [this](ClientSession&, proto::NoParams) -> Result<proto::ShutdownResult> {
        services_.request_shutdown();
        return proto::ShutdownResult{};
      });
}

std::vector<std::string> MethodRegistry::method_names() const {
  std::vector<std::string> names;
  for (const auto& [name, method] : methods_)
    names.push_back(name);
  return names;
}

asio::awaitable<proto::Response> MethodRegistry::dispatch(ClientSession& session,
                                                          proto::Request request) {
  const std::int64_t id = request.id;
  auto method = methods_.find(request.method);
  if (method == methods_.end()) {
    std::string names;
    for (const auto& name : method_names())
      names += (names.empty() ? "" : ", ") + name;
    co_return proto::Response::failure(
        id, proto::ControlError{static_cast<int>(proto::ControlErrorCode::method_not_found),
                                "unknown method '" + request.method + "'",
                                json{{"methods", method_names()}}});
  }
  if (method->second.flags.needs_initialize && !session.initialized) {
    co_return proto::Response::failure(
        id,
        proto::ControlError{static_cast<int>(proto::ControlErrorCode::invalid_request),
                            "send initialize {client, version} before " + request.method, nullptr});
  }
  if (!method->second.flags.allowed_while_shutting_down && services_.shutting_down &&
      services_.shutting_down()) {
    co_return proto::Response::failure(
        id, proto::control_error_from(make_error(
                "shutting_down", "looprd is shutting down and takes no new " + request.method,
                "start it again (looprctl daemon start) and repeat the request")));
  }
  std::optional<Error> failure;
  try {
    auto result = co_await method->second.call(session, request.params);
    if (result) co_return proto::Response::success(id, std::move(*result));
    failure = std::move(result).error();
  } catch (const std::exception& e) {
    spdlog::error("{} failed with an exception: {}", request.method, e.what());
    failure = make_error(errc::internal, std::string("internal error: ") + e.what(),
                         "report this as a loopr bug");
  }
  co_return proto::Response::failure(id, proto::control_error_from(*failure));
}

asio::awaitable<Result<proto::InitializeResult>> MethodRegistry::initialize(
    ClientSession& session, proto::InitializeParams params) {
  if (params.version != proto::kProtocolVersion) {
    Error error =
        rpc_error(proto::ControlErrorCode::version_mismatch,
                  "this looprd speaks control protocol " + std::to_string(proto::kProtocolVersion) +
                      ", the client " + std::to_string(params.version),
                  "use a looprctl of the same loopr version as the daemon");
    error.details["protocol"] = proto::kProtocolVersion;
    co_return error;
  }
  session.initialized = true;
  json lanes = json::array();
  for (RunnerLink* lane : services_.lanes)
    lanes.push_back(lane->lane());
  proto::InitializeResult result;
  result.daemon_version = kDaemonVersion;
  result.capabilities = {{"methods", method_names()}, {"lanes", lanes}};
  co_return result;
}

asio::awaitable<Result<proto::Document>> MethodRegistry::tool_call(ClientSession& session,
                                                                   proto::ToolCallParams params) {
  ToolCallRequest request;
  request.tool = std::move(params.tool);
  request.args = std::move(params.args);
  request.worktree = std::move(params.worktree);
  request.session = params.loop_id   ? "loop:" + *params.loop_id
                    : params.session ? "session:" + *params.session
                                     : session.name();
  request.timeout_ms = params.timeout_ms;
  bind_to_session(request, session);
  ToolCallOutcome outcome = co_await services_.router.call(std::move(request));
  co_return outcome.to_json();
}

asio::awaitable<Result<proto::Document>> MethodRegistry::tool_batch(ClientSession& session,
                                                                    proto::ToolBatchParams params) {
  const std::string scope = params.loop_id ? "loop:" + *params.loop_id : session.name();
  std::vector<ToolCallRequest> requests;
  for (proto::ToolBatchCall& call : params.calls) {
    ToolCallRequest request;
    request.tool = std::move(call.tool);
    request.args = std::move(call.args);
    request.worktree = params.worktree;
    request.session = scope;
    bind_to_session(request, session);
    requests.push_back(std::move(request));
  }
  auto outcomes = co_await services_.router.batch(std::move(requests));
  json results = json::array();
  for (const auto& outcome : outcomes)
    results.push_back(outcome.to_json());
  fit_batch_reply(results);
  co_return json{{"results", std::move(results)}};
}

asio::awaitable<Result<proto::SubscribeParams>> MethodRegistry::events_subscribe(
    ClientSession& session, proto::SubscribeParams params) {
  // A session that closed while this request was queued has already run its
  // on_close (which unsubscribes): subscribing now would leak.
  if (session.closed()) co_return make_error("cancelled", "the connection is closed");
  for (const std::string& topic : params.topics) {
    if (std::find(kEventTopics.begin(), kEventTopics.end(), topic) == kEventTopics.end()) {
      std::string known;
      for (auto name : kEventTopics)
        known += (known.empty() ? "" : ", ") + std::string(name);
      co_return invalid_params("unknown event topic '" + topic + "'", "topics: " + known);
    }
  }
  if (session.subscription) services_.events.unsubscribe(*session.subscription);
  // The sink holds the session weakly: the bus never keeps a closed client alive.
  std::weak_ptr<ClientSession> weak = session.shared_from_this();
  EventBus::Filter own_calls_only;
  if (params.own_calls) {
    own_calls_only = [&router = services_.router, client = session.id()](const json& data) {
      auto call = data.is_object() ? data.find("call_id") : data.end();
      return call != data.end() && call->is_string() &&
             router.client_of(call->get_ref<const std::string&>()) == client;
    };
  }
  session.subscription = services_.events.subscribe(
      params.topics,
      [weak](const std::string& line) {
        if (auto live = weak.lock()) live->send_line(line);
      },
      params.loop_id, std::move(own_calls_only));
  co_return std::move(params);
}

Result<proto::Document> MethodRegistry::metrics_get() const {
  json lanes = json::array();
  for (RunnerLink* lane : services_.lanes)
    lanes.push_back(lane->status_json());
  const auto uptime = std::chrono::steady_clock::now() - services_.started;
  return json{{"uptime_ms", std::chrono::duration_cast<std::chrono::milliseconds>(uptime).count()},
              {"rss_bytes", resident_set_bytes()},
              {"clients", services_.client_count()},
              {"active_calls", services_.router.active_calls()},
              {"loops", services_.loops.loop_count()},
              {"running_loops", services_.loops.running_count()},
              {"pending_approvals", services_.approvals.pending_count()},
              {"calls", services_.metrics.calls_json()},
              {"egress", services_.metrics.egress_json()},
              {"lanes", std::move(lanes)},
              {"runner_restarts", services_.metrics.total_runner_restarts()},
              {"cluster", services_.cluster != nullptr ? services_.cluster->status_json()
                                                       : json{{"configured", false}}}};
}

}  // namespace loopr::daemon
