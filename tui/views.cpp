#include "tui/views.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "client/approval_view.hpp"
#include "client/loop_tree.hpp"
#include "client/loop_view.hpp"
#include "client/text_format.hpp"
#include "tui/text_width.hpp"

namespace loopr::tui {
namespace {

using client::member;
using client::number_of;
using client::printable;
using client::string_of;
using nlohmann::json;

constexpr std::size_t kFoldedOutputLines = 4;
constexpr std::size_t kFoldedValidationLines = 8;
constexpr const char* kSeparator = " \xc2\xb7 ";  // " · "

double number(const json& object, std::string_view key) {
  return number_of(member(object, key)).value_or(0);
}

Style status_style(const std::string& status) {
  if (status == "completed" || status == "success" || status == "passed") return Style::good;
  if (status == "failed" || status == "blocked" || status == "stuck" ||
      status == "budget_exhausted" || status == "error" || status == "timeout" ||
      status == "denied" || status == "invalid" || status == "rejected")
    return Style::bad;
  if (status == "awaiting_approval" || status == "paused") return Style::warn;
  if (status == "running" || status == "waiting") return Style::active;
  if (client::is_final_status(status) || status == "cancelled") return Style::dim;
  return Style::normal;
}

std::string elapsed_cell(const json& loop, std::int64_t now_ms) {
  const double created = number(loop, "created_at_ms");
  if (created <= 0) return "-";
  const std::string status = string_of(loop, "status");
  const double end =
      client::is_final_status(status) ? number(loop, "updated_at_ms") : static_cast<double>(now_ms);
  if (end < created) return "-";
  return client::format_duration_ms(end - created);
}

std::string iteration_cell(const json& loop) {
  if (!number_of(member(loop, "iteration"))) return "-";
  std::string out = std::to_string(client::integer_of(loop, "iteration"));
  if (number_of(member(loop, "max_iterations")))
    out += "/" + std::to_string(client::integer_of(loop, "max_iterations"));
  return out;
}

std::string since(std::int64_t then_ms, std::int64_t now_ms) {
  if (then_ms <= 0 || now_ms < then_ms) return "-";
  return client::format_duration_ms(now_ms - then_ms);
}

// A table row from cells and widths (the last width 0: the rest of the line).
Line row(const std::vector<std::pair<std::string, Style>>& cells,
         const std::vector<std::size_t>& widths, std::size_t total) {
  Line line;
  std::size_t used = 0;
  for (std::size_t i = 0; i < cells.size() && i < widths.size(); ++i) {
    if (used >= total) break;
    std::size_t width = widths[i] == 0 ? total - used : std::min(widths[i], total - used);
    line.add(pad_to_width(cells[i].first, width), cells[i].second);
    used += width;
    if (i + 1 < cells.size() && used < total) {
      line.add(" ");
      ++used;
    }
  }
  return line;
}

Line fitted(Line line, std::size_t width) {
  Line out;
  out.fill = line.fill;
  std::size_t used = 0;
  for (auto& span : line.spans) {
    if (used >= width) break;
    std::string text = clip_to_width(span.text, width - used);
    used += display_width(text);
    out.spans.push_back({std::move(text), span.style});
  }
  return out;
}

// Keeps `cursor` (an index) within [top, top + height).
std::size_t scrolled(std::size_t top, std::size_t cursor, std::size_t height, std::size_t count) {
  if (height == 0) return 0;
  if (cursor < top) top = cursor;
  if (cursor >= top + height) top = cursor + 1 - height;
  if (count <= height) return 0;
  return std::min(top, count - height);
}

template <typename T>
std::size_t index_of(const std::vector<T>& items, const std::string& id) {
  for (std::size_t i = 0; i < items.size(); ++i)
    if (items[i] == id) return i;
  return 0;
}

// ---- header ----

// "validate is waiting for a heavy slot (2 ahead)" while a call of the loop
// waits for its lane (tool.queued); "" otherwise.
std::string waiting_cell(const DaemonState& state, const std::string& loop_id) {
  const ToolCallRecord* waiting = state.waiting_call(loop_id);
  if (waiting == nullptr) return "";
  return printable(waiting->tool) + " is waiting for a " + printable(waiting->lane) + " slot (" +
         (*waiting->waiting_ahead > 0 ? std::to_string(*waiting->waiting_ahead) + " ahead"
                                      : std::string("next in line")) +
         ")";
}

Lines header(const DaemonState& state, std::int64_t now_ms, std::size_t width, bool short_form) {
  Lines out;
  Line first;
  first.add("loopr", Style::title);
  first.add(kSeparator);
  first.add(state.daemon_version().empty() ? "looprd ?"
                                           : "looprd " + printable(state.daemon_version()));
  if (const auto uptime = state.uptime_ms(now_ms))
    first.add(kSeparator).add("up " + client::format_duration_ms(*uptime));
  first.add(kSeparator);
  switch (state.link()) {
    case LinkState::connected:
      first.add("connected", Style::good);
      break;
    case LinkState::connecting:
      first.add("connecting\xe2\x80\xa6", Style::warn);
      if (!state.link_detail().empty()) first.add(" " + printable(state.link_detail()), Style::dim);
      break;
    case LinkState::reconnecting:
      first.add("reconnecting\xe2\x80\xa6", Style::bad);
      if (!state.link_detail().empty()) first.add(" " + printable(state.link_detail()), Style::dim);
      break;
  }
  const std::size_t calls = state.approvals().size();
  const std::size_t plans = state.plans_awaiting().size();
  if (short_form) {
    if (calls + plans > 0)
      first.add(kSeparator).add(std::to_string(calls + plans) + " waiting", Style::warn);
    out.push_back(fitted(first, width));
    return out;
  }
  out.push_back(fitted(first, width));

  Line lanes;
  lanes.add("lanes ", Style::bold);
  if (state.lanes().empty()) lanes.add("-", Style::dim);
  bool first_lane = true;
  for (const auto& lane : state.lanes()) {
    if (!first_lane) lanes.add(" \xe2\x94\x82 ", Style::dim);  // " │ "
    first_lane = false;
    lanes.add(printable(lane.lane), Style::bold);
    lanes.add(
        " " + printable(lane.state),
        lane.state == "ready" ? Style::good : (lane.state == "failed" ? Style::bad : Style::warn));
    lanes.add(" " + std::to_string(lane.in_flight) + "/" + std::to_string(lane.slots));
    if (lane.queued > 0) lanes.add(" +" + std::to_string(lane.queued) + " queued", Style::warn);
  }
  // Workers on other machines ([cluster]): how many, who, what they run.
  if (const ClusterFigures& cluster = state.cluster(); cluster.configured) {
    lanes.add(" \xe2\x94\x82 ", Style::dim);
    lanes.add("workers ", Style::bold);
    if (cluster.state != "connected") {
      lanes.add("NATS " + printable(cluster.state), Style::bad);
      if (!cluster.last_error.empty())
        lanes.add(" (" + printable(cluster.last_error) + ")", Style::dim);
      lanes.add(", running here", Style::warn);
    } else {
      lanes.add(std::to_string(cluster.worker_count),
                cluster.worker_count > 0 ? Style::good : Style::warn);
      if (!cluster.workers.empty()) {
        std::string names;
        for (const std::string& name : cluster.workers)
          names += (names.empty() ? "" : " ") + name;
        lanes.add(" " + printable(names), Style::dim);
      }
      lanes.add(" " + std::to_string(cluster.in_flight) + " running");
      if (cluster.queued > 0) {
        lanes.add(" +" + std::to_string(cluster.queued) + " queued", Style::warn);
      }
    }
  }
  out.push_back(fitted(lanes, width));

  // What waits for the person first: it must survive a narrow terminal.
  Line third;
  third.add("waiting ", Style::bold);
  if (calls + plans == 0) {
    third.add("nothing");
  } else {
    third.add(std::to_string(calls) + (calls == 1 ? " call, " : " calls, ") +
                  std::to_string(plans) + (plans == 1 ? " plan" : " plans"),
              Style::warn);
  }
  third.add(kSeparator).add("calls/s ", Style::bold);
  if (state.calls_per_second()) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1f", *state.calls_per_second());
    third.add(buffer);
  } else {
    third.add("-");
  }
  const SpendToday today = spend_today(state.loops(), local_midnight_ms(now_ms));
  third.add(kSeparator).add("today ", Style::bold);
  json tokens = {{"input_tokens", today.tokens}};
  third.add(client::format_token_total(tokens) + " tok " + client::format_usd(today.cost_usd));
  third.add(
      " (" + std::to_string(today.loops) + (width >= 100 ? " loops active today)" : " loops)"),
      Style::dim);
  out.push_back(fitted(third, width));
  return out;
}

Line tab_line(const DaemonState& state, const UiState& ui, std::size_t width) {
  Line line;
  const Pane shown = ui.pane == Pane::detail ? ui.back : ui.pane;
  const std::size_t waiting = state.approvals().size() + state.plans_awaiting().size();
  const std::pair<Pane, std::string> tabs[] = {
      {Pane::loops, "1 Loops " + std::to_string(state.loops().size())},
      {Pane::approvals, "2 Approvals " + std::to_string(waiting)},
      {Pane::tools, "3 Tool calls " + std::to_string(state.tool_calls().size())}};
  for (const auto& [pane, label] : tabs) {
    line.add(" " + label + " ",
             pane == shown && ui.pane != Pane::detail ? Style::tab_active : Style::tab);
    line.add(" ");
  }
  if (ui.pane == Pane::detail) {
    line.add(
        " " + printable(ui.detail_loop) + (ui.detail_view == DetailView::diff ? " diff " : " "),
        Style::tab_active);
    line.add(" ");
  }
  if (ui.pane == Pane::loops) {
    std::string info =
        std::string("filter ") + filter_name(ui.filter) + kSeparator + "sort " + sort_name(ui.sort);
    if (!ui.loop_search.empty()) info += std::string(kSeparator) + "/" + printable(ui.loop_search);
    line.add(info, Style::dim);
  } else if (ui.pane == Pane::tools && !ui.tool_search.empty()) {
    line.add("/" + printable(ui.tool_search), Style::dim);
  }
  return fitted(line, width);
}

// ---- loops ----

// The loops tree's columns, in the order shown; `priority` 0 is kept first
// when the width runs short (TASK, the last, takes what is left).
enum class LoopColumn { id, type, status, iteration, elapsed, tokens, cost, left, task };

struct LoopColumns {
  std::vector<LoopColumn> shown;  // in display order
  std::vector<std::size_t> widths;
};

// `with_left`: some loop shown has a limit to count down (its <loop>'s
// `budget`), so LEFT is a column.
LoopColumns loop_columns(std::size_t width, bool with_left) {
  struct Spec {
    LoopColumn column;
    std::size_t width;
    int priority;
  };
  // A code loop's id under its plan, spec and phase takes 23 columns.
  const std::size_t id = width >= 100 || !with_left ? 24 : 18;
  const std::size_t status = width >= 110 ? 30 : (width >= 100 ? 18 : 17);
  constexpr std::size_t kMinTask = 10;
  const Spec specs[] = {
      {LoopColumn::id, id, 0},       {LoopColumn::type, 5, 5},    {LoopColumn::status, status, 1},
      {LoopColumn::iteration, 6, 4}, {LoopColumn::elapsed, 8, 7}, {LoopColumn::tokens, 7, 6},
      {LoopColumn::cost, 8, 2},      {LoopColumn::left, 8, 3},    {LoopColumn::task, 0, 8}};
  std::vector<bool> keep(std::size(specs), false);
  std::size_t used = 0;
  for (int priority = 0; priority <= 8; ++priority) {
    for (std::size_t i = 0; i < std::size(specs); ++i) {
      if (specs[i].priority != priority) continue;
      if (specs[i].column == LoopColumn::left && !with_left) continue;
      const std::size_t need =
          (specs[i].column == LoopColumn::task ? kMinTask : specs[i].width) + (used > 0 ? 1 : 0);
      if (used + need > width) continue;
      keep[i] = true;
      used += need;
    }
  }
  LoopColumns columns;
  for (std::size_t i = 0; i < std::size(specs); ++i) {
    if (!keep[i]) continue;
    columns.shown.push_back(specs[i].column);
    columns.widths.push_back(specs[i].width);
  }
  return columns;
}

// The budget left: the USD when the loop has a USD limit, else (or when
// another limit is nearer its end) the tightest one; "—" when unlimited,
// empty when looprd did not say.
std::pair<std::string, Style> budget_left_cell(const json& loop) {
  const json& budget = member(loop, "budget");
  if (!budget.is_object()) return {"", Style::dim};
  const json& limits = member(budget, "limits");
  const json& left = member(budget, "left");
  std::string tightest;
  double tightest_ratio = 2;
  std::optional<double> usd_ratio;
  if (limits.is_object()) {
    for (const auto& [key, limit] : limits.items()) {
      const auto cap = number_of(limit);
      const auto rest = number_of(member(left, key));
      if (!cap || !rest || *cap <= 0) continue;
      const double ratio = *rest / *cap;
      if (key == "usd") usd_ratio = ratio;
      if (ratio < tightest_ratio) {
        tightest_ratio = ratio;
        tightest = key;
      }
    }
  }
  if (tightest.empty()) return {"\xe2\x80\x94", Style::dim};  // —
  // USD unless another limit is clearly nearer its end.
  if (usd_ratio && tightest_ratio >= *usd_ratio - 0.1) tightest = "usd";
  const Style style = tightest_ratio <= 0    ? Style::bad
                      : tightest_ratio < 0.2 ? Style::warn
                                             : Style::normal;
  const json& value = member(left, tightest);
  if (tightest == "usd") return {client::format_usd(value), style};
  std::string unit = " tok";
  if (tightest == "tool_calls") unit = " calls";
  if (tightest == "wall_clock_s") unit = " s";
  if (tightest == "turns_per_iteration") unit = " turns";
  return {client::format_count(value) + unit, style};
}

Lines loops_body(const DaemonState& state, UiState& ui, std::size_t width, std::size_t height,
                 std::int64_t now_ms) {
  Lines out;
  const auto rows = loop_rows(state, ui);
  // LEFT only when some loop shown has a limit to count down.
  bool budgets = false;
  for (const LoopRow& r : rows) {
    const std::string cell = budget_left_cell(*r.loop).first;
    if (!cell.empty() && cell != "\xe2\x80\x94") {
      budgets = true;
      break;
    }
  }
  const LoopColumns columns = loop_columns(width, budgets);
  // The cells of the columns shown, from all of them in display order.
  const auto pick = [&](std::vector<std::pair<std::string, Style>> all) {
    std::vector<std::pair<std::string, Style>> cells;
    for (const LoopColumn column : columns.shown)
      cells.push_back(std::move(all[static_cast<std::size_t>(column)]));
    return cells;
  };
  out.push_back(row(pick({{"ID", Style::bold},
                          {"TYPE", Style::bold},
                          {"STATUS", Style::bold},
                          {"ITER", Style::bold},
                          {"ELAPSED", Style::bold},
                          {"TOKENS", Style::bold},
                          {"COST", Style::bold},
                          {"LEFT", Style::bold},
                          {"TASK", Style::bold}}),
                    columns.widths, width));
  if (rows.empty()) {
    out.push_back(Line(state.loops().empty() ? "no loops yet (n: new plan, N: new code loop)"
                                             : "no loop matches the filter (f) or search (/)",
                       Style::dim));
    return out;
  }
  const bool preview = height >= 14;
  const std::size_t reserved = 1 + (preview ? 4 : 0);  // the heading, the preview
  const std::size_t list_height = height > reserved ? height - reserved : 0;
  std::vector<std::string> ids;
  for (const auto& r : rows)
    ids.push_back(r.id);
  if (std::find(ids.begin(), ids.end(), ui.loop_cursor) == ids.end()) ui.loop_cursor = ids.front();
  const std::size_t cursor = index_of(ids, ui.loop_cursor);
  ui.loops_top = scrolled(ui.loops_top, cursor, list_height, rows.size());
  for (std::size_t i = ui.loops_top; i < rows.size() && i < ui.loops_top + list_height; ++i) {
    const LoopRow& r = rows[i];
    const json& loop = *r.loop;
    const std::string status = string_of(loop, "status");
    std::string id = r.lead +
                     (r.has_children ? (r.collapsed ? "\xe2\x96\xb8 " : "\xe2\x96\xbe ") : "  ") +
                     printable(r.id);  // ▸ collapsed, ▾ expanded
    std::vector<std::pair<std::string, Style>> cells = {
        {id, Style::normal},
        {printable(string_of(loop, "type")), Style::dim},
        {client::status_with_reason(loop, 30), status_style(status)},
        {iteration_cell(loop), Style::normal},
        {elapsed_cell(loop, now_ms), Style::normal},
        {client::format_token_total(member(loop, "usage")), Style::normal},
        {client::format_usd(member(member(loop, "usage"), "cost_usd")), Style::normal},
        budget_left_cell(loop),
        {client::first_line(string_of(loop, "task"), 200), Style::dim}};
    Line line = row(pick(std::move(cells)), columns.widths, width);
    if (i == cursor) line.fill = Style::selected;
    out.push_back(std::move(line));
  }
  if (preview) {
    while (out.size() < height - 4)
      out.emplace_back();
    const json& loop = *rows[cursor].loop;
    out.push_back(Line(std::string(width, '-'), Style::dim));
    Line first;
    first.add(printable(string_of(loop, "id")), Style::bold);
    first.add(" " + printable(string_of(loop, "type")) + " " + printable(string_of(loop, "status")),
              status_style(string_of(loop, "status")));
    first.add("  " + client::first_line(string_of(loop, "task"), 400));
    out.push_back(fitted(first, width));
    std::string why = string_of(loop, "queue_reason");
    if (const std::string waiting = waiting_cell(state, string_of(loop, "id")); !waiting.empty()) {
      why = waiting;
    }
    if (why.empty()) why = string_of(loop, "status_reason");
    out.push_back(fitted(Line(why.empty() ? "" : client::first_line(why, 400), Style::dim), width));
    const json& validation = member(loop, "last_validation");
    std::string hint = "Enter: detail";
    if (string_of(loop, "status") == "awaiting_approval")
      hint = "a approve · x reject · i iterate · Enter: detail";
    Line last;
    if (validation.is_object()) {
      const bool passed = member(validation, "passed") == json(true);
      last.add(std::string("last validation ") + (passed ? "passed" : "failed"),
               passed ? Style::good : Style::bad);
      last.add("  ");
    }
    last.add(hint, Style::dim);
    out.push_back(fitted(last, width));
  }
  return out;
}

// ---- approvals ----

Lines approval_preview(const DaemonState& state, const std::string& item, std::size_t width) {
  Lines out;
  if (item.rfind("call:", 0) == 0) {
    const std::string id = item.substr(5);
    for (const json& approval : state.approvals()) {
      if (string_of(approval, "id") != id) continue;
      Line first;
      first.add(printable(string_of(approval, "tool")), Style::bold);
      first.add(" in lane " + printable(string_of(approval, "lane")) + " (" +
                printable(string_of(approval, "tier")) + ")");
      out.push_back(fitted(first, width));
      out.push_back(fitted(
          Line("worktree " + printable(string_of(approval, "worktree")), Style::dim), width));
      // Which rule (or policy) decided that this call asks.
      for (const auto& text : wrap_to_width(client::why_it_waits(approval), width))
        out.push_back(Line(text, Style::dim));
      out.push_back(Line("a approve \xc2\xb7 d deny with a reason", Style::warn));
      for (const auto& text : wrap_to_width(
               client::printable_lines(client::pretty_json(member(approval, "args"))), width))
        out.push_back(Line(text));
    }
    return out;
  }
  const std::string id = item.substr(5);
  const json* plan = state.find_loop(id);
  Line first;
  first.add("plan " + printable(id), Style::bold);
  if (plan != nullptr) first.add("  " + client::first_line(string_of(*plan, "task"), 400));
  out.push_back(fitted(first, width));
  out.push_back(
      Line("a approve \xc2\xb7 x reject with a reason \xc2\xb7 i iterate with feedback \xc2\xb7 "
           "Enter: its loop",
           Style::warn));
  const std::string* markdown = state.plan_markdown(id);
  if (markdown == nullptr) {
    out.push_back(Line("loading the plan\xe2\x80\xa6", Style::dim));
  } else {
    for (auto& line : markdown_lines(*markdown, width))
      out.push_back(std::move(line));
  }
  return out;
}

Lines approvals_body(const DaemonState& state, UiState& ui, std::size_t width, std::size_t height,
                     std::int64_t now_ms) {
  Lines out;
  const auto items = approval_items(state);
  if (items.empty()) {
    out.push_back(Line("nothing waits for you: no call awaits approval, no plan awaits approval",
                       Style::dim));
    return out;
  }
  if (std::find(items.begin(), items.end(), ui.approval_cursor) == items.end()) {
    if (!ui.approval_cursor.empty()) ui.approval_moved_by_itself = true;
    ui.approval_cursor = items.front();
  }
  const std::size_t cursor = index_of(items, ui.approval_cursor);
  const std::size_t list_height = std::min(items.size(), std::max<std::size_t>(1, height / 3));
  ui.approvals_top = scrolled(ui.approvals_top, cursor, list_height, items.size());
  const std::vector<std::size_t> widths = {5, 10, 14, 8, 11, 0};
  for (std::size_t i = ui.approvals_top; i < items.size() && i < ui.approvals_top + list_height;
       ++i) {
    const std::string& item = items[i];
    Line line;
    if (item.rfind("call:", 0) == 0) {
      const std::string id = item.substr(5);
      const json* approval = nullptr;
      for (const json& a : state.approvals())
        if (string_of(a, "id") == id) approval = &a;
      if (approval == nullptr) continue;
      const double expires = number(*approval, "expires_at_ms");
      std::string left =
          expires > static_cast<double>(now_ms)
              ? client::format_duration_ms(expires - static_cast<double>(now_ms)) + " left"
              : "-";
      line = row({{"call", Style::warn},
                  {printable(id), Style::bold},
                  {printable(string_of(*approval, "tool")), Style::normal},
                  {printable(string_of(*approval, "lane")), Style::normal},
                  {left, Style::warn},
                  {client::cut(client::compact_json(member(*approval, "args")), 300), Style::dim}},
                 widths, width);
    } else {
      const std::string id = item.substr(5);
      const json* plan = state.find_loop(id);
      line = row(
          {{"plan", Style::warn},
           {printable(id), Style::bold},
           {"awaiting approval", Style::warn},
           {"", Style::normal},
           {"", Style::normal},
           {plan != nullptr ? client::first_line(string_of(*plan, "task"), 300) : "", Style::dim}},
          {5, 10, 18, 0, 0, 0}, width);
    }
    if (i == cursor) line.fill = Style::selected;
    out.push_back(std::move(line));
  }
  out.push_back(Line(std::string(width, '-'), Style::dim));
  Lines preview = approval_preview(state, ui.approval_cursor, width);
  const std::size_t room = height > out.size() ? height - out.size() : 0;
  if (preview.size() > room && room > 0)
    ui.preview_top = std::min(ui.preview_top, preview.size() - room);
  for (std::size_t i = ui.preview_top; i < preview.size() && out.size() < height; ++i)
    out.push_back(std::move(preview[i]));
  return out;
}

// ---- tool calls ----

Lines tools_body(const DaemonState& state, UiState& ui, std::size_t width, std::size_t height,
                 std::int64_t now_ms) {
  Lines out;
  const std::vector<std::size_t> widths = {8, 7, 16, 7, 13, 10, 9, 0};
  out.push_back(row({{"AGO", Style::bold},
                     {"CALL", Style::bold},
                     {"TOOL", Style::bold},
                     {"LANE", Style::bold},
                     {"LOOP", Style::bold},
                     {"STATUS", Style::bold},
                     {"DURATION", Style::bold},
                     {"OUTPUT", Style::bold}},
                    widths, width));
  const auto rows = tool_rows(state, ui);
  if (rows.empty()) {
    out.push_back(Line(state.tool_calls().empty() ? "no tool calls seen since the TUI started"
                                                  : "no call matches the search (/)",
                       Style::dim));
    return out;
  }
  std::vector<std::string> ids;
  for (const auto* call : rows)
    ids.push_back(call->call_id);
  if (std::find(ids.begin(), ids.end(), ui.tool_cursor) == ids.end()) ui.tool_cursor = ids.front();
  const std::size_t cursor = index_of(ids, ui.tool_cursor);
  const std::size_t list_height = height > 1 ? height - 1 : 1;
  ui.tools_top = scrolled(ui.tools_top, cursor, list_height, rows.size());
  for (std::size_t i = ui.tools_top; i < rows.size() && i < ui.tools_top + list_height; ++i) {
    const ToolCallRecord& call = *rows[i];
    Line line = row(
        {{since(call.started_at_ms, now_ms), Style::dim},
         {printable(call.call_id), Style::normal},
         {printable(call.tool), Style::bold},
         {printable(call.lane), Style::normal},
         {call.loop_id.empty() ? "-" : printable(call.loop_id), Style::normal},
         {printable(call.status), status_style(call.status)},
         {call.duration_ms ? client::format_duration_ms(*call.duration_ms) : "-", Style::normal},
         {call.output_bytes > 0 ? client::format_bytes(call.output_bytes) : "", Style::dim}},
        widths, width);
    if (i == cursor) line.fill = Style::selected;
    out.push_back(std::move(line));
  }
  return out;
}

// ---- detail ----

Lines detail_header_lines(const DaemonState& state, const UiState& ui, std::size_t width,
                          std::int64_t now_ms) {
  Lines out;
  const json* listed = state.find_loop(ui.detail_loop);
  const LoopDetail* detail = state.detail();
  const json& loop = detail != nullptr && detail->loop().is_object() ? detail->loop()
                     : listed != nullptr                             ? *listed
                                                                     : json();
  if (!loop.is_object()) {
    out.push_back(Line("loading " + printable(ui.detail_loop) + "\xe2\x80\xa6", Style::dim));
    return out;
  }
  const std::string status = string_of(loop, "status");
  Line first;
  first.add(printable(string_of(loop, "id")), Style::bold);
  first.add(" " + printable(string_of(loop, "type")) + " ");
  first.add(client::status_with_reason(loop, 60), status_style(status));
  first.add(kSeparator).add("iteration " + iteration_cell(loop));
  first.add(kSeparator).add(elapsed_cell(loop, now_ms));
  first.add(kSeparator).add(client::format_token_total(member(loop, "usage")) + " tok");
  first.add(kSeparator).add(client::format_usd(member(member(loop, "usage"), "cost_usd")));
  out.push_back(fitted(first, width));
  Line second;
  const json& left = member(member(loop, "budget"), "left");
  second.add("budget left ", Style::bold);
  if (left.is_object() && !left.empty()) {
    std::string figures;
    for (const auto& [key, value] : left.items()) {
      if (!figures.empty()) figures += ", ";
      figures +=
          key + " " + (key == "usd" ? client::format_usd(value) : client::format_count(value));
    }
    second.add(figures);
  } else {
    second.add(loop.contains("budget") ? "no limits" : "-", Style::dim);
  }
  out.push_back(fitted(second, width));
  out.push_back(
      fitted(Line("task " + client::first_line(string_of(loop, "task"), 400), Style::dim), width));
  return out;
}

Lines detail_header(const DaemonState& state, const UiState& ui, std::size_t width,
                    std::int64_t now_ms) {
  if (const std::string waiting = waiting_cell(state, ui.detail_loop); !waiting.empty()) {
    Lines out = detail_header_lines(state, ui, width, now_ms);
    if (!out.empty()) out.insert(out.begin() + 1, fitted(Line(waiting, Style::bad), width));
    return out;
  }
  return detail_header_lines(state, ui, width, now_ms);
}

}  // namespace

