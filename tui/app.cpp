#include "tui/app.hpp"

#include "client/loop_view.hpp"

namespace loopr::tui {
namespace {

using client::member;
using client::string_of;
using nlohmann::json;

}  // namespace

void App::on_message(LinkMessage message, std::int64_t now_ms) {
  switch (message.kind) {
    case LinkMessage::Kind::link:
      state_.set_link(message.link, message.detail);
      break;
    case LinkMessage::Kind::snapshot:
      state_.apply_snapshot(message.snapshot, message.steady_ms);
      state_.note_reading_time(now_ms);
      // A new connection: what the detail pane showed may be stale.
      state_.close_detail();
      plans_asked_.clear();
      diff_in_flight_ = false;
      diff_stale_ = false;
      break;
    case LinkMessage::Kind::metrics:
      state_.apply_metrics(message.metrics, message.steady_ms);
      state_.note_reading_time(now_ms);
      break;
    case LinkMessage::Kind::event: {
      const auto& event = message.event;
      if (event.event == "loop.iteration" && state_.detail() != nullptr &&
          string_of(event.data, "loop_id") == state_.detail()->loop_id())
        detail_refresh_ = true;  // iterations and budget come from loop.get
      if (state_.detail() != nullptr && state_.detail()->diff()) {
        const std::string followed = state_.detail()->loop_id();
        // A commit of the loop, or a child's work merged into its branch.
        if ((event.event == "loop.step" && string_of(event.data, "loop_id") == followed &&
             string_of(member(event.data, "step"), "kind") == "committed") ||
            (event.event == "loop.merged" &&
             string_of(event.data, "into") == state_.detail()->diff()->to &&
             !state_.detail()->diff()->to.empty()))
          diff_stale_ = true;
      }
      state_.apply_event(event, now_ms);
      break;
    }
    case LinkMessage::Kind::reply:
      on_reply(message);
      break;
  }
}

void App::on_reply(const LinkMessage& message) {
  const Command& command = message.command;
  const std::string id = string_of(command.params, "id");
  if (command.method == "loop.get") {
    if (message.ok && state_.detail() != nullptr && state_.detail()->loop_id() == id)
      state_.detail()->set_loop(member(message.result, "loop"));
    return;
  }
  if (command.method == "loop.transcript") {
    if (state_.detail() != nullptr && state_.detail()->loop_id() == id)
      state_.detail()->load_transcript(message.ok ? member(message.result, "steps")
                                                  : json::array());
    if (!message.ok) {
      ui_.message = "cannot read the journal of " + id + ": " + message.detail;
      ui_.message_is_error = true;
    }
    return;
  }
  if (command.method == "loop.diff") {
    diff_in_flight_ = false;
    if (state_.detail() != nullptr && state_.detail()->loop_id() == id) {
      if (message.ok) {
        state_.detail()->set_diff(message.result);
      } else {
        state_.detail()->set_diff_error(message.detail);
      }
    }
    return;
  }
  if (command.method == "plan.get") {
    if (message.ok) {
      const json& markdown = member(message.result, "markdown");
      state_.set_plan_markdown(
          id, markdown.is_string() ? markdown.get<std::string>() : "(the plan has no text yet)");
    } else {
      plans_asked_.erase(id);
    }
    return;
  }
  // The person's own requests: say how they went.
  if (message.ok) {
    ui_.message = "done: " + command.label;
    ui_.message_is_error = false;
    if (command.method == "loop.create_plan") {
      const std::string created = string_of(member(message.result, "loop"), "id");
      if (!created.empty()) {
        state_.upsert_loop(member(message.result, "loop"));
        ui_.message = "plan " + created + " started: it will wait for your approval";
      }
    } else if (command.method == "loop.create") {
      const json& loop = member(message.result, "loop");
      const std::string created = string_of(loop, "id");
      if (!created.empty()) {
        // The new loop appears at once (loop.created may come later) and is
        // selected, in a tree that shows it.
        state_.upsert_loop(loop);
        if (ui_.pane == Pane::detail) ui_.pane = ui_.back;
        if (ui_.pane != Pane::loops) ui_.pane = Pane::loops;
        if (!filter_accepts(ui_.filter, string_of(loop, "status"))) ui_.filter = StatusFilter::all;
        ui_.loop_search.clear();
        ui_.loop_cursor = created;
        ui_.message = "code loop " + created + " started";
      }
    }
  } else {
    ui_.message = "failed: " + command.label + ": " + message.detail;
    ui_.message_is_error = true;
  }
}

std::vector<Command> App::on_key(Key key, ScreenSize size, std::int64_t now_ms) {
  const Visible visible = visible_rows(state_, ui_, size, now_ms);
  return handle_key(ui_, state_, visible, key);
}

void App::refused(const Command& command) {
  if (command.method == "loop.diff") {
    diff_in_flight_ = false;
    diff_stale_ = true;
  } else if (command.method == "plan.get") {
    plans_asked_.erase(string_of(command.params, "id"));
  } else if (command.method == "loop.get") {
    detail_refresh_ = true;
  }
  ui_.message = "too many requests waiting; " + command.label + " is asked again shortly";
}

std::vector<Command> App::follow_ups() {
  std::vector<Command> out;
  if (ui_.pane == Pane::detail && !ui_.detail_loop.empty()) {
    if (state_.open_detail(ui_.detail_loop)) {
      out.push_back({"loop.get", {{"id", ui_.detail_loop}}, "read " + ui_.detail_loop});
      out.push_back({"loop.transcript", {{"id", ui_.detail_loop}}, "read " + ui_.detail_loop});
      detail_refresh_ = false;
    } else if (detail_refresh_) {
      out.push_back({"loop.get", {{"id", ui_.detail_loop}}, "read " + ui_.detail_loop});
      detail_refresh_ = false;
    }
    const LoopDetail* detail = state_.detail();
    if (ui_.detail_view == DetailView::diff && detail != nullptr && !diff_in_flight_ &&
        (!detail->diff() || diff_stale_)) {
      out.push_back({"loop.diff", {{"id", ui_.detail_loop}}, "diff " + ui_.detail_loop});
      diff_in_flight_ = true;
      diff_stale_ = false;
    }
  }
  for (const json* plan : state_.plans_awaiting()) {
    const std::string id = string_of(*plan, "id");
    if (state_.plan_markdown(id) != nullptr || plans_asked_.count(id) != 0) continue;
    plans_asked_.insert(id);
    out.push_back({"plan.get", {{"id", id}}, "read plan " + id});
  }
  return out;
}

}  // namespace loopr::tui
