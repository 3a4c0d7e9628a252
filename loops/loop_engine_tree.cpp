// The loop tree (DESIGN.md §8, docs/control-protocol.md "Plans"): how loops
// are named, stored and started, how a loop whose own work is done gets its
// children, how a finished child is merged into its parent, how a parent
// ends, and what the scheduler starts.
//
// The tree is driven level-triggered, like a controller: reconcile_once()
// looks at every loop as the store has it and does what is missing — makes
// children that are not there, merges a completed child that is not merged
// (a merge already made is found by git and recorded), ends a parent whose
// children are all merged, invalidates what an iterate left behind, starts
// what the scheduler allows. Every action is idempotent, so a looprd killed
// between an action and its record does the right thing after a restart:
// nothing runs twice and nothing is forgotten.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>
#include <memory>

#include "common/json_text.hpp"
#include "loops/artifacts.hpp"
#include "loops/child_specs.hpp"
#include "loops/git/merges.hpp"
#include "loops/loop_engine.hpp"
#include "loops/loop_run.hpp"
#include "loops/offload.hpp"

namespace loopr::loops {
namespace {

using nlohmann::json;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

LoopStatus LoopEngine::status_after_own_work(const LoopSpec& spec) const {
  if (spec.type == "plan") return LoopStatus::awaiting_approval;
  if (spec.type == "spec" || spec.type == "phase") return LoopStatus::waiting;
  return LoopStatus::completed;
}

void LoopEngine::status_changed(const LoopRun& run) {
  if (run.spec().type == "plan" && run.status() == LoopStatus::awaiting_approval) {
    const json& artifact = run.progress().artifact;
    services_.publish("plan.awaiting_approval",
                      {{"plan", run.to_json(false)},
                       {"artifact", artifact},
                       {"markdown", render_artifact_markdown("plan", artifact, run.id())},
                       {"path", run.progress().artifact_path}});
  }
  request_reconcile();
}

std::string LoopEngine::loop_folder(const std::string& id) const {
  return services_.state_dir + "/loops/" + id;
}

void LoopEngine::name_new_loop(LoopSpec& spec, const std::string& parent_id, std::int64_t offset) {
  const std::int64_t seq = next_seq_++;
  spec.seq = seq;
  spec.id = parent_id.empty() ? loop_id_for(spec.type, seq)
                              : tree_.next_child_id(parent_id, loop_id_prefix(spec), offset);
  spec.branch = "loop/" + spec.id;
  spec.worktree = services_.settings.worktree_folder() + "/" + spec.id;
}

bool LoopEngine::slot_free_for(const std::string& type) const {
  const auto& limits = services_.settings.scheduler;
  const std::int64_t running = static_cast<std::int64_t>(starting_) + tree_.running_models();
  const std::int64_t of_type = tree_.running_models_of_type(type);
  if (limits.max_running > 0 && running >= limits.max_running) return false;
  const std::int64_t per_type = limits.limit_for(type);
  return per_type <= 0 || of_type < per_type;
}

Result<std::vector<std::shared_ptr<LoopRun>>> LoopEngine::store_new_loops(
    std::vector<LoopSpec> specs, const std::shared_ptr<LoopRun>& parent, LoopStatus status) {
  std::vector<store::Store::NewLoop> rows;
  std::vector<std::string> ids;
  for (const LoopSpec& spec : specs) {
    store::Store::NewLoop entry;
    entry.row.id = spec.id;
    entry.row.seq = spec.seq;
    entry.row.type = spec.type;
    entry.row.parent_id = parent ? parent->id() : std::string();
    entry.row.status = std::string(to_string(status));
    entry.row.spec = spec.to_json();
    entry.row.state = LoopProgress{}.to_json();
    store::LoopStep created;
    created.loop_id = spec.id;
    created.kind = "created";
    created.data = {{"spec", entry.row.spec}};
    entry.first_step = created;
    rows.push_back(std::move(entry));
    ids.push_back(spec.id);
  }
  std::optional<store::LoopStep> parent_step;
  std::optional<store::LoopRow> parent_row;
  if (parent) {
    // The parent's `children` step and its row go in the same transaction.
    parent_step.emplace();
    parent_step->loop_id = parent->id();
    parent_step->iteration = parent->progress().iteration;
    parent_step->kind = "children";
    parent_step->data = {{"ids", ids}, {"generation", parent->progress().generation}};
  }
  auto stored = services_.store.insert_loops(rows, parent_step ? &*parent_step : nullptr, nullptr);
  if (!stored) return std::move(stored).error();
  std::vector<std::shared_ptr<LoopRun>> runs;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    store::LoopRow row = rows[i].row;
    row.created_at_ms = row.updated_at_ms = now_ms();
    auto run =
        std::make_shared<LoopRun>(*this, std::move(row), std::move(specs[i]), LoopProgress{});
    tree_.add(run);
    services_.publish("loop.created", {{"loop", run->to_json(false)}});
    runs.push_back(run);
  }
  if (parent) services_.publish("loop.updated", {{"loop", parent->to_json(false)}});
  return runs;
}

asio::awaitable<Result<WorktreeInfo>> LoopEngine::make_worktree(const LoopSpec& spec) {
  const std::string repo = spec.repo, path = spec.worktree, branch = spec.branch;
  const std::string base = spec.parent_branch.empty() ? spec.base : spec.parent_branch;
  std::string merge_source;
  if (spec.role == "resolver") {
    if (auto child = tree_.run_of(spec.merge_child)) merge_source = child->spec().branch;
  }
  const std::string message = "loopr: merge " + merge_source + " into " + spec.parent_branch +
                              " (conflicts resolved by loop " + spec.id + ")";
  auto added = std::make_shared<bool>(false);
  auto git_work = [=]() -> Result<WorktreeInfo> {
    // After a crash between making the worktree and storing that the loop
    // started, the worktree is there already: use it.
    auto info = open_worktree(repo, path, branch);
    if (!info) {
      info = add_worktree(repo, path, branch, base);
      if (!info) return info;
      *added = true;
    }
    if (!merge_source.empty()) {
      auto in_progress = merge_in_progress(*info);
      if (!in_progress) return std::move(in_progress).error();
      auto merged = is_ancestor(repo, merge_source, branch);
      if (!merged) return std::move(merged).error();
      if (!*in_progress && !*merged) {
        auto started = start_merge(*info, merge_source, message);
        if (!started) return std::move(started).error();
      }
    }
    return info;
  };
  Result<WorktreeInfo> made = co_await offload(git_pool_, git_work);
  if (made && *added) {
    services_.publish("worktree.created", {{"loop_id", spec.id},
                                           {"type", spec.type},
                                           {"repo", repo},
                                           {"worktree", made->path},
                                           {"branch", branch},
                                           {"base_commit", made->base_commit}});
  }
  co_return made;
}

asio::awaitable<Result<json>> LoopEngine::start_now_or_queue(LoopSpec spec) {
  name_new_loop(spec, "");
  const bool now = slot_free_for(spec.type);
  if (now) {
    ++starting_;
    auto made = co_await make_worktree(spec);
    --starting_;
    if (!made) co_return std::move(made).error();
    spec.base_commit = made->base_commit;
    spec.worktree = made->path;
  }
  auto stored = store_new_loops({spec}, nullptr, now ? LoopStatus::running : LoopStatus::queued);
  if (!stored) {
    if (now) {
      const LoopSpec failed = spec;
      auto undo = [=]() -> Result<void> {
        auto info = open_worktree(failed.repo, failed.worktree, failed.branch);
        return info ? remove_worktree(*info, true) : Result<void>{};
      };
      co_await offload(git_pool_, undo);
    }
    co_return std::move(stored).error();
  }
  std::shared_ptr<LoopRun> run = stored->front();
  if (now) {
    spdlog::info("loop {} created in {} on {}", run->id(), run->spec().worktree,
                 run->spec().branch);
    launch(run);
  } else {
    run->progress_for_update().queue_reason = "waiting for a slot";
    spdlog::info("loop {} queued: waiting for a slot", run->id());
    request_reconcile();
  }
  co_return json{{"loop", run->to_json(false)}};
}

asio::awaitable<void> LoopEngine::start_queued(const std::shared_ptr<LoopRun>& run) {
  ++starting_;
  auto made = co_await make_worktree(run->spec());
  --starting_;
  if (stopping_ || run->status() != LoopStatus::queued) co_return;
  if (!made) {
    run->set_status(LoopStatus::failed, "cannot make its worktree: " + made.error().message);
    co_return;
  }
  LoopSpec& spec = run->spec_for_update();
  spec.base_commit = made->base_commit;
  spec.worktree = made->path;
  run->progress_for_update().queue_reason.clear();
  if (!run->set_status(LoopStatus::running,
                       "started on " + spec.branch + " from " +
                           (spec.parent_branch.empty() ? spec.base : spec.parent_branch))) {
    co_return;
  }
  launch(run);
}

void LoopEngine::request_reconcile() {
  if (stopping_) return;
  if (reconciling_) {
    reconcile_again_ = true;
    return;
  }
  reconciling_ = true;
  ++active_;
  asio::co_spawn(services_.io, reconcile_loop(), [this](std::exception_ptr error) {
    --active_;
    reconciling_ = false;
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        spdlog::error("the loop tree stopped with an internal error: {}", e.what());
      }
    }
  });
}

