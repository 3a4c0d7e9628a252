#include "loops/loop_tree.hpp"

#include <algorithm>
#include <set>

#include "loops/loop_run.hpp"

namespace loopr::loops {
namespace {

void sort_by_creation(std::vector<LoopTree::RunPtr>& runs) {
  std::sort(runs.begin(), runs.end(),
            [](const auto& a, const auto& b) { return a->seq() < b->seq(); });
}

}  // namespace

void LoopTree::add(RunPtr run) {
  const std::string id = run->id();
  runs_[id] = std::move(run);
}

LoopTree::RunPtr LoopTree::run_of(const std::string& id) const {
  auto it = runs_.find(id);
  return it == runs_.end() ? nullptr : it->second;
}

std::vector<LoopTree::RunPtr> LoopTree::in_creation_order(bool with_deleted) const {
  std::vector<RunPtr> ordered;
  for (const auto& [id, run] : runs_)
    if (with_deleted || !run->progress().deleted) ordered.push_back(run);
  sort_by_creation(ordered);
  return ordered;
}

std::vector<LoopTree::RunPtr> LoopTree::children_of(const std::string& id,
                                                    bool current_generation_only) const {
  std::vector<RunPtr> children;
  auto parent = run_of(id);
  for (const auto& [child_id, run] : runs_) {
    if (run->parent_id() != id) continue;
    if (current_generation_only &&
        (run->status() == LoopStatus::invalidated ||
         (parent && run->spec().generation != parent->progress().generation))) {
      continue;
    }
    children.push_back(run);
  }
  sort_by_creation(children);
  return children;
}

std::vector<std::string> LoopTree::children_ids(const std::string& id) const {
  std::vector<std::string> ids;
  for (const auto& child : children_of(id, false))
    ids.push_back(child->id());
  return ids;
}

std::vector<LoopTree::RunPtr> LoopTree::descendants_of(const std::string& id) const {
  // Each loop once: parentage that loops back on itself (only a store
  // edited by hand has it) ends instead of hanging the daemon.
  std::vector<RunPtr> out;
  std::set<std::string> seen{id};
  std::vector<std::string> frontier{id};
  while (!frontier.empty()) {
    const std::string next = frontier.back();
    frontier.pop_back();
    for (const auto& child : children_of(next, false)) {
      if (!seen.insert(child->id()).second) continue;
      out.push_back(child);
      frontier.push_back(child->id());
    }
  }
  sort_by_creation(out);
  return out;
}

std::vector<LoopTree::RunPtr> LoopTree::ancestors_of(const LoopRun& run) const {
  // Ids are made from the parent's (p1-s2-ph1), so a tree is a few levels
  // deep; the bound only guards against a store edited by hand into a cycle.
  constexpr std::size_t kDeepest = 64;
  std::vector<RunPtr> chain;
  std::string id = run.parent_id();
  while (!id.empty()) {
    auto parent = run_of(id);
    if (!parent || chain.size() > kDeepest) break;
    chain.push_back(parent);
    id = parent->parent_id();
  }
  return chain;
}

bool LoopTree::is_stale(const LoopRun& loop) const {
  const LoopRun* child = &loop;
  for (const auto& ancestor : ancestors_of(loop)) {
    if (ancestor->status() == LoopStatus::invalidated ||
        child->spec().generation < ancestor->progress().generation) {
      return true;
    }
    child = ancestor.get();
  }
  return false;
}

std::string LoopTree::next_child_id(const std::string& parent_id, const std::string& prefix,
                                    std::int64_t offset) const {
  std::int64_t count = 0;
  const std::string stem = parent_id + "-" + prefix;
  for (const auto& [id, run] : runs_) {
    if (run->parent_id() == parent_id && id.rfind(stem, 0) == 0 && id.size() > stem.size() &&
        id.size() - stem.size() <= 18 &&
        id.find_first_not_of("0123456789", stem.size()) == std::string::npos) {
      count = std::max<std::int64_t>(count, std::stoll(id.substr(stem.size())));
    }
  }
  return stem + std::to_string(count + 1 + offset);
}

std::string LoopTree::unmet_dependency(const LoopRun& run) const {
  if (!run.parent_id().empty()) {
    auto parent = run_of(run.parent_id());
    if (!parent || parent->status() != LoopStatus::waiting) return run.parent_id();
  }
  for (const std::string& id : run.spec().depends_on) {
    auto dependency = run_of(id);
    if (!dependency || dependency->status() != LoopStatus::completed ||
        dependency->progress().merged.is_null()) {
      return id;
    }
  }
  return {};
}

std::int64_t LoopTree::running_models() const {
  std::int64_t count = 0;
  for (const auto& [id, run] : runs_)
    if (runs_model(run->status())) ++count;
  return count;
}

std::int64_t LoopTree::running_models_of_type(const std::string& type) const {
  std::int64_t count = 0;
  for (const auto& [id, run] : runs_)
    if (runs_model(run->status()) && run->spec().type == type) ++count;
  return count;
}

std::size_t LoopTree::count_with_status(LoopStatus status) const {
  std::size_t count = 0;
  for (const auto& [id, run] : runs_)
    if (run->status() == status) ++count;
  return count;
}

const config::BudgetLimits* LoopTree::plan_budget(const std::string& plan_id) const {
  auto plan = run_of(plan_id);
  return plan ? &plan->spec().plan_budget : nullptr;
}

Spend LoopTree::tree_spend(const std::string& plan_id) const {
  Spend total;
  for (const auto& [id, run] : runs_) {
    if (id == plan_id || run->spec().plan_id == plan_id) total += run->progress().spend;
  }
  return total;
}

Spend LoopTree::total_spend() const {
  Spend total;
  for (const auto& [id, run] : runs_)
    total += run->progress().spend;
  return total;
}

}  // namespace loopr::loops
