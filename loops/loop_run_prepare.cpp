// LoopRun::prepare_worktree(): a new worktree made ready to work in before
// the loop's first iteration (issue 25; loops/git/worktree_prep.hpp).
#include <spdlog/spdlog.h>

#include <chrono>

#include "loops/git/worktree_prep.hpp"
#include "loops/loop_run.hpp"
#include "loops/offload.hpp"
#include "loops/run_host.hpp"

namespace loopr::loops {
namespace {

using nlohmann::json;

// What the journal and the failure keep of the setup's output: its tail
// (an error is printed last).
constexpr std::size_t kSetupOutputKept = 8000;

std::string text_of(const json& outcome) {
  const json output = outcome.value("output", json());
  if (!output.is_object()) {
    const json error = outcome.value("error", json::object());
    return "the setup could not run: " +
           (error.is_object() ? error.value("message", std::string()) : std::string());
  }
  std::string text;
  if (output.contains("output") && output["output"].is_string()) {
    text = output["output"].get<std::string>();
  } else {
    text = output.value("stdout", std::string());
    const std::string err = output.value("stderr", std::string());
    if (!err.empty()) text += (text.empty() ? "" : "\n") + err;
  }
  if (text.size() > kSetupOutputKept) {
    text = "[... " + std::to_string(text.size() - kSetupOutputKept) + " bytes cut ...]\n" +
           text.substr(text.size() - kSetupOutputKept);
  }
  return text;
}

}  // namespace

asio::awaitable<bool> LoopRun::prepare_worktree() {
  const auto& services = engine_.services();
  if (!worktree_open_) co_return true;  // nothing to prepare (no worktree)
  const config::WorktreePrep prep =
      spec_.repo_settings ? spec_.prep : services.settings.worktrees.prep;
  const WorktreeInfo info = worktree_;
  const std::string parent_branch = spec_.parent_branch;

  json step = json::object();
  if (!prep.include.empty() || !parent_branch.empty()) {
    const auto started = std::chrono::steady_clock::now();
    CopyLimits limits;
    limits.max_bytes = static_cast<std::uint64_t>(services.settings.worktrees.copy_limit_mb) << 20;
    auto file_work = [=] { return bring_into_worktree(info, prep.include, parent_branch, limits); };
    auto brought = co_await offload(engine_.git_pool(), file_work);
    if (stopping_) co_return false;
    if (!brought) {
      const Error& error = brought.error();
      finish(LoopStatus::failed,
             "cannot bring [worktrees] include into its worktree: " + error.message +
                 (error.hint.empty() ? std::string() : "; " + error.hint));
      co_return false;
    }
    step["include"] = brought->to_json();
    step["include"]["duration_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::steady_clock::now() - started)
                                         .count();
  }
  if (!prep.setup.empty()) {
    if (!persist("setup_started", {{"command", prep.setup}})) co_return false;
    const auto started = std::chrono::steady_clock::now();
    validating_command_ = prep.setup;
    validating_since_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    const json outcome =
        co_await services.tools.run_validation(spec_.id, spec_.worktree, prep.setup);
    validating_since_ms_ = 0;
    validating_command_.clear();
    if (stopping_) co_return false;
    const json output = outcome.value("output", json());
    const json exit_code = output.is_object() ? output.value("exit_code", json()) : json();
    const bool passed = outcome.value("ok", false) && exit_code.is_number_integer() &&
                        exit_code.get<int>() == 0 && !output.value("timed_out", false);
    const std::string text = text_of(outcome);
    const json setup = {{"command", prep.setup},
                        {"passed", passed},
                        {"exit_code", exit_code},
                        {"output", text},
                        {"duration_ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::chrono::steady_clock::now() - started)
                                            .count()}};
    if (!persist("setup", setup)) co_return false;
    if (!passed) {
      finish(
          LoopStatus::failed,
          "setup `" + prep.setup + "` failed" +
              (exit_code.is_number_integer() ? " (exit " + exit_code.dump() + ")" : std::string()) +
              ":\n" + text);
      co_return false;
    }
    step["setup"] = {{"passed", true}, {"duration_ms", setup["duration_ms"]}};
  }
  if (cancel_requested_) {
    finish(LoopStatus::cancelled, "cancelled by the user");
    co_return false;
  }
  // What include and setup wrote is not the model's work: kept out of the
  // loop's commits (worktree_changes.hpp).
  if (!step.empty()) {
    json settled = co_await settle_by_products();
    if (!settled.is_null()) step["by_products"] = std::move(settled);
  }
  progress_.worktree_prepared = true;
  // Nothing to do: no step of its own; the flag is stored with the next one
  // (iteration_started), and redoing nothing after a crash costs nothing.
  if (step.empty()) co_return true;
  co_return persist("worktree_prepared", step);
}

}  // namespace loopr::loops
