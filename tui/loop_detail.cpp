#include "tui/loop_detail.hpp"

#include "client/loop_view.hpp"
#include "client/text_format.hpp"
#include "common/utf8.hpp"
#include "proto/json_bounded.hpp"

namespace loopr::tui {
namespace {

using client::integer_of;
using client::member;
using client::string_of;
using nlohmann::json;

std::optional<std::int64_t> optional_integer(const json& object, std::string_view key) {
  const json& value = member(object, key);
  if (!value.is_number()) return std::nullopt;
  return integer_of(object, key);
}

// What a tool call gave, for a person: the content's JSON object (the
// loop stores the tool's output as compact JSON text) shown by its useful
// fields — a file's numbered lines, a command's output and exit code, an
// error's message and hint — else indented; other text as it is.
std::string content_text(const json& content) {
  if (content.is_null()) return {};
  json value = content;
  if (content.is_string()) {
    const std::string& text = content.get_ref<const std::string&>();
    if (text.size() > 4 * LoopDetail::kMaxOutputBytes || text.empty() || text.front() != '{')
      return text;
    auto parsed = proto::parse_json_bounded(text);
    if (!parsed || !parsed->is_object()) return text;
    value = std::move(*parsed);
  }
  if (!value.is_object()) return client::pretty_json(value);
  if (value.contains("error")) {
    const json& error = value["error"];
    std::string out = "error: " + string_of(error, "code") + ": " + string_of(error, "message");
    if (!string_of(error, "hint").empty()) out += "\nhint: " + string_of(error, "hint");
    return out;
  }
  if (member(value, "content").is_string()) return value["content"].get<std::string>();
  if (value.contains("stdout") || value.contains("stderr")) {
    std::string out = string_of(value, "stdout") + string_of(value, "stderr");
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out + "exit code " + client::cell(value, "exit_code");
  }
  return client::pretty_json(value);
}

// A call's arguments as compact JSON; models' arguments arrive as JSON text,
// shown parsed when they are JSON (else as the text they are).
std::string arguments_text(const json& arguments) {
  if (!arguments.is_string()) return client::compact_json(arguments);
  const std::string& text = arguments.get_ref<const std::string&>();
  if (text.size() > 4 * LoopDetail::kMaxArgumentBytes) return text;
  auto parsed = proto::parse_json_bounded(text);
  return parsed ? client::compact_json(*parsed) : text;
}

}  // namespace

bool append_capped(std::string& buffer, std::string_view text, std::size_t cap, bool keep_tail) {
  if (buffer.size() + text.size() <= cap) {
    buffer.append(text);
    return false;
  }
  if (!keep_tail) {
    const std::size_t room = cap > buffer.size() ? cap - buffer.size() : 0;
    buffer.append(text.substr(0, utf8_safe_prefix(text, room)));
    return true;
  }
  buffer.append(text);
  std::size_t drop = buffer.size() - cap;
  // Move past continuation bytes so the tail starts on a character.
  while (drop < buffer.size() && (static_cast<unsigned char>(buffer[drop]) & 0xC0) == 0x80)
    ++drop;
  buffer.erase(0, drop);
  return true;
}

DetailEntry& LoopDetail::push(DetailEntry entry) {
  if (entries_.size() >= kMaxEntries) {
    entries_.pop_front();
    ++dropped_;
  }
  entries_.push_back(std::move(entry));
  return entries_.back();
}

DetailEntry* LoopDetail::find_tool(const std::string& call_id) {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
    if (it->kind == DetailEntry::Kind::tool && it->call_id == call_id) return &*it;
  return nullptr;
}

DetailEntry* LoopDetail::find_text(std::int64_t iteration, std::int64_t sequence) {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
    if (it->kind == DetailEntry::Kind::text && it->iteration == iteration &&
        it->sequence == sequence)
      return &*it;
  return nullptr;
}

void LoopDetail::load_transcript(const json& steps) {
  entries_.clear();
  dropped_ = 0;
  last_step_id_ = 0;
  current_iteration_ = 0;
  if (steps.is_array())
    for (const json& step : steps)
      apply_step(step);
  loaded_ = true;
  std::deque<proto::Event> pending;
  pending.swap(pending_);
  for (const auto& event : pending)
    apply_event(event);
  ++version_;
}

void LoopDetail::set_diff(const json& result) {
  BranchDiff diff;
  diff.from = string_of(result, "from");
  diff.from_branch = string_of(result, "from_branch");
  diff.to = string_of(result, "to");
  append_capped(diff.stat, string_of(result, "stat"), kMaxDiffBytes / 8, false);
  diff.truncated = append_capped(diff.diff, string_of(result, "diff"), kMaxDiffBytes, false);
  diff_ = std::move(diff);
  ++version_;
}

void LoopDetail::set_diff_error(std::string error) {
  BranchDiff diff;
  diff.error = std::move(error);
  diff_ = std::move(diff);
  ++version_;
}

void LoopDetail::apply_event(const proto::Event& event) {
  const json& data = event.data;
  std::string about = string_of(data, "loop_id");
  if (about.empty() && event.event.rfind("loop.", 0) == 0)
    about = string_of(member(data, "loop"), "id");
  if (about.empty() && event.event == "tool.output" && loaded_) {
    // tool.output names only its call: it is ours when one of our calls has it.
    apply_tool_event(event);
    ++version_;
    return;
  }
  if (about != loop_id_) return;
  if (!loaded_) {
    if (pending_.size() >= kMaxPendingEvents) pending_.pop_front();
    pending_.push_back(event);
    return;
  }
  if (event.event == "loop.step") {
    apply_step(member(data, "step"));
  } else if (event.event == "chat.chunk") {
    apply_chunk(data);
  } else if (event.event.rfind("tool.", 0) == 0) {
    apply_tool_event(event);
  } else if (event.event == "loop.updated" || event.event == "loop.created") {
    if (loop_.is_object()) {
      // Keep loop.get's detailed keys (iterations, budget); take the rest.
      for (const auto& [key, value] : member(data, "loop").items())
        loop_[key] = value;
    }
  } else {
    return;
  }
  ++version_;
}

void LoopDetail::apply_chunk(const json& data) {
  const std::int64_t iteration = integer_of(data, "iteration", current_iteration_);
  const std::int64_t sequence = integer_of(data, "sequence", -1);
  DetailEntry* entry = find_text(iteration, sequence);
  if (entry == nullptr) {
    DetailEntry fresh;
    fresh.kind = DetailEntry::Kind::text;
    fresh.iteration = iteration;
    fresh.sequence = sequence;
    fresh.streaming = true;
    entry = &push(std::move(fresh));
  }
  if (!entry->streaming) return;  // the final text is already in
  append_capped(entry->text, string_of(data, "text"), kMaxTextBytes, false);
}

void LoopDetail::apply_tool_event(const proto::Event& event) {
  const json& data = event.data;
  const std::string router_id = string_of(data, "call_id");
  if (router_id.empty()) return;
  DetailEntry* entry = nullptr;
  for (auto it = entries_.rbegin(); it != entries_.rend() && entry == nullptr; ++it)
    if (it->kind == DetailEntry::Kind::tool && it->router_call_id == router_id) entry = &*it;
  if (event.event == "tool.started") {
    if (entry != nullptr) return;
    // The model's call this daemon call serves: the oldest running call of
    // that tool not yet bound to a daemon call (calls run in journal order).
    const std::string tool = string_of(data, "tool");
    for (auto& candidate : entries_) {
      if (candidate.kind == DetailEntry::Kind::tool && candidate.router_call_id.empty() &&
          candidate.status == "running" && candidate.tool == tool) {
        candidate.router_call_id = router_id;
        return;
      }
    }
    // A call the journal does not show (validation's command, a direct call).
    DetailEntry fresh;
    fresh.kind = DetailEntry::Kind::tool;
    fresh.iteration = current_iteration_;
    fresh.router_call_id = router_id;
    fresh.call_id = router_id;
    fresh.tool = tool;
    fresh.status = "running";
    push(std::move(fresh));
    return;
  }
  if (entry == nullptr) return;
  if (event.event == "tool.output") {
    if (append_capped(entry->output, string_of(data, "data"), kMaxOutputBytes, true))
      entry->output_truncated = true;
  } else if (event.event == "tool.finished") {
    entry->duration_ms = optional_integer(data, "duration_ms");
    if (entry->call_id == entry->router_call_id) {  // no tool_results step will come
      entry->status = string_of(data, "status");
      entry->ok = member(data, "ok") == json(true);
    }
  }
}

void LoopDetail::apply_step(const json& step) {
  if (!step.is_object()) return;
  const std::int64_t id = integer_of(step, "id");
  if (id != 0 && id <= last_step_id_) return;  // already shown
  if (id != 0) last_step_id_ = id;
  const std::string kind = string_of(step, "kind");
  const json& data = member(step, "data");
  const std::int64_t iteration = integer_of(step, "iteration", current_iteration_);
  const std::int64_t at_ms = integer_of(step, "at_ms");

  const auto line = [&](DetailEntry::Kind entry_kind, std::string text) {
    DetailEntry entry;
    entry.kind = entry_kind;
    entry.iteration = iteration;
    append_capped(entry.text, text, kMaxTextBytes, false);
    push(std::move(entry));
  };

  if (kind == "iteration_started") {
    current_iteration_ = iteration;
    line(DetailEntry::Kind::iteration, "iteration " + std::to_string(iteration));
  } else if (kind == "model_turn") {
    const json& turn = member(data, "turn");
    const std::int64_t sequence = integer_of(data, "sequence", -1);
    const std::string text = string_of(turn, "text");
    DetailEntry* entry = find_text(iteration, sequence);
    if (entry != nullptr) {
      entry->text.clear();
      append_capped(entry->text, text, kMaxTextBytes, false);
      entry->streaming = false;
    } else if (!text.empty()) {
      DetailEntry fresh;
      fresh.kind = DetailEntry::Kind::text;
      fresh.iteration = iteration;
      fresh.sequence = sequence;
      append_capped(fresh.text, text, kMaxTextBytes, false);
      push(std::move(fresh));
    }
  } else if (kind == "tool_calls_started") {
    const json& calls = member(data, "calls");
    if (!calls.is_array()) return;
    for (const json& call : calls) {
      DetailEntry entry;
      entry.kind = DetailEntry::Kind::tool;
      entry.iteration = iteration;
      entry.call_id = string_of(call, "id");
      entry.tool = string_of(call, "name");
      append_capped(entry.arguments, arguments_text(member(call, "arguments")), kMaxArgumentBytes,
                    false);
      entry.status = "running";
      entry.started_at_ms = at_ms;
      push(std::move(entry));
    }
  } else if (kind == "tool_results") {
    const json& results = member(data, "results");
    if (!results.is_array()) return;
    for (const json& result : results) {
      DetailEntry* entry = find_tool(string_of(result, "call_id"));
      if (entry == nullptr) continue;
      entry->status = string_of(result, "status");
      if (entry->status.empty())
        entry->status = member(result, "ok") == json(false) ? "failed" : "success";
      entry->ok = member(result, "ok") != json(false) && member(result, "is_error") != json(true);
      if (!entry->duration_ms && entry->started_at_ms > 0 && at_ms >= entry->started_at_ms)
        entry->duration_ms = at_ms - entry->started_at_ms;
      // The result replaces live output: it is what the model read.
      entry->output.clear();
      entry->output_truncated = append_capped(
          entry->output, content_text(member(result, "content")), kMaxOutputBytes, false);
    }
  } else if (kind == "validation_started") {
    DetailEntry entry;
    entry.kind = DetailEntry::Kind::validation;
    entry.iteration = iteration;
    entry.command = string_of(data, "command");
    entry.status = "running";
    push(std::move(entry));
  } else if (kind == "validation") {
    DetailEntry* entry = nullptr;
    for (auto it = entries_.rbegin(); it != entries_.rend() && entry == nullptr; ++it)
      if (it->kind == DetailEntry::Kind::validation && it->status == "running") entry = &*it;
    if (entry == nullptr) {
      DetailEntry fresh;
      fresh.kind = DetailEntry::Kind::validation;
      fresh.iteration = iteration;
      entry = &push(std::move(fresh));
    }
    entry->passed = member(data, "passed") == json(true);
    entry->status = *entry->passed ? "passed" : "failed";
    entry->exit_code = optional_integer(data, "exit_code");
    entry->duration_ms = optional_integer(data, "duration_ms");
    entry->output.clear();
    entry->output_truncated =
        append_capped(entry->output, string_of(data, "output"), kMaxOutputBytes, false);
  } else if (kind == "note") {
    line(DetailEntry::Kind::note, "note: " + string_of(data, "text"));
  } else if (kind == "handoff") {
    line(DetailEntry::Kind::event,
         "handoff (" + string_of(data, "reason") + "): " + string_of(data, "why"));
    line(DetailEntry::Kind::note, "handoff note: " + string_of(data, "note"));
  } else if (kind == "committed") {
    line(DetailEntry::Kind::event,
         "committed " + client::short_commit(member(data, "commit")) +
             (member(data, "changed") == json(false) ? " (no change)" : ""));
  } else if (kind == "status") {
    std::string text = "status " + string_of(data, "status");
    const std::string reason = string_of(data, "reason");
    if (!reason.empty()) text += ": " + reason;
    line(DetailEntry::Kind::event, text);
  } else if (kind == "artifact") {
    line(DetailEntry::Kind::event, string_of(data, "kind") + " artifact stored");
  } else if (kind == "children") {
    line(DetailEntry::Kind::event, "children " + client::compact_json(member(data, "ids")));
  } else if (kind == "merged") {
    line(DetailEntry::Kind::event,
         "merged " + string_of(data, "child") + " into " + string_of(data, "into"));
  } else if (kind == "merge_conflict") {
    line(DetailEntry::Kind::event, "merge conflict with " + string_of(data, "child") + ": " +
                                       client::compact_json(member(data, "files")));
  } else if (kind == "approval") {
    std::string text = "plan " + string_of(data, "decision");
    for (const char* key : {"reason", "feedback"})
      if (!string_of(data, key).empty()) text += ": " + string_of(data, key);
    line(DetailEntry::Kind::event, text);
  } else if (kind == "created") {
    line(DetailEntry::Kind::event, "created");
  }
}

}  // namespace loopr::tui
