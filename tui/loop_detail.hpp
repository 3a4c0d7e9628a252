// LoopDetail: the live conversation of one loop, as the detail pane shows
// it — built from the loop's journal (loop.transcript) and then kept current
// by events (loop.step, chat.chunk, tool.started/output/finished).
//
// Contract:
//  - Entries are in journal order: iteration starts, the model's text (the
//    streamed chunks coalesced into one entry per model turn, replaced by the
//    turn's final text when its model_turn step arrives), tool calls with
//    their arguments, status, duration and output, validations, notes,
//    commits, status changes and plan steps.
//  - Everything is capped so a flood cannot grow memory: at most
//    kMaxEntries entries (the oldest dropped and counted), kMaxTextBytes of
//    text per entry and kMaxOutputBytes of output per tool call (live
//    output keeps its tail, a result its head and tail).
//  - Events that arrive before the transcript are kept (at most
//    kMaxPendingEvents) and replayed over it, so nothing is lost or shown
//    twice: a step whose id the transcript already holds is skipped.
//  - Any JSON is accepted: a missing or mistyped field is left out.
// Not thread-safe: the UI thread owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "proto/control_messages.hpp"

namespace loopr::tui {

struct DetailEntry {
  enum class Kind { iteration, text, tool, validation, note, event };
  Kind kind = Kind::event;
  std::int64_t iteration = 0;
  // text: the model's words; note/event: the line to show; validation: output.
  std::string text;
  bool streaming = false;      // text still arriving as chat.chunk
  std::int64_t sequence = -1;  // text: the model turn's sequence

  // tool
  std::string call_id;         // the model's id for the call
  std::string router_call_id;  // looprd's call id (tool.* events), once known
  std::string tool;
  std::string arguments;  // compact JSON, capped
  std::string status;     // running, success, failed, denied, ...
  bool ok = true;
  std::optional<std::int64_t> duration_ms;
  std::int64_t started_at_ms = 0;
  std::string output;  // the result's content, or live command output
  bool output_truncated = false;

  // validation
  std::optional<bool> passed;
  std::optional<std::int64_t> exit_code;
  std::string command;
};

// loop.diff's answer: what the loop's branch changed since it was made.
struct BranchDiff {
  std::string from;         // the commit the branch was made at
  std::string from_branch;  // its parent's branch (or its base)
  std::string to;           // the loop's branch
  std::string stat;         // as `git diff --stat`
  std::string diff;         // unified, capped (kMaxDiffBytes here, the daemon's cap before)
  bool truncated = false;   // cut here (the daemon marks its own cut in the middle)
  std::string error;        // why there is no diff (no branch yet, ...)
};

class LoopDetail {
 public:
  static constexpr std::size_t kMaxEntries = 2000;
  static constexpr std::size_t kMaxTextBytes = 64 * 1024;
  static constexpr std::size_t kMaxOutputBytes = 16 * 1024;
  static constexpr std::size_t kMaxArgumentBytes = 2 * 1024;
  static constexpr std::size_t kMaxPendingEvents = 4000;
  static constexpr std::size_t kMaxDiffBytes = 512 * 1024;

  explicit LoopDetail(std::string loop_id) : loop_id_(std::move(loop_id)) {}

  const std::string& loop_id() const { return loop_id_; }
  // loop.get's <loop> (iterations, budget); null until it arrives.
  const nlohmann::json& loop() const { return loop_; }
  void set_loop(nlohmann::json loop) { loop_ = std::move(loop); }

  // The journal (oldest first), replacing what was built so far; pending
  // events are replayed over it.
  void load_transcript(const nlohmann::json& steps);
  bool loaded() const { return loaded_; }

  // An event of any kind; those not about this loop are ignored.
  void apply_event(const proto::Event& event);

  // The branch diff (loop.diff), once asked and answered; `result` is
  // loop.diff's result, `error` the failure's message.
  const std::optional<BranchDiff>& diff() const { return diff_; }
  void set_diff(const nlohmann::json& result);
  void set_diff_error(std::string error);

  const std::deque<DetailEntry>& entries() const { return entries_; }
  std::uint64_t dropped_entries() const { return dropped_; }
  // Bumped on every change, so a view can tell whether to rebuild.
  std::uint64_t version() const { return version_; }

 private:
  void apply_step(const nlohmann::json& step);
  void apply_chunk(const nlohmann::json& data);
  void apply_tool_event(const proto::Event& event);
  DetailEntry& push(DetailEntry entry);
  DetailEntry* find_tool(const std::string& call_id);
  DetailEntry* find_text(std::int64_t iteration, std::int64_t sequence);

  std::string loop_id_;
  nlohmann::json loop_;
  std::deque<DetailEntry> entries_;
  std::optional<BranchDiff> diff_;
  std::deque<proto::Event> pending_;
  bool loaded_ = false;
  std::int64_t last_step_id_ = 0;
  std::int64_t current_iteration_ = 0;
  std::uint64_t dropped_ = 0;
  std::uint64_t version_ = 0;
};

// `text` appended to `buffer`, keeping at most `cap` bytes: the tail when
// `keep_tail`, else the head; cut on UTF-8 boundaries. Returns whether
// anything was dropped.
bool append_capped(std::string& buffer, std::string_view text, std::size_t cap, bool keep_tail);

}  // namespace loopr::tui
