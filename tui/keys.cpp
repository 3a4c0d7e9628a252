#include "tui/keys.hpp"

#include <algorithm>

#include "client/loop_view.hpp"
#include "tui/text_width.hpp"

namespace loopr::tui {
namespace {

using client::string_of;
using nlohmann::json;

constexpr std::size_t kMaxInput = 4000;  // code points in the prompt line

Key ch(char32_t c) {
  return Key::of(c);
}
Key code(KeyCode c) {
  return Key::of(c);
}

unsigned pane_bit(Pane pane) {
  switch (pane) {
    case Pane::loops:
      return kInLoops;
    case Pane::approvals:
      return kInApprovals;
    case Pane::tools:
      return kInTools;
    case Pane::detail:
      return kInDetail;
  }
  return 0;
}

const Binding* find_binding(Pane pane, const Key& key) {
  for (const auto& binding : key_bindings()) {
    if ((binding.panes & pane_bit(pane)) == 0) continue;
    if (std::find(binding.keys.begin(), binding.keys.end(), key) != binding.keys.end())
      return &binding;
  }
  return nullptr;
}

// The cursor `current` moved by `delta` rows within `ids` (clamped).
std::string moved(const std::vector<std::string>& ids, const std::string& current,
                  std::ptrdiff_t delta) {
  if (ids.empty()) return current;
  const auto it = std::find(ids.begin(), ids.end(), current);
  std::ptrdiff_t index = it == ids.end() ? 0 : it - ids.begin();
  if (it != ids.end()) index += delta;
  index = std::clamp<std::ptrdiff_t>(index, 0, static_cast<std::ptrdiff_t>(ids.size()) - 1);
  return ids[static_cast<std::size_t>(index)];
}

std::string& cursor_of(UiState& ui) {
  switch (ui.pane) {
    case Pane::approvals:
      return ui.approval_cursor;
    case Pane::tools:
      return ui.tool_cursor;
    default:
      return ui.loop_cursor;
  }
}

const std::vector<std::string>& ids_of(const UiState& ui, const Visible& visible) {
  switch (ui.pane) {
    case Pane::approvals:
      return visible.approvals;
    case Pane::tools:
      return visible.tools;
    default:
      return visible.loops;
  }
}

void say(UiState& ui, std::string message, bool error = false) {
  ui.message = std::move(message);
  ui.message_is_error = error;
}

void move_cursor(UiState& ui, const Visible& visible, std::ptrdiff_t delta) {
  if (ui.help) {
    const auto top = static_cast<std::ptrdiff_t>(ui.help_top) + delta;
    ui.help_top = static_cast<std::size_t>(std::max<std::ptrdiff_t>(0, top));
    return;
  }
  if (ui.pane == Pane::detail) {
    const auto limit = static_cast<std::ptrdiff_t>(
        visible.detail.size() > visible.page ? visible.detail.size() - visible.page : 0);
    const auto top =
        std::clamp<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(ui.detail_top) + delta, 0, limit);
    ui.detail_top = static_cast<std::size_t>(top);
    ui.detail_follow = top >= limit;
    return;
  }
  std::string& cursor = cursor_of(ui);
  cursor = moved(ids_of(ui, visible), cursor, delta);
  if (ui.pane == Pane::approvals) {
    ui.preview_top = 0;
    ui.approval_moved_by_itself = false;
  }
}

// The loop the action is about: the detail pane's, else the loops pane's
// selection, else (approvals pane) the selected plan.
const json* target_loop(const UiState& ui, const DaemonState& state) {
  if (ui.pane == Pane::detail) return state.find_loop(ui.detail_loop);
  if (ui.pane == Pane::loops) return state.find_loop(ui.loop_cursor);
  if (ui.pane == Pane::approvals && ui.approval_cursor.rfind("plan:", 0) == 0)
    return state.find_loop(ui.approval_cursor.substr(5));
  return nullptr;
}

// The selected plan awaiting approval, or an explanation on the status line.
std::optional<std::string> awaiting_plan(UiState& ui, const DaemonState& state) {
  const json* loop = target_loop(ui, state);
  if (loop == nullptr) {
    say(ui, "select a plan first", true);
    return std::nullopt;
  }
  const std::string id = string_of(*loop, "id");
  const std::string type = string_of(*loop, "type");
  if (type != "plan") {
    say(ui, id + " is a " + type + " loop, not a plan", true);
    return std::nullopt;
  }
  return id;
}

void start_prompt(UiState& ui, Prompt prompt, std::string target = {}) {
  ui.prompt = prompt;
  ui.input.clear();
  ui.prompt_target = std::move(target);
}

void open_detail(UiState& ui, const std::string& loop_id) {
  if (loop_id.empty()) return;
  if (ui.pane != Pane::detail) ui.back = ui.pane;
  ui.pane = Pane::detail;
  if (ui.detail_loop != loop_id || ui.detail_view != DetailView::journal) {
    ui.detail_loop = loop_id;
    ui.detail_view = DetailView::journal;
    ui.detail_top = 0;
    ui.detail_follow = true;
  }
}

// The loop the selected row is about: the loops pane's, the approvals
// pane's plan, the tools pane's call's loop; "" when none.
std::string selected_loop(const UiState& ui, const DaemonState& state) {
  if (ui.pane == Pane::loops) return ui.loop_cursor;
  if (ui.pane == Pane::approvals && ui.approval_cursor.rfind("plan:", 0) == 0)
    return ui.approval_cursor.substr(5);
  if (ui.pane == Pane::tools) {
    for (const auto& call : state.tool_calls())
      if (call.call_id == ui.tool_cursor) return call.loop_id;
  }
  return {};
}

// The detail pane on `view`: the diff from its top, the journal following.
void show_view(UiState& ui, DetailView view) {
  ui.detail_view = view;
  ui.detail_top = 0;
  ui.detail_follow = view == DetailView::journal;
}

std::vector<Command> submit_prompt(UiState& ui, const Visible& visible) {
  const std::string text = encode_utf8(ui.input);
  const Prompt prompt = ui.prompt;
  const std::string target = ui.prompt_target;
  start_prompt(ui, Prompt::none);
  std::vector<Command> out;
  switch (prompt) {
    case Prompt::none:
      break;
    case Prompt::search:
      if (ui.pane == Pane::tools) {
        ui.tool_search = text;
      } else if (ui.pane == Pane::detail) {
        ui.detail_search = text;
        if (text.empty()) break;
        // The first line after the top one holding the text, wrapping around.
        const std::size_t count = visible.detail.size();
        for (std::size_t step = 1; step <= count; ++step) {
          const std::size_t index = (ui.detail_top + step) % count;
          if (visible.detail[index].find(text) != std::string::npos) {
            ui.detail_top = index;
            ui.detail_follow = false;
            return out;
          }
        }
        say(ui, "not found: " + text, true);
      } else {
        ui.loop_search = text;
      }
      break;
    case Prompt::deny_reason: {
      json params = {{"id", target}};
      if (!text.empty()) params["reason"] = text;
      out.push_back({"approval.deny", params, "deny " + target});
      break;
    }
    case Prompt::reject_reason: {
      json params = {{"id", target}};
      if (!text.empty()) params["reason"] = text;
      out.push_back({"plan.reject", params, "reject " + target});
      break;
    }
    case Prompt::iterate_feedback:
      if (text.empty()) {
        say(ui, "iterating needs feedback for the plan loop", true);
        break;
      }
      out.push_back({"plan.iterate", {{"id", target}, {"feedback", text}}, "iterate " + target});
      break;
    case Prompt::new_plan:
      if (text.empty()) {
        say(ui, "a plan needs a description", true);
        break;
      }
      out.push_back({"loop.create_plan",
                     {{"description", text}, {"repo", ui.repo}},
                     "new plan in " + ui.repo});
      break;
    case Prompt::new_code:
      if (text.empty()) {
        say(ui, "a code loop needs a task", true);
        break;
      }
      start_prompt(ui, Prompt::new_code_validate, text);
      break;
    case Prompt::new_code_validate: {
      json params = {{"type", "code"}, {"task", target}, {"repo", ui.repo}};
      if (!text.empty()) params["validate"] = text;
      out.push_back({"loop.create", params, "new code loop in " + ui.repo});
      break;
    }
  }
  return out;
}

std::vector<Command> handle_prompt_key(UiState& ui, const Visible& visible, Key key) {
  switch (key.code) {
    case KeyCode::enter:
      return submit_prompt(ui, visible);
    case KeyCode::escape:
    case KeyCode::ctrl_c:
      start_prompt(ui, Prompt::none);
      say(ui, "");
      break;
    case KeyCode::backspace:
      if (!ui.input.empty()) ui.input.pop_back();
      break;
    case KeyCode::ctrl_u:
      ui.input.clear();
      break;
    case KeyCode::character:
      if (key.ch >= 0x20 && key.ch != 0x7F && ui.input.size() < kMaxInput)
        ui.input.push_back(key.ch);
      break;
    default:
      break;
  }
  return {};
}

std::vector<Command> act(UiState& ui, const DaemonState& state, const Visible& visible,
                         Action action) {
  std::vector<Command> out;
  switch (action) {
    case Action::up:
      move_cursor(ui, visible, -1);
      break;
    case Action::down:
      move_cursor(ui, visible, 1);
      break;
    case Action::page_up:
      move_cursor(ui, visible,
                  -static_cast<std::ptrdiff_t>(std::max<std::size_t>(1, visible.page)));
      break;
    case Action::page_down:
      move_cursor(ui, visible, static_cast<std::ptrdiff_t>(std::max<std::size_t>(1, visible.page)));
      break;
    case Action::top:
      move_cursor(ui, visible, -1'000'000'000);
      break;
    case Action::bottom:
      move_cursor(ui, visible, 1'000'000'000);
      if (ui.pane == Pane::detail) ui.detail_follow = true;
      break;
    case Action::next_pane:
    case Action::prev_pane: {
      static constexpr Pane kOrder[] = {Pane::loops, Pane::approvals, Pane::tools};
      const Pane from = ui.pane == Pane::detail ? ui.back : ui.pane;
      std::size_t index = 0;
      while (index < 3 && kOrder[index] != from)
        ++index;
      index = (index + (action == Action::next_pane ? 1 : 2)) % 3;
      ui.pane = kOrder[index];
      break;
    }
    case Action::show_loops:
      ui.pane = Pane::loops;
      break;
    case Action::show_approvals:
      ui.pane = Pane::approvals;
      break;
    case Action::show_tools:
      ui.pane = Pane::tools;
      break;
    case Action::enter:
      open_detail(ui, selected_loop(ui, state));
      break;
    case Action::logs: {
      const std::string id = ui.pane == Pane::detail ? ui.detail_loop : selected_loop(ui, state);
      if (id.empty()) {
        say(ui, "select a loop first", true);
        break;
      }
      open_detail(ui, id);
      show_view(ui, DetailView::journal);
      ui.detail_follow = false;
      break;
    }
    case Action::back:
      if (ui.pane == Pane::detail) {
        ui.pane = ui.back;
      } else if (ui.pane == Pane::loops && !ui.loop_search.empty()) {
        ui.loop_search.clear();
      } else if (ui.pane == Pane::tools && !ui.tool_search.empty()) {
        ui.tool_search.clear();
      }
      break;
    case Action::quit:
      if (ui.pane == Pane::detail) {
        ui.pane = ui.back;
      } else {
        ui.quit = true;
      }
      break;
    case Action::help:
      ui.help = true;
      ui.help_top = 0;
      break;
    case Action::search:
      start_prompt(ui, Prompt::search);
      break;
    case Action::new_plan:
      if (ui.repo.empty()) {
        say(ui, "no repository for new plans: start loopr-tui with --repo DIR", true);
        break;
      }
      start_prompt(ui, Prompt::new_plan);
      break;
    case Action::new_code:
      if (ui.repo.empty()) {
        say(ui, "no repository for new loops: start loopr-tui with --repo DIR", true);
        break;
      }
      start_prompt(ui, Prompt::new_code);
      break;
    case Action::collapse:
    case Action::expand:
    case Action::toggle: {
      const json* loop = state.find_loop(ui.loop_cursor);
      if (loop == nullptr) break;
      const bool collapsed = ui.collapsed.count(ui.loop_cursor) != 0;
      const bool want = action == Action::toggle ? !collapsed : action == Action::collapse;
      if (want) {
        ui.collapsed.insert(ui.loop_cursor);
      } else {
        ui.collapsed.erase(ui.loop_cursor);
      }
      break;
    }
    case Action::filter:
      ui.filter = static_cast<StatusFilter>((static_cast<int>(ui.filter) + 1) % 4);
      say(ui, std::string("showing ") + filter_name(ui.filter) + " loops");
      break;
    case Action::sort:
      ui.sort = static_cast<SortOrder>((static_cast<int>(ui.sort) + 1) % 4);
      say(ui, std::string("sorted by ") + sort_name(ui.sort));
      break;
    case Action::pause:
    case Action::resume:
    case Action::cancel: {
      const json* loop = target_loop(ui, state);
      if (loop == nullptr) {
        say(ui, "select a loop first", true);
        break;
      }
      const std::string id = string_of(*loop, "id");
      if (client::is_final_status(string_of(*loop, "status"))) {
        say(ui, id + " has ended (" + string_of(*loop, "status") + ")", true);
        break;
      }
      if (action == Action::cancel) {
        ui.confirm = Command{"loop.cancel", {{"id", id}}, "cancel " + id};
        ui.confirm_question = "cancel " + id + "? Its running calls stop. (y/n)";
      } else {
        const char* verb = action == Action::pause ? "pause" : "resume";
        out.push_back({std::string("loop.") + verb, {{"id", id}}, std::string(verb) + " " + id});
      }
      break;
    }
    case Action::approve:
    case Action::deny:
      if (ui.pane == Pane::approvals && ui.approval_moved_by_itself) {
        ui.approval_moved_by_itself = false;
        say(ui,
            "what you had selected was resolved elsewhere; " + ui.approval_cursor.substr(5) +
                " is selected now: press the key again to act on it",
            true);
        break;
      }
      if (action == Action::deny) {
        if (ui.pane == Pane::approvals && ui.approval_cursor.rfind("call:", 0) == 0) {
          start_prompt(ui, Prompt::deny_reason, ui.approval_cursor.substr(5));
        } else {
          say(ui, "select a waiting call to deny (a plan is rejected with x)", true);
        }
        break;
      }
      if (ui.pane == Pane::approvals && ui.approval_cursor.rfind("call:", 0) == 0) {
        const std::string id = ui.approval_cursor.substr(5);
        out.push_back({"approval.approve", {{"id", id}}, "approve " + id});
      } else if (const auto plan = awaiting_plan(ui, state)) {
        const std::string status = string_of(*state.find_loop(*plan), "status");
        if (status != "awaiting_approval") {
          say(ui, *plan + " is " + status + ", not awaiting approval", true);
        } else {
          out.push_back({"plan.approve", {{"id", *plan}}, "approve plan " + *plan});
        }
      }
      break;
    case Action::reject:
      if (const auto plan = awaiting_plan(ui, state))
        start_prompt(ui, Prompt::reject_reason, *plan);
      break;
    case Action::iterate:
      if (const auto plan = awaiting_plan(ui, state))
        start_prompt(ui, Prompt::iterate_feedback, *plan);
      break;
    case Action::fold:
      ui.fold_output = !ui.fold_output;
      break;
    case Action::follow:
      ui.detail_follow = true;
      break;
    case Action::diff:
      if (ui.pane == Pane::detail) {
        show_view(ui, ui.detail_view == DetailView::diff ? DetailView::journal : DetailView::diff);
      } else if (state.find_loop(ui.loop_cursor) != nullptr) {
        open_detail(ui, ui.loop_cursor);
        show_view(ui, DetailView::diff);
      } else {
        say(ui, "select a loop first", true);
      }
      break;
  }
  return out;
}

}  // namespace

const char* pane_name(Pane pane) {
  switch (pane) {
    case Pane::loops:
      return "Loops";
    case Pane::approvals:
      return "Approvals";
    case Pane::tools:
      return "Tool calls";
    case Pane::detail:
      return "Detail";
  }
  return "";
}

const char* filter_name(StatusFilter filter) {
  switch (filter) {
    case StatusFilter::all:
      return "all";
    case StatusFilter::active:
      return "active";
    case StatusFilter::attention:
      return "attention";
    case StatusFilter::finished:
      return "finished";
  }
  return "";
}

const char* sort_name(SortOrder sort) {
  switch (sort) {
    case SortOrder::created:
      return "created";
    case SortOrder::updated:
      return "updated";
    case SortOrder::cost:
      return "cost";
    case SortOrder::status:
      return "status";
  }
  return "";
}

bool filter_accepts(StatusFilter filter, const std::string& status) {
  switch (filter) {
    case StatusFilter::all:
      return true;
    case StatusFilter::active:
      return !client::is_final_status(status);
    case StatusFilter::attention:
      return status == "awaiting_approval" || status == "failed" || status == "blocked" ||
             status == "stuck" || status == "budget_exhausted";
    case StatusFilter::finished:
      return client::is_final_status(status);
  }
  return true;
}

const std::vector<Binding>& key_bindings() {
  static const std::vector<Binding> table = {
      {{ch('k'), code(KeyCode::up)}, "k \xe2\x86\x91", kEverywhere, Action::up, "up"},
      {{ch('j'), code(KeyCode::down)}, "j \xe2\x86\x93", kEverywhere, Action::down, "down"},
      {{code(KeyCode::page_up), code(KeyCode::ctrl_u)},
       "PgUp C-u",
       kEverywhere,
       Action::page_up,
       "page up"},
      {{code(KeyCode::page_down), code(KeyCode::ctrl_d)},
       "PgDn C-d",
       kEverywhere,
       Action::page_down,
       "page down"},
      {{ch('g'), code(KeyCode::home)}, "g Home", kEverywhere, Action::top, "first row"},
      {{ch('G'), code(KeyCode::end)},
       "G End",
       kEverywhere,
       Action::bottom,
       "last row (detail: follow)"},
      {{code(KeyCode::tab)}, "Tab", kEverywhere, Action::next_pane, "next pane"},
      {{code(KeyCode::back_tab)}, "S-Tab", kEverywhere, Action::prev_pane, "previous pane"},
      {{ch('1')}, "1", kEverywhere, Action::show_loops, "loops"},
      {{ch('2')}, "2", kEverywhere, Action::show_approvals, "approvals"},
      {{ch('3')}, "3", kEverywhere, Action::show_tools, "tool calls"},
      {{code(KeyCode::enter)},
       "Enter",
       kInLoops | kInApprovals | kInTools,
       Action::enter,
       "open the loop's detail"},
      {{code(KeyCode::escape)}, "Esc", kEverywhere, Action::back, "back / clear the search"},
      {{ch('q')}, "q", kEverywhere, Action::quit, "back; quit from a pane"},
      {{code(KeyCode::ctrl_c)}, "C-c", kEverywhere, Action::quit, "quit"},
      {{ch('?')}, "?", kEverywhere, Action::help, "this help"},
      {{ch('/')},
       "/",
       kInLoops | kInTools | kInDetail,
       Action::search,
       "search (lists: filter; detail: find)"},
      {{ch('n')}, "n", kEverywhere, Action::new_plan, "new plan from a prompt"},
      {{ch('N')}, "N", kEverywhere, Action::new_code, "new code loop from a prompt (its task)"},
      {{ch('h'), code(KeyCode::left)},
       "h \xe2\x86\x90",
       kInLoops,
       Action::collapse,
       "collapse the subtree"},
      {{ch('l'), code(KeyCode::right)},
       "l \xe2\x86\x92",
       kInLoops,
       Action::expand,
       "expand the subtree"},
      {{ch(' ')}, "Space", kInLoops, Action::toggle, "collapse / expand"},
      {{ch('f')}, "f", kInLoops, Action::filter, "filter: all, active, attention, finished"},
      {{ch('s')}, "s", kInLoops, Action::sort, "sort: created, updated, cost, status"},
      {{ch('p')}, "p", kInLoops | kInDetail, Action::pause, "pause the loop"},
      {{ch('r')}, "r", kInLoops | kInDetail, Action::resume, "resume the loop"},
      {{ch('c')}, "c", kInLoops | kInDetail, Action::cancel, "cancel the loop (asks y/n)"},
      {{ch('a')},
       "a",
       kInLoops | kInApprovals | kInDetail,
       Action::approve,
       "approve the call or the plan"},
      {{ch('d')}, "d", kInApprovals, Action::deny, "deny the call, with a reason"},
      {{ch('x')},
       "x",
       kInLoops | kInApprovals | kInDetail,
       Action::reject,
       "reject the plan, with a reason"},
      {{ch('i')},
       "i",
       kInLoops | kInApprovals | kInDetail,
       Action::iterate,
       "iterate the plan with feedback"},
      {{ch('o')}, "o", kInDetail, Action::fold, "fold / unfold tool output"},
      {{ch('F')}, "F", kInDetail, Action::follow, "follow new lines"},
      {{ch('L')}, "L", kEverywhere, Action::logs, "the loop's journal from its start"},
      {{ch('D')},
       "D",
       kInLoops | kInDetail,
       Action::diff,
       "the branch's diff against its parent / the journal"},
  };
  return table;
}

std::vector<Command> handle_key(UiState& ui, const DaemonState& state, const Visible& visible,
                                Key key) {
  if (key.code == KeyCode::none || key.code == KeyCode::resize) return {};
  if (ui.prompt != Prompt::none) return handle_prompt_key(ui, visible, key);
  if (ui.confirm) {
    std::vector<Command> out;
    if (key == ch('y') || key == ch('Y')) {
      out.push_back(*ui.confirm);
    } else {
      say(ui, "not done: " + ui.confirm->label);
    }
    ui.confirm.reset();
    ui.confirm_question.clear();
    return out;
  }
  if (ui.help) {
    const Binding* binding = find_binding(Pane::detail, key);
    if (binding != nullptr &&
        (binding->action == Action::up || binding->action == Action::down ||
         binding->action == Action::page_up || binding->action == Action::page_down)) {
      return act(ui, state, visible, binding->action);
    }
    if (key == code(KeyCode::ctrl_c)) ui.quit = true;
    ui.help = false;  // any other key closes the help
    return {};
  }
  const Binding* binding = find_binding(ui.pane, key);
  if (binding == nullptr) return {};
  if (binding->action != Action::quit && binding->action != Action::back) ui.message.clear();
  if (key == code(KeyCode::ctrl_c)) {
    ui.quit = true;
    return {};
  }
  return act(ui, state, visible, binding->action);
}

}  // namespace loopr::tui
