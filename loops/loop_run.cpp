#include "loops/loop_run.hpp"

#include <fnmatch.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <asio/redirect_error.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <fstream>
#include <optional>

#include "common/ascii_text.hpp"
#include "common/json_text.hpp"
#include "common/private_folder.hpp"
#include "common/worktree_path.hpp"
#include "llm/retry_policy.hpp"
#include "loops/artifacts.hpp"
#include "loops/context_budget.hpp"
#include "loops/git/merges.hpp"
#include "loops/git/protected_restore.hpp"
#include "loops/git/worktree_changes.hpp"
#include "loops/offload.hpp"
#include "loops/orientation.hpp"
#include "loops/prompts.hpp"
#include "loops/run_host.hpp"
#include "loops/tool_result_view.hpp"
#include "proto/json_bounded.hpp"

namespace loopr::loops {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What the model reads of a validation: head and tail of what it printed.
constexpr std::size_t kValidationHead = 4000;
constexpr std::size_t kValidationTail = 4000;

// `whole_bytes`: how many bytes the command printed, when the tool already
// kept only head and tail of it (its `output_bytes`); the marker counts what
// the model does not see of the whole output, not of the tool's copy.
std::string head_and_tail(const std::string& text, std::uint64_t whole_bytes = 0) {
  if (text.size() <= kValidationHead + kValidationTail) return text;
  const std::uint64_t whole = std::max<std::uint64_t>(whole_bytes, text.size());
  return text.substr(0, kValidationHead) + "\n[... " +
         std::to_string(whole - kValidationHead - kValidationTail) + " bytes cut (" +
         std::to_string(whole) + " in all) ...]\n" + text.substr(text.size() - kValidationTail);
}

json tool_call_json(const llm::ToolCall& call) {
  return llm::to_json(call);
}

// The commands of the loop's repository as resolved when it was made
// (LoopSpec::commands), or the daemon's [commands] for a loop stored before.
const config::CommandSettings& loop_commands(const LoopSpec& spec,
                                             const config::Settings& settings) {
  return spec.repo_settings ? spec.commands : settings.commands;
}

// Lint after edit: whether `path` matches [commands] lint_files (any of
// the patterns, on the whole path or its last part; none: every file).
bool lint_wanted(const config::CommandSettings& commands, const std::string& path) {
  if (commands.lint_files.empty()) return true;
  const std::size_t slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  for (const std::string& pattern : commands.lint_files) {
    if (::fnmatch(pattern.c_str(), path.c_str(), 0) == 0 ||
        ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0) {
      return true;
    }
  }
  return false;
}

// The lint command for `path`: {files} replaced by the path, single-quoted
// for sh (appended when the command has no {files}).
std::string lint_command(const std::string& command, const std::string& path) {
  std::string quoted = "'";
  for (char c : path)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  const std::size_t at = command.find("{files}");
  if (at == std::string::npos) return command + " " + quoted;
  std::string out = command;
  for (std::size_t pos = out.find("{files}"); pos != std::string::npos;
       pos = out.find("{files}", pos + quoted.size())) {
    out.replace(pos, 7, quoted);
  }
  return out;
}

json tool_error(const std::string& code, const std::string& message, const std::string& hint) {
  return {{"status", "invalid"},
          {"ok", false},
          {"error", {{"code", code}, {"message", message}, {"hint", hint}}}};
}

// The tool definitions' share of a request, for the estimates of its input.
std::size_t definitions_bytes(const std::vector<llm::ToolDefinition>& tools) {
  std::size_t bytes = 0;
  for (const llm::ToolDefinition& tool : tools)
    bytes += tool.name.size() + tool.description.size() + tool.input_schema.dump().size();
  return bytes;
}

// The command a build, test or validate tool (by its command trait) runs in
// this loop: the loop's validation command, or its repository's build or
// test command; empty for any other tool, or when none is configured.
std::string loop_command_of(const config::ToolSpec& tool, const config::CommandSettings& commands,
                            const std::string& validation_command) {
  switch (tool.command) {
    case config::ToolCommand::build:
      return commands.build;
    case config::ToolCommand::test:
      return commands.test;
    case config::ToolCommand::validate:
      return validation_command;
    default:
      return {};
  }
}

bool runs_loop_command(const config::ToolSpec& tool) {
  return tool.command == config::ToolCommand::build || tool.command == config::ToolCommand::test ||
         tool.command == config::ToolCommand::validate;
}

// The loop type's tools that are offered to the model, in their order: all
// of them but those that could only say they cannot run — a tool that
// consults a model (the oracle) when [oracle] names no provider, a build,
// test or validate tool (by its command trait) with no command to run — and
// read_output always (cut results name it). A call of a tool not offered
// still gets the router's (or the engine's) answer.
std::vector<std::string> offered_tools(const std::vector<std::string>& tools,
                                       const ToolGateway& gateway, const config::Settings& settings,
                                       const config::CommandSettings& commands,
                                       const std::string& validation_command) {
  std::vector<std::string> offered;
  bool oracle_left_out = false;
  for (const std::string& tool : tools) {
    if (tool == "read_output") continue;  // the engine's own, added last
    if (const config::ToolSpec* spec = gateway.find_tool(tool)) {
      if (spec->consults_model && !settings.oracle.configured()) {
        oracle_left_out = true;
        continue;
      }
      if (runs_loop_command(*spec) &&
          loop_command_of(*spec, commands, validation_command).empty()) {
        continue;
      }
    }
    offered.push_back(tool);
  }
  offered.push_back("read_output");
  static std::atomic<bool> said{false};
  if (oracle_left_out && !said.exchange(true)) {
    spdlog::info(
        "loops are not offered the oracle: [oracle] provider is not set in loopr.toml "
        "(the tool is named in [loops.*] tools)");
  }
  return offered;
}

// A tool's traits by name; a tool the catalog lacks (a call of a made-up
// name) has the defaults.
config::FileAccess file_access_of(const ToolGateway& tools, const std::string& name) {
  const config::ToolSpec* spec = tools.find_tool(name);
  return spec != nullptr ? spec->file_access : config::FileAccess::none;
}

config::ResultView result_view_of(const ToolGateway& tools, const std::string& name) {
  const config::ToolSpec* spec = tools.find_tool(name);
  return spec != nullptr ? spec->result_view : config::ResultView::json;
}

// What the model reads of build, test and validate: the command they run.
std::string command_tool_description(config::ToolCommand kind, const std::string& command) {
  const std::string what = kind == config::ToolCommand::validate ? "the loop's validation command"
                           : kind == config::ToolCommand::test   ? "the project's test command"
                                                                 : "the project's build command";
  std::string text = "Run " + what + " `" + command +
                     "` at the worktree's top, on the heavy lane (no arguments). Returns its "
                     "exit code, duration and output.";
  if (kind == config::ToolCommand::validate) {
    text +=
        " This is the command that judges the loop: run it to check your work before you "
        "finish.";
  }
  return text;
}

// What a tool looprd hosts spent on a model of its own, for the loop's
// spend: the `usage` and `cost_usd` of its output, or, when it failed after
// the model was asked (a stream cut, a timeout, a cancel), those its error's
// details carry — the worst case of that call, as the provider may bill it.
// Nothing for other tools.
Spend model_spend_of(const json& outcome) {
  Spend spent;
  if (outcome.value("lane", "") != config::lanes::daemon) return spent;
  const json* source = nullptr;
  if (outcome.value("ok", false)) {
    if (auto output = outcome.find("output"); output != outcome.end()) source = &*output;
  } else if (auto error = outcome.find("error"); error != outcome.end() && error->is_object()) {
    if (auto details = error->find("details"); details != error->end()) source = &*details;
  }
  if (source == nullptr || !source->is_object()) return spent;
  const json* output = source;
  auto usage = output->find("usage");
  if (usage == output->end()) return spent;
  auto tokens = llm::usage_from_json(*usage);
  if (!tokens) return spent;
  spent.tokens = *tokens;
  if (auto cost = output->find("cost_usd"); cost != output->end() && cost->is_number()) {
    spent.usd = cost->get<double>();
  }
  return spent;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items)
    out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

LoopRun::LoopRun(RunHost& engine, store::LoopRow row, LoopSpec spec, LoopProgress progress)
    : engine_(engine),
      row_(std::move(row)),
      spec_(std::move(spec)),
      progress_(std::move(progress)),
      status_(parse_loop_status(row_.status).value_or(LoopStatus::failed)) {}

const config::ModelPrice* LoopRun::price() const {
  return price_of(spec_.model);
}

bool LoopRun::usd_budget_applies() const {
  if (spec_.budget.usd || engine_.services().settings.budgets.global.usd) return true;
  const std::string plan = spec_.root_plan();
  const config::BudgetLimits* limits = plan.empty() ? nullptr : engine_.plan_budget(plan);
  return limits != nullptr && limits->usd;
}

const config::ModelPrice* LoopRun::price_of(const std::string& model) const {
  const auto& prices = engine_.services().settings.prices;
  auto it = prices.find(model);
  return it == prices.end() ? nullptr : &it->second;
}

json LoopRun::to_json(bool detailed) const {
  json loop = {
      {"id", spec_.id},
      {"type", spec_.type},
      {"status", to_string(status_)},
      {"status_reason", progress_.status_reason},
      {"task", spec_.task},
      {"repo", spec_.repo},
      {"base_commit", spec_.base_commit},
      {"branch", spec_.branch},
      {"worktree", spec_.worktree},
      {"provider", spec_.provider},
      {"model", spec_.model},
      {"parent_id", row_.parent_id.empty() ? json() : json(row_.parent_id)},
      {"iteration", progress_.iteration},
      {"max_iterations", spec_.max_iterations},
      {"handoffs", progress_.handoffs},
      {"validate", spec_.validate},
      {"usage", progress_.spend.to_json()},
      {"priced", price() != nullptr},
      {"last_validation", progress_.last_validation},
      {"deleted", progress_.deleted},
      {"created_at_ms", row_.created_at_ms},
      {"updated_at_ms", row_.updated_at_ms},
      {"plan_id", spec_.root_plan().empty() ? json() : json(spec_.root_plan())},
      {"children", engine_.children_ids(spec_.id)},
      {"depends_on", spec_.depends_on},
      {"role", spec_.role},
      {"queue_reason", status_ == LoopStatus::queued ? progress_.queue_reason : ""},
      {"merged", progress_.merged},
      {"artifact_kind", progress_.artifact.is_null()
                            ? json()
                            : json(std::string(artifact_kind_of(artifact_tool_for(spec_.type))))},
      {"artifact_path", progress_.artifact_path.empty() ? json() : json(progress_.artifact_path)},
      {"budget",
       {{"limits", limits_to_json(spec_.budget)},
        {"used", progress_.spend.to_json()},
        {"left", left_to_json(spec_.budget, progress_.spend)}}}};
  if (validating_since_ms_ > 0) {
    // A validation in progress, and its place when it waits for a slot.
    loop["validating"] = {{"command", validating_command_},
                          {"since_ms", validating_since_ms_},
                          {"waiting", engine_.services().tools.waiting_call(spec_.id)}};
  }
  if (spec_.repo_settings) {
    // The repository's settings as resolved when the loop was made (repos/).
    const json recorded = spec_.to_json();
    loop["repo_settings"] = {{"commands", recorded["commands"]}, {"prep", recorded["prep"]}};
  }
  if (!spec_.protected_paths.empty()) {
    loop["protected"] = {{"paths", spec_.protected_paths},
                         {"events", progress_.protected_events},
                         {"event_count", progress_.protected_event_count}};
  }
  if (!spec_.uncommitted_paths.empty()) {
    loop["uncommitted"] = {{"included", spec_.include_uncommitted},
                           {"paths", spec_.uncommitted_paths}};
  }
  if (detailed) {
    loop["artifact"] = progress_.artifact;
    loop["iterations"] = progress_.iterations;
    loop["notes"] = progress_.notes;
  }
  return loop;
}

void LoopRun::tick_wall_clock() {
  const auto now = Clock::now();
  if (status_ == LoopStatus::running && in_run_) {
    progress_.spend.wall_clock_ms +=
        std::chrono::duration_cast<std::chrono::milliseconds>(now - last_tick_).count();
  }
  last_tick_ = now;
}

bool LoopRun::persist(const std::string& kind, json data) {
  tick_wall_clock();
  row_.status = std::string(to_string(status_));
  row_.state = progress_.to_json();
  row_.spec = spec_dirty_ ? spec_.to_json() : json();
  row_.updated_at_ms = now_ms();
  store::LoopStep step;
  step.loop_id = spec_.id;
  step.iteration = progress_.iteration;
  step.kind = kind;
  step.data = std::move(data);
  step.at_ms = row_.updated_at_ms;
  auto stored = engine_.services().store.append_loop_step(step, &row_);
  if (!stored) {
    spdlog::error("loop {}: cannot store its {} step, so the loop stops here: {}", spec_.id, kind,
                  stored.error().message);
    stopping_ = true;
    return false;
  }
  step.id = *stored;
  spec_dirty_ = false;
  const auto& services = engine_.services();
  services.publish("loop.step", {{"loop_id", spec_.id},
                                 {"step",
                                  {{"id", step.id},
                                   {"iteration", step.iteration},
                                   {"kind", step.kind},
                                   {"data", step.data},
                                   {"at_ms", step.at_ms}}}});
  services.publish("loop.updated", {{"loop", to_json(false)}});
  return true;
}

LoopRun::Phase LoopRun::finish(LoopStatus status, std::string reason) {
  status_ = status;
  progress_.status_reason = std::move(reason);
  progress_.next = NextStep::none;
  persist("status", {{"status", to_string(status)}, {"reason", progress_.status_reason}});
  spdlog::info("loop {} {}: {}", spec_.id, to_string(status), progress_.status_reason);
  engine_.status_changed(*this);
  return Phase::done;
}

bool LoopRun::set_status(LoopStatus status, std::string reason) {
  status_ = status;
  progress_.status_reason = std::move(reason);
  if (is_final(status) && progress_.finished_at_ms == 0) progress_.finished_at_ms = now_ms();
  const bool stored =
      persist("status", {{"status", to_string(status)}, {"reason", progress_.status_reason}});
  spdlog::info("loop {} {}: {}", spec_.id, to_string(status), progress_.status_reason);
  engine_.status_changed(*this);
  return stored;
}

void LoopRun::prepare_rerun(const std::string& feedback) {
  status_ = LoopStatus::running;
  progress_.status_reason =
      feedback.empty() ? "re-run by the person" : "iterating on the person's feedback";
  progress_.next = NextStep::new_iteration;
  progress_.iteration_base = progress_.iteration;
  progress_.feedback.clear();
  progress_.finished_at_ms = 0;
  progress_.status_before_tree_ended.clear();
  const std::string tool(artifact_tool_for(spec_.type));
  if (tool.empty()) {
    progress_.pending_note =
        feedback.empty()
            ? "The person asks you to work on this task again, from where the branch is now."
            : "The person looked at your work and asks for changes:\n" + feedback;
  } else {
    progress_.pending_note =
        "The person reviewed your last " + std::string(artifact_kind_of(tool)) +
        (feedback.empty() ? " and asks for a new one." : " and asks for changes:\n" + feedback) +
        "\nCall " + tool + " again with the revised version.";
  }
  progress_.unchanged = 0;
  progress_.strikes = 0;
  clear_run_flags();
}

bool LoopRun::revive(LoopStatus status, std::string reason) {
  clear_run_flags();
  progress_.finished_at_ms = 0;
  progress_.status_before_tree_ended.clear();
  return set_status(status, std::move(reason));
}

void LoopRun::clear_run_flags() {
  stopping_ = false;
  cancel_requested_ = false;
  pause_requested_ = false;
  cancel_token_ = llm::CancelToken{};
  // A new flag: a provider slot the last run asked for keeps the old one.
  abandoned_ = std::make_shared<bool>(false);
}

void LoopRun::request_pause() {
  if (!is_final(status_)) pause_requested_ = true;
}

bool LoopRun::request_resume() {
  if (status_ != LoopStatus::paused && !pause_requested_) return false;
  pause_requested_ = false;
  if (wake_) wake_->cancel();
  return true;
}

void LoopRun::request_cancel() {
  if (is_final(status_)) return;
  cancel_requested_ = true;
  *abandoned_ = true;
  engine_.provider_slots().wake_all();
  cancel_token_.cancel();
  engine_.services().tools.cancel_calls(spec_.id);
  if (wake_) wake_->cancel();
}

void LoopRun::stop() {
  stopping_ = true;
  *abandoned_ = true;
  engine_.provider_slots().wake_all();
  engine_.provider_slots().wake_all();
  cancel_token_.cancel();
  engine_.services().tools.cancel_calls(spec_.id);
  if (wake_) wake_->cancel();
}

Result<void> LoopRun::mark_deleted() {
  progress_.deleted = true;
  if (!persist("deleted", json::object())) {
    return make_error(errc::io, "the store refused the deletion; nothing was deleted");
  }
  return {};
}

asio::awaitable<void> LoopRun::run() {
  auto self = shared_from_this();
  in_run_ = true;
  last_tick_ = Clock::now();
  try {
    Phase phase = Phase::new_iteration;
    if (status_ == LoopStatus::paused) pause_requested_ = true;
    if (co_await pause_point())
      phase = co_await restore();
    else
      phase = Phase::done;
    while (phase != Phase::done && !stopping_) {
      switch (phase) {
        case Phase::new_iteration:
          phase = co_await start_iteration();
          break;
        case Phase::model:
          phase = co_await model_phase();
          break;
        case Phase::commit:
          phase = co_await commit();
          break;
        case Phase::validate:
          phase = co_await validate();
          break;
        case Phase::decide:
          phase = decide();
          break;
        case Phase::done:
          break;
      }
    }
  } catch (const std::exception& e) {
    // A bug, not a state of the loop: it stops and says so.
    spdlog::error("loop {} failed with an internal error: {}", spec_.id, e.what());
    if (!stopping_ && !is_final(status_)) {
      finish(LoopStatus::failed, std::string("internal error: ") + e.what());
    }
  }
  in_run_ = false;
}

asio::awaitable<bool> LoopRun::pause_point() {
  if (cancel_requested_ && !is_final(status_)) {
    finish(LoopStatus::cancelled, "cancelled by the user");
    co_return false;
  }
  if (stopping_) co_return false;
  if (!pause_requested_) co_return true;
  if (status_ != LoopStatus::paused) {
    status_ = LoopStatus::paused;
    if (!persist("status", {{"status", "paused"}, {"reason", "paused by the user"}})) {
      co_return false;
    }
  }
  auto executor = co_await asio::this_coro::executor;
  while (pause_requested_ && !cancel_requested_ && !stopping_) {
    wake_ = std::make_unique<asio::steady_timer>(executor, Clock::time_point::max());
    std::error_code ignored;
    co_await wake_->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    wake_.reset();
  }
  if (stopping_) co_return false;
  if (cancel_requested_) {
    finish(LoopStatus::cancelled, "cancelled by the user");
    co_return false;
  }
  status_ = LoopStatus::running;
  last_tick_ = Clock::now();  // time paused is not the loop's
  co_return persist("status", {{"status", "running"}, {"reason", "resumed by the user"}});
}

asio::awaitable<LoopRun::Phase> LoopRun::restore() {
  if (!worktree_open_) {
    const std::string repo = spec_.repo, path = spec_.worktree, branch = spec_.branch;
    auto git_work = [=] { return open_worktree(repo, path, branch); };
    auto opened = co_await offload(engine_.git_pool(), git_work);
    if (stopping_) co_return Phase::done;
    if (!opened) {
      co_return finish(LoopStatus::failed,
                       "its worktree cannot be used: " + opened.error().message);
    }
    worktree_ = *opened;
    worktree_open_ = true;
  }
  if (!progress_.reset_to.empty()) {
    // A re-run (plan.iterate, loop.rerun): what the children merged into
    // this branch goes (their branches are kept); done before anything
    // else, and again after a crash until it is stored as done.
    const WorktreeInfo info = worktree_;
    const std::string commit = progress_.reset_to;
    auto git_work = [=] { return reset_worktree(info, commit); };
    auto reset = co_await offload(engine_.git_pool(), git_work);
    if (stopping_) co_return Phase::done;
    if (!reset) {
      co_return finish(LoopStatus::failed,
                       "cannot reset its branch for the new iteration: " + reset.error().message);
    }
    progress_.reset_to.clear();
    if (!persist("note", {{"text", "branch reset to " + commit + " for the new iteration"}})) {
      co_return Phase::done;
    }
  }
  if (progress_.iteration == 0) co_return Phase::new_iteration;
  switch (progress_.next) {
    case NextStep::new_iteration:
      co_return Phase::new_iteration;
    case NextStep::complete:
    case NextStep::max_iterations:
    case NextStep::stuck:
      co_return Phase::decide;
    case NextStep::none:
      break;
  }
  auto steps = engine_.services().store.loop_steps(spec_.id, progress_.iteration);
  if (!steps) {
    co_return finish(LoopStatus::failed, "cannot read its journal: " + steps.error().message);
  }
  Phase phase = Phase::model;
  clear_messages();
  pending_calls_.clear();
  calls_started_ = false;
  full_views_.clear();
  for (const store::LoopStep& step : *steps) {
    if (step.kind == "iteration_started") {
      system_ = text_member(step.data, "system");
      clear_messages();
      add_message(llm::Message{llm::Role::user, text_member(step.data, "prompt"), {}, {}});
      phase = Phase::model;
    } else if (step.kind == "model_turn") {
      auto turn = llm::model_turn_from_json(step.data.value("turn", json::object()));
      if (!turn) co_return finish(LoopStatus::failed, "its journal holds a bad model turn");
      add_message(llm::Message{llm::Role::assistant, turn->text, turn->tool_calls, {}});
      pending_calls_ = turn->tool_calls;
      calls_started_ = false;
      cut_at_max_tokens_ = turn->stop_reason == llm::StopReason::max_tokens;
      // A turn cut at max_tokens without calls goes on (model_phase's note).
      if (pending_calls_.empty() && !cut_at_max_tokens_) phase = Phase::commit;
    } else if (step.kind == "handoff") {
      pending_calls_.clear();
      calls_started_ = false;
      phase = Phase::commit;
    } else if (step.kind == "tool_calls_started") {
      calls_started_ = true;
    } else if (step.kind == "tool_results") {
      llm::Message results{llm::Role::user, text_member(step.data, "note"), {}, {}};
      for (const json& result : step.data.value("results", json::array())) {
        auto parsed = llm::tool_result_from_json(result);
        if (!parsed) continue;
        if (auto outcome = result.find("outcome"); outcome != result.end()) {
          // The model saw these files before the restart; read-before-edit
          // must know them again, or its next edit is refused as unread.
          if (result.value("ok", false) && outcome->is_object() && outcome->contains("output")) {
            engine_.services().tools.restore_result(spec_.id, spec_.worktree, parsed->name,
                                                    (*outcome)["output"]);
          }
          const auto cap = static_cast<std::size_t>(
              engine_.services().settings.context.tool_result_cap(parsed->name));
          std::string whole =
              full_view(result_view_of(engine_.services().tools, parsed->name), *outcome);
          if (whole.size() > cap) full_views_[parsed->call_id] = std::move(whole);
        } else if (result.value("ok", false)) {
          // A journal from before results were rendered for the model: the
          // content is the output's JSON (a job's: parsed with a depth bound).
          if (auto output = proto::parse_json_bounded(parsed->content)) {
            engine_.services().tools.restore_result(spec_.id, spec_.worktree, parsed->name,
                                                    *output);
          }
        }
        results.tool_results.push_back(*parsed);
      }
      add_message(std::move(results));
      pending_calls_.clear();
      calls_started_ = false;
      if (!text_member(step.data, "ends_iteration").empty()) phase = Phase::commit;
    } else if (step.kind == "committed") {
      iteration_changed_ = step.data.value("changed", false);
      last_commit_ = text_member(step.data, "commit");
      phase = Phase::validate;
    } else if (step.kind == "validation_started") {
      phase = Phase::validate;
    }
  }
  if (phase == Phase::model && !pending_calls_.empty()) {
    // The last model turn's calls have no stored results: run them now
    // (none had started) or report the interrupted ones.
    const bool resumed = calls_started_;
    const auto calls = pending_calls_;
    const bool ends = co_await run_calls(calls, resumed);
    if (stopping_ || is_final(status_)) co_return Phase::done;
    if (ends) phase = Phase::commit;
  }
  co_return phase;
}

asio::awaitable<LoopRun::Phase> LoopRun::start_iteration() {
  const auto& services = engine_.services();
  if (progress_.iteration - progress_.iteration_base >= spec_.max_iterations) {
    co_return finish(LoopStatus::failed, "max_iterations: " + std::to_string(spec_.max_iterations) +
                                             " iterations without passing validation");
  }
  if (!progress_.worktree_prepared) {
    if (!co_await prepare_worktree()) co_return Phase::done;
  }
  progress_.iteration += 1;
  progress_.started_at_ms = now_ms();
  progress_.turns_this_iteration = 0;
  progress_.calls_this_iteration = 0;
  progress_.malformed_in_a_row = 0;
  progress_.complete_task_called = false;
  progress_.complete_summary.clear();
  progress_.protected_note.clear();
  progress_.handoff = nullptr;
  progress_.next = NextStep::none;
  repeats_.reset();
  full_views_.clear();
  lint_seen_.clear();
  services.tools.start_iteration(spec_.id);

  auto template_text = load_template(spec_.prompt_template);
  if (!template_text) {
    co_return finish(LoopStatus::failed,
                     "its prompt template cannot be used: " + template_text.error().message);
  }
  // The repository as the model first sees it (git on the pool: blocking).
  Orientation orientation;
  if (worktree_open_) {
    const WorktreeInfo info = worktree_;
    const std::string base = spec_.base_commit;
    const config::ContextSettings context = services.settings.context;
    auto git_work = [=] { return orient(info, base, context); };
    auto oriented = co_await offload(engine_.git_pool(), git_work);
    if (stopping_) co_return Phase::done;
    if (oriented) {
      orientation = std::move(oriented).value();
    } else {
      spdlog::warn("loop {}: the first message goes without the repository's tree: {}", spec_.id,
                   oriented.error().message);
    }
  }
  PromptInputs inputs;
  inputs.loop_type = spec_.type;
  inputs.task = spec_.task;
  inputs.iteration = progress_.iteration;
  inputs.max_iterations = spec_.max_iterations;
  inputs.validation_command = spec_.validate;
  if (spec_.validate.empty()) {
    inputs.validation_words = "loopr's check of the " +
                              std::string(artifact_kind_of(artifact_tool_for(spec_.type))) +
                              " you record with " + std::string(artifact_tool_for(spec_.type));
  }
  inputs.tools = offered_tools(spec_.tools, services.tools, services.settings,
                               loop_commands(spec_, services.settings), spec_.validate);
  for (const std::string& name : inputs.tools) {
    const config::ToolSpec* tool = services.tools.find_tool(name);
    if (tool == nullptr) continue;
    if (tool->command == config::ToolCommand::validate) inputs.checks.validate = name;
    if (tool->command == config::ToolCommand::test) inputs.checks.test = name;
    if (tool->command == config::ToolCommand::build) inputs.checks.build = name;
    if (tool->consults_model && inputs.advisor.empty()) inputs.advisor = name;
    if (tool->memory == config::MemoryAccess::search && inputs.memory.search.empty()) {
      inputs.memory.search = name;
    }
    if (tool->memory == config::MemoryAccess::save && inputs.memory.save.empty()) {
      inputs.memory.save = name;
    }
  }
  inputs.progress = progress_.notes;
  inputs.feedback = progress_.feedback;
  inputs.note = progress_.pending_note;
  inputs.handoff = progress_.handoff_note;
  inputs.branch = spec_.branch;
  inputs.base_commit = spec_.base_commit;
  inputs.instructions_file = orientation.instructions_file;
  inputs.instructions = orientation.instructions;
  inputs.instructions_cut = orientation.instructions_cut;
  inputs.tree = orientation.tree;
  inputs.tree_files = orientation.tree_files;
  inputs.tree_files_shown = orientation.tree_files_shown;
  inputs.diff_stat = orientation.diff_stat;
  progress_.pending_note.clear();
  progress_.handoff_note.clear();
  system_ = render_template(*template_text, inputs);
  const std::string prompt = first_user_message(inputs);
  clear_messages();
  add_message(llm::Message{llm::Role::user, prompt, {}, {}});
  pending_calls_.clear();
  if (!persist("iteration_started", {{"system", system_}, {"prompt", prompt}})) {
    co_return Phase::done;
  }
  services.publish(
      "loop.iteration",
      {{"loop_id", spec_.id}, {"iteration", progress_.iteration}, {"phase", "started"}});
  co_return Phase::model;
}

void LoopRun::clear_messages() {
  messages_.clear();
  messages_bytes_ = 0;
}

void LoopRun::add_message(llm::Message message) {
  messages_bytes_ += llm::to_json(message).dump().size();
  messages_.push_back(std::move(message));
}

std::string LoopRun::worst_budget_for_call(const llm::ModelRequest& request,
                                           std::size_t tools_bytes, bool count_turns,
                                           const std::string* model) const {
  const std::size_t bytes = request.system.size() + messages_bytes_ + tools_bytes;
  NextCall call;
  call.input_tokens_estimate = estimate_tokens(bytes);
  call.max_output_tokens = request.max_tokens;
  call.turns_this_iteration = count_turns ? progress_.turns_this_iteration : 0;
  call.price = model != nullptr ? price_of(*model) : price();
  if (auto why = exceeded_by_call(spec_.budget, progress_.spend, call, "loop")) return *why;
  const auto& global = engine_.services().settings.budgets.global;
  call.turns_this_iteration = 0;  // a per-iteration count has no global meaning
  if (auto why = exceeded_by_call(global, engine_.total_spend(), call, "global")) return *why;
  return plan_budget_exceeded_by_call(call);
}

Allowance LoopRun::allowance_left() const {
  Allowance allowance;
  allowance.narrow(spec_.budget, progress_.spend, "loop");
  allowance.narrow(engine_.services().settings.budgets.global, engine_.total_spend(), "global");
  const std::string plan = spec_.root_plan();
  if (const config::BudgetLimits* limits = plan.empty() ? nullptr : engine_.plan_budget(plan)) {
    allowance.narrow(*limits, engine_.tree_spend(plan), "plan " + plan);
  }
  return allowance;
}

std::string LoopRun::plan_budget_exceeded_by_call(const NextCall& call) const {
  const std::string plan = spec_.root_plan();
  if (plan.empty()) return {};
  const config::BudgetLimits* limits = engine_.plan_budget(plan);
  if (limits == nullptr) return {};
  if (auto why = exceeded_by_call(*limits, engine_.tree_spend(plan), call, "plan " + plan)) {
    return *why;
  }
  return {};
}

asio::awaitable<std::optional<Result<llm::ModelTurn>>> LoopRun::ask_model(
    llm::Provider& provider, const config::ProviderSettings& provider_settings,
    const llm::ModelRequest& request) {
  const auto& services = engine_.services();
  const std::uint64_t sequence = request.sequence;
  answered_by_.reset();
  // The provider being asked: the loop's own, then each fallback.
  std::string asking = spec_.provider;
  llm::TurnCallbacks callbacks;
  callbacks.cancel = &cancel_token_;
  callbacks.on_text = [this, sequence, &services](std::string_view text) {
    if (!services.has_subscribers("chat.chunk")) return;
    services.publish("chat.chunk", {{"loop_id", spec_.id},
                                    {"iteration", progress_.iteration},
                                    {"sequence", sequence},
                                    {"text", std::string(text)}});
  };
  callbacks.on_retry = [this, &services, &asking](const llm::RetryNotice& notice) {
    services.publish("provider.retry", {{"loop_id", spec_.id},
                                        {"provider", asking},
                                        {"attempt", notice.attempt},
                                        {"max_retries", notice.max_retries},
                                        {"delay_ms", notice.delay.count()},
                                        {"reason", notice.reason}});
  };
  auto slot = co_await engine_.provider_slots().acquire(
      spec_.provider, provider_settings.max_in_flight, abandoned_);
  if (stopping_ || cancel_requested_) co_return std::nullopt;
  auto turn = co_await provider.complete(request, callbacks);
  slot = ProviderSlots::Slot{};
  // Stopped (looprd stopping, or the tree stopping this loop to mark it):
  // the call was cut off, not failed; the journal asks it again later.
  if (stopping_ || cancel_requested_) co_return std::nullopt;

  // Only a loop on the default provider falls back: one pinned to another
  // (a local model for private code) keeps to it.
  const std::vector<std::string> no_fallback;
  const std::vector<std::string>& fallback = spec_.provider == services.settings.llm.provider
                                                 ? services.settings.llm.fallback
                                                 : no_fallback;
  json failed = json::array();
  for (const std::string& name : fallback) {
    if (turn || !llm::worth_another_provider(turn.error())) break;
    if (name == spec_.provider || name == asking) continue;
    auto next = services.provider(name);
    if (!next) {
      spdlog::warn("loop {}: fallback provider {} cannot be used: {}", spec_.id, name,
                   next.error().message);
      continue;
    }
    const config::ProviderSettings& next_settings = services.settings.providers.at(name);
    llm::ModelRequest again = request;
    again.model = next_settings.model;
    again.max_tokens = std::min(request.max_tokens, next_settings.max_tokens);
    // The budgets, judged again at the fallback's price: a pricier model may
    // not fit what the loop's own did, and one without a price cannot be
    // counted against a usd budget at all.
    if (price_of(again.model) == nullptr && usd_budget_applies()) {
      spdlog::warn(
          "loop {}: fallback provider {} not asked: its model {} has no [prices] entry "
          "and a usd budget applies",
          spec_.id, name, again.model);
      continue;
    }
    if (const std::string why =
            worst_budget_for_call(again, definitions_bytes(again.tools), false, &again.model);
        !why.empty()) {
      spdlog::warn("loop {}: fallback provider {} not asked: {}", spec_.id, name, why);
      break;
    }
    failed.push_back({{"provider", asking}, {"error", turn.error().message}});
    spdlog::warn("loop {}: provider {} failed ({}); asking {} instead", spec_.id, asking,
                 turn.error().message, name);
    services.publish(
        "provider.fallback",
        {{"loop_id", spec_.id}, {"from", asking}, {"to", name}, {"reason", turn.error().message}});
    asking = name;
    auto next_slot =
        co_await engine_.provider_slots().acquire(name, next_settings.max_in_flight, abandoned_);
    if (stopping_ || cancel_requested_) co_return std::nullopt;
    turn = co_await (*next)->complete(again, callbacks);
    next_slot = ProviderSlots::Slot{};
    if (stopping_ || cancel_requested_) co_return std::nullopt;
    if (turn) answered_by_ = FallbackAnswer{name, next_settings.model, failed};
  }
  if (!turn) {
    // Which provider's error this is: a fallback's refusal (a window
    // smaller than the loop's own, say) is not the loop's provider's.
    Error error = turn.error();
    if (error.details.is_null()) error.details = json::object();
    if (error.details.is_object()) error.details["provider"] = asking;
    if (!failed.empty()) {
      error.message += " (after " + spec_.provider + " and the [llm] fallback providers failed)";
    }
    co_return Result<llm::ModelTurn>(std::move(error));
  }
  co_return std::move(turn);
}

json LoopRun::answered_by_json(const llm::ModelTurn& turn) const {
  if (!answered_by_) return nullptr;
  json out = {{"provider", answered_by_->provider},
              {"model", answered_by_->model},
              {"fallback_from", answered_by_->failed}};
  if (const config::ModelPrice* p = price_of(answered_by_->model)) {
    out["cost_usd"] = cost_usd(turn.usage, *p);
  }
  return out;
}

void LoopRun::add_turn_spend(const llm::ModelTurn& turn) {
  progress_.turns_this_iteration += 1;
  Spend spent;
  spent.tokens = turn.usage;
  spent.model_turns = 1;
  const config::ModelPrice* p = answered_by_ ? price_of(answered_by_->model) : price();
  if (p != nullptr) spent.usd = cost_usd(turn.usage, *p);
  progress_.spend += spent;
}

asio::awaitable<LoopRun::Phase> LoopRun::model_phase() {
  const auto& services = engine_.services();
  auto provider = services.provider(spec_.provider);
  if (!provider) {
    co_return finish(
        LoopStatus::failed,
        provider.error().message +
            (provider.error().hint.empty() ? std::string() : " (" + provider.error().hint + ")"));
  }
  const auto& provider_settings = services.settings.providers.at(spec_.provider);
  const json definitions = services.tools.tool_definitions(
      offered_tools(spec_.tools, services.tools, services.settings,
                    loop_commands(spec_, services.settings), spec_.validate));
  std::vector<llm::ToolDefinition> tools;
  for (const json& definition : definitions) {
    tools.push_back({definition.value("name", ""), definition.value("description", ""),
                     definition.value("input_schema", json::object())});
    if (const config::ToolSpec* spec = services.tools.find_tool(tools.back().name);
        spec != nullptr && runs_loop_command(*spec)) {
      tools.back().description = command_tool_description(
          spec->command,
          loop_command_of(*spec, loop_commands(spec_, services.settings), spec_.validate));
    }
  }
  const std::size_t tools_bytes = definitions_bytes(tools);  // for the estimates of the input
  ContextBudget context((*provider)->context_window(), services.settings.context.handoff_percent,
                        provider_settings.max_tokens);
  const auto& turn_limit = spec_.budget.turns_per_iteration;
  while (true) {
    if (!co_await pause_point()) co_return Phase::done;
    llm::ModelRequest request;
    request.model = spec_.model;
    request.system = system_;
    request.messages = messages_;
    request.tools = tools;
    request.max_tokens = provider_settings.max_tokens;
    request.sequence = static_cast<std::uint64_t>(progress_.spend.model_turns);
    request.conversation = spec_.id;
    tick_wall_clock();
    const std::size_t request_bytes = system_.size() + messages_bytes_ + tools_bytes;
    // An iteration that reached its turn limit, or whose next request would
    // fill the context past [context] handoff_percent, ends with a handoff
    // instead of failing the loop (issue 24).
    if (turn_limit && progress_.turns_this_iteration >= *turn_limit) {
      co_return co_await hand_off(
          "turn_limit",
          "this iteration made " + std::to_string(progress_.turns_this_iteration) +
              " model turns, its limit (turns_per_iteration)",
          std::move(request), context, request_bytes, **provider, provider_settings, false);
    }
    if (progress_.turns_this_iteration > 0 && context.should_hand_off(request_bytes)) {
      co_return co_await hand_off(
          "context",
          "the conversation is about " + std::to_string(context.estimate(request_bytes)) +
              " tokens, " + std::to_string(context.percent_full(request_bytes)) + " % of the " +
              std::to_string(context.window()) + "-token context window",
          std::move(request), context, request_bytes, **provider, provider_settings, false);
    }
    if (const std::string why = worst_budget_for_call(request, tools_bytes, true); !why.empty()) {
      co_return finish(LoopStatus::budget_exhausted, why);
    }
    const std::uint64_t sequence = request.sequence;
    auto asked = co_await ask_model(**provider, provider_settings, request);
    if (stopping_) co_return Phase::done;
    if (cancel_requested_ || !asked)
      co_return finish(LoopStatus::cancelled, "cancelled by the user");
    auto& turn = *asked;
    if (!turn && turn.error().code == llm::errc::context_overflow) {
      // The provider counted more than the window: believe its count, and
      // hand off from a conversation made small enough. A fallback's
      // refusal (its own tokenizer, a window smaller than the loop's own
      // provider's) says nothing of the loop's provider: only the iteration
      // ends.
      const json& details = turn.error().details;
      const std::string refused_by =
          details.is_object() && details.contains("provider") && details["provider"].is_string()
              ? details["provider"].get<std::string>()
              : spec_.provider;
      const bool own_provider = refused_by == spec_.provider;
      if (own_provider && details.is_object() && details.contains("prompt_tokens") &&
          details["prompt_tokens"].is_number_integer()) {
        context.measured_tokens(details["prompt_tokens"].get<std::int64_t>(), request_bytes);
      }
      std::int64_t window = 0;
      if (details.is_object() && details.contains("context_window") &&
          details["context_window"].is_number_integer()) {
        window = details["context_window"].get<std::int64_t>();
      }
      if (own_provider) context.refused_as_too_long(window, request_bytes);
      spdlog::warn(
          "loop {}: provider {} refused a request as too long for its context window{}; "
          "set [providers.{}] context_window to the model's window",
          spec_.id, refused_by, window > 0 ? " (" + std::to_string(window) + " tokens)" : "",
          refused_by);
      co_return co_await hand_off("provider_overflow",
                                  "the provider " + refused_by +
                                      " refused the request as too long for its "
                                      "context window (" +
                                      turn.error().message + ")",
                                  std::move(request), context, request_bytes, **provider,
                                  provider_settings, true);
    }
    if (!turn) {
      const Error& error = turn.error();
      co_return finish(LoopStatus::failed,
                       "the model call failed (" + error.code + "): " + error.message +
                           (error.hint.empty() ? std::string() : " — " + error.hint));
    }
    add_turn_spend(*turn);
    context.measured(turn->usage, request_bytes);
    json model_turn = {{"sequence", sequence}, {"turn", llm::to_json(*turn)}};
    if (json by = answered_by_json(*turn); !by.is_null()) model_turn["answered_by"] = std::move(by);
    if (!persist("model_turn", model_turn)) {
      co_return Phase::done;
    }
    add_message(llm::Message{llm::Role::assistant, turn->text, turn->tool_calls, {}});
    cut_at_max_tokens_ = turn->stop_reason == llm::StopReason::max_tokens;
    if (turn->tool_calls.empty()) {
      if (!cut_at_max_tokens_) co_return Phase::commit;
      // The answer was cut, not finished: say so and let the model go on.
      const std::string note = max_tokens_note(request.max_tokens);
      if (!persist("tool_results",
                   {{"results", json::array()}, {"note", note}, {"ends_iteration", ""}})) {
        co_return Phase::done;
      }
      add_message(llm::Message{llm::Role::user, note, {}, {}});
      continue;
    }
    pending_calls_ = turn->tool_calls;
    const bool ends = co_await run_calls(turn->tool_calls, false);
    if (stopping_ || is_final(status_)) co_return Phase::done;
    if (ends) co_return Phase::commit;
  }
}

std::string LoopRun::max_tokens_note(std::int64_t max_tokens) const {
  return "loopr: your answer was cut at max_tokens (" + std::to_string(max_tokens) +
         " output tokens) before you finished it. Write smaller pieces: several edit_file "
         "calls instead of one large write_file, and shorter text.";
}

// What loopr itself can say of an iteration when the model cannot write the
// handoff note: the calls it made, in order.
std::string LoopRun::calls_record() const {
  std::string out =
      "loopr's record of this iteration's tool calls (the model could not write a note):\n";
  for (const llm::Message& message : messages_) {
    for (const llm::ToolCall& call : message.tool_calls) {
      std::string line = "- " + call.name;
      auto args = proto::parse_json_bounded(call.arguments.empty() ? "{}" : call.arguments);
      if (args && args->is_object()) {
        for (const char* key : {"path", "command", "pattern", "query"}) {
          if (auto it = args->find(key); it != args->end() && it->is_string()) {
            line += " " + it->get<std::string>().substr(0, 160);
            break;
          }
        }
      }
      if (out.size() + line.size() > 3000) {
        out += "- ...\n";
        return out;
      }
      out += line + "\n";
    }
  }
  return out;
}

asio::awaitable<LoopRun::Phase> LoopRun::hand_off(std::string reason, std::string why,
                                                  llm::ModelRequest request, ContextBudget& context,
                                                  std::size_t request_bytes,
                                                  llm::Provider& provider,
                                                  const config::ProviderSettings& provider_settings,
                                                  bool overflowed) {
  const std::int64_t estimate = context.estimate(request_bytes);
  const std::string ask =
      "loopr: this iteration ends now: " + why +
      ". Do not call any tool. Write a handoff note for the next iteration, which starts from "
      "a fresh context with the task, the repository, what is committed and this note: what "
      "you found (files, causes, commands that work), what you changed and whether it is "
      "checked, and what is left to do, in order. Be specific and brief (at most 300 words).";
  // The last message is the user's (the first prompt or tool results): the
  // request goes on from it, so the prompt cache still serves its prefix.
  if (request.messages.empty() || request.messages.back().role != llm::Role::user) {
    request.messages.push_back(llm::Message{llm::Role::user, {}, {}, {}});
  }
  llm::Message& last = request.messages.back();
  last.text += (last.text.empty() ? "" : "\n\n") + ask;
  request.max_tokens = std::min<std::int64_t>(request.max_tokens, 2048);
  std::size_t bytes = request_bytes + ask.size() + 2;
  // Results the conversation cannot hold any more make room, oldest first.
  bool dropped = false;
  const std::string stub = "[result dropped to make room for the handoff note]";
  for (llm::Message& message : request.messages) {
    if (!overflowed && context.fits(bytes, request.max_tokens)) break;
    for (llm::ToolResult& result : message.tool_results) {
      if (result.content.size() <= stub.size()) continue;
      bytes -= result.content.size() - stub.size();
      result.content = stub;
      dropped = true;
    }
    if (overflowed && dropped && context.fits(bytes, request.max_tokens)) break;
  }
  std::string note;
  std::string by = "loopr";
  json turn_json = nullptr;
  const bool affordable = worst_budget_for_call(request, 0, false).empty();
  if (context.fits(bytes, request.max_tokens) && affordable) {
    auto asked = co_await ask_model(provider, provider_settings, request);
    if (stopping_) co_return Phase::done;
    if (cancel_requested_ || !asked)
      co_return finish(LoopStatus::cancelled, "cancelled by the user");
    if (*asked) {
      const llm::ModelTurn& turn = **asked;
      add_turn_spend(turn);
      turn_json = llm::to_json(turn);
      if (json fallback = answered_by_json(turn); !fallback.is_null())
        turn_json["answered_by"] = std::move(fallback);
      note = std::string(trim_blanks(turn.text));
      if (!note.empty()) by = "model";
    } else {
      spdlog::warn("loop {}: the handoff note could not be asked for: {}", spec_.id,
                   asked->error().message);
    }
  }
  if (note.empty()) note = calls_record();
  progress_.handoff = {{"reason", reason},
                       {"why", why},
                       {"estimate_tokens", estimate},
                       {"context_window", context.window()},
                       {"turns", progress_.turns_this_iteration},
                       {"results_dropped", dropped},
                       {"by", by}};
  progress_.handoff_note = note.substr(0, 8000);
  progress_.handoffs += 1;
  json step = progress_.handoff;
  step["note"] = progress_.handoff_note;
  step["sequence"] = request.sequence;
  step["turn"] = turn_json;
  if (!persist("handoff", step)) co_return Phase::done;
  spdlog::info("loop {} iteration {} hands off ({}): {}", spec_.id, progress_.iteration, reason,
               why);
  pending_calls_.clear();
  co_return Phase::commit;
}

asio::awaitable<bool> LoopRun::run_calls(const std::vector<llm::ToolCall>& calls, bool resumed) {
  const auto& services = engine_.services();
  const auto& health = services.settings.loop_health;
  std::vector<json> outcomes(calls.size());
  std::vector<std::string> canonical_args(calls.size());
  std::vector<bool> malformed(calls.size(), false);
  std::vector<bool> interrupted(calls.size(), false);
  std::vector<GatewayCall> dispatch;
  std::vector<std::size_t> dispatch_index;
  std::vector<std::size_t> hosted;     // of dispatch: tools looprd runs that consult a model
  std::vector<bool> validation_calls;  // of dispatch: the loop's validate
  bool completes = false;

  for (std::size_t i = 0; i < calls.size(); ++i) {
    const llm::ToolCall& call = calls[i];
    if (call.name != "read_output" &&
        std::find(spec_.tools.begin(), spec_.tools.end(), call.name) == spec_.tools.end()) {
      outcomes[i] = tool_error(errc::invalid_arguments,
                               "there is no tool '" + call.name.substr(0, 100) + "' in this loop",
                               "use one of: " + join(spec_.tools));
      malformed[i] = true;
      continue;
    }
    // The model's arguments are untrusted: parsed with a depth bound.
    auto parsed_args = proto::parse_json_bounded(call.arguments.empty() ? "{}" : call.arguments);
    if (!parsed_args && cut_at_max_tokens_) {
      outcomes[i] = tool_error(
          errc::invalid_arguments,
          call.name + ": the arguments were cut off: " +
              max_tokens_note(engine_.services().settings.providers.at(spec_.provider).max_tokens)
                  .substr(7),
          "send this call again with less in it, in smaller pieces");
      malformed[i] = true;
      continue;
    }
    if (!parsed_args || !parsed_args->is_object()) {
      outcomes[i] =
          tool_error(errc::invalid_arguments,
                     call.name + ": the arguments are not a JSON object" +
                         (!parsed_args ? " (" + parsed_args.error().message + ")"
                                       : " (got " + std::string(parsed_args->type_name()) + ")"),
                     "send the arguments as one JSON object matching the tool's input schema");
      malformed[i] = true;
      continue;
    }
    json args = std::move(parsed_args).value();
    canonical_args[i] = args.dump();
    const config::ToolSpec* tool = services.tools.find_tool(call.name);
    if (tool == nullptr) {
      outcomes[i] = tool_error(errc::invalid_arguments, "tool '" + call.name + "' is disabled",
                               "use one of: " + join(spec_.tools));
      malformed[i] = true;
      continue;
    }
    if (tool->lane == config::lanes::daemon && is_loop_engine_tool(call.name)) {
      if (auto valid = services.tools.check_arguments(call.name, args); !valid) {
        outcomes[i] = tool_error(valid.error().code, call.name + ": " + valid.error().message,
                                 valid.error().hint);
        malformed[i] = true;
      } else if (call.name == "read_output") {
        outcomes[i] = read_output(args);
        if (!outcomes[i].value("ok", false)) malformed[i] = true;
      } else if (call.name == "complete_task") {
        completes = true;
        progress_.complete_task_called = true;
        progress_.complete_summary = args.value("summary", "");
        outcomes[i] = {
            {"status", "success"},
            {"ok", true},
            {"output",
             {{"recorded", true},
              {"message", "loopr will now run the validation; the loop completes if it passes"}}}};
      } else if (call.name == artifact_tool_for(spec_.type)) {
        outcomes[i] = record_artifact(call.name, args);
        if (outcomes[i].value("ok", false)) {
          completes = true;
        } else {
          malformed[i] = true;
        }
      } else {
        outcomes[i] = tool_error(errc::invalid_arguments,
                                 call.name + " is not available in a " + spec_.type + " loop",
                                 "use one of: " + join(spec_.tools));
        malformed[i] = true;
      }
      continue;
    }
    // A file tool on a protected path is refused before it runs.
    if (tool->file_access == config::FileAccess::write ||
        tool->file_access == config::FileAccess::remove) {
      auto guard = protected_paths();
      if (!guard) {
        finish(LoopStatus::failed, guard.error().message);
        co_return true;
      }
      // Named as the tool names it (common/worktree_path.hpp); a path outside
      // the worktree, or the worktree itself, is the tool's to refuse.
      std::optional<std::string> path;
      if (*guard != nullptr) {
        auto relative = worktree_relative_path(spec_.worktree, text_member(args, "path"));
        if (relative && *relative != ".") path = std::move(*relative);
      }
      if (const auto pattern = path ? (*guard)->protecting(*path) : std::nullopt) {
        outcomes[i] = tool_error(
            errc::protected_path,
            *path + " is protected by [validation] protected_paths (\"" + *pattern +
                "\"): no loop may change it",
            "change the code it checks, not this file: loopr validates with the protected files "
            "as they are at the loop's base commit, and puts back any change to them");
        note_protected_event({{"iteration", progress_.iteration},
                              {"action", "refused"},
                              {"tool", call.name},
                              {"path", *path},
                              {"pattern", *pattern}});
        continue;
      }
    }
    if (resumed && !config::changes_nothing(*tool)) {
      interrupted[i] = true;
      outcomes[i] = {
          {"status", "interrupted"},
          {"ok", false},
          {"error",
           {{"code", "interrupted"},
            {"message", "looprd stopped while " + call.name +
                            " ran; it may or may not have taken effect, and it was not run again"},
            {"hint",
             "check what it would have changed (read the file, list the folder) before "
             "doing it again"}}}};
      continue;
    }
    // A tool looprd hosts that consults a model of its own shares what the
    // budgets leave (Allowance).
    if (tool->lane == config::lanes::daemon && tool->consults_model) {
      hosted.push_back(dispatch.size());
    }
    // validate runs the loop's own validation command (the router's would
    // run [commands] validate).
    validation_calls.push_back(tool->command == config::ToolCommand::validate &&
                               !spec_.validate.empty());
    // build and test run the loop's repository's commands as resolved when
    // it was made, so a restart runs the same.
    std::optional<std::string> command;
    if (spec_.repo_settings && tool->command == config::ToolCommand::build) {
      command = spec_.commands.build;
    } else if (spec_.repo_settings && tool->command == config::ToolCommand::test) {
      command = spec_.commands.test;
    }
    dispatch.push_back(GatewayCall{call.name, std::move(args), std::nullopt, std::move(command)});
    dispatch_index.push_back(i);
  }

  if (!resumed) {
    if (auto why = exceeded_by_tool_calls(spec_.budget, progress_.spend,
                                          static_cast<std::int64_t>(calls.size()), "loop")) {
      finish(LoopStatus::budget_exhausted, *why);
      co_return true;
    }
    if (auto why = exceeded_by_tool_calls(services.settings.budgets.global, engine_.total_spend(),
                                          static_cast<std::int64_t>(calls.size()), "global")) {
      finish(LoopStatus::budget_exhausted, *why);
      co_return true;
    }
    const std::string plan = spec_.root_plan();
    if (const config::BudgetLimits* limits = plan.empty() ? nullptr : engine_.plan_budget(plan)) {
      if (auto why =
              exceeded_by_tool_calls(*limits, engine_.tree_spend(plan),
                                     static_cast<std::int64_t>(calls.size()), "plan " + plan)) {
        finish(LoopStatus::budget_exhausted, *why);
        co_return true;
      }
    }
    json started = json::array();
    for (const auto& call : calls)
      started.push_back(tool_call_json(call));
    if (!persist("tool_calls_started", {{"calls", started}})) co_return true;
  }

  if (!dispatch.empty()) {
    // A hosted tool that consults a model (the oracle) may spend only what
    // the budgets leave, shared with the turn's other such calls.
    if (!hosted.empty()) {
      const Allowance share = allowance_left().share(static_cast<std::int64_t>(hosted.size()));
      for (std::size_t j : hosted)
        dispatch[j].allowance = share;
    }
    // In call order: runs of gateway calls between the loop's validate calls.
    std::vector<json> results;
    std::vector<GatewayCall> batch;
    for (std::size_t j = 0; j <= dispatch.size(); ++j) {
      const bool validation = j < dispatch.size() && validation_calls[j];
      if ((j == dispatch.size() || validation) && !batch.empty()) {
        auto batch_results = co_await services.tools.run_calls(spec_.id, spec_.worktree, spec_.repo,
                                                               std::move(batch));
        batch.clear();
        for (json& result : batch_results)
          results.push_back(std::move(result));
        if (stopping_) break;
      }
      if (j == dispatch.size()) break;
      if (validation) {
        // The model's own validation runs the protected files as they
        // were too, and says what was put back.
        std::string put_back;
        if (!spec_.protected_paths.empty()) {
          auto restored = co_await restore_protected_files();
          if (!restored) co_return true;
          put_back = std::move(*restored);
        }
        json result = co_await services.tools.run_validation(
            spec_.id, spec_.worktree, spec_.validate,
            static_cast<std::uint64_t>(spec_.validate_timeout_s) * 1000);
        if (!put_back.empty() && result.contains("output") && result["output"].is_object()) {
          json& output = result["output"];
          const char* key = output.contains("output") ? "output" : "stdout";
          if (output.value(key, json()).is_string()) {
            output[key] = output[key].get<std::string>() + "\n[loopr: " + put_back + "]";
          }
        }
        results.push_back(std::move(result));
        if (stopping_) break;
      } else {
        batch.push_back(std::move(dispatch[j]));
      }
    }
    // looprd is stopping: these results may be cancellations; the journal
    // keeps the calls as started, and the restart reports them.
    if (stopping_) co_return true;
    for (std::size_t j = 0; j < results.size() && j < dispatch_index.size(); ++j) {
      // Stored with the tool_results step, like a model turn's usage.
      progress_.spend += model_spend_of(results[j]);
      outcomes[dispatch_index[j]] = std::move(results[j]);
      if (outcomes[dispatch_index[j]].value("status", "") == "invalid") {
        malformed[dispatch_index[j]] = true;
      }
    }
  }

  // A file the model writes or deletes where a daemon command's by-product
  // was is the model's work: its commit takes it (kept_out, commit()).
  if (!progress_.kept_out.empty()) {
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const config::FileAccess access = file_access_of(services.tools, calls[i].name);
      if (access != config::FileAccess::write && access != config::FileAccess::remove) continue;
      if (!outcomes[i].value("ok", false)) continue;
      std::string path = text_member(outcomes[i].value("output", json::object()), "path");
      if (path.rfind(spec_.worktree + "/", 0) == 0) path.erase(0, spec_.worktree.size() + 1);
      if (path.empty() || path[0] == '/') continue;
      const bool within =
          std::any_of(progress_.kept_out.begin(), progress_.kept_out.end(),
                      [&](const std::string& entry) { return path_within(path, entry); });
      if (within && std::find(progress_.written_kept_out.begin(), progress_.written_kept_out.end(),
                              path) == progress_.written_kept_out.end()) {
        progress_.written_kept_out.push_back(path);
      }
    }
  }