std::vector<LoopRow> loop_rows(const DaemonState& state, const UiState& ui) {
  json shown = json::array();
  const bool filtering = ui.filter != StatusFilter::all || !ui.loop_search.empty();
  const json* source = &state.loops();
  if (filtering) {
    for (const json& loop : state.loops()) {
      const std::string status = string_of(loop, "status");
      if (!filter_accepts(ui.filter, status)) continue;
      if (!ui.loop_search.empty()) {
        const std::string haystack =
            string_of(loop, "id") + " " + status + " " + string_of(loop, "task");
        if (haystack.find(ui.loop_search) == std::string::npos) continue;
      }
      shown.push_back(loop);
    }
    source = &shown;
  }
  const auto tree = client::loop_tree_rows(*source);
  // Group each root with its descendants, so sorting moves whole subtrees.
  std::vector<std::vector<const client::TreeRow*>> groups;
  for (const auto& tree_row : tree) {
    if (tree_row.depth == 0 || groups.empty()) groups.emplace_back();
    groups.back().push_back(&tree_row);
  }
  const auto key = [&](const json& loop) -> double {
    switch (ui.sort) {
      case SortOrder::updated:
        return -number(loop, "updated_at_ms");
      case SortOrder::cost:
        return -number(member(loop, "usage"), "cost_usd");
      case SortOrder::status: {
        const std::string status = string_of(loop, "status");
        return client::is_final_status(status) ? 2 : (status == "awaiting_approval" ? 0 : 1);
      }
      case SortOrder::created:
        break;
    }
    return number(loop, "created_at_ms");
  };
  if (ui.sort != SortOrder::created) {
    std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
      return key(*a.front()->loop) < key(*b.front()->loop);
    });
  }
  std::vector<LoopRow> rows;
  for (const auto& group : groups) {
    std::size_t hidden_below = SIZE_MAX;  // depth of a collapsed ancestor
    for (std::size_t i = 0; i < group.size(); ++i) {
      const client::TreeRow& tree_row = *group[i];
      if (tree_row.depth > hidden_below) continue;
      hidden_below = SIZE_MAX;
      LoopRow r;
      const std::string id = string_of(*tree_row.loop, "id");
      // Point into the state, not the filtered copy.
      r.loop = state.find_loop(id);
      if (r.loop == nullptr) continue;
      r.id = id;
      r.lead = tree_row.lead;
      r.depth = tree_row.depth;
      r.has_children = i + 1 < group.size() && group[i + 1]->depth > tree_row.depth;
      r.collapsed = r.has_children && ui.collapsed.count(id) != 0;
      if (r.collapsed) hidden_below = tree_row.depth;
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

std::vector<std::string> approval_items(const DaemonState& state) {
  std::vector<std::string> items;
  for (const json& approval : state.approvals()) {
    const std::string id = string_of(approval, "id");
    if (!id.empty()) items.push_back("call:" + id);
  }
  for (const json* plan : state.plans_awaiting())
    items.push_back("plan:" + string_of(*plan, "id"));
  return items;
}

std::vector<const ToolCallRecord*> tool_rows(const DaemonState& state, const UiState& ui) {
  std::vector<const ToolCallRecord*> out;
  const auto& calls = state.tool_calls();
  for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
    if (!ui.tool_search.empty()) {
      const std::string haystack =
          it->call_id + " " + it->tool + " " + it->lane + " " + it->loop_id + " " + it->status;
      if (haystack.find(ui.tool_search) == std::string::npos) continue;
    }
    out.push_back(&*it);
  }
  return out;
}

Lines markdown_lines(const std::string& markdown, std::size_t width) {
  Lines out;
  for (const auto& raw : wrap_to_width(client::printable_lines(markdown), 100000)) {
    std::string_view text = raw;
    Style style = Style::normal;
    std::string indent;
    if (!text.empty() && text.front() == '#') {
      while (!text.empty() && text.front() == '#')
        text.remove_prefix(1);
      while (!text.empty() && text.front() == ' ')
        text.remove_prefix(1);
      style = Style::bold;
    } else {
      const std::size_t spaces = text.find_first_not_of(' ');
      if (spaces != std::string_view::npos &&
          (text.substr(spaces, 2) == "- " || text.substr(spaces, 2) == "* "))
        indent = std::string(spaces + 2, ' ');
    }
    const std::size_t inner = width > indent.size() + 1 ? width - indent.size() : 1;
    bool first = true;
    for (const auto& piece : wrap_to_width(text, first ? width : inner)) {
      out.push_back(Line((first ? "" : indent) + piece, style));
      first = false;
    }
  }
  return out;
}

Lines detail_lines(const LoopDetail& detail, const UiState& ui, std::size_t width,
                   std::int64_t now_ms) {
  Lines out;
  const auto add_wrapped = [&](const std::string& text, Style style, const std::string& indent) {
    const std::size_t inner = width > indent.size() + 1 ? width - indent.size() : 1;
    for (const auto& piece : wrap_to_width(client::printable_lines(text), inner))
      out.push_back(Line(indent + piece, style));
  };
  const auto add_output = [&](const std::string& output, bool truncated, std::size_t folded,
                              bool tail) {
    if (output.empty()) return;
    std::vector<std::string> lines =
        wrap_to_width(client::printable_lines(output), width > 5 ? width - 4 : 1);
    if (!lines.empty() && lines.back().empty()) lines.pop_back();
    std::size_t from = 0, to = lines.size();
    if (ui.fold_output && lines.size() > folded) {
      if (tail) {
        from = lines.size() - folded;
        out.push_back(Line("    \xe2\x80\xa6 " + std::to_string(from) + " lines above (o unfolds)",
                           Style::dim));
      } else {
        to = folded;
      }
    }
    for (std::size_t i = from; i < to; ++i)
      out.push_back(Line("    " + lines[i], Style::dim));
    if (to < lines.size())
      out.push_back(
          Line("    \xe2\x80\xa6 " + std::to_string(lines.size() - to) + " more lines (o unfolds)",
               Style::dim));
    if (truncated && (!ui.fold_output || lines.size() <= folded))
      out.push_back(Line("    [output cut to its last 16 KiB in the TUI]", Style::dim));
  };
  if (!detail.loaded()) out.push_back(Line("loading the journal\xe2\x80\xa6", Style::dim));
  if (detail.dropped_entries() > 0)
    out.push_back(Line("\xe2\x80\xa6 " + std::to_string(detail.dropped_entries()) +
                           " earlier entries not kept (looprctl loop logs shows them all)",
                       Style::dim));
  for (const auto& entry : detail.entries()) {
    switch (entry.kind) {
      case DetailEntry::Kind::iteration:
        out.push_back(
            Line("\xe2\x94\x80\xe2\x94\x80 " + printable(entry.text) + " \xe2\x94\x80\xe2\x94\x80",
                 Style::bold));
        break;
      case DetailEntry::Kind::text:
        add_wrapped(entry.text, entry.streaming ? Style::active : Style::normal, "");
        if (entry.streaming) out.push_back(Line("\xe2\x96\x8d streaming", Style::active));
        break;
      case DetailEntry::Kind::tool: {
        Line line;
        line.add("\xe2\x96\xb8 ", Style::dim);  // ▸
        line.add(printable(entry.tool), Style::bold);
        line.add(" " + client::cut(entry.arguments, 400), Style::dim);
        out.push_back(fitted(line, width));
        Line status;
        status.add("    ");
        status.add(printable(entry.status),
                   status_style(entry.status == "running" ? "running"
                                                          : (entry.ok ? "success" : "failed")));
        if (entry.duration_ms) {
          status.add(" " + client::format_duration_ms(*entry.duration_ms));
        } else if (entry.status == "running" && entry.started_at_ms > 0) {
          status.add(" " + since(entry.started_at_ms, now_ms), Style::dim);
        }
        if (!entry.router_call_id.empty() && entry.router_call_id != entry.call_id)
          status.add("  " + printable(entry.router_call_id), Style::dim);
        out.push_back(fitted(status, width));
        add_output(entry.output, entry.output_truncated, kFoldedOutputLines,
                   entry.status == "running");
        break;
      }
      case DetailEntry::Kind::validation: {
        Line line;
        if (entry.status == "running") {
          line.add("\xe2\x8b\xaf validation running: " + printable(entry.command), Style::active);
        } else {
          const bool passed = entry.passed.value_or(false);
          line.add(passed ? "\xe2\x9c\x93 validation passed" : "\xe2\x9c\x97 validation failed",
                   passed ? Style::good : Style::bad);
          std::string figures = " (";
          figures += entry.exit_code ? "exit " + std::to_string(*entry.exit_code) : "no exit code";
          if (entry.duration_ms) figures += ", " + client::format_duration_ms(*entry.duration_ms);
          line.add(figures + ")");
        }
        out.push_back(fitted(line, width));
        add_output(entry.output, entry.output_truncated, kFoldedValidationLines, true);
        break;
      }
      case DetailEntry::Kind::note:
        add_wrapped(entry.text, Style::warn, "");
        break;
      case DetailEntry::Kind::event:
        add_wrapped(entry.text, Style::dim, "");
        break;
    }
  }
  return out;
}

Lines diff_lines(const LoopDetail& detail, std::size_t width) {
  Lines out;
  const auto& diff = detail.diff();
  if (!diff) {
    out.push_back(Line("reading the diff\xe2\x80\xa6", Style::dim));
    return out;
  }
  if (!diff->error.empty()) {
    for (const auto& piece : wrap_to_width("no diff: " + printable(diff->error), width))
      out.push_back(Line(piece, Style::bad));
    out.push_back(Line("(D: back to the journal)", Style::dim));
    return out;
  }
  Line title;
  title.add("diff ", Style::bold);
  title.add(printable(diff->to), Style::bold);
  title.add(" against " + printable(diff->from_branch) + " since " +
            client::short_commit(json(diff->from)));
  title.add("  (D: the journal)", Style::dim);
  out.push_back(fitted(title, width));
  // A diff line as text: tabs to spaces, control bytes escaped, cut to width.
  const auto text_of = [&](std::string_view raw) {
    std::string expanded;
    for (const char c : raw) {
      if (c == '\t') {
        expanded.append(4 - expanded.size() % 4, ' ');
      } else if (c != '\r') {
        expanded.push_back(c);
      }
    }
    return clip_to_width(printable(expanded), width);
  };
  const auto each_line = [](const std::string& text, const auto& visit) {
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      if (!visit(std::string_view(text).substr(start, end - start))) return;
      start = end + 1;
    }
  };
  const std::size_t cap = kMaxDiffLines;
  std::size_t skipped = 0;
  const auto add = [&](std::string_view raw, Style style) {
    if (out.size() >= cap) {
      ++skipped;
      return true;
    }
    out.push_back(Line(text_of(raw), style));
    return true;
  };
  if (diff->stat.empty() && diff->diff.empty()) {
    out.push_back(Line("no change since the branch was made", Style::dim));
    return out;
  }
  each_line(diff->stat, [&](std::string_view raw) { return add(raw, Style::normal); });
  out.emplace_back();
  each_line(diff->diff, [&](std::string_view raw) {
    Style style = Style::normal;
    if (raw.rfind("diff --git", 0) == 0 || raw.rfind("+++", 0) == 0 || raw.rfind("---", 0) == 0 ||
        raw.rfind("index ", 0) == 0) {
      style = Style::bold;
    } else if (raw.rfind("@@", 0) == 0) {
      style = Style::active;
    } else if (!raw.empty() && raw.front() == '+') {
      style = Style::added;
    } else if (!raw.empty() && raw.front() == '-') {
      style = Style::removed;
    }
    return add(raw, style);
  });
  if (skipped > 0)
    out.push_back(Line("\xe2\x80\xa6 " + std::to_string(skipped) +
                           " more lines not shown (git diff " + printable(diff->from) + ".." +
                           printable(diff->to) + " shows them all)",
                       Style::dim));
  else if (diff->truncated)
    out.push_back(
        Line("\xe2\x80\xa6 the diff was cut to its first 512 KiB in the TUI", Style::dim));
  return out;
}

