// UiState: everything about the screen that is not the daemon's — which pane
// is shown, the selection in each list (by id, so it survives updates), the
// filter, sort and collapsed rows of the loops tree, the detail pane's
// scroll, the help overlay, the prompt line being typed and the question
// waiting for y/n. Plain data: tui/keys.hpp changes it, tui/views.hpp reads
// it (and keeps the scroll offsets in step with the cursor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

namespace loopr::tui {

enum class Pane { loops, approvals, tools, detail };

// Which loops the tree shows.
enum class StatusFilter {
  all,
  active,     // queued, running, paused, waiting, awaiting_approval
  attention,  // awaiting_approval, failed, blocked, stuck, budget_exhausted
  finished,   // every final status
};

// How the tree's roots are ordered (children keep the plan's order).
enum class SortOrder { created, updated, cost, status };

// What the detail pane shows: the loop's journal, or its branch's diff.
enum class DetailView { journal, diff };

// What the prompt line is for.
enum class Prompt {
  none,
  search,
  deny_reason,
  reject_reason,
  iterate_feedback,
  new_plan,
  new_code,           // the task of a new code loop
  new_code_validate,  // then its validation command (prompt_target: the task)
};

// A request for looprd, made by a key; the link sends it and reports back.
struct Command {
  std::string method;
  nlohmann::json params = nlohmann::json::object();
  std::string label;  // what the status line says it did: "approve a-3"
  bool operator==(const Command&) const = default;
};

struct UiState {
  Pane pane = Pane::loops;
  Pane back = Pane::loops;  // where Esc from the detail pane returns

  std::string loop_cursor;      // id of the selected loop
  std::string approval_cursor;  // "call:<approval id>" or "plan:<plan id>"
  // The selected item went away (resolved elsewhere) and the selection moved
  // to another by itself: the next approve or deny only says so, so a
  // keypress meant for the old item never lands on one nobody looked at.
  bool approval_moved_by_itself = false;
  std::string tool_cursor;    // call id
  std::size_t loops_top = 0;  // first row shown (views keep it in step)
  std::size_t approvals_top = 0;
  std::size_t tools_top = 0;
  std::size_t preview_top = 0;  // the approvals pane's preview scroll

  StatusFilter filter = StatusFilter::all;
  SortOrder sort = SortOrder::created;
  std::set<std::string> collapsed;  // loops whose children are hidden
  std::string loop_search;          // `/` in the loops pane: id, task or status contains it
  std::string tool_search;          // `/` in the tools pane: tool, lane, loop, status

  std::string detail_loop;  // the loop the detail pane shows
  DetailView detail_view = DetailView::journal;
  std::size_t detail_top = 0;
  bool detail_follow = true;  // stick to the end as lines arrive
  bool fold_output = true;    // tool output folded to a few lines
  std::string detail_search;

  bool help = false;
  std::size_t help_top = 0;

  Prompt prompt = Prompt::none;
  std::u32string input;
  std::string prompt_target;  // the approval or plan id a reason is for; a new loop's task

  std::optional<Command> confirm;  // sent on y
  std::string confirm_question;

  std::string message;  // the status line's last word
  bool message_is_error = false;
  bool quit = false;

  std::string repo;  // the repository new plans and code loops are made in
};

const char* pane_name(Pane pane);
const char* filter_name(StatusFilter filter);
const char* sort_name(SortOrder sort);
bool filter_accepts(StatusFilter filter, const std::string& status);

}  // namespace loopr::tui