  // Lint after edit ([commands] lint): what it reports of each edited file
  // that the file's last lint did not, added to the edit's result.
  std::vector<std::string> lint_notes(calls.size());
  const config::CommandSettings& commands = loop_commands(spec_, services.settings);
  if (!commands.lint.empty() && !stopping_ && !cancel_requested_) {
    // What the lint command writes (a cache such as .eslintcache) is its
    // own: the untracked paths it makes are kept out of the loop's commits.
    const WorktreeInfo info = worktree_;
    auto status = [info] { return worktree_changes(info); };
    std::optional<Result<std::vector<WorktreeChange>>> before;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (file_access_of(services.tools, calls[i].name) != config::FileAccess::write ||
          !outcomes[i].value("ok", false)) {
        continue;
      }
      const std::string path = text_member(outcomes[i].value("output", json::object()), "path");
      if (path.empty() || !lint_wanted(commands, path)) continue;
      if (!before) before = co_await offload(engine_.git_pool(), status);
      const json linted = co_await services.tools.run_validation(spec_.id, spec_.worktree,
                                                                 lint_command(commands.lint, path));
      if (stopping_) co_return true;
      lint_notes[i] = new_lint_problems(path, linted);
    }
    if (before && *before) {
      auto now = co_await offload(engine_.git_pool(), status);
      if (stopping_) co_return true;
      if (now) {
        const auto added = keep_out_new_paths(**before, *now, progress_.kept_out);
        if (!added.empty()) {
          spdlog::debug("loop {}: lint made {} untracked paths, kept out of its commits", spec_.id,
                        added.size());
        }
      }
    }
  }

  json stored = json::array();
  llm::Message reply{llm::Role::user, {}, {}, {}};
  std::string note;
  std::string ends_iteration = !completes ? ""
                                          : (progress_.artifact_iteration == progress_.iteration &&
                                                     !artifact_tool_for(spec_.type).empty()
                                                 ? std::string(artifact_tool_for(spec_.type))
                                                 : std::string("complete_task"));
  std::string evidence;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const json& outcome = outcomes[i];
    llm::ToolResult result;
    result.call_id = calls[i].id;
    result.name = calls[i].name;
    const auto cap =
        static_cast<std::size_t>(services.settings.context.tool_result_cap(calls[i].name));
    CappedView view =
        capped_view(result_view_of(services.tools, calls[i].name), calls[i].id, outcome, cap);
    if (view.cut) full_views_[calls[i].id] = std::move(view.whole);
    result.content = std::move(view.text);
    if (!lint_notes[i].empty()) result.content += lint_notes[i];
    result.is_error = !outcome.value("ok", false);
    json entry = llm::to_json(result);
    entry["ok"] = !result.is_error;
    entry["status"] = outcome.value("status", "error");
    // The whole result stays in the journal (the model read `content`):
    // read_output and a restart's read-before-edit come back to it.
    entry["outcome"] = outcome;
    if (interrupted[i]) entry["interrupted"] = true;
    stored.push_back(entry);
    reply.tool_results.push_back(std::move(result));
    progress_.malformed_in_a_row = malformed[i] ? progress_.malformed_in_a_row + 1 : 0;
    if (!malformed[i] && !interrupted[i]) {
      const std::int64_t seen =
          repeats_.record(calls[i].name, canonical_args[i], reply.tool_results.back().content);
      if (seen >= health.repeated_call_limit && evidence.empty()) {
        evidence = calls[i].name + " " + canonical_args[i].substr(0, 200) +
                   " gave the same result " + std::to_string(seen) + " times";
      }
    }
  }
  progress_.calls_this_iteration += static_cast<std::int64_t>(calls.size());
  progress_.spend.tool_calls += static_cast<std::int64_t>(calls.size());
  if (cancel_requested_) {
    // The journal keeps what the calls gave (cancellations, mostly) before
    // the status that ends the loop: every tool_calls_started is answered.
    if (persist("tool_results",
                {{"results", stored}, {"note", ""}, {"ends_iteration", "cancelled"}})) {
      finish(LoopStatus::cancelled, "cancelled by the user");
    }
    co_return true;
  }
  if (progress_.malformed_in_a_row >= health.malformed_call_limit && ends_iteration.empty()) {
    ends_iteration = std::to_string(progress_.malformed_in_a_row) +
                     " malformed tool calls in a row ([loop_health] malformed_call_limit)";
    progress_.pending_note = "The last iteration ended after " +
                             std::to_string(progress_.malformed_in_a_row) +
                             " malformed tool calls in a row. Check each call's arguments "
                             "against the tool's schema.";
  }
  if (!evidence.empty()) {
    repeats_.reset();
    progress_.strikes += 1;
    switch (action_for_strike(progress_.strikes)) {
      case HealthAction::note:
        note = "loopr: " + evidence +
               ". Repeating it will not change the result; try something different.";
        persist("note", {{"text", note}});
        break;
      case HealthAction::fresh_context:
        if (ends_iteration.empty()) ends_iteration = "fresh context: " + evidence;
        progress_.pending_note = "The last iteration went round in circles (" + evidence +
                                 "). Start from what the progress notes say and take a "
                                 "different approach.";
        persist("note",
                {{"text", "loopr ends this iteration to start a fresh context: " + evidence}});
        break;
      case HealthAction::stop:
        persist("tool_results", {{"results", stored}, {"note", note}, {"ends_iteration", "stuck"}});
        finish(LoopStatus::stuck, evidence + " (after a note and a fresh context)");
        co_return true;
    }
  }
  if (!persist("tool_results",
               {{"results", stored}, {"note", note}, {"ends_iteration", ends_iteration}})) {
    co_return true;
  }
  reply.text = note;
  add_message(std::move(reply));
  pending_calls_.clear();
  co_return !ends_iteration.empty();
}

