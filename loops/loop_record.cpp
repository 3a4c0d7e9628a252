#include "loops/loop_record.hpp"

namespace loopr::loops {
namespace {

using nlohmann::json;

std::string text(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t integer(const json& object, const char* key, std::int64_t fallback = 0) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<std::int64_t>() : fallback;
}

std::vector<std::string> strings(const json& object, const char* key) {
  std::vector<std::string> out;
  if (auto it = object.find(key); it != object.end() && it->is_array()) {
    for (const json& entry : *it)
      if (entry.is_string()) out.push_back(entry.get<std::string>());
  }
  return out;
}

constexpr std::pair<NextStep, const char*> kNextSteps[] = {
    {NextStep::none, "none"},         {NextStep::new_iteration, "new_iteration"},
    {NextStep::complete, "complete"}, {NextStep::max_iterations, "max_iterations"},
    {NextStep::stuck, "stuck"},
};

}  // namespace

json LoopSpec::to_json() const {
  json out = {{"id", id},
              {"type", type},
              {"task", task},
              {"repo", repo},
              {"base", base},
              {"base_commit", base_commit},
              {"branch", branch},
              {"worktree", worktree},
              {"provider", provider},
              {"model", model},
              {"validate", validate},
              {"prompt_template", prompt_template},
              {"tools", tools},
              {"max_iterations", max_iterations},
              {"budget", limits_to_json(budget)},
              {"plan_id", plan_id},
              {"parent_branch", parent_branch},
              {"depends_on", depends_on},
              {"generation", generation},
              {"input", input},
              {"role", role},
              {"merge_child", merge_child},
              {"plan_budget", limits_to_json(plan_budget)},
              {"user_branch", user_branch},
              {"validate_timeout_s", validate_timeout_s},
              {"include_uncommitted", include_uncommitted},
              {"uncommitted_paths", uncommitted_paths}};
  if (repo_settings) {
    out["commands"] = {{"build", commands.build},
                       {"test", commands.test},
                       {"validate", commands.validate},
                       {"lint", commands.lint},
                       {"lint_files", commands.lint_files}};
    out["prep"] = {{"include", prep.include}, {"setup", prep.setup}};
    if (!protected_paths.empty()) out["protected_paths"] = protected_paths;
  }
  return out;
}

Result<LoopSpec> LoopSpec::from_json(const json& value) {
  if (!value.is_object()) return make_error(errc::internal, "a stored loop spec is not an object");
  LoopSpec spec;
  spec.id = text(value, "id");
  spec.type = text(value, "type");
  spec.task = text(value, "task");
  spec.repo = text(value, "repo");
  spec.base = text(value, "base");
  spec.base_commit = text(value, "base_commit");
  spec.branch = text(value, "branch");
  spec.worktree = text(value, "worktree");
  spec.provider = text(value, "provider");
  spec.model = text(value, "model");
  spec.validate = text(value, "validate");
  spec.prompt_template = text(value, "prompt_template");
  if (auto it = value.find("tools"); it != value.end() && it->is_array()) {
    for (const json& tool : *it)
      if (tool.is_string()) spec.tools.push_back(tool.get<std::string>());
  }
  spec.max_iterations = integer(value, "max_iterations", 1);
  auto limits = merge_limits(config::BudgetLimits{}, value.value("budget", json::object()));
  if (!limits) return std::move(limits).error();
  spec.budget = *limits;
  spec.plan_id = text(value, "plan_id");
  spec.parent_branch = text(value, "parent_branch");
  if (auto it = value.find("depends_on"); it != value.end() && it->is_array()) {
    for (const json& id : *it)
      if (id.is_string()) spec.depends_on.push_back(id.get<std::string>());
  }
  spec.generation = integer(value, "generation");
  spec.input = value.value("input", json());
  spec.role = text(value, "role");
  spec.merge_child = text(value, "merge_child");
  auto plan_limits =
      merge_limits(config::BudgetLimits{}, value.value("plan_budget", json::object()));
  if (!plan_limits) return std::move(plan_limits).error();
  spec.plan_budget = *plan_limits;
  spec.user_branch = text(value, "user_branch");
  spec.validate_timeout_s = integer(value, "validate_timeout_s");
  spec.include_uncommitted = value.value("include_uncommitted", false);
  spec.uncommitted_paths = strings(value, "uncommitted_paths");
  if (auto it = value.find("commands"); it != value.end() && it->is_object()) {
    spec.repo_settings = true;
    spec.commands.build = text(*it, "build");
    spec.commands.test = text(*it, "test");
    spec.commands.validate = text(*it, "validate");
    spec.commands.lint = text(*it, "lint");
    spec.commands.lint_files = strings(*it, "lint_files");
    const json prep = value.value("prep", json::object());
    spec.prep.include = strings(prep, "include");
    spec.prep.setup = text(prep, "setup");
    spec.protected_paths = strings(value, "protected_paths");
  }
  if (spec.id.empty() || spec.worktree.empty()) {
    return make_error(errc::internal, "a stored loop spec has no id or worktree");
  }
  return spec;
}

json LoopProgress::to_json() const {
  std::string next_name = "none";
  for (const auto& [value, name] : kNextSteps)
    if (value == next) next_name = name;
  return {{"iteration", iteration},
          {"spend", spend.to_json()},
          {"status_reason", status_reason},
          {"last_validation", last_validation},
          {"notes", notes},
          {"feedback", feedback},
          {"pending_note", pending_note},
          {"strikes", strikes},
          {"unchanged", unchanged},
          {"iterations", iterations},
          {"deleted", deleted},
          {"next", next_name},
          {"next_reason", next_reason},
          {"started_at_ms", started_at_ms},
          {"turns_this_iteration", turns_this_iteration},
          {"calls_this_iteration", calls_this_iteration},
          {"malformed_in_a_row", malformed_in_a_row},
          {"complete_task_called", complete_task_called},
          {"complete_summary", complete_summary},
          {"handoff", handoff},
          {"handoff_note", handoff_note},
          {"handoffs", handoffs},
          {"artifact", artifact},
          {"artifact_path", artifact_path},
          {"artifact_iteration", artifact_iteration},
          {"generation", generation},
          {"iteration_base", iteration_base},
          {"merged", merged},
          {"children_base", children_base},
          {"reset_to", reset_to},
          {"status_before_tree_ended", status_before_tree_ended},
          {"queue_reason", queue_reason},
          {"finished_at_ms", finished_at_ms},
          {"worktree_removed", worktree_removed},
          {"worktree_prepared", worktree_prepared},
          {"kept_out", kept_out},
          {"written_kept_out", written_kept_out},
          {"protected_events", protected_events},
          {"protected_event_count", protected_event_count},
          {"protected_note", protected_note}};
}

LoopProgress LoopProgress::from_json(const json& value) {
  LoopProgress p;
  if (!value.is_object()) return p;
  p.iteration = integer(value, "iteration");
  p.spend = Spend::from_json(value.value("spend", json::object()));
  p.status_reason = text(value, "status_reason");
  p.last_validation = value.value("last_validation", json());
  if (auto it = value.find("notes"); it != value.end() && it->is_array()) {
    for (const json& note : *it)
      if (note.is_string()) p.notes.push_back(note.get<std::string>());
  }
  p.feedback = text(value, "feedback");
  p.pending_note = text(value, "pending_note");
  p.strikes = integer(value, "strikes");
  p.unchanged = integer(value, "unchanged");
  p.iterations = value.value("iterations", json::array());
  if (!p.iterations.is_array()) p.iterations = json::array();
  p.deleted = value.value("deleted", false);
  const std::string next_name = text(value, "next");
  for (const auto& [step, name] : kNextSteps)
    if (next_name == name) p.next = step;
  p.next_reason = text(value, "next_reason");
  p.started_at_ms = integer(value, "started_at_ms");
  p.turns_this_iteration = integer(value, "turns_this_iteration");
  p.calls_this_iteration = integer(value, "calls_this_iteration");
  p.malformed_in_a_row = integer(value, "malformed_in_a_row");
  p.complete_task_called = value.value("complete_task_called", false);
  p.complete_summary = text(value, "complete_summary");
  p.handoff = value.value("handoff", json());
  p.handoff_note = text(value, "handoff_note");
  p.handoffs = integer(value, "handoffs");
  p.artifact = value.value("artifact", json());
  p.artifact_path = text(value, "artifact_path");
  p.artifact_iteration = integer(value, "artifact_iteration");
  p.generation = integer(value, "generation");
  p.iteration_base = integer(value, "iteration_base");
  p.merged = value.value("merged", json());
  p.children_base = text(value, "children_base");
  if (p.children_base.empty())
    p.children_base = text(value, "approved_commit");  // its name in older stores
  p.reset_to = text(value, "reset_to");
  p.status_before_tree_ended = text(value, "status_before_tree_ended");
  p.queue_reason = text(value, "queue_reason");
  p.finished_at_ms = integer(value, "finished_at_ms");
  p.worktree_removed = value.value("worktree_removed", false);
  // A loop stored before the flag that had started was prepared as it was.
  p.worktree_prepared = value.value("worktree_prepared", p.iteration > 0);
  p.kept_out = strings(value, "kept_out");
  p.written_kept_out = strings(value, "written_kept_out");
  const json events = value.value("protected_events", json::array());
  if (events.is_array()) p.protected_events = events;
  p.protected_event_count = integer(value, "protected_event_count");
  p.protected_note = text(value, "protected_note");
  return p;
}

std::string loop_id_for(const std::string& type, std::int64_t seq) {
  const std::string prefix = type == "plan"    ? "p"
                             : type == "spec"  ? "s"
                             : type == "phase" ? "ph"
                                               : "c";
  return prefix + std::to_string(seq);
}

}  // namespace loopr::loops
