#include "daemon/tool_router.hpp"

#include <limits.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/steady_timer.hpp>

#include "common/json_text.hpp"
#include "common/path_beneath.hpp"
#include "common/worktree_path.hpp"
#include "daemon/job_traits.hpp"
#include "daemon/web_search_args.hpp"
#include "memory/repository.hpp"
#include "policy/always_rules.hpp"
#include "policy/command_rules.hpp"
#include "proto/json_bounded.hpp"
#include "repos/repo_file.hpp"
#include "repos/repo_settings.hpp"

namespace loopr::daemon {
namespace {

// 128 random bits as hex: what a job presents to the egress proxy. Not a
// secret that grants anything (the policy is the lane's either way), only
// unguessable so that one call cannot pass its connections off as another's.
// What one call may reach beyond its lane's egress policy: web_fetch's and
// web_search's own allowed_networks apply to their calls, not to every job
// of the lane. load() has checked every range.
std::vector<NetworkRange> networks_allowed_to(const config::ToolSpec& tool,
                                              const config::Settings& settings) {
  const std::vector<std::string>* ranges = nullptr;
  if (tool.web == config::WebFacility::fetch) ranges = &settings.web_fetch.allowed_networks;
  if (tool.web == config::WebFacility::search) ranges = &settings.web_search.allowed_networks;
  std::vector<NetworkRange> out;
  if (ranges == nullptr) return out;
  for (const std::string& text : *ranges) {
    if (auto range = NetworkRange::parse(text)) out.push_back(*range);
  }
  return out;
}

std::string egress_token() {
  std::array<unsigned char, 16> bytes{};
  if (::getrandom(bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char byte : bytes) {
    token += kHex[byte >> 4];
    token += kHex[byte & 15];
  }
  return token;
}

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// Writes need the file's last read (read-before-edit).
bool tracks_reads(const config::ToolSpec& tool) {
  return tool.file_access == config::FileAccess::write;
}

// The calls that change a file run one at a time per file (PathLocks).
bool changes_a_file(const config::ToolSpec& tool) {
  return tool.file_access == config::FileAccess::write ||
         tool.file_access == config::FileAccess::remove;
}

bool runs_a_command(const config::ToolSpec& tool) {
  return tool.command != config::ToolCommand::none;
}

// The name metrics count a refused call under: a made-up tool name must not
// grow the metrics table.
constexpr const char* kUnknownToolMetric = "<unknown>";

// The command tools whose command is the repository's [commands] entry
// (repos/: the user's config, its trusted .loopr/loopr.toml), named by their
// `command` trait; the model never supplies it (DESIGN.md §5).
bool runs_configured_command(const config::ToolSpec& tool) {
  return tool.command == config::ToolCommand::build || tool.command == config::ToolCommand::test ||
         tool.command == config::ToolCommand::validate;
}

const std::string& configured_command(config::ToolCommand command,
                                      const config::CommandSettings& commands) {
  if (command == config::ToolCommand::build) return commands.build;
  if (command == config::ToolCommand::test) return commands.test;
  return commands.validate;
}

Result<std::string> real_worktree(const std::string& worktree) {
  if (worktree.empty() || worktree.front() != '/') {
    return make_error(errc::invalid_arguments,
                      "worktree must be an absolute path, got '" + worktree + "'",
                      "pass the repository folder the tool should work in, e.g. /home/me/src/app");
  }
  char resolved[PATH_MAX];
  if (::realpath(worktree.c_str(), resolved) == nullptr) {
    return make_error(errc::not_found, "worktree '" + worktree + "' does not exist",
                      "pass an existing folder as the worktree");
  }
  struct stat st {};
  if (::stat(resolved, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return make_error(errc::not_directory, "worktree '" + worktree + "' is not a folder",
                      "pass the repository folder, not a file in it");
  }
  return std::string(resolved);
}

std::string canonical_or_same(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

// The tools a client may call: every enabled one but the loop engine's own.
std::string available_tools(const config::Catalog& catalog,
                            const std::map<std::string, HostedTool>& hosted) {
  std::string names;
  for (const config::ToolSpec* tool : catalog.enabled_tools()) {
    if (tool->lane == config::lanes::daemon && hosted.count(tool->name) == 0) continue;
    if (!names.empty()) names += ", ";
    names += tool->name;
  }
  return names;
}

ToolCallOutcome refused(std::string status, Error error) {
  ToolCallOutcome outcome;
  outcome.status = std::move(status);
  outcome.ok = false;
  outcome.error = std::move(error);
  return outcome;
}

// The tool's stdout, when it is one JSON object. Depth-bounded: the bytes
// come from a sandboxed job and are not trusted.
std::optional<json> parse_tool_output(const std::string& bytes) {
  auto parsed = proto::parse_json_bounded(bytes);
  if (parsed && parsed->is_object()) return std::move(*parsed);
  return std::nullopt;
}

std::string string_field(const json& object, const char* key, std::string fallback) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::move(fallback);
}

// {"error": {code, message, hint?, details?}} from a tool; any field of the
// wrong type is replaced, never trusted (the caller checked "error" is an object).
Error error_from_tool_json(const json& object) {
  const json& e = object.at("error");
  Error error;
  error.code = string_field(e, "code", errc::internal);
  error.message = string_field(e, "message", "the tool failed without saying why");
  error.hint = string_field(e, "hint", "");
  if (auto details = e.find("details"); details != e.end()) error.details = *details;
  return error;
}

// An absolute path under the worktree as the caller named it (perhaps through
// a symlink) becomes relative, so it names the same file as the worktree's
// realpath does: "/home/me/link/a.c" with worktree "/home/me/link".
void relativize_path(json& args, const std::string& given_worktree) {
  auto it = args.find("path");
  if (it == args.end() || !it->is_string()) return;
  const std::string& path = it->get_ref<const std::string&>();
  if (path.empty() || path.front() != '/' || given_worktree.empty()) return;
  auto relative = worktree_relative_path(given_worktree, path);
  if (relative) *it = *relative;
}

// The job's result says which loopr limit ended it (the runner's memory
// cgroup or timeout): in a command's JSON result as `limit`, and in the
// error's details (and message, when there is no JSON result). Other tools'
// results keep their schema.
void add_limit(ToolCallOutcome& outcome, const config::ToolSpec& tool,
               const proto::LimitHit& limit) {
  const json hit = {{"name", limit.name},
                    {"key", limit.key},
                    {"value", limit.value},
                    {"unit", limit.unit},
                    {"message", limit.message}};
  const bool in_output = outcome.output.is_object() && runs_a_command(tool);
  if (in_output) outcome.output["limit"] = hit;
  if (outcome.error) {
    if (!in_output) outcome.error->message += "; " + limit.message;
    if (!outcome.error->details.is_object()) outcome.error->details = json::object();
    outcome.error->details["limit"] = hit;
  }
}

// What the egress proxy refused during the call, as `egress_refused` in a
// command's result (or the error's details): npm's "403 Forbidden" alone
// does not say which rule or which key would allow the host.
void add_egress_refusals(ToolCallOutcome& outcome, const config::ToolSpec& tool,
                         const std::vector<egress::NetConnection>& refused) {
  if (refused.empty()) return;
  json list = json::array();
  for (const egress::NetConnection& connection : refused) {
    json entry = {{"host", connection.host},
                  {"port", connection.port},
                  {"rule", connection.rule},
                  {"message", connection.message}};
    if (!connection.allow_key.empty()) entry["allow_key"] = connection.allow_key;
    list.push_back(std::move(entry));
  }
  if (outcome.output.is_object() && runs_a_command(tool)) {
    outcome.output["egress_refused"] = std::move(list);
  } else if (outcome.error) {
    if (!outcome.error->details.is_object()) outcome.error->details = json::object();
    outcome.error->details["egress_refused"] = std::move(list);
  }
}

}  // namespace

json ToolCallOutcome::to_json() const {
  json out = {{"call_id", call_id},
              {"tool", tool},
              {"lane", lane},
              {"status", status},
              {"ok", ok},
              {"output", output},
              {"duration_ms", duration_ms},
              {"truncated", truncated}};
  out["exit_code"] = exit_code ? json(*exit_code) : json(nullptr);
  if (error) out["error"] = error->to_json();
  if (!hook_notes.empty()) out["hook_notes"] = hook_notes;
  out["worker"] = worker;
  return out;
}

std::shared_ptr<const CompiledCatalog> CompiledCatalog::build(config::Catalog catalog) {
  auto compiled = std::make_shared<CompiledCatalog>();
  for (const config::ToolSpec& tool : catalog.tools()) {
    auto schema = JsonSchema::compile(tool.input_schema);
    if (!schema) {
      throw ConfigError("tools." + tool.name + ".input_schema: " + schema.error().message);
    }
    compiled->schemas.emplace(tool.name, std::move(*schema));
  }
  compiled->catalog = std::move(catalog);
  return compiled;
}

ToolCallOutcome outcome_from_job(const proto::JobResult& result, const config::ToolSpec& tool) {
  ToolCallOutcome outcome;
  outcome.exit_code = result.exit_code;
  outcome.duration_ms = result.duration_ms;
  outcome.truncated = result.truncated;
  auto parsed = parse_tool_output(result.output);
  switch (result.status) {
    case proto::JobStatus::success:
      if (parsed) {
        outcome.status = "success";
        outcome.ok = true;
        outcome.output = std::move(*parsed);
      } else {
        outcome.status = "failed";
        outcome.output = result.output;
        outcome.error = make_error(
            result.truncated ? errc::too_large : errc::internal,
            result.truncated ? tool.name + "'s result was over its output cap of " +
                                   std::to_string(tool.max_output_bytes) + " bytes and was cut"
                             : tool.name + " printed something that is not a JSON result",
            result.truncated ? "ask for less: a smaller limit, a narrower pattern or path"
                             : "report this as a loopr bug");
      }
      break;
    case proto::JobStatus::failed:
      outcome.status = "failed";
      if (parsed && parsed->contains("error") && (*parsed)["error"].is_object()) {
        outcome.error = error_from_tool_json(*parsed);
      } else {
        outcome.output = result.output;
        std::string detail = result.stderr_bytes.substr(0, 2000);
        outcome.error = make_error(errc::internal,
                                   tool.name + " failed without a result" +
                                       (detail.empty() ? std::string() : ": " + detail),
                                   "report this as a loopr bug");
      }
      break;
    case proto::JobStatus::timeout:
      outcome.status = "timeout";
      if (parsed) outcome.output = std::move(*parsed);
      outcome.error = make_error(
          errc::timeout,
          result.error.value_or(tool.name + " did not finish in time and was stopped"),
          runs_a_command(tool)
              ? "make the work smaller, or run the command in the background with its output "
                "to a file and poll that file"
              : "make the work smaller: a narrower path or pattern");
      break;
    case proto::JobStatus::cancelled:
      outcome.status = "cancelled";
      outcome.error = make_error("cancelled", result.error.value_or("the call was cancelled"));
      break;
    case proto::JobStatus::error:
      // The runner's own report: it could not build the job's sandbox, or
      // loopr-tool died. (Failures of the link itself come as link_error.)
      outcome.status = "error";
      outcome.error = make_error(errc::sandbox_setup,
                                 result.error.value_or("the runner could not run the tool"),
                                 "not a problem of the call: if the message names a loopr.toml "
                                 "setting, change it and restart looprd; otherwise the machine "
                                 "or loopr is at fault, and `looprctl daemon status` and "
                                 "looprd's log say more");
      break;
  }
  if (result.limit) add_limit(outcome, tool, *result.limit);
  return outcome;
}

ToolRouter::ToolRouter(asio::io_context& io, const config::Settings& settings,
                       std::shared_ptr<const CompiledCatalog> catalog, Lanes lanes,
                       ApprovalGate& approvals, EventBus& events, Metrics& metrics, Store& store,
                       ReadTracker& reads)
    : io_(io),
      settings_(settings),
      catalog_(std::move(catalog)),
      lanes_(std::move(lanes)),
      approvals_(approvals),
      events_(events),
      metrics_(metrics),
      store_(store),
      reads_(reads),
      path_locks_(io.get_executor()) {
  for (const std::string& root : settings_.sandbox.worktree_roots) {
    worktree_roots_.push_back(canonical_or_same(root));
  }
}

json ToolRouter::tools_json() const {
  json tools = json::array();
  for (const config::ToolSpec& tool : catalog_->catalog.tools()) {
    tools.push_back(
        {{"name", tool.name},
         {"description", tool.description},
         {"lane", tool.lane},
         {"tier", config::to_string(tool.tier)},
         {"timeout_ms", tool.timeout_ms},
         {"max_output_bytes", tool.max_output_bytes},
         {"enabled", tool.enabled},
         // False for the loop engine's own tools (complete_task,
         // create_*): only a loop answers them.
         {"callable", tool.lane != config::lanes::daemon || hosted_.count(tool.name) != 0},
         {"traits",
          {{"command", config::to_string(tool.command)},
           {"file_access", config::to_string(tool.file_access)},
           {"web", config::to_string(tool.web)},
           {"result_view", config::to_string(tool.result_view)},
           {"warm_worker", tool.warm_worker},
           {"consults_model", tool.consults_model},
           {"memory", config::to_string(tool.memory)}}},
         {"input_schema", tool.input_schema}});
    // Only where the catalog describes the tool's output (MCP's outputSchema).
    if (!tool.output_schema.is_null()) tools.back()["output_schema"] = tool.output_schema;
  }
  return tools;
}

asio::awaitable<ToolCallOutcome> ToolRouter::call(ToolCallRequest request) {
  std::string call_id = "c-" + std::to_string(next_call_++);
  co_return co_await run_call(std::move(request), std::move(call_id));
}

asio::awaitable<ToolCallOutcome> ToolRouter::run_call(ToolCallRequest request,
                                                      std::string call_id) {
  const auto started = Clock::now();
  const std::int64_t started_unix = unix_ms();
  // The catalog may be swapped by a reload while this call waits: keep ours.
  const std::shared_ptr<const CompiledCatalog> catalog = catalog_;
  ToolCallOutcome outcome;

  // 1. catalog
  const config::ToolSpec* tool = catalog->catalog.find(request.tool);
  const bool hosted = tool != nullptr && tool->lane == config::lanes::daemon;
  if (tool == nullptr || !tool->enabled || (hosted && hosted_.count(tool->name) == 0)) {
    std::string why = tool == nullptr  ? "unknown tool '" + request.tool + "'"
                      : !tool->enabled ? "tool '" + request.tool + "' is disabled in catalog.toml"
                                       : "tool '" + request.tool + "' only runs inside a loop";
    outcome = refused("invalid",
                      make_error(errc::invalid_arguments, why,
                                 "available tools: " + available_tools(catalog->catalog, hosted_)));
    outcome.call_id = call_id;
    outcome.tool = request.tool;
    finish(outcome, request, started, started_unix, kUnknownToolMetric);
    co_return outcome;
  }
  outcome.call_id = call_id;
  outcome.tool = tool->name;
  outcome.lane = tool->lane;
  auto fail = [&](std::string status, Error error) {
    ToolCallOutcome failed = refused(std::move(status), std::move(error));
    failed.call_id = call_id;
    failed.tool = tool->name;
    failed.lane = tool->lane;
    finish(failed, request, started, started_unix, failed.tool);
    return failed;
  };

  // 2. schema
  if (auto it = catalog->schemas.find(tool->name); it != catalog->schemas.end()) {
    if (auto valid = it->second.validate(request.args); !valid) {
      Error error = valid.error();
      error.message = tool->name + ": " + error.message;
      co_return fail("invalid", std::move(error));
    }
  }
  auto worktree = real_worktree(request.worktree);
  if (!worktree) co_return fail("invalid", worktree.error());
  if (std::none_of(worktree_roots_.begin(), worktree_roots_.end(),
                   [&](const std::string& root) { return same_or_beneath(*worktree, root); })) {
    std::string roots;
    for (const std::string& root : worktree_roots_)
      roots += (roots.empty() ? "" : ", ") + root;
    co_return fail(
        "invalid",
        make_error(errc::path_outside_worktree,
                   "worktree " + *worktree + " is not beneath a configured worktree root" +
                       (roots.empty() ? " (none is configured)" : " (" + roots + ")"),
                   "work in a repository under one of them, or ask the user to add its "
                   "folder to [sandbox] worktree_roots in loopr.toml"));
  }

  // 3. policy: read-before-edit, configured commands, approval
  json args = request.args;
  relativize_path(args, request.worktree);
  // Held until the tracker knows the file's new hash (PathLocks).
  PathLocks::Guard file_lock;
  if (changes_a_file(*tool) && args.contains("path") && args["path"].is_string()) {
    auto relative = worktree_relative_path(*worktree, args["path"].get<std::string>());
    if (!relative) co_return fail("failed", relative.error());
    file_lock = co_await path_locks_.acquire(*worktree + '\0' + *relative);
  }
  if (tracks_reads(*tool) && args.contains("path") && args["path"].is_string()) {
    auto relative = worktree_relative_path(*worktree, args["path"].get<std::string>());
    if (!relative) co_return fail("failed", relative.error());
    if (auto hash = reads_.hash_of(request.session, *worktree, *relative)) {
      args["expected_hash"] = *hash;
    } else {
      args["create_only"] = true;
    }
  }
  // A loop's calls carry the repository loopr made the loop for; a client's
  // own call is about the repository its worktree is in (a subfolder or a
  // linked worktree names its repository's top).
  // Found only when a command needs it (never for the file tools).
  std::optional<std::string> found_repository;
  const auto repository = [&]() -> const std::string& {
    if (!found_repository) {
      found_repository =
          memory::repository_of(request.repo.empty() ? *worktree : canonical_or_same(request.repo));
    }
    return *found_repository;
  };
  const auto repository_settings = [&] { return repos::resolve(settings_, store_, repository()); };
  if (runs_configured_command(*tool)) {
    const std::string command_key(config::to_string(tool->command));
    std::string command;
    if (request.command) {
      command = *request.command;
    } else {
      auto effective = repository_settings();
      if (!effective) co_return fail("error", effective.error());
      if (auto refused = effective->refusal_for("commands." + command_key)) {
        co_return fail("denied", std::move(*refused));
      }
      command = configured_command(tool->command, effective->commands);
    }
    if (command.empty()) {
      co_return fail(
          "failed",
          make_error(errc::invalid_arguments, "no " + command_key + " command is configured",
                     "set [commands] " + command_key +
                         " in loopr.toml (or for this repository: its [[repositories]] entry, or "
                         "its trusted .loopr/loopr.toml), or use run_command with the command"));
    }
    args["command"] = std::move(command);
  }
  if (tool->web == config::WebFacility::fetch) {
    // The user's allowance from loopr.toml, never the model's: it replaces
    // whatever the call carried (the schema refuses the key anyway).
    args["allowed_networks"] = settings_.web_fetch.allowed_networks;
  }
  auto policy = settings_.approval_for(*tool);
  if (policy == config::ApprovalPolicy::deny) {
    co_return fail("denied", make_error(errc::sandbox_denied,
                                        "calls of " + tool->name +
                                            " are denied by the approval policy in loopr.toml",
                                        "do without this tool, or ask the user to allow it"));
  }
  // Approval rules (policy/command_rules.hpp) judge a command the model
  // wrote before the tool's policy does: deny refuses, ask waits even under
  // auto, allow runs even under ask.
  // Only where a rule may exist: the user's, or the repository's file
  // (read, trust-checked and hashed only then, not on every command call).
  policy::RuleVerdict verdict;
  const bool runs_a_written_command = tool->command == config::ToolCommand::from_arguments &&
                                      args.contains("command") && args["command"].is_string();
  if (runs_a_written_command) {
    auto rules = command_rules(repository(), tool->name);
    if (!rules) {
      // The status first: the error is moved into fail().
      std::string status = rules.error().code == repos::kRefusedCode ? "denied" : "error";
      co_return fail(std::move(status), std::move(rules).error());
    }
    verdict = policy::evaluate(args["command"].get<std::string>(), *rules);
    if (verdict.decision == policy::Decision::deny) {
      Error error = make_error(errc::sandbox_denied, verdict.explanation(),
                               "do not run this command; do without it, or ask the user");
      error.details = {{"rule", verdict.rule->to_json()}};
      co_return fail("denied", std::move(error));
    }
    if (verdict.decision == policy::Decision::ask) policy = config::ApprovalPolicy::ask;
    if (verdict.decision == policy::Decision::allow) policy = config::ApprovalPolicy::automatic;
  }
  const json decided_by = verdict.rule ? verdict.rule->to_json() : json(nullptr);
  auto lane = lanes_.find(tool->lane);
  if (!hosted && lane == lanes_.end()) {
    co_return fail("error", make_error(errc::internal, "lane " + tool->lane + " is not running"));
  }
  // The user's tool.before hooks (hooks/hook_events.hpp): exit 2 refuses the
  // call with the hook's own words; what they print joins the result.
  std::vector<std::string> before_notes;
  json hook_call = nullptr;
  if (hooks_ != nullptr && (hooks_->has("tool.before") || hooks_->has("tool.after"))) {
    hook_call = hook_data(call_id, *tool, request, args, *worktree);
  }
  if (hooks_ != nullptr && hooks_->has("tool.before")) {
    std::string event = "tool.before", name = tool->name, folder = *worktree;
    json data = hook_call;
    hooks::HookRunner::ToolVerdict said = co_await hooks_->on_tool(
        std::move(event), std::move(name), std::move(data), std::move(folder));
    before_notes = std::move(said.notes);
    if (said.refusal) {
      Error error = make_error("refused_by_hook", *said.refusal,
                               "one of the user's hooks refused this call; do not make it again "
                               "unchanged: do what the message asks, or do without it");
      error.details = {{"hook", said.refused_by}};
      ToolCallOutcome failed = refused("denied", std::move(error));
      failed.call_id = call_id;
      failed.tool = tool->name;
      failed.lane = tool->lane;
      failed.hook_notes = std::move(before_notes);
      finish(failed, request, started, started_unix, failed.tool);
      co_return failed;
    }
  }
  active_[call_id] = ActiveCall{tool->lane,
                                request.client_id,
                                request.loop_id,
                                hosted ? std::make_shared<llm::CancelToken>() : nullptr,
                                request.parent_call_id,
                                tool->name};
  if (policy == config::ApprovalPolicy::ask) {
    // A named local, not a temporary in the co_await expression: g++ 12
    // destroys such temporaries twice (GCC bug 100611).
    ApprovalRequest approval{
        call_id,
        tool->name,
        tool->lane,
        std::string(config::to_string(tool->tier)),
        args,
        *worktree,
        request.loop_id,
        decided_by,
        verdict.decision == policy::Decision::ask ? verdict.uncertain : std::string(),
        runs_a_written_command ? std::optional<std::string>(args["command"].get<std::string>())
                               : std::nullopt,
        runs_a_written_command ? repository() : std::string()};
    ApprovalDecision decision = co_await approvals_.request(
        std::move(approval), std::chrono::seconds(settings_.approval.timeout_s));
    if (decision.withdrawn) {
      active_.erase(call_id);
      co_return fail("cancelled", make_error("cancelled", decision.reason,
                                             "nothing ran; make the call again if it is "
                                             "still needed"));
    }
    if (!decision.approved) {
      active_.erase(call_id);
      co_return fail("denied",
                     make_error(errc::sandbox_denied,
                                "the user did not approve this call of " + tool->name +
                                    (decision.reason.empty() ? "" : ": " + decision.reason),
                                "do not retry the same call; explain what you need it for, or "
                                "find another way"));
    }
  }

  if (request.caller_gone && request.caller_gone()) {
    active_.erase(call_id);
    co_return fail("cancelled", make_error("cancelled",
                                           "the client that made this call went away; it was "
                                           "not run"));
  }

  // 4-5. dispatch; the runner enforces timeout, cancel and the output cap.
  const auto timeout = static_cast<std::uint64_t>(tool->timeout_ms);
  const std::uint64_t job_timeout =
      request.timeout_ms ? std::min(*request.timeout_ms, timeout) : timeout;
  if (hosted) {
    ToolCallOutcome done =
        co_await run_hosted(*tool, request, call_id, std::move(args), *worktree, job_timeout);
    co_await after_hooks(done, std::move(hook_call), std::move(before_notes));
    finish(done, request, started, started_unix, done.tool);
    co_return done;
  }
  if (tool->web == config::WebFacility::search) {
    // The provider's key joins the arguments only here, after the approval
    // request, the store's digest (of request.args) and every event: it
    // reaches the job and nothing else (SECURITY.md class 26).
    if (auto added =
            add_web_search_provider(args, settings_.web_search, config::process_env(), job_timeout);
        !added) {
      active_.erase(call_id);
      co_return fail("failed", std::move(added).error());
    }
  }
  proto::Job job;
  job.job_id = call_id;
  job.tool = tool->name;
  job.args = std::move(args);
  job.worktree = *worktree;
  job.cwd = *worktree;
  job.timeout_ms = job_timeout;
  job.max_output_bytes = static_cast<std::uint64_t>(tool->max_output_bytes);
  job.traits = job_traits(*tool);
  json started_event = {
      {"call_id", call_id}, {"tool", tool->name}, {"lane", tool->lane}, {"worktree", *worktree}};
  if (!request.loop_id.empty()) started_event["loop_id"] = request.loop_id;
  if (!decided_by.is_null()) started_event["rule"] = decided_by;
  events_.publish("tool.started", std::move(started_event));
  const auto lane_settings = settings_.lanes.find(tool->lane);
  if (egress_ != nullptr && lane_settings != settings_.lanes.end() &&
      lane_settings->second.network) {
    job.egress_token = egress_token();
    egress_->attribute(job.egress_token, call_id, networks_allowed_to(*tool, settings_));
  }
  const std::string token = job.egress_token;
  // A call that changes nothing, whose runner died under it, is run once
  // more on the restarted runner instead of failing (issue 12).
  const JobHandling handling{.retry_on_runner_death = config::changes_nothing(*tool)};
  {
    // No slot free: say so, with the place in the queue (issue 25: a loop
    // that only said "validating" for minutes while another held the slot).
    const json lane_status = lane->second->status_json();
    const std::uint64_t in_flight = lane_status.value("in_flight", std::uint64_t{0});
    const std::uint64_t slots = lane_status.value("slots", std::uint64_t{1});
    if (in_flight >= slots) {
      json queued_event = {
          {"call_id", call_id}, {"tool", tool->name},
          {"lane", tool->lane}, {"ahead", lane_status.value("queued", std::uint64_t{0})},
          {"slots", slots},     {"running", in_flight}};
      if (!request.loop_id.empty()) queued_event["loop_id"] = request.loop_id;
      events_.publish("tool.queued", std::move(queued_event));
    }
  }
  LaneReply reply;
  std::string worker = store::kLocalWorker;
  json dispatch;
  bool ran_on_worker = false;
  // A tool with a web facility carries a provider's key in its arguments
  // and needs the network: it never leaves this machine.
  if (cluster_ != nullptr && cluster_->routes(tool->lane) &&
      tool->web == config::WebFacility::none) {
    // A worker on another machine (docs/cluster.md); it says when the call
    // must run here instead (NATS unreachable, no worker in time, ...).
    proto::Job remote_job = job;
    std::string remote_lane = tool->lane;
    std::string remote_repo = request.repo;
    cluster::RemoteReply remote = co_await cluster_->run(
        std::move(remote_job), std::move(remote_lane), std::move(remote_repo));
    if (remote.run_locally) {
      spdlog::info("call {} ({}) runs on this machine: {}", call_id, tool->name, remote.why_local);
      json local_event = {{"call_id", call_id},
                          {"tool", tool->name},
                          {"lane", tool->lane},
                          {"reason", remote.why_local}};
      if (!request.loop_id.empty()) local_event["loop_id"] = request.loop_id;
      events_.publish("tool.ran_locally", std::move(local_event));
    } else {
      reply.result = std::move(remote.result);
      reply.link_error = std::move(remote.link_error);
      worker = remote.worker.empty() ? std::string("unknown") : remote.worker;
      dispatch = {{"snapshot_ms", remote.snapshot_ms},
                  {"pickup_ms", remote.pickup_ms},
                  {"overhead_ms", remote.overhead_ms},
                  {"prepare_ms", remote.prepare_ms},
                  {"deliveries", remote.deliveries}};
      ran_on_worker = true;
    }
  }
  if (!ran_on_worker) reply = co_await lane->second->run(std::move(job), handling);
  const std::vector<egress::NetConnection> refused =
      token.empty() ? std::vector<egress::NetConnection>() : egress_->forget(token);
  active_.erase(call_id);

  // 6. outcome, read tracking, record
  ToolCallOutcome done = outcome_from_job(reply.result, *tool);
  if (reply.link_error) done.error = std::move(*reply.link_error);
  add_egress_refusals(done, *tool, refused);
  done.call_id = call_id;
  done.tool = tool->name;
  done.lane = tool->lane;
  done.retried = reply.retried;
  done.worker = worker;
  done.dispatch = std::move(dispatch);
  // A caller that went away never saw the result: its session learns nothing.
  if (!request.caller_gone || !request.caller_gone()) track_reads(done, request, *worktree);
  co_await after_hooks(done, std::move(hook_call), std::move(before_notes));
  finish(done, request, started, started_unix, done.tool);
  co_return done;
}

Result<std::vector<policy::CommandRule>> ToolRouter::command_rules(const std::string& repository,
                                                                   const std::string& tool) const {
  std::vector<policy::CommandRule> rules = settings_.approval.rules;
  auto saved = store_.saved_approval_rules(repository);
  if (!saved) return std::move(saved).error();
  for (const store::SavedApprovalRule& row : *saved) {
    auto rule = policy::saved_rule_from_json(row.rule, row.id);
    if (!rule) {
      // A row edited by hand: the rest still judge, and the log says which.
      spdlog::warn("{} ({})", rule.error().message, rule.error().hint);
      continue;
    }
    if (rule->tool.empty() || rule->tool == tool) rules.push_back(std::move(*rule));
  }
  if (repos::repo_file_present(repository)) {
    auto effective = repos::resolve(settings_, store_, repository);
    if (!effective) return std::move(effective).error();
    if (auto refused = effective->refusal_for("approval.rules")) return std::move(*refused);
    rules.insert(rules.end(), effective->rules.begin(), effective->rules.end());
  }
  return rules;
}

json ToolRouter::hook_data(const std::string& call_id, const config::ToolSpec& tool,
                           const ToolCallRequest& request, const json& args,
                           const std::string& worktree) const {
  json data = {{"call_id", call_id},
               {"tool", tool.name},
               {"lane", tool.lane},
               {"args", args},
               {"worktree", worktree}};
  if (!request.loop_id.empty()) data["loop_id"] = request.loop_id;
  return data;
}

asio::awaitable<void> ToolRouter::after_hooks(ToolCallOutcome& done, json data,
                                              std::vector<std::string> before_notes) {
  done.hook_notes = std::move(before_notes);
  if (hooks_ == nullptr || !hooks_->has("tool.after") || !data.is_object()) co_return;
  const json result = done.to_json();
  for (const char* key : {"status", "ok", "exit_code", "duration_ms", "output", "error"}) {
    if (result.contains(key)) data[key] = result[key];
  }
  std::string event = "tool.after", name = done.tool, folder = text_member(data, "worktree");
  hooks::HookRunner::ToolVerdict said = co_await hooks_->on_tool(
      std::move(event), std::move(name), std::move(data), std::move(folder));
  for (std::string& note : said.notes)
    done.hook_notes.push_back(std::move(note));
}

asio::awaitable<ToolCallOutcome> ToolRouter::run_hosted(const config::ToolSpec& tool,
                                                        const ToolCallRequest& request,
                                                        const std::string& call_id, json args,
                                                        const std::string& worktree,
                                                        std::uint64_t timeout_ms) {
  HostedCall call;
  call.call_id = call_id;
  call.tool = tool.name;
  call.args = std::move(args);
  call.worktree = worktree;
  call.repo =
      request.repo.empty() ? memory::repository_of(worktree) : canonical_or_same(request.repo);
  call.loop_id = request.loop_id;
  call.session = request.session;
  call.timeout_ms = timeout_ms;
  call.max_output_bytes = static_cast<std::uint64_t>(tool.max_output_bytes);
  call.allowance = request.allowance;
  call.cancel = active_[call_id].cancel;
  const std::shared_ptr<llm::CancelToken> cancel = call.cancel;
  json started_event = {
      {"call_id", call_id}, {"tool", tool.name}, {"lane", tool.lane}, {"worktree", worktree}};
  if (!request.loop_id.empty()) started_event["loop_id"] = request.loop_id;
  events_.publish("tool.started", std::move(started_event));

  // The timer outlives nothing: its handler owns what it touches.
  auto timed_out = std::make_shared<bool>(false);
  asio::steady_timer timer(io_, std::chrono::milliseconds(timeout_ms));
  timer.async_wait([timed_out, cancel](const std::error_code& ec) {
    if (ec) return;
    *timed_out = true;
    cancel->cancel();
  });
  const HostedTool run = hosted_.at(tool.name);  // a copy: host_tool() may replace it meanwhile
  Result<json> result = make_error("cancelled", tool.name + " was cancelled before it ran");
  try {
    if (!cancel->cancelled()) result = co_await run(std::move(call));
  } catch (const std::exception& e) {
    spdlog::error("hosted tool {} (call {}) threw: {}", tool.name, call_id, e.what());
    result = make_error(errc::internal, tool.name + " failed inside looprd: " + e.what(),
                        "report this as a loopr bug");
  }
  timer.cancel();
  active_.erase(call_id);

  ToolCallOutcome done;
  done.call_id = call_id;
  done.tool = tool.name;
  done.lane = tool.lane;
  // A result that came back whole is the result, even if a cancel came
  // just after it: the tool did what it says.
  if (result) {
    done.status = "success";
    done.ok = true;
    done.output = std::move(result).value();
  } else if (*timed_out) {
    done.status = "timeout";
    done.error = make_error(
        errc::timeout,
        tool.name + " did not finish within " + std::to_string(timeout_ms) + " ms and was stopped",
        "ask a smaller question, or raise timeout_ms of [tools." + tool.name + "] in catalog.toml");
  } else if (cancel->cancelled()) {
    done.status = "cancelled";
    done.error = make_error("cancelled", tool.name + " was cancelled",
                            "nothing more was done; make the call again if it is still needed");
  } else {
    done.status = "failed";
    done.error = std::move(result).error();
  }
  // A timeout or cancel keeps what the tool said of itself in its details
  // (the oracle: what its model call may have spent).
  if (done.status != "failed" && !result && !result.error().details.is_null()) {
    done.error->details = result.error().details;
  }
  co_return done;
}

void ToolRouter::track_reads(const ToolCallOutcome& outcome, const ToolCallRequest& request,
                             const std::string& worktree) {
  if (!outcome.ok) return;
  remember_result(request.session, worktree, outcome.tool, outcome.output);
}

void ToolRouter::remember_result(const std::string& session, const std::string& worktree,
                                 const std::string& tool, const json& output) {
  if (!output.is_object()) return;
  if (!output.contains("path") || !output["path"].is_string()) return;
  const config::ToolSpec* spec = catalog_->catalog.find(tool);
  if (spec == nullptr) return;
  const std::string path = output["path"].get<std::string>();
  if (spec->file_access == config::FileAccess::read ||
      spec->file_access == config::FileAccess::write) {
    if (output.contains("content_hash") && output["content_hash"].is_string()) {
      reads_.remember(session, worktree, path, output["content_hash"].get<std::string>());
    }
  } else if (spec->file_access == config::FileAccess::remove) {
    if (string_field(output, "deleted", "") == "directory") {
      reads_.forget_beneath(session, worktree, path);
    } else {
      reads_.forget(session, worktree, path);
    }
  }
}

void ToolRouter::finish(ToolCallOutcome& outcome, const ToolCallRequest& request,
                        Clock::time_point started, std::int64_t started_unix_ms,
                        const std::string& metric_name) {
  const auto elapsed =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
  if (outcome.duration_ms == 0) {
    outcome.duration_ms = static_cast<std::uint64_t>(elapsed.count() / 1000);
  }
  metrics_.record_call(metric_name, outcome.lane.empty() ? "-" : outcome.lane, outcome.ok, elapsed);
  ToolCallRecord record;
  record.call_id = outcome.call_id;
  record.tool = outcome.tool;
  record.lane = outcome.lane;
  record.worktree = request.worktree;
  record.session = request.session;
  record.args_digest = args_digest(request.args);
  record.status = outcome.status;
  record.exit_code = outcome.exit_code;
  record.duration_ms = static_cast<std::int64_t>(outcome.duration_ms);
  record.truncated = outcome.truncated;
  record.error_code = outcome.error ? outcome.error->code : std::string();
  record.started_at_ms = started_unix_ms;
  record.worker = outcome.worker;
  if (auto stored = store_.record_tool_call(record); !stored) {
    spdlog::error("cannot record call {} in the store: {}", outcome.call_id,
                  stored.error().message);
  }
  json finished_event = {{"call_id", outcome.call_id}, {"tool", outcome.tool},
                         {"lane", outcome.lane},       {"status", outcome.status},
                         {"ok", outcome.ok},           {"duration_ms", outcome.duration_ms}};
  if (!request.loop_id.empty()) finished_event["loop_id"] = request.loop_id;
  if (outcome.retried) finished_event["retried"] = true;
  finished_event["worker"] = outcome.worker;
  if (!outcome.dispatch.is_null()) finished_event["dispatch"] = outcome.dispatch;
  events_.publish("tool.finished", std::move(finished_event));
}

std::uint64_t ToolRouter::client_of(const std::string& call_id) const {
  auto it = active_.find(call_id);
  return it == active_.end() ? 0 : it->second.client_id;
}

bool ToolRouter::cancel(const std::string& call_id) {
  auto it = active_.find(call_id);
  if (it == active_.end()) return false;
  if (approvals_.cancel_call(call_id, "the call was cancelled")) return true;
  if (it->second.cancel) {
    it->second.cancel->cancel();
    return true;
  }
  if (cluster_ != nullptr && cluster_->cancel(call_id)) return true;
  auto lane = lanes_.find(it->second.lane);
  return lane != lanes_.end() && lane->second->cancel(call_id);
}

std::size_t ToolRouter::cancel_calls_of_client(std::uint64_t client_id) {
  std::vector<std::string> ids;
  for (const auto& [id, active] : active_) {
    if (active.client_id == client_id) ids.push_back(id);
  }
  std::size_t cancelled = 0;
  for (const std::string& id : ids)
    if (cancel(id)) ++cancelled;
  return cancelled;
}

std::size_t ToolRouter::cancel_calls_of_loop(const std::string& loop_id) {
  std::vector<std::string> ids;
  for (const auto& [id, active] : active_) {
    if (!loop_id.empty() && active.loop_id == loop_id) ids.push_back(id);
  }
  std::size_t cancelled = 0;
  for (const std::string& id : ids)
    if (cancel(id)) ++cancelled;
  return cancelled;
}

std::size_t ToolRouter::cancel_calls_of_parent(const std::string& call_id) {
  std::vector<std::string> ids;
  for (const auto& [id, active] : active_) {
    if (!call_id.empty() && active.parent_call_id == call_id) ids.push_back(id);
  }
  std::size_t cancelled = 0;
  for (const std::string& id : ids)
    if (cancel(id)) ++cancelled;
  return cancelled;
}

json ToolRouter::waiting_call_of_loop(const std::string& loop_id) const {
  if (loop_id.empty()) return nullptr;
  for (const auto& [id, active] : active_) {
    if (active.loop_id != loop_id) continue;
    auto lane = lanes_.find(active.lane);
    if (lane == lanes_.end()) continue;
    const std::optional<std::size_t> ahead = lane->second->jobs_ahead(id);
    if (!ahead) continue;
    const json status = lane->second->status_json();
    return {{"call_id", id},
            {"tool", active.tool},
            {"lane", active.lane},
            {"ahead", *ahead},
            {"slots", status.value("slots", 0)},
            {"running", status.value("in_flight", 0)}};
  }
  return nullptr;
}

std::string ToolRouter::loop_of_call(const std::string& call_id) const {
  auto it = active_.find(call_id);
  return it == active_.end() ? std::string() : it->second.loop_id;
}

Result<void> ToolRouter::check_arguments(const std::string& tool, const json& args) const {
  auto it = catalog_->schemas.find(tool);
  if (it == catalog_->schemas.end()) {
    return make_error(errc::invalid_arguments, "unknown tool '" + tool + "'");
  }
  return it->second.validate(args);
}

struct ToolRouter::BatchState {
  std::vector<ToolCallRequest> requests;
  std::vector<std::string> call_ids;
  std::vector<std::optional<ToolCallOutcome>> outcomes;
  std::size_t remaining = 0;
  std::unique_ptr<Wakeup> done;
};

// Detached from batch(): an exception here would be dropped by asio and the
// batch would wait forever, so every call comes back with an outcome.
asio::awaitable<void> ToolRouter::run_into_batch(std::shared_ptr<BatchState> state,
                                                 std::size_t index) {
  const std::string tool = state->requests[index].tool;
  try {
    state->outcomes[index] =
        co_await run_call(std::move(state->requests[index]), state->call_ids[index]);
  } catch (const std::exception& e) {
    spdlog::error("call {} of a batch failed with an exception: {}", state->call_ids[index],
                  e.what());
    ToolCallOutcome failed =
        refused("error", make_error(errc::internal, std::string("internal error: ") + e.what(),
                                    "report this as a loopr bug"));
    failed.call_id = state->call_ids[index];
    failed.tool = tool;
    state->outcomes[index] = std::move(failed);
  }
  if (--state->remaining == 0) state->done->notify();
}

asio::awaitable<std::vector<ToolCallOutcome>> ToolRouter::batch(
    std::vector<ToolCallRequest> requests) {
  auto state = std::make_shared<BatchState>();
  const std::size_t count = requests.size();
  state->requests = std::move(requests);
  state->outcomes.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    state->call_ids.push_back("c-" + std::to_string(next_call_++));
  }
  auto read_only = [&](std::size_t i) {
    const config::ToolSpec* tool = catalog_->catalog.find(state->requests[i].tool);
    return tool != nullptr && config::changes_nothing(*tool);
  };
  std::size_t i = 0;
  while (i < count) {
    std::size_t end = i + 1;
    if (read_only(i)) {
      while (end < count && read_only(end))
        ++end;
    }
    state->remaining = end - i;
    state->done = std::make_unique<Wakeup>(io_.get_executor());
    for (std::size_t j = i; j < end; ++j) {
      asio::co_spawn(io_, run_into_batch(state, j), asio::detached);
    }
    co_await state->done->wait();
    i = end;
  }
  std::vector<ToolCallOutcome> outcomes;
  outcomes.reserve(count);
  for (auto& outcome : state->outcomes)
    outcomes.push_back(std::move(*outcome));
  co_return outcomes;
}

}  // namespace loopr::daemon
