#include "loops/loop_engine.hpp"

#include <limits.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

#include "loops/git/git_support.hpp"
#include "loops/git/worktree_changes.hpp"
#include "loops/git/worktrees.hpp"
#include "loops/loop_run.hpp"
#include "loops/method_errors.hpp"
#include "loops/offload.hpp"
#include "proto/control_messages.hpp"
#include "repos/repo_settings.hpp"

namespace loopr::loops {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxTaskBytes = 256 * 1024;
constexpr std::size_t kMaxTranscriptSteps = 5000;

Result<std::string> real_folder(const std::string& path, const char* what) {
  if (path.empty() || path.front() != '/') {
    return invalid(std::string(what) + " must be an absolute path, got '" + path + "'");
  }
  char resolved[PATH_MAX];
  struct stat info {};
  if (::realpath(path.c_str(), resolved) == nullptr || ::stat(resolved, &info) != 0 ||
      !S_ISDIR(info.st_mode)) {
    return make_error(errc::not_found, std::string(what) + " '" + path + "' is not a folder",
                      "pass the folder of a git repository");
  }
  return std::string(resolved);
}

bool is_known_type(const std::string& type) {
  for (auto known : config::kLoopTypes)
    if (type == known) return true;
  return false;
}

}  // namespace

LoopEngine::LoopEngine(LoopEngineServices services)
    : services_(std::move(services)), provider_slots_(services_.io) {}

LoopEngine::~LoopEngine() {
  git_pool_.join();
}

Result<void> LoopEngine::start() {
  auto rows = services_.store.all_loops();
  if (!rows) return std::move(rows).error();
  for (store::LoopRow& row : *rows) {
    next_seq_ = std::max(next_seq_, row.seq + 1);
    auto spec = LoopSpec::from_json(row.spec);
    if (!spec) {
      spdlog::error("loop {} in the store cannot be read ({}); it is left as it is", row.id,
                    spec.error().message);
      continue;
    }
    spec->seq = row.seq;
    LoopProgress progress = LoopProgress::from_json(row.state);
    auto run =
        std::make_shared<LoopRun>(*this, std::move(row), std::move(*spec), std::move(progress));
    tree_.add(run);
    if (runs_model(run->status())) {
      spdlog::info("loop {} resumes ({})", run->id(), to_string(run->status()));
      launch(run);
    }
  }
  // Queued loops start in the scheduler's order, waiting parents go on.
  request_reconcile();
  start_worktree_tick();
  return {};
}

void LoopEngine::start_worktree_tick() {
  const std::int64_t keep_s = services_.settings.worktrees.keep_finished_s;
  if (keep_s < 0) return;
  // Often enough that a worktree goes within half its keeping time (at
  // most a minute late), seldom enough to cost nothing on an idle daemon.
  const auto interval = std::chrono::seconds(std::clamp<std::int64_t>(keep_s / 2, 1, 60));
  worktree_tick_ = std::make_unique<asio::steady_timer>(services_.io);
  ++active_;
  asio::co_spawn(
      services_.io,
      [this, interval]() -> asio::awaitable<void> {
        while (!stopping_) {
          worktree_tick_->expires_after(interval);
          std::error_code ignored;
          co_await worktree_tick_->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
          if (!stopping_) request_reconcile();
        }
      },
      [this](std::exception_ptr) { --active_; });
}

void LoopEngine::launch(const std::shared_ptr<LoopRun>& run) {
  ++active_;
  asio::co_spawn(services_.io, run->run(), [this](std::exception_ptr) { --active_; });
}