asio::awaitable<void> LoopEngine::reconcile_loop() {
  // Runs after the caller's step is done (the caller may be in the middle
  // of a status change).
  co_await asio::post(services_.io, asio::use_awaitable);
  do {
    reconcile_again_ = false;
    bool changed = true;
    for (int pass = 0; changed && pass < 100 && !stopping_; ++pass)
      changed = co_await reconcile_once();
  } while (reconcile_again_ && !stopping_);
}

asio::awaitable<bool> LoopEngine::reconcile_once() {
  const std::vector<std::shared_ptr<LoopRun>> ordered = tree_.in_creation_order(false);

  // 1. What an iterate left behind (also after a crash in the middle of it).
  for (const auto& run : ordered) {
    if (run->status() == LoopStatus::invalidated || run->parent_id().empty()) continue;
    auto parent = tree_.run_of(run->parent_id());
    if (!parent) continue;
    const bool stale = parent->status() == LoopStatus::invalidated ||
                       run->spec().generation < parent->progress().generation;
    if (stale) {
      co_await stop_and_mark(run, LoopStatus::invalidated,
                             "invalidated: " + parent->id() + " was iterated or re-run");
      co_return true;
    }
  }

  // 2. Completed children not yet merged into their parents.
  for (const auto& run : ordered) {
    if (run->status() != LoopStatus::completed || !run->progress().merged.is_null() ||
        run->parent_id().empty()) {
      continue;
    }
    auto parent = tree_.run_of(run->parent_id());
    if (!parent || parent->status() != LoopStatus::waiting) continue;
    if (co_await merge_child(parent, run)) co_return true;
  }

  // 3. Parents: make children, or end when they have all ended.
  for (const auto& run : ordered) {
    if (run->status() != LoopStatus::waiting) continue;
    if (co_await reconcile_parent(run)) co_return true;
  }

  // 4. Queued loops: their reason, and what the scheduler starts.
  std::vector<ScheduledLoop> ready;
  std::vector<ScheduledLoop> running;
  for (const auto& run : ordered) {
    ScheduledLoop entry{run->id(), run->spec().type, run->spec().root_plan(), run->seq()};
    if (runs_model(run->status())) {
      running.push_back(entry);
    } else if (run->status() == LoopStatus::queued) {
      const std::string unmet = tree_.unmet_dependency(*run);
      std::string reason = unmet.empty() ? "waiting for a slot" : "waiting for " + unmet;
      if (run->progress().queue_reason != reason) {
        run->progress_for_update().queue_reason = reason;
        services_.publish("loop.updated", {{"loop", run->to_json(false)}});
      }
      if (unmet.empty()) ready.push_back(entry);
    }
  }
  for (std::size_t i = 0; i < starting_; ++i)
    running.push_back(ScheduledLoop{"", "", "", 0});
  bool started = false;
  for (const std::string& id : pick_loops_to_start(ready, running, services_.settings.scheduler)) {
    auto run = tree_.run_of(id);
    if (!run || run->status() != LoopStatus::queued) continue;
    co_await start_queued(run);
    started = true;
  }

  // 5. Worktrees of finished trees, after [worktrees] keep_finished_s.
  if (services_.settings.worktrees.keep_finished_s >= 0) {
    co_await remove_finished_worktrees(false, false, nullptr, nullptr);
  }
  co_return started;
}