Lines help_lines(std::size_t width) {
  Lines out;
  out.push_back(Line("keys (any other key closes this help)", Style::title));
  const std::vector<std::size_t> widths = {10, 28, 0};
  for (const auto& binding : key_bindings()) {
    std::string where;
    const std::pair<unsigned, const char*> panes[] = {{kInLoops, "loops"},
                                                      {kInApprovals, "approvals"},
                                                      {kInTools, "tools"},
                                                      {kInDetail, "detail"}};
    if (binding.panes == kEverywhere) {
      where = "everywhere";
    } else {
      for (const auto& [bit, name] : panes) {
        if ((binding.panes & bit) == 0) continue;
        if (!where.empty()) where += ", ";
        where += name;
      }
    }
    out.push_back(
        row({{binding.names, Style::bold}, {where, Style::dim}, {binding.what, Style::normal}},
            widths, width));
  }
  out.push_back(Line("prompt line: Enter sends, Esc cancels, Backspace, C-u clears", Style::dim));
  return out;
}

std::size_t body_height(ScreenSize size) {
  const std::size_t header = size.height >= 12 ? 3 : 1;
  const std::size_t chrome = header + 2;  // + tab line + status line
  return size.height > chrome ? size.height - chrome : 0;
}

namespace {

// The detail pane's scrollable lines: the journal or the diff.
Lines detail_pane_lines(const DaemonState& state, const UiState& ui, std::size_t width,
                        std::int64_t now_ms) {
  if (state.detail() == nullptr || state.detail()->loop_id() != ui.detail_loop) return {};
  if (ui.detail_view == DetailView::diff) return diff_lines(*state.detail(), width);
  return detail_lines(*state.detail(), ui, width, now_ms);
}

}  // namespace

