#include "mcp/session.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <utility>

#include "common/json_text.hpp"
#include "common/utf8.hpp"
#include "proto/approval_reason.hpp"

namespace loopr::mcp {

using json = nlohmann::json;

namespace {

// RFC 5424 severities, as MCP's logging/setLevel names them.
constexpr std::array<std::string_view, 8> kLogLevels = {"debug", "info",     "notice", "warning",
                                                        "error", "critical", "alert",  "emergency"};

int log_level_index(std::string_view level) {
  for (std::size_t i = 0; i < kLogLevels.size(); ++i) {
    if (kLogLevels[i] == level) return static_cast<int>(i);
  }
  return -1;
}

// How long a call waits for the client's roots/list answer.
constexpr auto kClientAnswerWait = std::chrono::seconds(10);
// A progress message carries at most this much of a command's output.
constexpr std::size_t kMaxProgressMessageBytes = 4096;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The local path of a file:// URI (RFC 8089): file:///p or file://localhost/p.
Result<std::string> path_of_file_uri(const std::string& uri) {
  constexpr std::string_view scheme = "file://";
  if (uri.compare(0, scheme.size(), scheme) != 0) {
    return make_error(errc::invalid_arguments,
                      "the client's root '" + uri + "' is not a file:// URI",
                      "start looprctl mcp with --worktree DIR");
  }
  std::string rest = uri.substr(scheme.size());
  if (rest.compare(0, 9, "localhost") == 0) rest.erase(0, 9);
  if (rest.empty() || rest[0] != '/') {
    return make_error(errc::invalid_arguments,
                      "the client's root '" + uri + "' names another host or no path",
                      "start looprctl mcp with --worktree DIR");
  }
  std::string path;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size()) {
      const int high = hex_value(rest[i + 1]);
      const int low = hex_value(rest[i + 2]);
      if (high >= 0 && low >= 0) {
        path += static_cast<char>(high * 16 + low);
        i += 2;
        continue;
      }
    }
    if (rest[i] == '?' || rest[i] == '#') break;
    path += rest[i];
  }
  if (path.find('\0') != std::string::npos) {
    return make_error(errc::invalid_arguments, "the client's root '" + uri + "' holds a NUL byte");
  }
  return path;
}

Result<std::string> current_directory() {
  std::string buffer(PATH_MAX, '\0');
  if (::getcwd(buffer.data(), buffer.size()) == nullptr) {
    return make_error(errc::io,
                      std::string("cannot read the current directory: ") + std::strerror(errno),
                      "start looprctl mcp with --worktree DIR");
  }
  buffer.resize(std::strlen(buffer.c_str()));
  return buffer;
}

}  // namespace

bool is_supported_protocol_version(std::string_view version) {
  return std::find(std::begin(kProtocolVersions), std::end(kProtocolVersions), version) !=
         std::end(kProtocolVersions);
}

McpSession::McpSession(DaemonLink& link, SessionOptions options)
    : link_(link), options_(std::move(options)) {}

McpSession::~McpSession() {
  close();
}

void McpSession::set_notification_outbox(std::shared_ptr<Outbox> outbox) {
  std::lock_guard lock(mutex_);
  notifications_ = std::move(outbox);
}

bool McpSession::initialized() const {
  std::lock_guard lock(mutex_);
  return initialized_;
}

std::string McpSession::protocol_version() const {
  std::lock_guard lock(mutex_);
  return protocol_version_;
}

std::size_t McpSession::calls_in_flight() const {
  std::lock_guard lock(mutex_);
  return calls_by_id_.size();
}

void McpSession::handle(const json& value, const std::shared_ptr<Outbox>& outbox) {
  const Message message = classify(value);
  switch (message.kind) {
    case MessageKind::request:
      handle_request(message, outbox);
      return;
    case MessageKind::notification:
      handle_notification(message);
      outbox->finish();
      return;
    case MessageKind::response:
      handle_response(message);
      outbox->finish();
      return;
    case MessageKind::invalid:
      outbox->send(error_response(message.id, rpc_code::invalid_request, message.problem));
      outbox->finish();
      return;
  }
}

