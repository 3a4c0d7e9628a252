// LoopRun: one loop, from its first iteration to its final status
// (DESIGN.md §8). Each iteration starts from a fresh context (the prompt
// template, the task, progress notes, the last failure); the model's tool
// calls go through the ToolGateway and their results back to the model
// until it ends its turn or calls complete_task; then the worktree is
// committed on the loop's branch and the daemon runs the validation command
// on the heavy lane. The loop completes only when validation passes.
//
// Crash safety: every step is appended to the journal (with the loop's
// progress, in one transaction) before it is acted on: a model turn before
// its tool calls run, `tool_calls_started` before any of them runs, the
// results before the next model call. resume() rebuilds the iteration's
// conversation from the journal and goes on from the last stored step: a
// model call without a stored answer is made again (a scripted provider
// answers by sequence number, so with the same turn), calls that were
// started and have no stored result are re-run when read-only and reported
// to the model as interrupted otherwise, never silently re-run.
//
// Threads: io thread only. Owned by the LoopEngine through shared_ptr; the
// run coroutine holds a reference.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "budget/budget.hpp"
#include "llm/cancel_token.hpp"
#include "llm/conversation.hpp"
#include "llm/provider.hpp"
#include "loops/context_budget.hpp"
#include "loops/git/worktrees.hpp"
#include "loops/loop_health.hpp"
#include "loops/loop_record.hpp"
#include "loops/loop_status.hpp"
#include "loops/protected_files.hpp"
#include "loops/run_host.hpp"
#include "store/store.hpp"

namespace loopr::loops {

class LoopRun : public std::enable_shared_from_this<LoopRun> {
 public:
  LoopRun(RunHost& engine, store::LoopRow row, LoopSpec spec, LoopProgress progress);

  const std::string& id() const { return spec_.id; }
  std::int64_t seq() const { return row_.seq; }  // creation order
  const LoopSpec& spec() const { return spec_; }
  const LoopProgress& progress() const { return progress_; }
  LoopStatus status() const { return status_; }
  // The loop as loop.list shows it; `detailed` adds iterations and budget.
  nlohmann::json to_json(bool detailed) const;

  // The coroutine: runs (or resumes) until a final status, or until stop().
  asio::awaitable<void> run();
  bool running() const { return in_run_; }

  void request_pause();
  // Returns false when the loop is not paused (or about to be).
  bool request_resume();
  void request_cancel();
  // looprd is stopping: leave the status as it is.
  void stop();
  Result<void> mark_deleted();

  // For the engine's tree work (loops/loop_engine_tree.cpp), never while run() is
  // running: change progress through progress_for_update(), then record()
  // stores it with a journal step (false: the store refused; the change is
  // still in memory, so the caller stops). set_status() does both for a
  // status change and announces it.
  LoopProgress& progress_for_update() { return progress_; }
  LoopSpec& spec_for_update() {
    spec_dirty_ = true;
    return spec_;
  }
  bool record(const std::string& kind, nlohmann::json data) {
    return persist(kind, std::move(data));
  }
  bool set_status(LoopStatus status, std::string reason);
  const std::string& parent_id() const { return row_.parent_id; }
  std::int64_t created_at_ms() const { return row_.created_at_ms; }
  // plan.iterate, loop.rerun: one more iteration from a fresh context, told
  // the person's `feedback` (may be empty); max_iterations counts afresh.
  // The caller stores it (record) and launches the run.
  void prepare_rerun(const std::string& feedback);
  // A loop its plan's tree ended (end_tree) comes back when the loop that
  // ended the tree is re-run: `status` is waiting or awaiting_approval for a
  // parent, queued for a loop that goes on from its journal when it starts.
  bool revive(LoopStatus status, std::string reason);

 private:
  enum class Phase { new_iteration, model, commit, validate, decide, done };