bool LoopEngine::make_children(const std::shared_ptr<LoopRun>& parent) {
  const LoopSpec& ps = parent->spec();
  std::vector<LoopSpec> specs = children_from_artifact(
      ps, parent->progress(), services_.settings,
      [&](LoopSpec& spec, std::int64_t offset) { name_new_loop(spec, ps.id, offset); });
  if (specs.empty()) {
    parent->set_status(LoopStatus::failed, "its " + ps.type + " has nothing to carry out");
    return true;
  }
  auto stored = store_new_loops(std::move(specs), parent, LoopStatus::queued);
  if (!stored) {
    spdlog::error("loop {}: cannot store its children: {}", ps.id, stored.error().message);
    parent->set_status(LoopStatus::failed, "cannot store its children: " + stored.error().message);
    return true;
  }
  spdlog::info("loop {}: {} children made", ps.id, stored->size());
  return true;
}

asio::awaitable<bool> LoopEngine::reconcile_parent(const std::shared_ptr<LoopRun>& parent) {
  auto children = tree_.children_of(parent->id(), true);
  if (children.empty()) {
    // Where a re-run of this loop goes back to, stored before any child
    // exists (a plan's is its approval's commit).
    if (parent->progress().children_base.empty()) {
      const LoopSpec spec = parent->spec();
      auto git_work = [=] { return branch_head(spec.repo, spec.branch); };
      auto head = co_await offload(git_pool_, git_work);
      if (stopping_ || parent->status() != LoopStatus::waiting) co_return false;
      if (!head) {
        co_await end_parent(
            parent, LoopStatus::failed,
            "cannot read its branch before making its children: " + head.error().message);
        co_return true;
      }
      parent->progress_for_update().children_base = *head;
      if (!parent->record("children_base", {{"commit", *head}})) co_return false;
    }
    co_return make_children(parent);
  }
  for (const auto& child : children) {
    if (!is_final(child->status()) || child->status() == LoopStatus::completed) continue;
    if (child->spec().role == "resolver") {
      std::string files;
      for (const json& file : child->spec().input.value("files", json::array()))
        if (file.is_string()) files += (files.empty() ? "" : ", ") + file.get<std::string>();
      const std::string reason = "merging " + child->spec().merge_child + " conflicts in " + files +
                                 "; the resolving loop " + child->id() + " ended " +
                                 std::string(to_string(child->status())) + ": " +
                                 child->progress().status_reason.substr(0, 300);
      co_await end_parent(parent, LoopStatus::blocked, reason);
    } else {
      co_await end_parent(parent, LoopStatus::failed,
                          child->id() + " ended " + std::string(to_string(child->status())) + ": " +
                              child->progress().status_reason.substr(0, 300));
    }
    co_return true;
  }
  for (const auto& child : children) {
    if (child->status() != LoopStatus::completed || child->progress().merged.is_null()) {
      co_return false;
    }
  }
  parent->progress_for_update().finished_at_ms = now_ms();
  parent->set_status(LoopStatus::completed, "all " + std::to_string(children.size()) +
                                                " children completed and merged into " +
                                                parent->spec().branch);
  if (parent->spec().type == "plan") {
    services_.publish("plan.completed", {{"plan", parent->to_json(false)}});
  }
  co_return true;
}

