// Following loops as they run (docs/control-protocol.md, "Loops" and
// "Plans"): one loop for `looprctl loop run`, `loop logs --follow` and
// `plan`; a plan's whole tree for `plan approve --follow`.
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
// the loop reaches a final status (or one the printer was told to stop at,
// as `plan` stops at awaiting_approval), asking loop.get when the events were
// quiet for a while or some were dropped, so a missed final event cannot
// leave it waiting forever.
//
// PlanTreePrinter and follow_plan() do the same for every loop of a plan,
// one line per status change, merge and merge conflict, until the plan
// itself stops (plan.get when quiet).
//
// DetachOnInterrupt makes Ctrl-C while following leave the loop running.
//
// Threads: one thread uses a printer and its client. The only thing another
// context may read is the mid-line flag (set_mid_line_flag), a
// volatile sig_atomic_t meant for a SIGINT handler.
#pragma once

#include <signal.h>

#include <csignal>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

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
  // Following also stops when the loop reaches `status`, final or not (a
  // plan's awaiting_approval). Such a status prints no "status:" line.
  void stop_at(std::string status) { stop_statuses_.insert(std::move(status)); }
  // A final status or one given to stop_at().
  bool stops_at(std::string_view status) const;

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
  std::set<std::string, std::less<>> stop_statuses_;
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

// Every loop of one plan, for a person: "<id>: <status> (<reason>)" when a
// loop is first seen or its status (or queue_reason) changes, "<id> merged
// into <branch> at <commit>", "<id>: merge conflict into <branch> (files);
// resolving in <id>". With `json`, each of the plan's events as a compact
// {"event", "data"} line instead.
//
// A loop object (loop.created, loop.updated, plan.*'s `plan`) is the plan's
// when its id or plan_id is the plan's id. loop.merged and
// loop.merge_conflict name only loop_id: theirs is the plan's when it is a
// loop already seen in the plan, or its id starts with "<plan id>-" (ids
// show the place in the tree).
class PlanTreePrinter {
 public:
  PlanTreePrinter(std::string plan_id, bool json, std::ostream& out);

  const std::string& plan_id() const { return plan_id_; }
  // A loop as the caller has already shown it: no line until it changes.
  void known(const nlohmann::json& loop);
  // Stop following (status kCallAwaitsApproval) at the first approval a
  // call of the plan's loops waits for: a headless run cannot answer it.
  void stop_at_approvals() { stop_at_approvals_ = true; }
  // One pushed event. Returns the plan's status once it stops following.
  std::optional<std::string> event(const proto::Event& event);
  // A plan.get result: lines for the changes no event reported (human
  // style only). Returns the plan's status if it stops following.
  std::optional<std::string> snapshot(const nlohmann::json& plan_get);

  // Where following a plan stops: a final status, or awaiting_approval (the
  // plan was iterated and waits for the person again).
  static bool stops_at(std::string_view status);

 private:
  bool is_ours(const nlohmann::json& loop) const;
  bool is_our_id(const std::string& loop_id) const;
  // Prints the loop's line if it is new or changed; returns the plan's status
  // when the loop is the plan and that status stops following.
  std::optional<std::string> loop_seen(const nlohmann::json& loop, bool print);

  std::string plan_id_;
  bool json_;
  std::ostream& out_;
  std::map<std::string, std::string> seen_;  // id -> status and queue_reason last shown
  bool stop_at_approvals_ = false;
};

// Reads events from `client` (subscribed to loop.updated, loop.merged,
// loop.merge_conflict, plan and approval, without loop_id) until the plan stops
// (PlanTreePrinter::stops_at); asks plan.get when the events were quiet or
// some were dropped. Returns the plan's status.
Result<std::string> follow_plan(ControlClient& client, PlanTreePrinter& printer,
                                const FollowOptions& options, std::ostream& err);

// While it lives, Ctrl-C (SIGINT) ends an unfinished output line, writes
// `message` on stderr and exits 0, leaving what was followed running; the
// previous handler is put back by the destructor. The handler only makes
// async-signal-safe calls; the message is copied (cut to 511 bytes) before
// the handler is installed. One instance at a time (it uses a global).
class DetachOnInterrupt {
 public:
  explicit DetachOnInterrupt(const std::string& message);
  ~DetachOnInterrupt();
  DetachOnInterrupt(const DetachOnInterrupt&) = delete;
  DetachOnInterrupt& operator=(const DetachOnInterrupt&) = delete;

  // For LoopPrinter::set_mid_line_flag: the handler reads it.
  volatile std::sig_atomic_t* mid_line_flag() const;

 private:
  struct sigaction previous_ {};
  bool installed_ = false;
};

}  // namespace loopr::client