json LoopRun::read_output(const json& args) const {
  const std::string call_id = text_member(args, "call_id");
  auto it = full_views_.find(call_id);
  if (it == full_views_.end()) {
    return tool_error(
        errc::not_found,
        "read_output: no cut result of a call '" + call_id.substr(0, 100) + "' in this iteration",
        "name the call_id the cut marker gives; results of earlier iterations are "
        "gone with their context: run the tool again");
  }
  std::size_t offset = 0;
  if (auto o = args.find("offset"); o != args.end() && o->is_number_unsigned()) {
    offset = o->get<std::size_t>();
  }
  const auto cap =
      static_cast<std::size_t>(engine_.services().settings.context.tool_result_cap("read_output"));
  return {{"status", "success"}, {"ok", true}, {"output", view_page(it->second, offset, cap)}};
}

std::string LoopRun::new_lint_problems(const std::string& path, const json& outcome) {
  const std::string& command = loop_commands(spec_, engine_.services().settings).lint;
  const json output = outcome.value("output", json());
  if (!outcome.value("ok", false) || !output.is_object()) {
    const json error = outcome.value("error", json::object());
    return "\nlint (`" + command + "`) could not run: " + text_member(error, "message") + "\n";
  }
  std::set<std::string> lines;
  const json exit_code = output.value("exit_code", json());
  if (!(exit_code.is_number_integer() && exit_code.get<int>() == 0)) {
    std::string text = text_member(output, "output");
    if (text.empty()) text = text_member(output, "stdout") + "\n" + text_member(output, "stderr");
    std::size_t at = 0;
    while (at < text.size()) {
      std::size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      const std::string line(trim_blanks(std::string_view(text).substr(at, end - at)));
      if (!line.empty()) lines.insert(line);
      at = end + 1;
    }
  }
  std::set<std::string>& seen = lint_seen_[path];
  std::string fresh;
  std::size_t count = 0;
  for (const std::string& line : lines) {
    if (seen.count(line) != 0) continue;
    count += 1;
    if (fresh.size() < 4000) fresh += line.substr(0, 400) + "\n";
  }
  seen = std::move(lines);
  if (count == 0) return {};
  return "\nlint (`" + command + "`) reports " + std::to_string(count) + " new problem" +
         (count == 1 ? "" : "s") + " in " + path + ":\n" + fresh;
}