void McpSession::handle_request(const Message& message, const std::shared_ptr<Outbox>& outbox) {
  const json& id = message.id;
  const json params = message.params.is_object() ? message.params : json::object();
  json response;
  if (message.method == "tools/call") {
    start_call(message, outbox);
    return;  // answered by the call's thread
  }
  if (message.method == "initialize") {
    response = result_response(id, initialize(params));
  } else if (message.method == "ping") {
    response = result_response(id, json::object());
  } else if (message.method == "tools/list") {
    response = list_tools(id);
  } else if (message.method == "logging/setLevel") {
    const int level = log_level_index(text_member(params, "level"));
    if (level < 0) {
      response = error_response(id, rpc_code::invalid_params,
                                "logging/setLevel needs `level`: one of debug, info, notice, "
                                "warning, error, critical, alert, emergency");
    } else {
      std::lock_guard lock(mutex_);
      min_log_level_ = level;
      response = result_response(id, json::object());
    }
  } else {
    response = error_response(
        id, rpc_code::method_not_found,
        "loopr's MCP server has no method '" + message.method +
            "': it offers tools only (initialize, ping, tools/list, tools/call, logging/setLevel)");
  }
  outbox->send(response);
  outbox->finish();
}

json McpSession::initialize(const json& params) {
  const std::string asked = text_member(params, "protocolVersion");
  std::lock_guard lock(mutex_);
  // The client's version when we speak it, else our newest (the client then
  // decides whether it can go on).
  protocol_version_ =
      is_supported_protocol_version(asked) ? asked : std::string(kLatestProtocolVersion);
  client_capabilities_ = params.contains("capabilities") && params["capabilities"].is_object()
                             ? params["capabilities"]
                             : json::object();
  root_.reset();
  return {
      {"protocolVersion", protocol_version_},
      {"capabilities", {{"tools", {{"listChanged", false}}}, {"logging", json::object()}}},
      {"serverInfo", {{"name", "loopr"}, {"title", "loopr"}, {"version", options_.server_version}}},
      {"instructions",
       "loopr runs these tools inside its sandboxed lanes (no-net, net, heavy) in one "
       "worktree. Read a file before you edit or overwrite it. A call that needs a "
       "person's approval waits until `looprctl approve` (or the TUI) lets it run."}};
}

json McpSession::list_tools(const json& id) {
  {
    std::lock_guard lock(mutex_);
    tools_.reset();  // a tools/list always reads the catalog afresh
  }
  auto published = tools();
  if (!published) {
    return error_response(id, rpc_code::internal_error, published.error().message,
                          json{{"hint", published.error().hint}});
  }
  json list = json::array();
  for (const PublishedTool& tool : **published)
    list.push_back(tool.tool);
  return result_response(id, {{"tools", std::move(list)}});
}

Result<McpSession::ToolList> McpSession::tools() {
  {
    std::lock_guard lock(mutex_);
    if (tools_) return tools_;
  }
  auto listed = link_.request("tool.list", json::object());
  if (!listed) return std::move(listed).error();
  auto published = publish_tools(listed->value("tools", json()), options_.tools);
  if (!published) return std::move(published).error();
  auto shared = std::make_shared<const std::vector<PublishedTool>>(std::move(*published));
  std::lock_guard lock(mutex_);
  tools_ = shared;
  return shared;
}

void McpSession::handle_notification(const Message& message) {
  if (message.method == "notifications/initialized") {
    std::lock_guard lock(mutex_);
    initialized_ = true;
  } else if (message.method == "notifications/cancelled") {
    if (!message.params.is_object() || !message.params.contains("requestId")) return;
    std::shared_ptr<Call> call;
    {
      std::lock_guard lock(mutex_);
      auto it = calls_by_id_.find(id_key(message.params["requestId"]));
      if (it == calls_by_id_.end()) return;  // finished already, or never ours
      call = it->second;
    }
    cancel(*call);
  } else if (message.method == "notifications/roots/list_changed") {
    std::lock_guard lock(mutex_);
    root_.reset();
  }
  // Any other notification (progress, ...) needs nothing from us.
}

void McpSession::handle_response(const Message& message) {
  ResponseHandler handler;
  {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(id_key(message.id));
    if (it == pending_.end()) return;
    handler = std::move(it->second);
    pending_.erase(it);
  }
  handler(&message);
}