  asio::awaitable<Phase> restore();
  // Once per worktree, before its first iteration (loops/loop_run_prepare.cpp):
  // [worktrees] include and a parent's build outputs brought in
  // (worktree_prep.hpp), then the setup command on the heavy lane. False
  // when the loop ended (setup failed, cancelled) or looprd is stopping.
  asio::awaitable<bool> prepare_worktree();
  asio::awaitable<Phase> start_iteration();
  asio::awaitable<Phase> model_phase();
  // One model call with the provider's slot; nullopt when the loop was
  // stopped or cancelled meanwhile. When the provider still fails after its
  // retries in a way another provider may not ([llm] fallback,
  // llm::worth_another_provider), the same turn is asked of each fallback in
  // order, with its own model and slot, when the budgets still allow that
  // model's worst case — only for a loop on [llm] provider, not one pinned
  // to another; answered_by_ then names the one that answered and those that
  // failed first.
  asio::awaitable<std::optional<Result<llm::ModelTurn>>> ask_model(
      llm::Provider& provider, const config::ProviderSettings& provider_settings,
      const llm::ModelRequest& request);
  // Adds a turn to the loop's spend, priced by the model that answered it.
  void add_turn_spend(const llm::ModelTurn& turn);
  // The journal's record of who answered the last turn asked, when it was a
  // fallback: {provider, model, fallback_from: [{provider, error}], cost_usd}.
  // Null when the loop's own provider answered.
  nlohmann::json answered_by_json(const llm::ModelTurn& turn) const;
  // Ends the iteration with a handoff (issue 24): asks the model, within
  // what the window and the budgets leave, for a note the next iteration
  // starts from (dropping old results when the conversation cannot hold the
  // question; `overflowed`: the provider already refused it as too long),
  // else writes loopr's own record of the calls; stores a `handoff` step.
  asio::awaitable<Phase> hand_off(std::string reason, std::string why, llm::ModelRequest request,
                                  ContextBudget& context, std::size_t request_bytes,
                                  llm::Provider& provider,
                                  const config::ProviderSettings& provider_settings,
                                  bool overflowed);
  std::string max_tokens_note(std::int64_t max_tokens) const;
  // read_output: a page of a result of this iteration that was cut.
  nlohmann::json read_output(const nlohmann::json& args) const;
  // Lint after edit: the problems `outcome` (the lint command's result)
  // reports for `path` that its last lint did not, as a note; "" for none.
  std::string new_lint_problems(const std::string& path, const nlohmann::json& outcome);
  std::string calls_record() const;
  // Runs one turn's calls; true when the iteration's model phase ends.
  asio::awaitable<bool> run_calls(const std::vector<llm::ToolCall>& calls, bool resumed);
  asio::awaitable<Phase> commit();
  asio::awaitable<Phase> validate();
  // After a daemon command in the worktree (the setup, a validation): what
  // it changed is put back or kept out of the loop's commits
  // (worktree_changes.hpp). Returns {restored, kept_out} for its journal
  // step, or null when it changed nothing; a failure is logged and returned
  // as {error}, never fatal.
  asio::awaitable<nlohmann::json> settle_by_products();
  Phase decide();
  // validate() of an iteration that handed off: no validation, on to the next.
  Phase handed_off();
  // The current iteration's entry of progress_.iterations, without its
  // validation (or handoff), which the caller adds.
  nlohmann::json iteration_summary() const;
  // Waits while paused; false when the run must end (cancel or stop).
  asio::awaitable<bool> pause_point();

  // A valid artifact tool call: stores the artifact (journal step, Markdown
  // under the state dir, loop.artifact event). Returns the tool's outcome.
  nlohmann::json record_artifact(const std::string& tool, const nlohmann::json& args);
  // Document loops without a validation command: the artifact is the check.
  nlohmann::json artifact_validation() const;
  std::string plan_budget_exceeded_by_call(const NextCall& call) const;
  // What the loop's, its plan tree's and the global budgets leave now.
  Allowance allowance_left() const;