json LoopRun::record_artifact(const std::string& tool, const json& args) {
  auto checked = check_artifact(tool, args);
  if (!checked) {
    return tool_error(checked.error().code, tool + ": " + checked.error().message,
                      checked.error().hint);
  }
  const std::string kind(artifact_kind_of(tool));
  const std::string folder = engine_.loop_folder(spec_.id);
  const std::string path = folder + "/" + kind + ".md";
  if (auto made = make_private_folders(folder); !made) {
    return tool_error(errc::io, "loopr cannot keep the " + kind + ": " + made.error().message,
                      "this is loopr's fault, not yours; try again");
  }
  {
    const std::string temporary = path + ".tmp";
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << render_artifact_markdown(kind, *checked, spec_.id);
    out.close();
    if (!out || std::rename(temporary.c_str(), path.c_str()) != 0) {
      return tool_error(errc::io, "loopr cannot write " + path,
                        "this is loopr's fault, not yours; try again");
    }
  }
  progress_.artifact = *checked;
  progress_.artifact_path = path;
  progress_.artifact_iteration = progress_.iteration;
  if (!persist("artifact", {{"kind", kind}, {"artifact", *checked}, {"path", path}})) {
    return tool_error(errc::io, "loopr cannot store the " + kind,
                      "this is loopr's fault, not yours");
  }
  engine_.services().publish(
      "loop.artifact",
      {{"loop_id", spec_.id}, {"kind", kind}, {"artifact", *checked}, {"path", path}});
  const std::string next = spec_.type == "plan" ? "it now waits for the person's approval"
                                                : "loopr will carry it out once its checks pass";
  return {{"status", "success"},
          {"ok", true},
          {"output", {{"recorded", true}, {"message", "the " + kind + " is recorded; " + next}}}};
}