void McpSession::start_call(const Message& message, const std::shared_ptr<Outbox>& outbox) {
  auto call = std::make_shared<Call>();
  call->request_id = message.id;
  call->outbox = outbox;
  const json params = message.params.is_object() ? message.params : json::object();
  if (params.contains("_meta") && params["_meta"].is_object()) {
    const json& meta = params["_meta"];
    if (meta.contains("progressToken") &&
        (meta["progressToken"].is_string() || meta["progressToken"].is_number_integer())) {
      call->progress_token = meta["progressToken"];
    }
  }
  {
    std::lock_guard lock(mutex_);
    const std::string key = id_key(message.id);
    json refusal;
    if (closed_) {
      refusal = error_response(message.id, rpc_code::internal_error, "the MCP session is closing");
    } else if (calls_by_id_.count(key) != 0) {
      refusal = error_response(message.id, rpc_code::invalid_request,
                               "a call with this request id is still running");
    } else if (calls_by_id_.size() >= options_.max_calls_in_flight) {
      refusal =
          error_response(message.id, rpc_code::internal_error,
                         "loopr runs at most " + std::to_string(options_.max_calls_in_flight) +
                             " tool calls of one MCP session at once",
                         json{{"hint", "wait for a call to finish, then call again"}});
    }
    if (!refusal.is_null()) {
      outbox->send(refusal);
      outbox->finish();
      return;
    }
    calls_by_id_[key] = call;
  }
  auto task = [this, call, params] {
    json response = run_call(*call, call->request_id, params);
    // The call stops counting (in-flight cap, request id) before its
    // response goes out: the client may call again as soon as it reads it.
    // A cancellation from now on finds no call and changes nothing.
    {
      std::lock_guard session_lock(mutex_);
      calls_by_id_.erase(id_key(call->request_id));
    }
    bool cancelled;
    {
      std::lock_guard call_lock(call->mutex);
      cancelled = call->cancelled;
    }
    // A cancelled request gets no response (spec: "Cancellation").
    if (!cancelled && !response.is_null()) call->outbox->send(response);
    call->outbox->finish();
  };
  bool started = false;
  std::string why = "the MCP session is closing";
  std::string hint = "start a new session";
  try {
    started = call_threads_.run(std::move(task));
  } catch (const std::exception& error) {
    why = std::string("looprctl mcp cannot start a thread for the call: ") + error.what();
    hint = "wait for a call to finish, then call again";
  }
  if (!started) {
    {
      std::lock_guard lock(mutex_);
      calls_by_id_.erase(id_key(call->request_id));
    }
    outbox->send(error_response(message.id, rpc_code::internal_error, why, json{{"hint", hint}}));
    outbox->finish();
  }
}

json McpSession::run_call(Call& call, const json& id, const json& params) {
  if (!params.contains("name") || !params["name"].is_string()) {
    return error_response(id, rpc_code::invalid_params, "tools/call needs `name`, a tool's name");
  }
  const std::string name = params["name"].get<std::string>();
  json arguments = json::object();
  if (params.contains("arguments") && !params["arguments"].is_null()) {
    if (!params["arguments"].is_object()) {
      return error_response(id, rpc_code::invalid_params,
                            "tools/call `arguments` must be an object");
    }
    arguments = params["arguments"];
  }
  auto published = tools();
  if (!published) return tool_error_response(id, published.error());
  const std::vector<PublishedTool>& offered = **published;
  const bool known = std::any_of(offered.begin(), offered.end(),
                                 [&](const PublishedTool& tool) { return tool.name == name; });
  if (!known) {
    std::string names;
    for (const PublishedTool& tool : offered)
      names += (names.empty() ? "" : ", ") + tool.name;
    return error_response(id, rpc_code::invalid_params, "Unknown tool: " + name,
                          json{{"hint", "tools: " + names}});
  }
  auto worktree = worktree_for(call);
  if (!worktree) return tool_error_response(id, worktree.error());
  {
    std::lock_guard lock(call.mutex);
    if (call.cancelled) return nullptr;
  }
  json request = {{"tool", name},
                  {"args", std::move(arguments)},
                  {"worktree", *worktree},
                  {"session", options_.scope}};
  auto outcome = link_.call_tool(
      request, [&](const DaemonEvent& event) { on_daemon_event(call, event); }, call.control);
  if (!outcome) {
    std::lock_guard lock(call.mutex);
    if (call.cancelled) return nullptr;
    return tool_error_response(id, outcome.error());
  }
  return result_response(id, tool_result(*outcome));
}