  // The loop's [validation] protected_paths, compiled on first use
  // (loops/protected_files.hpp); null when it has none. An Error when one no
  // longer compiles: the loop fails rather than run unprotected.
  Result<const ProtectedPaths*> protected_paths();
  // Adds an attempt on a protected path to the progress (kept for loop show).
  void note_protected_event(nlohmann::json event);
  // Before the commit, and before a validate call of the model's: puts back
  // every protected file the iteration changed, keeps a journal step, and
  // adds what it did to protected_note (told to the model with the
  // verdict). The message ("" when nothing was put back), or nullopt when
  // the loop ended (the files could not be put back) or looprd is stopping.
  asio::awaitable<std::optional<std::string>> restore_protected_files();

  // Appends a journal step with the loop's progress and status; emits
  // loop.step and loop.updated. False (and the run ends) when the store
  // refused: nothing may be acted on that is not stored.
  bool persist(const std::string& kind, nlohmann::json data);
  Phase finish(LoopStatus status, std::string reason);
  // A new run may start: the last one's stop, cancel and pause requests go.
  void clear_run_flags();
  void tick_wall_clock();
  // The budget the next call could overrun ("" when it fits); `tools_bytes`:
  // the size of the tool definitions, computed once per model phase.
  // `model`: price the call as that model's (a fallback's); else the loop's.
  std::string worst_budget_for_call(const llm::ModelRequest& request, std::size_t tools_bytes,
                                    bool count_turns, const std::string* model = nullptr) const;
  // Whether a usd limit (the loop's, the plan's or the global one) applies.
  bool usd_budget_applies() const;
  void clear_messages();
  void add_message(llm::Message message);  // keeps messages_bytes_
  const config::ModelPrice* price() const;
  const config::ModelPrice* price_of(const std::string& model) const;

  // The fallback provider that answered the last turn asked (ask_model).
  struct FallbackAnswer {
    std::string provider;
    std::string model;
    nlohmann::json failed = nlohmann::json::array();  // [{provider, error}] before it
  };
  std::optional<FallbackAnswer> answered_by_;

  RunHost& engine_;  // the LoopEngine that owns this run, seen through run_host.hpp
  store::LoopRow row_;
  LoopSpec spec_;
  LoopProgress progress_;
  LoopStatus status_;
  WorktreeInfo worktree_;
  // While the validation command runs (or waits for a heavy slot): what it
  // is and since when (0: not validating); to_json() shows it live.
  std::string validating_command_;
  std::int64_t validating_since_ms_ = 0;
  bool worktree_open_ = false;

  std::string system_;
  std::vector<llm::Message> messages_;        // only through clear_/add_message
  std::size_t messages_bytes_ = 0;            // their JSON size, for the budget's estimate
  std::vector<llm::ToolCall> pending_calls_;  // of the last model turn, not yet answered
  bool calls_started_ = false;                // tool_calls_started stored for them
  bool iteration_changed_ = false;            // from the `committed` step
  std::string last_commit_;
  nlohmann::json validation_;  // the `validation` step's data, for decide()
  CallRepeats repeats_;
  bool cut_at_max_tokens_ = false;  // the last model turn stopped at max_tokens
  // This iteration's results that were cut for the model: call id → the
  // whole view (tool_result_view.hpp), which read_output pages.
  std::map<std::string, std::string> full_views_;
  // Lint after edit: path → the problem lines its last lint reported.
  std::map<std::string, std::set<std::string>> lint_seen_;
  std::optional<ProtectedPaths> protected_;  // protected_paths(), once compiled

  llm::CancelToken cancel_token_;
  bool in_run_ = false;
  bool pause_requested_ = false;
  bool cancel_requested_ = false;
  bool stopping_ = false;
  bool spec_dirty_ = false;  // the next persist() writes the spec too
  std::shared_ptr<bool> abandoned_ = std::make_shared<bool>(false);  // for provider slots
  std::unique_ptr<asio::steady_timer> wake_;                         // pause waits on it
  std::chrono::steady_clock::time_point last_tick_;
};

}  // namespace loopr::loops