json LoopRun::artifact_validation() const {
  const std::string tool(artifact_tool_for(spec_.type));
  if (progress_.artifact_iteration == progress_.iteration && !progress_.artifact.is_null()) {
    return {{"ok", true},
            {"output",
             {{"exit_code", 0},
              {"stdout", "loopr: a valid " + std::string(artifact_kind_of(tool)) +
                             " was recorded in this iteration"}}}};
  }
  return {
      {"ok", true},
      {"output",
       {{"exit_code", 1},
        {"stdout", "loopr: this iteration recorded no " + std::string(artifact_kind_of(tool)) +
                       ". Call " + tool + " with the whole " + std::string(artifact_kind_of(tool)) +
                       " as its arguments; the loop is done when it is recorded."}}}};
}

Result<const ProtectedPaths*> LoopRun::protected_paths() {
  if (spec_.protected_paths.empty()) return nullptr;
  if (!protected_) {
    auto compiled = ProtectedPaths::compile(spec_.protected_paths);
    if (!compiled) return std::move(compiled).error();
    protected_ = std::move(*compiled);
  }
  return &*protected_;
}

void LoopRun::note_protected_event(json event) {
  progress_.protected_event_count += 1;
  if (progress_.protected_events.size() < kMaxProtectedEvents) {
    progress_.protected_events.push_back(std::move(event));
  }
}