json McpSession::tool_error_response(const json& id, const Error& error) {
  return result_response(id, error_result("loopr: " + error.message, error.hint));
}

void McpSession::on_daemon_event(Call& call, const DaemonEvent& event) {
  const std::string call_id = text_member(event.data, "call_id");
  bool cancel_now = false;
  {
    std::lock_guard lock(call.mutex);
    if (call.call_id.empty() && !call_id.empty()) {
      call.call_id = call_id;
      cancel_now = call.cancelled;
    }
    if (!call.call_id.empty() && call_id != call.call_id) return;  // not this call's
  }
  if (cancel_now) {
    (void)link_.request("tool.cancel", {{"call_id", call_id}});
    return;
  }
  if (event.name == "tool.output" && call.progress_token) {
    const std::string data = text_member(event.data, "data");
    std::uint64_t progress;
    {
      std::lock_guard lock(call.mutex);
      if (call.cancelled) return;  // the client no longer follows this call
      progress = ++call.progress;
    }
    call.outbox->send(notification(
        "notifications/progress",
        {{"progressToken", *call.progress_token},
         {"progress", progress},
         {"message", data.substr(0, utf8_safe_prefix(data, kMaxProgressMessageBytes))}}));
  } else if (event.name == "approval.requested") {
    const std::string approval = text_member(event.data, "id");
    const std::string text = "loopr: " + text_member(event.data, "tool") +
                             " waits for a person's approval (" + approval +
                             "): run `looprctl approve " + approval + "` or `looprctl deny " +
                             approval + "`, or use looprctl tui";
    log("warning", text, call.outbox);
    if (call.progress_token) {
      std::uint64_t progress;
      {
        std::lock_guard lock(call.mutex);
        progress = ++call.progress;
      }
      call.outbox->send(notification(
          "notifications/progress",
          {{"progressToken", *call.progress_token}, {"progress", progress}, {"message", text}}));
    }
    bool elicit;
    {
      std::lock_guard lock(mutex_);
      elicit = options_.elicit_approvals && client_capabilities_.contains("elicitation") &&
               call.outbox->carries_requests();
    }
    if (elicit) ask_client_to_approve(call, event.data);
  }
}

void McpSession::ask_client_to_approve(Call& call, const json& approval) {
  const std::string id = text_member(approval, "id");
  std::string args = approval.contains("args")
                         ? approval["args"].dump(-1, ' ', false, json::error_handler_t::replace)
                         : "{}";
  if (args.size() > 2048) args = args.substr(0, utf8_safe_prefix(args, 2048)) + "...";
  json params = {
      {"message", "loopr: allow " + text_member(approval, "tool") + " (" +
                      text_member(approval, "lane") + " lane, " + text_member(approval, "tier") +
                      ") in " + text_member(approval, "worktree") + " with " + args + "? It " +
                      proto::approval_reason(approval) + "."},
      {"requestedSchema",
       {{"type", "object"},
        {"properties",
         {{"approve",
           {{"type", "boolean"},
            {"title", "Approve"},
            {"description", "Let this call run (false: refuse it)"}}}}},
        {"required", json::array({"approve"})}}}};
  if (protocol_version() >= "2025-11-25") params["mode"] = "form";
  ask_client(call.outbox, "elicitation/create", std::move(params),
             [this, id, outbox = call.outbox](const Message* response) {
               if (response == nullptr || !response->result.is_object()) return;
               const std::string action = text_member(response->result, "action");
               // The client's answer is untrusted: only a boolean true approves.
               const auto content = response->result.find("content");
               const bool approve = content != response->result.end() && content->is_object() &&
                                    content->contains("approve") && (*content)["approve"] == true;
               Result<json> decided = json();
               if (action == "accept" && approve) {
                 decided = link_.request("approval.approve", {{"id", id}});
               } else if (action == "accept" || action == "decline") {
                 decided = link_.request("approval.deny",
                                         {{"id", id}, {"reason", "refused in the MCP client"}});
               }  // cancel: the person may still answer with looprctl
               if (!decided) {
                 log("info",
                     "loopr: the client's answer to " + id +
                         " was not applied: " + decided.error().message,
                     outbox);
               }
             });
}