Lines compose(const DaemonState& state, UiState& ui, ScreenSize size, std::int64_t now_ms) {
  const std::size_t width = std::max<std::size_t>(size.width, 1);
  Lines screen = header(state, now_ms, width, size.height < 12);
  screen.push_back(tab_line(state, ui, width));
  const std::size_t height = body_height(size);

  Lines body;
  if (ui.help) {
    Lines help = help_lines(width);
    if (help.size() > height)
      ui.help_top = std::min(ui.help_top, help.size() - height);
    else
      ui.help_top = 0;
    for (std::size_t i = ui.help_top; i < help.size(); ++i)
      body.push_back(std::move(help[i]));
  } else {
    switch (ui.pane) {
      case Pane::loops:
        body = loops_body(state, ui, width, height, now_ms);
        break;
      case Pane::approvals:
        body = approvals_body(state, ui, width, height, now_ms);
        break;
      case Pane::tools:
        body = tools_body(state, ui, width, height, now_ms);
        break;
      case Pane::detail: {
        body = detail_header(state, ui, width, now_ms);
        const std::size_t room = height > body.size() ? height - body.size() : 0;
        Lines lines = detail_pane_lines(state, ui, width, now_ms);
        const std::size_t limit = lines.size() > room ? lines.size() - room : 0;
        if (ui.detail_follow || ui.detail_top > limit) ui.detail_top = limit;
        for (std::size_t i = ui.detail_top; i < lines.size() && body.size() < height; ++i)
          body.push_back(std::move(lines[i]));
        break;
      }
    }
  }
  body.resize(std::min(body.size(), height));
  for (auto& line : body)
    screen.push_back(fitted(std::move(line), width));
  while (screen.size() < size.height - std::min<std::size_t>(size.height, 1))
    screen.emplace_back();

  Line status;
  if (ui.prompt != Prompt::none) {
    std::string label;
    switch (ui.prompt) {
      case Prompt::search:
        label = "/";
        break;
      case Prompt::deny_reason:
        label = "deny " + ui.prompt_target + ", reason (optional): ";
        break;
      case Prompt::reject_reason:
        label = "reject " + ui.prompt_target + ", reason (optional): ";
        break;
      case Prompt::iterate_feedback:
        label = "iterate " + ui.prompt_target + ", feedback: ";
        break;
      case Prompt::new_plan:
        label = "new plan in " + ui.repo + ": ";
        break;
      case Prompt::new_code:
        label = "new code loop in " + ui.repo + ", task: ";
        break;
      case Prompt::new_code_validate:
        label = "validation command (Enter alone: loopr.toml's): ";
        break;
      case Prompt::none:
        break;
    }
    // Keep the end of a long input in sight.
    std::string input = encode_utf8(ui.input);
    const std::size_t label_width = display_width(label);
    const std::size_t room = width > label_width + 2 ? width - label_width - 2 : 1;
    while (display_width(input) > room) {
      std::u32string chars = decode_utf8(input);
      chars.erase(chars.begin(), chars.begin() + static_cast<std::ptrdiff_t>(
                                                     std::max<std::size_t>(1, chars.size() / 8)));
      input = encode_utf8(chars);
    }
    status.add(printable(label), Style::input).add(printable(input) + "\xe2\x96\x8f", Style::input);
  } else if (ui.help) {
    status.add("j k PgUp PgDn scroll \xc2\xb7 any other key closes the help", Style::dim);
  } else if (ui.confirm) {
    status.add(printable(ui.confirm_question), Style::warn);
  } else if (!ui.message.empty()) {
    status.add(printable(ui.message), ui.message_is_error ? Style::bad : Style::normal);
  } else {
    status.add("? help \xc2\xb7 Tab panes \xc2\xb7 Enter open \xc2\xb7 Esc back \xc2\xb7 q quit",
               Style::dim);
  }
  if (size.height > 0) screen.push_back(fitted(status, width));
  screen.resize(size.height);
  return screen;
}

Visible visible_rows(const DaemonState& state, const UiState& ui, ScreenSize size,
                     std::int64_t now_ms) {
  Visible visible;
  for (const auto& r : loop_rows(state, ui))
    visible.loops.push_back(r.id);
  visible.approvals = approval_items(state);
  for (const auto* call : tool_rows(state, ui))
    visible.tools.push_back(call->call_id);
  const std::size_t height = body_height(size);
  visible.page = height > 2 ? height - 2 : 1;
  if (ui.pane == Pane::detail && state.detail() != nullptr &&
      state.detail()->loop_id() == ui.detail_loop) {
    for (const auto& line :
         detail_pane_lines(state, ui, std::max<std::size_t>(size.width, 1), now_ms))
      visible.detail.push_back(line.text());
    // The detail pane's own header takes three rows of the body.
    visible.page = height > 3 ? height - 3 : 1;
  }
  return visible;
}

}  // namespace loopr::tui
