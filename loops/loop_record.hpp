// What the store keeps of a loop, as the loop engine reads and writes it:
// LoopSpec (what was asked; written once, the row's `spec`) and LoopProgress
// (where the loop is; the row's `state`, rewritten with every journal step
// in the same transaction). Their JSON forms are the store's format: a field
// may be added, never renamed.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "config/settings.hpp"
#include "loops/budget.hpp"

namespace loopr::loops {

struct LoopSpec {
  std::string id;
  std::string type;
  std::string task;
  std::string repo;
  std::string base;         // as asked (may be empty)
  std::string base_commit;  // what it resolved to
  std::string branch;
  std::string worktree;
  std::string provider;
  std::string model;
  std::string validate;  // the validation command
  std::string prompt_template;
  std::vector<std::string> tools;
  std::int64_t max_iterations = 1;
  config::BudgetLimits budget;

  nlohmann::json to_json() const;
  static Result<LoopSpec> from_json(const nlohmann::json& value);
};

// What happens after an iteration's validation (kept, so a restart between
// the validation and its consequence does the same thing).
enum class NextStep { none, new_iteration, complete, max_iterations, stuck };

struct LoopProgress {
  std::int64_t iteration = 0;  // the current (or last) iteration; 0 before the first
  Spend spend;
  std::string status_reason;
  nlohmann::json last_validation = nullptr;  // {iteration, passed, exit_code, output}
  std::vector<std::string> notes;            // progress notes, one per finished iteration
  std::string feedback;                      // the last validation failure, for the next prompt
  std::string pending_note;                  // loopr's note for the next prompt
  std::int64_t strikes = 0;                  // loop health
  std::int64_t unchanged = 0;                // unchanged iterations in a row
  nlohmann::json iterations = nlohmann::json::array();  // summaries (docs/control-protocol.md)
  bool deleted = false;
  NextStep next = NextStep::none;
  std::string next_reason;
  // The current iteration.
  std::int64_t started_at_ms = 0;
  std::int64_t turns_this_iteration = 0;
  std::int64_t calls_this_iteration = 0;
  std::int64_t malformed_in_a_row = 0;
  bool complete_task_called = false;
  std::string complete_summary;

  nlohmann::json to_json() const;
  static LoopProgress from_json(const nlohmann::json& value);
};

// "c12", "p3": the id of the `seq`-th loop of `type` (usable in a branch name).
std::string loop_id_for(const std::string& type, std::int64_t seq);

}  // namespace loopr::loops