asio::awaitable<std::optional<std::string>> LoopRun::restore_protected_files() {
  auto guard = protected_paths();
  if (!guard) {
    finish(LoopStatus::failed, guard.error().message);
    co_return std::nullopt;
  }
  if (*guard == nullptr) co_return std::string();
  const WorktreeInfo info = worktree_;
  const std::string base = spec_.base_commit;
  const ProtectedPaths patterns = **guard;  // a copy for the git thread
  auto git_work = [=] {
    const ProtectedGuard protects{
        [&patterns](const std::string& path) { return patterns.protecting(path).has_value(); },
        [&patterns](const std::string& folder) { return patterns.may_protect_beneath(folder); }};
    return restore_protected(info, base, protects);
  };
  auto restored = co_await offload(engine_.git_pool(), git_work);
  if (stopping_) co_return std::nullopt;
  if (!restored) {
    // Fail closed: a validation with protected files changed proves nothing.
    finish(LoopStatus::failed,
           "cannot put back its protected files ([validation] protected_paths): " +
               restored.error().message);
    co_return std::nullopt;
  }
  if (restored->empty()) co_return std::string();
  constexpr std::size_t kNamed = 10;
  json paths = json::array();
  std::string named;
  for (std::size_t i = 0; i < restored->size(); ++i) {
    const ProtectedChange& change = (*restored)[i];
    paths.push_back({{"path", change.path}, {"change", change.change}});
    note_protected_event({{"iteration", progress_.iteration},
                          {"action", "put back"},
                          {"path", change.path},
                          {"change", change.change}});
    if (i < kNamed) named += (named.empty() ? "" : ", ") + change.path + " (" + change.change + ")";
  }
  if (restored->size() > kNamed) {
    named += " and " + std::to_string(restored->size() - kNamed) + " more";
  }
  std::string message =
      "loopr put back " + std::to_string(restored->size()) +
      " protected file(s) this iteration changed, as the loop's base commit has them: " + named +
      ". They are protected by [validation] protected_paths: the validation runs them as they "
      "were, so change the code they check instead.";
  progress_.protected_note += (progress_.protected_note.empty() ? "" : " ") + message;
  spdlog::info("loop {}: put back {} protected file(s)", spec_.id, restored->size());
  if (!persist("protected_restored", {{"paths", paths}})) co_return std::nullopt;
  co_return message;
}