void McpSession::cancel(Call& call) {
  std::string call_id;
  {
    std::lock_guard lock(call.mutex);
    if (call.cancelled) return;
    call.cancelled = true;
    call_id = call.call_id;
  }
  if (!call_id.empty()) {
    auto cancelled = link_.request("tool.cancel", {{"call_id", call_id}});
    if (cancelled) return;
  }
  // looprd has not named the call yet (or did not answer): closing the
  // call's connection makes looprd cancel it.
  call.control.abort();
}

Result<std::string> McpSession::worktree_for(Call& call) {
  if (options_.worktree) return *options_.worktree;
  bool roots;
  {
    std::lock_guard lock(mutex_);
    roots = client_capabilities_.contains("roots");
  }
  if (roots) return client_root(call);
  return current_directory();
}

Result<std::string> McpSession::client_root(Call& call) {
  {
    std::lock_guard lock(mutex_);
    if (root_) return *root_;
  }
  if (!call.outbox->carries_requests()) {
    return make_error(errc::invalid_arguments,
                      "loopr needs the client's roots to pick the worktree, but this tools/call "
                      "cannot carry a roots/list request (it does not accept text/event-stream)",
                      "send `Accept: application/json, text/event-stream`, or start looprctl mcp "
                      "with --worktree DIR");
  }
  auto answer = std::make_shared<std::promise<json>>();
  auto got = answer->get_future();
  const std::string id =
      ask_client(call.outbox, "roots/list", json::object(), [answer](const Message* response) {
        if (response == nullptr) {
          answer->set_value(nullptr);
        } else if (!response->error.is_null()) {
          answer->set_value(json{{"error", response->error}});
        } else {
          answer->set_value(json{{"result", response->result}});
        }
      });
  if (got.wait_for(kClientAnswerWait) != std::future_status::ready) {
    std::lock_guard lock(mutex_);
    pending_.erase(id_key(json(id)));
    return make_error(errc::timeout, "the MCP client did not answer roots/list within 10 s",
                      "start looprctl mcp with --worktree DIR");
  }
  const json reply = got.get();
  if (reply.is_null()) return make_error("cancelled", "the MCP session closed");
  if (reply.contains("error")) {
    return make_error(
        errc::invalid_arguments,
        "the MCP client refused roots/list: " + text_member(reply["error"], "message"),
        "start looprctl mcp with --worktree DIR");
  }
  const json& result = reply["result"];
  if (!result.is_object() || !result.contains("roots") || !result["roots"].is_array() ||
      result["roots"].empty() || !result["roots"][0].is_object()) {
    return make_error(errc::invalid_arguments, "the MCP client gave no roots",
                      "open a folder in the client, or start looprctl mcp with --worktree DIR");
  }
  auto path = path_of_file_uri(text_member(result["roots"][0], "uri"));
  if (!path) return path;
  std::lock_guard lock(mutex_);
  root_ = *path;
  return *path;
}

std::string McpSession::ask_client(const std::shared_ptr<Outbox>& outbox, const std::string& method,
                                   json params, ResponseHandler on_response) {
  std::string id;
  {
    std::lock_guard lock(mutex_);
    id = "loopr-" + std::to_string(next_request_++);
    if (closed_) {
      on_response(nullptr);
      return id;
    }
    pending_[id_key(json(id))] = std::move(on_response);
  }
  outbox->send(request(json(id), method, std::move(params)));
  return id;
}

void McpSession::log(std::string_view level, const std::string& text,
                     const std::shared_ptr<Outbox>& outbox) {
  {
    std::lock_guard lock(mutex_);
    if (log_level_index(level) < min_log_level_) return;
  }
  std::shared_ptr<Outbox> target = outbox;
  if (!target) {
    std::lock_guard lock(mutex_);
    target = notifications_;
  }
  if (!target) return;
  target->send(notification("notifications/message",
                            {{"level", level}, {"logger", "loopr"}, {"data", text}}));
}

void McpSession::close() {
  std::vector<std::shared_ptr<Call>> running;
  std::map<std::string, ResponseHandler> abandoned;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    for (auto& [key, call] : calls_by_id_)
      running.push_back(call);
    abandoned.swap(pending_);
  }
  for (auto& [key, handler] : abandoned)
    handler(nullptr);
  for (auto& call : running)
    cancel(*call);
  call_threads_.stop();
}

}  // namespace loopr::mcp