asio::awaitable<bool> LoopEngine::merge_child(const std::shared_ptr<LoopRun>& parent,
                                              const std::shared_ptr<LoopRun>& child) {
  // A child whose merge conflicted waits for its resolver instead.
  for (const auto& sibling : tree_.children_of(parent->id(), true)) {
    if (sibling->spec().role == "resolver" && sibling->spec().merge_child == child->id()) {
      if (sibling->status() == LoopStatus::completed && !sibling->progress().merged.is_null()) {
        child->progress_for_update().merged = {
            {"into", parent->spec().branch},
            {"commit", text_member(sibling->progress().merged, "commit")},
            {"via", sibling->id()}};
        child->record("merged", child->progress().merged);
        co_return true;
      }
      co_return false;
    }
  }
  const LoopSpec parent_spec = parent->spec();
  const LoopSpec child_spec = child->spec();
  std::string what = child_spec.type;
  if (child_spec.input.is_object() && !text_member(child_spec.input, "name").empty()) {
    what += " " + text_member(child_spec.input, "name");
  }
  const std::string message =
      "loopr: merge loop " + child_spec.id + " (" + what + ") into " + parent_spec.id;
  auto git_work = [=]() -> Result<MergeOutcome> {
    auto info = open_worktree(parent_spec.repo, parent_spec.worktree, parent_spec.branch);
    if (!info) return std::move(info).error();
    return merge_branch(*info, child_spec.branch, message);
  };
  auto merged = co_await offload(git_pool_, git_work);
  if (stopping_ || parent->status() != LoopStatus::waiting) co_return false;
  if (!merged) {
    co_await end_parent(parent, LoopStatus::blocked,
                        "cannot merge " + child_spec.id + ": " + merged.error().message);
    co_return true;
  }
  if (merged->merged || merged->already_merged) {
    json record = {{"into", parent_spec.branch}, {"commit", merged->commit}};
    child->progress_for_update().merged = record;
    child->progress_for_update().finished_at_ms = now_ms();
    child->record("merged", record);
    parent->record(
        "merged",
        {{"child", child_spec.id}, {"into", parent_spec.branch}, {"commit", merged->commit}});
    services_.publish("loop.merged", {{"loop_id", child_spec.id},
                                      {"plan_id", child_spec.plan_id},
                                      {"into", parent_spec.branch},
                                      {"commit", merged->commit}});
    spdlog::info("loop {} merged into {} at {}", child_spec.id, parent_spec.branch, merged->commit);
    co_return true;
  }
  // A conflict. A resolver's own merge that conflicts is not resolved again.
  json files = merged->conflicts;
  if (child_spec.role == "resolver") {
    co_await end_parent(
        parent, LoopStatus::blocked,
        "the resolved merge " + child_spec.id + " conflicts again in " + files.dump());
    co_return true;
  }
  LoopSpec resolver = resolver_spec(parent_spec, parent->progress(), child_spec, merged->conflicts,
                                    services_.settings);
  name_new_loop(resolver, parent_spec.id);
  const std::string resolver_id = resolver.id;
  auto stored = store_new_loops({resolver}, parent, LoopStatus::queued);
  if (!stored) {
    co_await end_parent(parent, LoopStatus::blocked,
                        "merging " + child_spec.id + " conflicts in " + files.dump() +
                            " and no resolving loop could be stored: " + stored.error().message);
    co_return true;
  }
  child->record("merge_conflict",
                {{"child", child_spec.id}, {"files", files}, {"resolver", resolver_id}});
  services_.publish("loop.merge_conflict", {{"loop_id", child_spec.id},
                                            {"plan_id", child_spec.plan_id},
                                            {"into", parent_spec.branch},
                                            {"files", files},
                                            {"resolver_id", resolver_id}});
  spdlog::info("loop {}: merging into {} conflicts in {}; {} resolves it", child_spec.id,
               parent_spec.branch, files.dump(), resolver_id);
  co_return true;
}

