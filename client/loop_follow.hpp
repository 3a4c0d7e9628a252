// Following one loop as it runs, for `looprctl loop run` and `looprctl loop
// logs --follow` (docs/control-protocol.md, "Loops").
//
// LoopPrinter turns one loop's events and journal steps into lines for a
// person (or JSON Lines with --json), remembering what it already printed:
//   - steps by id, so a step read with loop.transcript and pushed again as a
//     loop.step event prints once;
//   - model turns by (iteration, sequence): text streamed as chat.chunk is not
//     printed again when its model_turn step arrives, and chunks of a turn
//     already printed from the journal are skipped;
//   - in the live style, iteration headers and validations per iteration,
//     which arrive both as loop.iteration events and as steps.
// Events of other loops are ignored (a `loop run` subscribes before it knows
// its loop's id). Every string goes through printable(); the printer flushes
// after each event so the lines appear as they happen.
//
// follow_loop() reads events from a client that is already subscribed until
// the loop reaches a final status, asking loop.get when the events were
// quiet for a while or some were dropped, so a missed final event cannot
// leave it waiting forever.
//
// Threads: one thread uses a printer and its client. The only thing another
// context may read is the mid-line flag (set_mid_line_flag), a
// volatile sig_atomic_t meant for a SIGINT handler.
#pragma once

#include <csignal>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "client/control_client.hpp"
#include "common/error.hpp"
#include "proto/control_messages.hpp"

namespace loopr::client {

enum class FollowStyle {
  // loop run: streamed text, one line per finished tool call, iteration
  // starts, validations, retries, status changes.
  live,
  // loop logs: the journal's steps as they are stored, and streamed text.
  journal,
};

class LoopPrinter {
 public:
  static constexpr std::size_t kMaxRemembered = 100'000;  // ids, turns, calls

  // With `json`, the live style prints each of the loop's events as a
  // compact {"event", "data"} line and the journal style each step as a
  // compact object line; nothing else.
  LoopPrinter(std::string loop_id, FollowStyle style, bool json, std::ostream& out);

  const std::string& loop_id() const { return loop_id_; }
  // Only steps and text of this iteration (loop logs --iteration).
  void set_iteration_filter(std::optional<std::int64_t> iteration) { iteration_ = iteration; }
  // Kept equal to "the last line printed is unfinished" (streamed text).
  void set_mid_line_flag(volatile std::sig_atomic_t* flag) { mid_line_flag_ = flag; }
  // The status the loop had when following began (live style: a change from
  // it prints a "status:" line).
  void set_status(std::string status) { last_status_ = std::move(status); }

  // A journal step, stored or pushed. Skips steps already printed and steps
  // of other iterations. Returns the loop's status if the step is a status
  // step naming a final one.
  std::optional<std::string> step(const nlohmann::json& step);
  // One pushed event. Returns the loop's status once the event reports a
  // final one (loop.updated, or a status step).
  std::optional<std::string> event(const proto::Event& event);
  // Ends the line of streamed text, if one is open.
  void end_line();

 private:
  bool is_ours(const proto::Event& event) const;
  bool in_filter(const nlohmann::json& iteration) const;
  bool remember_step(const nlohmann::json& id);
  void live_step(const nlohmann::json& step);
  void print_chunk(const nlohmann::json& data);
  void print_retry(const nlohmann::json& data);
  void print_tool_finished(const nlohmann::json& data);
  void iteration_header(const nlohmann::json& iteration);
  void validation(const nlohmann::json& iteration, const nlohmann::json& result);
  void set_mid_line(bool mid_line);
  void flush();

  std::string loop_id_;
  FollowStyle style_;
  bool json_;
  std::ostream& out_;
  std::optional<std::int64_t> iteration_;
  volatile std::sig_atomic_t* mid_line_flag_ = nullptr;
  bool mid_line_ = false;
  std::optional<std::int64_t> max_step_id_;        // integer step ids printed so far
  std::set<std::string> other_step_ids_;           // other ids (compact JSON)
  std::set<std::string> turns_streamed_;           // "iteration/sequence" with chunks printed
  std::set<std::string> turns_shown_;              // ... whose model_turn step was printed
  std::set<std::string> headers_shown_;            // iterations with a header printed
  std::set<std::string> validations_shown_;        // iterations with a validation printed
  std::map<std::string, std::string> tool_names_;  // call_id -> tool (live style)
  std::string last_status_;
};

struct FollowOptions {
  // Ask loop.get after this long without an event.
  Milliseconds status_check{30'000};
};

// Reads events from `client` (subscribed to the loop's topics) and hands
// them to `printer` until the loop reaches a final status; returns that
// status. Errors of the connection are returned as they are.
Result<std::string> follow_loop(ControlClient& client, LoopPrinter& printer,
                                const FollowOptions& options, std::ostream& err);

}  // namespace loopr::client