asio::awaitable<LoopRun::Phase> LoopRun::commit() {
  if (!spec_.protected_paths.empty() && !co_await restore_protected_files()) {
    co_return Phase::done;
  }
  if (is_final(status_)) co_return Phase::done;
  const WorktreeInfo info = worktree_;
  const std::string message =
      "loopr: loop " + spec_.id + " iteration " + std::to_string(progress_.iteration) +
      (progress_.complete_summary.empty() ? std::string()
                                          : "\n\n" + progress_.complete_summary.substr(0, 4000));
  const CommitScope scope{progress_.kept_out, progress_.written_kept_out};
  auto git_work = [=] { return commit_all(info, message, scope); };
  auto committed = co_await offload(engine_.git_pool(), git_work);
  if (stopping_) co_return Phase::done;
  if (!committed) {
    co_return finish(LoopStatus::failed,
                     "cannot commit its worktree: " + committed.error().message);
  }
  iteration_changed_ = committed->changed;
  last_commit_ = committed->commit;
  progress_.written_kept_out.clear();
  json step = {{"commit", committed->commit}, {"changed", committed->changed}};
  if (!progress_.kept_out.empty()) {
    // What the daemon's own commands made, left out of this commit.
    constexpr std::size_t kListed = 20;
    json listed = json::array();
    for (std::size_t i = 0; i < progress_.kept_out.size() && i < kListed; ++i)
      listed.push_back(progress_.kept_out[i]);
    step["left_out"] = std::move(listed);
    step["left_out_count"] = progress_.kept_out.size();
  }
  if (!persist("committed", step)) co_return Phase::done;
  co_return Phase::validate;
}