asio::awaitable<void> LoopEngine::stop() {
  stopping_ = true;
  if (worktree_tick_) worktree_tick_->cancel();
  for (const auto& run : tree_.in_creation_order(true))
    run->stop();
  asio::steady_timer tick(services_.io);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (active_ > 0 && std::chrono::steady_clock::now() < deadline) {
    tick.expires_after(std::chrono::milliseconds(5));
    std::error_code ignored;
    co_await tick.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
}

std::size_t LoopEngine::running_count() const {
  return tree_.count_with_status(LoopStatus::running);
}

Result<std::shared_ptr<LoopRun>> LoopEngine::find(const std::string& id) const {
  auto run = tree_.run_of(id);
  if (!run) {
    return with_rpc_code(make_error(errc::not_found, "no loop '" + id.substr(0, 100) + "'",
                                    "list the loops with `looprctl loops`"),
                         proto::ControlErrorCode::loop_not_found);
  }
  return run;
}

Result<LoopSpec> LoopEngine::spec_from_params(const proto::LoopSpecParams& params,
                                              const std::string& type, const std::string& task) {
  const auto& settings = services_.settings;
  if (task.find_first_not_of(" \t\r\n") == std::string::npos) {
    return invalid(type == "plan" ? "loop.create_plan needs `description`: the change to plan"
                                  : "loop.create needs `task`: what the loop should do");
  }
  if (task.size() > kMaxTaskBytes) return invalid("the task is over 256 KiB");
  auto repo = real_folder(params.repo, "repo");
  if (!repo) return std::move(repo).error();
  const std::string& base = params.base;

  const std::string& provider_name = params.provider ? *params.provider : settings.llm.provider;
  if (!settings.providers.count(provider_name)) {
    std::string names;
    for (const auto& [name, p] : settings.providers)
      names += (names.empty() ? "" : ", ") + name;
    return invalid("no provider '" + provider_name.substr(0, 64) + "'",
                   "providers in loopr.toml: " + names);
  }
  auto provider = services_.provider(provider_name);
  if (!provider) return std::move(provider).error();
  const std::string& model = params.model ? *params.model : (*provider)->model();

  const config::LoopSettings& loop_settings = settings.loops.at(type);
  const std::int64_t max_iterations = params.max_iterations.value_or(loop_settings.max_iterations);
  // The repository's own commands and worktree needs (repos/): a file of
  // the repository that is not honoured (untrusted, changed, invalid) where
  // it would decide refuses the loop, saying why.
  auto top = repos::repository_of(*repo);
  if (!top) return std::move(top).error();
  auto repo_settings = repos::resolve(settings, services_.store, *top);
  if (!repo_settings) return std::move(repo_settings).error();
  if (auto refused = repo_settings->refusal()) {
    return with_rpc_code(std::move(*refused), proto::ControlErrorCode::unauthorized);
  }
  const bool document_loop = type != "code";
  const bool repo_validates =
      repo_settings->sources.at("commands.validate") != repos::Source::daemon_default;
  const std::string& validate =
      params.validate ? *params.validate
      : (loop_settings.validation_command.empty() || repo_validates) && !document_loop
          ? repo_settings->commands.validate
          : loop_settings.validation_command;
  if (!document_loop && validate.find_first_not_of(" \t\r\n") == std::string::npos) {
    return invalid("no validation command for this loop",
                   "pass one (looprctl loop run --validate \"make test\"), or set [loops." + type +
                       "] validation_command or [commands] validate in loopr.toml, or validate "
                       "for this repository (its [[repositories]] entry, or its trusted "
                       ".loopr/loopr.toml)");
  }
  if (params.include_uncommitted && !base.empty()) {
    return invalid("include_uncommitted starts from the checkout as it is, so it takes no `base`",
                   "drop --base, or commit the changes and pass --base");
  }
  const std::int64_t validate_timeout_s = params.validate_timeout_s.value_or(0);
  if (params.validate_timeout_s) {
    // It can only lower the validation tool's own limit: a higher one would
    // be cut to that limit by the router while the loop's notes quoted it.
    const config::ToolSpec* validate_tool = services_.tools.validation_tool();
    if (validate_tool != nullptr && validate_timeout_s * 1000 > validate_tool->timeout_ms) {
      const std::int64_t limit_ms = validate_tool->timeout_ms;
      const std::string limit_text = limit_ms % 1000 == 0 ? std::to_string(limit_ms / 1000) + " s"
                                                          : std::to_string(limit_ms) + " ms";
      return invalid("validate_timeout_s " + std::to_string(validate_timeout_s) + " is above the " +
                         validate_tool->name + " tool's own limit of " + limit_text,
                     (limit_ms >= 1000 ? "pass at most " + std::to_string(limit_ms / 1000) + ", or "
                                       : std::string()) +
                         "raise timeout_ms of [tools." + validate_tool->name + "] in catalog.toml");
    }
  }
  auto limits = merge_limits(settings.budgets.loop, params.budget);
  if (!limits) return std::move(limits).error();
  auto plan_limits = merge_limits(settings.budgets.plan, params.plan_budget);
  if (!plan_limits) return std::move(plan_limits).error();
  const bool wants_usd =
      limits->usd || settings.budgets.global.usd || (type == "plan" && plan_limits->usd);
  if (wants_usd && !settings.prices.count(model)) {
    return invalid("a USD budget needs the price of model '" + model.substr(0, 100) + "'",
                   "add [prices.\"" + model +
                       "\"] with input_usd_per_mtok and output_usd_per_mtok to loopr.toml, "
                       "or budget tokens instead");
  }
  if (settings.worktree_folder().empty()) {
    return invalid("loops need a worktree root",
                   "set [sandbox] worktree_roots in loopr.toml to the folders that hold your "
                   "repositories");
  }
  LoopSpec spec;
  spec.type = type;
  spec.task = task;
  spec.repo = *repo;
  spec.base = base;
  spec.provider = provider_name;
  spec.model = model;
  spec.validate = validate;
  spec.prompt_template = loop_settings.prompt_template;
  spec.tools = loop_settings.tools;
  spec.max_iterations = max_iterations;
  spec.include_uncommitted = params.include_uncommitted;
  spec.validate_timeout_s = validate_timeout_s;
  spec.repo_settings = true;
  spec.commands = repo_settings->commands;
  spec.prep = repo_settings->prep;
  spec.protected_paths = repo_settings->protected_paths;
  spec.budget = *limits;
  if (type == "plan") spec.plan_budget = *plan_limits;
  return spec;
}

asio::awaitable<Result<json>> LoopEngine::create(proto::LoopCreateParams params) {
  if (stopping_) co_return invalid_state("looprd is shutting down");
  const std::string& type = params.type;
  if (!is_known_type(type)) {
    co_return invalid("unknown loop type '" + type.substr(0, 64) + "'",
                      "loop types: plan, spec, phase, code");
  }
  if (type == "plan") {
    co_return invalid("a plan is made with loop.create_plan",
                      "looprctl plan \"DESCRIPTION\" --repo DIR");
  }
  if (type != "code") {
    co_return invalid("a " + type + " loop is started by a plan, not on its own",
                      "run a code loop: type \"code\", or make a plan: looprctl plan");
  }
  auto spec = spec_from_params(params.spec, type, params.task);
  if (!spec) co_return std::move(spec).error();
  if (auto read = co_await read_checkout(*spec); !read) co_return std::move(read).error();
  co_return co_await start_now_or_queue(std::move(*spec));
}

asio::awaitable<Result<void>> LoopEngine::read_checkout(LoopSpec& spec) {
  const std::string repo = spec.repo;
  const bool snapshot = spec.include_uncommitted;
  const bool from_head = spec.base.empty();
  struct Checkout {
    std::string branch;
    std::vector<std::string> uncommitted;
    std::string snapshot;
  };
  auto git_work = [=]() -> Result<Checkout> {
    Checkout checkout;
    checkout.branch = detail::current_branch(repo);
    if (!from_head) return checkout;
    auto paths = uncommitted_paths(repo);
    if (!paths) return std::move(paths).error();
    checkout.uncommitted = std::move(*paths);
    if (snapshot && !checkout.uncommitted.empty()) {
      auto made =
          snapshot_uncommitted(repo, "loopr: uncommitted changes of " + repo + " (" +
                                         std::to_string(checkout.uncommitted.size()) + " paths)");
      if (!made) return std::move(made).error();
      checkout.snapshot = std::move(*made);
    }
    return checkout;
  };
  auto checkout = co_await offload(git_pool_, git_work);
  if (!checkout) co_return std::move(checkout).error();
  spec.user_branch = checkout->branch;
  if (!checkout->snapshot.empty()) spec.base = checkout->snapshot;
  spec.uncommitted_paths = std::move(checkout->uncommitted);
  if (spec.uncommitted_paths.size() > kMaxUncommittedPaths) {
    spec.uncommitted_paths.resize(kMaxUncommittedPaths);
  }
  co_return Result<void>{};
}

Result<json> LoopEngine::list(const proto::LoopListParams& params) const {
  const std::string& status = params.status;
  if (!status.empty() && !parse_loop_status(status)) {
    return invalid("unknown status '" + status.substr(0, 64) + "'",
                   "statuses: queued, running, paused, awaiting_approval, waiting, completed, "
                   "failed, cancelled, budget_exhausted, stuck, rejected, invalidated, blocked");
  }
  const std::string& type = params.type;
  const bool include_deleted = params.include_deleted;
  json loops = json::array();
  for (const auto& run : tree_.in_creation_order(true)) {
    if (!status.empty() && to_string(run->status()) != status) continue;
    if (!type.empty() && run->spec().type != type) continue;
    if (run->progress().deleted && !include_deleted) continue;
    loops.push_back(run->to_json(false));
  }
  return json{{"loops", std::move(loops)}};
}

Result<json> LoopEngine::get(const std::string& id) const {
  auto run = find(id);
  if (!run) return std::move(run).error();
  return json{{"loop", (*run)->to_json(true)}};
}

Result<json> LoopEngine::transcript(const proto::LoopTranscriptParams& params) const {
  auto run = find(params.id);
  if (!run) return std::move(run).error();
  std::size_t limit = 1000;
  if (params.limit) {
    limit = std::min<std::size_t>(static_cast<std::size_t>(*params.limit), kMaxTranscriptSteps);
  }
  auto steps = services_.store.loop_steps((*run)->id(), params.iteration, params.after, limit + 1);
  if (!steps) return std::move(steps).error();
  const bool more = steps->size() > limit;
  if (more) steps->resize(limit);
  json out = json::array();
  for (const auto& step : *steps) {
    out.push_back({{"id", step.id},
                   {"iteration", step.iteration},
                   {"kind", step.kind},
                   {"data", step.data},
                   {"at_ms", step.at_ms}});
  }
  return json{{"loop_id", (*run)->id()}, {"steps", std::move(out)}, {"more", more}};
}

asio::awaitable<Result<json>> LoopEngine::diff(proto::LoopDiffParams params) {
  auto found = find(params.id);
  if (!found) co_return std::move(found).error();
  const LoopSpec spec = (*found)->spec();
  if (spec.base_commit.empty()) {
    co_return invalid_state("loop " + spec.id + " has not started: it has no branch yet",
                            "it has one once it leaves the queue");
  }
  const bool stat_only = params.stat_only;
  auto git_work = [=]() -> Result<json> {
    auto stat = branch_diff(spec.repo, spec.base_commit, spec.branch, true);
    if (!stat) return std::move(stat).error();
    json result = {
        {"loop_id", spec.id},
        {"from", spec.base_commit},
        {"from_branch", !spec.parent_branch.empty()                     ? spec.parent_branch
                        : spec.base.empty() || spec.include_uncommitted ? spec.user_branch
                                                                        : spec.base},
        {"include_uncommitted", spec.include_uncommitted},
        {"to", spec.branch},
        {"stat", *stat}};
    if (!stat_only) {
      auto full = branch_diff(spec.repo, spec.base_commit, spec.branch, false);
      if (!full) return std::move(full).error();
      result["diff"] = *full;
    }
    return result;
  };
  co_return co_await offload(git_pool_, git_work);
}

Result<json> LoopEngine::export_turns(const std::string& id) const {
  auto run = find(id);
  if (!run) return std::move(run).error();
  json turns = json::array();
  std::int64_t after = 0;
  while (true) {
    auto steps = services_.store.loop_steps((*run)->id(), std::nullopt, after, 1000);
    if (!steps) return std::move(steps).error();
    if (steps->empty()) break;
    for (const auto& step : *steps) {
      if (step.kind == "model_turn" && step.data.contains("turn"))
        turns.push_back(step.data["turn"]);
      after = step.id;
    }
  }
  return json{{"loop_id", (*run)->id()}, {"turns", std::move(turns)}};
}

Result<json> LoopEngine::pause(const std::string& id) {
  auto run = find(id);
  if (!run) return std::move(run).error();
  if (is_final((*run)->status())) {
    return invalid_state("loop " + (*run)->id() + " has ended (" +
                         std::string(to_string((*run)->status())) + ")");
  }
  (*run)->request_pause();
  return json{{"loop", (*run)->to_json(false)}, {"pause_requested", true}};
}

Result<json> LoopEngine::resume(const std::string& id) {
  auto run = find(id);
  if (!run) return std::move(run).error();
  if (!(*run)->request_resume()) {
    return invalid_state("loop " + (*run)->id() + " is not paused (" +
                         std::string(to_string((*run)->status())) + ")");
  }
  return json{{"loop", (*run)->to_json(false)}};
}

Result<json> LoopEngine::cancel(const std::string& id) {
  auto run = find(id);
  if (!run) return std::move(run).error();
  if (is_final((*run)->status())) {
    return invalid_state("loop " + (*run)->id() + " has ended (" +
                         std::string(to_string((*run)->status())) + ")");
  }
  if ((*run)->running()) {
    (*run)->request_cancel();
  } else {
    // Queued, waiting for its children, or awaiting approval: no run to
    // tell, so the status changes here.
    (*run)->set_status(LoopStatus::cancelled, "cancelled by the user");
  }
  cancel_subtree((*run)->id(), "cancelled: " + (*run)->id() + " was cancelled by the user");
  return json{{"loop", (*run)->to_json(false)}, {"cancel_requested", true}};
}

asio::awaitable<Result<json>> LoopEngine::remove(proto::LoopDeleteParams params) {
  auto found = find(params.id);
  if (!found) co_return std::move(found).error();
  std::shared_ptr<LoopRun> run = *found;
  if (!is_final(run->status()) || run->running()) {
    co_return invalid_state("loop " + run->id() + " is " + std::string(to_string(run->status())),
                            "cancel it first: looprctl loop cancel " + run->id());
  }
  const bool remove_worktree_too = params.remove_worktree;
  const bool remove_branch = params.remove_branch;
  bool worktree_removed = false;
  bool branch_removed = false;
  if (remove_worktree_too || remove_branch) {
    const LoopSpec spec = run->spec();
    auto remove = [=]() -> Result<void> {
      auto info = open_worktree(spec.repo, spec.worktree, spec.branch);
      if (!info) {
        WorktreeInfo gone;
        gone.repo = spec.repo;
        gone.path = spec.worktree;
        gone.branch = spec.branch;
        gone.common_dir = spec.repo + "/.git";
        return remove_worktree(gone, remove_branch);
      }
      return remove_worktree(*info, remove_branch);
    };
    auto removed = co_await offload(git_pool_, remove);
    if (!removed) co_return std::move(removed).error();
    worktree_removed = true;
    branch_removed = remove_branch;
  }
  if (auto marked = run->mark_deleted(); !marked) co_return std::move(marked).error();
  co_return json{{"id", run->id()},
                 {"deleted", true},
                 {"worktree_removed", worktree_removed},
                 {"branch_removed", branch_removed}};
}

}  // namespace loopr::loops