asio::awaitable<void> LoopEngine::stop_and_mark(const std::shared_ptr<LoopRun>& run,
                                                LoopStatus status, std::string reason) {
  co_await stop_run(run);
  if (run->status() == status) co_return;
  if (run->progress().finished_at_ms == 0) run->progress_for_update().finished_at_ms = now_ms();
  run->set_status(status, std::move(reason));
}

asio::awaitable<void> LoopEngine::stop_run(const std::shared_ptr<LoopRun>& run) {
  if (run->running()) {
    run->stop();
    asio::steady_timer tick(services_.io);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (run->running() && std::chrono::steady_clock::now() < deadline) {
      tick.expires_after(std::chrono::milliseconds(5));
      std::error_code ignored;
      co_await tick.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
  }
}

asio::awaitable<void> LoopEngine::end_parent(const std::shared_ptr<LoopRun>& parent,
                                             LoopStatus status, std::string reason) {
  const std::string tree_reason =
      parent->id() + " is " + std::string(to_string(status)) + ": " + reason.substr(0, 300);
  parent->set_status(status, std::move(reason));
  co_await end_tree(parent->spec().root_plan(), tree_reason);
}

asio::awaitable<void> LoopEngine::end_tree(const std::string& plan_id, const std::string& reason) {
  if (plan_id.empty()) co_return;
  std::vector<std::shared_ptr<LoopRun>> tree = tree_.descendants_of(plan_id);
  if (auto plan = tree_.run_of(plan_id)) tree.insert(tree.begin(), plan);
  ++trees_ending_[plan_id];
  for (const auto& run : tree) {
    if (is_final(run->status())) continue;
    // Stored with the final status, in the same write: a loop that was
    // still running when looprd died is not taken for one the end stopped.
    const std::string before(to_string(run->status()));
    if (run->status() == LoopStatus::waiting || run->status() == LoopStatus::awaiting_approval) {
      run->progress_for_update().status_before_tree_ended = before;
      run->set_status(LoopStatus::failed, reason);
      continue;
    }
    co_await stop_run(run);
    if (is_final(run->status())) continue;
    run->progress_for_update().status_before_tree_ended = before;
    if (run->progress().finished_at_ms == 0) run->progress_for_update().finished_at_ms = now_ms();
    run->set_status(LoopStatus::cancelled, reason);
  }
  if (--trees_ending_[plan_id] == 0) trees_ending_.erase(plan_id);
}

asio::awaitable<bool> LoopEngine::wait_until_tree_ended(const std::string& plan_id) {
  asio::steady_timer tick(services_.io);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (trees_ending_.count(plan_id) && !stopping_) {
    if (std::chrono::steady_clock::now() >= deadline) co_return false;
    tick.expires_after(std::chrono::milliseconds(5));
    std::error_code ignored;
    co_await tick.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
  co_return !stopping_;
}

void LoopEngine::cancel_subtree(const std::string& id, const std::string& reason) {
  std::vector<std::shared_ptr<LoopRun>> below;
  for (const auto& run : tree_.descendants_of(id))
    if (!is_final(run->status())) below.push_back(run);
  if (below.empty()) return;
  ++active_;
  asio::co_spawn(
      services_.io,
      [this, below, reason]() -> asio::awaitable<void> {
        for (const auto& run : below) {
          if (!is_final(run->status())) co_await stop_and_mark(run, LoopStatus::cancelled, reason);
        }
      },
      [this](std::exception_ptr) { --active_; });
}

asio::awaitable<void> LoopEngine::remove_finished_worktrees(bool everything, bool dry_run,
                                                            json* removed, json* kept) {
  const std::int64_t keep_ms = services_.settings.worktrees.keep_finished_s * 1000;
  const std::int64_t now = now_ms();
  for (const auto& run : tree_.in_creation_order(true)) {
    if (run->progress().worktree_removed || run->spec().base_commit.empty()) continue;
    std::string why_kept;
    if (!is_final(run->status())) {
      why_kept = std::string(to_string(run->status()));
    } else if (run->status() == LoopStatus::completed && !run->parent_id().empty() &&
               run->progress().merged.is_null()) {
      why_kept = "not merged yet";
    } else {
      for (const auto& below : tree_.descendants_of(run->id())) {
        if (!is_final(below->status())) {
          why_kept = "loops under it still run";
          break;
        }
      }
      if (why_kept.empty() && run->status() == LoopStatus::blocked) {
        why_kept = "blocked: kept for a person to look at";
      }
      // A tree that ended failed or blocked may be re-run (loop.rerun,
      // plan.iterate): only looprctl gc removes its worktrees.
      if (why_kept.empty() && !everything) {
        auto plan = tree_.run_of(run->spec().root_plan());
        if (plan &&
            (plan->status() == LoopStatus::failed || plan->status() == LoopStatus::blocked)) {
          why_kept = "its plan " + plan->id() + " is " + std::string(to_string(plan->status())) +
                     ": kept for a re-run (looprctl gc removes it)";
        }
      }
    }
    if (why_kept.empty() && !everything) {
      const std::int64_t since = run->progress().finished_at_ms;
      if (since == 0 || now - since < keep_ms) why_kept = "finished recently";
    }
    if (!why_kept.empty()) {
      if (kept != nullptr) kept->push_back({{"id", run->id()}, {"reason", why_kept}});
      continue;
    }
    const LoopSpec spec = run->spec();
    if (dry_run) {
      if (removed != nullptr) removed->push_back({{"id", run->id()}, {"worktree", spec.worktree}});
      continue;
    }
    auto git_work = [=]() -> Result<void> {
      auto info = open_worktree(spec.repo, spec.worktree, spec.branch);
      if (!info) return Result<void>{};  // already gone
      return remove_worktree(*info, false);
    };
    auto done = co_await offload(git_pool_, git_work);
    if (!done) {
      if (kept != nullptr) kept->push_back({{"id", run->id()}, {"reason", done.error().message}});
      continue;
    }
    run->progress_for_update().worktree_removed = true;
    run->record("worktree_removed", {{"worktree", spec.worktree}});
    if (removed != nullptr) removed->push_back({{"id", run->id()}, {"worktree", spec.worktree}});
  }
}

}  // namespace loopr::loops