asio::awaitable<LoopRun::Phase> LoopRun::validate() {
  const auto& services = engine_.services();
  if (progress_.handoff.is_object()) co_return handed_off();
  const bool document_loop = !artifact_tool_for(spec_.type).empty();
  const std::string command =
      spec_.validate.empty() && document_loop
          ? "(loopr checks the " + std::string(artifact_kind_of(artifact_tool_for(spec_.type))) +
                ")"
          : spec_.validate;
  json started_step = {{"command", command}};
  if (spec_.validate_timeout_s > 0) started_step["timeout_s"] = spec_.validate_timeout_s;
  if (!persist("validation_started", started_step)) co_return Phase::done;
  services.publish(
      "loop.iteration",
      {{"loop_id", spec_.id}, {"iteration", progress_.iteration}, {"phase", "validating"}});
  const auto started = Clock::now();
  json outcome = artifact_validation();
  const bool artifact_ok = outcome["output"].value("exit_code", 1) == 0;
  json by_products;
  if (!document_loop || (artifact_ok && !spec_.validate.empty())) {
    validating_command_ = spec_.validate;
    validating_since_ms_ = now_ms();
    outcome = co_await services.tools.run_validation(
        spec_.id, spec_.worktree, spec_.validate,
        static_cast<std::uint64_t>(spec_.validate_timeout_s) * 1000);
    validating_since_ms_ = 0;
    if (stopping_) co_return Phase::done;
    by_products = co_await settle_by_products();
  }
  if (stopping_) co_return Phase::done;
  if (cancel_requested_) co_return finish(LoopStatus::cancelled, "cancelled by the user");
  const auto duration =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count();
  const json output = outcome.value("output", json());
  // A timed-out command's result keeps what it printed until it was stopped.
  const bool timed_out = outcome.value("status", "") == "timeout" ||
                         (output.is_object() && output.value("timed_out", false));
  const bool ran = (outcome.value("ok", false) || timed_out) && output.is_object();
  const json exit_code = ran ? output.value("exit_code", json()) : json();
  const bool passed =
      ran && !timed_out && exit_code.is_number_integer() && exit_code.get<int>() == 0;
  auto timeout_note = [&] {
    return "[the validation command was stopped after " + std::to_string(duration / 1000) +
           " s, its time limit; above is what it printed until then. " +
           (spec_.validate_timeout_s > 0
                ? "This loop's limit is --validate-timeout " +
                      std::to_string(spec_.validate_timeout_s) + "."
                : std::string("The limit is timeout_ms of [tools.validate] in catalog.toml.")) +
           "]";
  };
  std::string text;
  if (ran && output.contains("output") && output["output"].is_string()) {
    // stdout and stderr in the order written, as a terminal shows them.
    text = output["output"].get<std::string>();
    if (timed_out) text += "\n" + timeout_note();
  } else if (ran) {
    text = text_member(output, "stdout");
    const std::string err = text_member(output, "stderr");
    if (!err.empty()) text += (text.empty() ? "" : "\n") + err;
    if (timed_out) text += "\n" + timeout_note();
  } else {
    const json error = outcome.value("error", json::object());
    text = "the validation could not run: " + text_member(error, "message");
  }
  const json whole_bytes = ran ? output.value("output_bytes", json()) : json();
  text =
      head_and_tail(text, whole_bytes.is_number_unsigned() ? whole_bytes.get<std::uint64_t>() : 0);
  // What loopr itself did to the command, after its output (never cut): a
  // limit that stopped it and each connection the egress proxy refused,
  // with the key that changes it (tool_router.cpp's `limit`,
  // `egress_refused`), so the model and the person see why.
  {
    const json error = outcome.value("error", json::object());
    const json& facts =
        ran ? output
            : (error.is_object() && error.contains("details") ? error["details"] : json::object());
    const json limit = facts.is_object() ? facts.value("limit", json()) : json();
    const std::string limit_name = limit.is_object() ? text_member(limit, "name") : "";
    const std::string limit_message = limit.is_object() ? text_member(limit, "message") : "";
    // (A command that did not run has it in its error's message already.)
    if (!limit_name.empty() && limit_name != "output" && !(timed_out && limit_name == "time") &&
        text.find(limit_message) == std::string::npos) {
      text += "\n[loopr: " + limit_message + "]";
    }
    const json refused = facts.is_object() ? facts.value("egress_refused", json()) : json();
    if (refused.is_array()) {
      constexpr std::size_t kRefusalsSaid = 5;
      for (std::size_t i = 0; i < refused.size() && i < kRefusalsSaid; ++i) {
        if (refused[i].is_object()) text += "\n[loopr: " + text_member(refused[i], "message") + "]";
      }
      if (refused.size() > kRefusalsSaid) {
        text += "\n[loopr: and " + std::to_string(refused.size() - kRefusalsSaid) +
                " more connections refused by the egress proxy]";
      }
    }
  }

  // Everything that follows from this validation is decided now and stored
  // with it, so a restart does the same.
  const bool previous_failed =
      progress_.last_validation.is_object() && !progress_.last_validation.value("passed", true);
  const std::string previous_output =
      previous_failed ? text_member(progress_.last_validation, "output") : std::string();
  json validation = {
      {"passed", passed}, {"exit_code", exit_code}, {"output", text}, {"duration_ms", duration}};
  // Who ran it: a worker's id ([cluster], docs/cluster.md) or "local".
  validation["worker"] = outcome.value("worker", std::string("local"));
  if (!by_products.is_null()) validation["by_products"] = by_products;
  if (!progress_.protected_note.empty()) validation["protected_note"] = progress_.protected_note;
  // The iteration's summary keeps no output: the progress row is rewritten
  // with every journal step, and the output is in the `validation` step.
  const json summary = {{"passed", passed}, {"exit_code", exit_code}, {"duration_ms", duration}};
  progress_.last_validation = {{"iteration", progress_.iteration},
                               {"passed", passed},
                               {"exit_code", exit_code},
                               {"output", text}};
  progress_.iterations.push_back(iteration_summary());
  progress_.iterations.back()["validation"] = summary;
  std::string note_line =
      "Iteration " + std::to_string(progress_.iteration) + ": " +
      (iteration_changed_ ? "changed files" : "changed nothing") + "; validation " +
      (passed ? std::string("passed")
              : "failed" + (exit_code.is_number_integer() ? " (exit " + exit_code.dump() + ")"
                                                          : std::string()));
  if (!progress_.protected_note.empty()) note_line += "; loopr put back protected files";
  if (progress_.complete_task_called) {
    note_line += "; the model said: " + progress_.complete_summary.substr(0, 500);
  }
  progress_.notes.push_back(note_line);
  if (passed) {
    progress_.next = NextStep::complete;
    progress_.next_reason = "validation passed in iteration " + std::to_string(progress_.iteration);
    progress_.feedback.clear();
  } else {
    progress_.feedback = "`" + command + "` " +
                         (exit_code.is_number_integer() ? "exited with " + exit_code.dump()
                                                        : std::string("did not run")) +
                         ":\n" + text;
    if (!progress_.protected_note.empty()) {
      progress_.feedback += "\n\n[loopr: " + progress_.protected_note + "]";
    }
    progress_.next = NextStep::new_iteration;
    if (unchanged_iteration(iteration_changed_, text, previous_output, previous_failed)) {
      progress_.unchanged += 1;
    } else {
      progress_.unchanged = 0;
    }
    const auto& health = services.settings.loop_health;
    if (progress_.unchanged >= health.unchanged_iteration_limit) {
      const std::string evidence = std::to_string(progress_.unchanged + 1) +
                                   " iterations in a row changed nothing and failed validation "
                                   "the same way";
      progress_.unchanged = 0;
      progress_.strikes += 1;
      switch (action_for_strike(progress_.strikes)) {
        case HealthAction::note:
          progress_.pending_note = evidence + ". Try a different approach.";
          break;
        case HealthAction::fresh_context:
          progress_.notes.clear();
          progress_.pending_note =
              evidence +
              ". The progress notes were dropped for a fresh start; take a different "
              "approach.";
          break;
        case HealthAction::stop:
          progress_.next = NextStep::stuck;
          progress_.next_reason =
              evidence + " (after a note and a fresh context); last output: " + text.substr(0, 400);
          break;
      }
    }
    if (progress_.next == NextStep::new_iteration &&
        progress_.iteration - progress_.iteration_base >= spec_.max_iterations) {
      progress_.next = NextStep::max_iterations;
      progress_.next_reason = "max_iterations: " + std::to_string(spec_.max_iterations) +
                              " iterations without passing validation; last output:\n" + text;
    }
  }
  if (!persist("validation", validation)) co_return Phase::done;
  services.publish("loop.iteration", {{"loop_id", spec_.id},
                                      {"worktree", spec_.worktree},
                                      {"iteration", progress_.iteration},
                                      {"phase", "validated"},
                                      {"validation", validation}});
  co_return Phase::decide;
}

asio::awaitable<json> LoopRun::settle_by_products() {
  const WorktreeInfo info = worktree_;
  std::vector<std::string> kept_out = progress_.kept_out;
  auto git_work =
      [info, kept_out]() mutable -> Result<std::pair<DaemonChanges, std::vector<std::string>>> {
    auto settled = settle_daemon_changes(info, kept_out);
    if (!settled) return std::move(settled).error();
    return std::make_pair(std::move(*settled), std::move(kept_out));
  };
  auto settled = co_await offload(engine_.git_pool(), git_work);
  if (!settled) {
    spdlog::warn("loop {}: cannot sort out what a daemon command changed in {}: {}", spec_.id,
                 spec_.worktree, settled.error().message);
    co_return json{{"error", settled.error().message}};
  }
  const DaemonChanges& changes = settled->first;
  progress_.kept_out = std::move(settled->second);
  if (changes.restored.empty() && changes.kept_out.empty() && changes.not_listed == 0) {
    co_return json();
  }
  constexpr std::size_t kListed = 50;
  auto listed = [](const std::vector<std::string>& paths) {
    json out = json::array();
    for (std::size_t i = 0; i < paths.size() && i < kListed; ++i)
      out.push_back(paths[i]);
    return out;
  };
  json summary = {{"restored", listed(changes.restored)},
                  {"restored_count", changes.restored.size()},
                  {"kept_out", listed(changes.kept_out)},
                  {"kept_out_count", changes.kept_out.size()}};
  if (changes.not_listed > 0) summary["not_kept_out"] = changes.not_listed;
  co_return summary;
}

json LoopRun::iteration_summary() const {
  return {{"iteration", progress_.iteration},
          {"started_at_ms", progress_.started_at_ms},
          {"ended_at_ms", now_ms()},
          {"model_turns", progress_.turns_this_iteration},
          {"tool_calls", progress_.calls_this_iteration},
          {"commit", last_commit_},
          {"changed", iteration_changed_}};
}

LoopRun::Phase LoopRun::handed_off() {
  // The model did not say the work is done: nothing to validate. The next
  // iteration starts from the handoff note and the committed worktree.
  const json& handoff = progress_.handoff;
  progress_.iterations.push_back(iteration_summary());
  progress_.iterations.back()["handoff"] = handoff;
  progress_.iterations.back()["validation"] = nullptr;
  progress_.notes.push_back("Iteration " + std::to_string(progress_.iteration) + ": " +
                            (iteration_changed_ ? "changed files" : "changed nothing") +
                            "; handed off (" + handoff.value("why", std::string()) +
                            "), not validated");
  progress_.next = NextStep::new_iteration;
  if (progress_.iteration - progress_.iteration_base >= spec_.max_iterations) {
    progress_.next = NextStep::max_iterations;
    progress_.next_reason = "max_iterations: " + std::to_string(spec_.max_iterations) +
                            " iterations without passing validation (the last one handed off: " +
                            handoff.value("why", std::string()) + ")";
  }
  if (!persist("handed_off", handoff)) return Phase::done;
  engine_.services().publish("loop.iteration", {{"loop_id", spec_.id},
                                                {"worktree", spec_.worktree},
                                                {"iteration", progress_.iteration},
                                                {"phase", "handed_off"},
                                                {"handoff", handoff}});
  return Phase::decide;
}

LoopRun::Phase LoopRun::decide() {
  switch (progress_.next) {
    case NextStep::complete:
      return finish(engine_.status_after_own_work(spec_), progress_.next_reason);
    case NextStep::max_iterations:
      return finish(LoopStatus::failed, progress_.next_reason);
    case NextStep::stuck:
      return finish(LoopStatus::stuck, progress_.next_reason);
    case NextStep::new_iteration:
      return Phase::new_iteration;
    case NextStep::none:
      break;
  }
  if (progress_.iteration - progress_.iteration_base >= spec_.max_iterations) {
    return finish(LoopStatus::failed, "max_iterations: " + std::to_string(spec_.max_iterations) +
                                          " iterations without passing validation");
  }
  return Phase::new_iteration;
}

}  // namespace loopr::loops
