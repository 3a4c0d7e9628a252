// Hooks ([[hooks]] in loopr.toml, issue 27): the user's own commands, run by
// looprd when something happens. This file is the pure part: which hooks an
// event runs, what a hook reads on stdin, and what its exit means. No I/O
// (hook_runner.hpp runs them; host_process.hpp starts a trusted one).
//
// The events:
//   tool.before            a tool call is about to run (after the catalog, the
//                          schema and the approval rules; before an approval
//                          wait). Exit 2 refuses the call: its stderr is the
//                          error the model (or client) reads. Exit 0 lets it
//                          run; what it prints on stdout is a note the model
//                          reads with the result.
//   tool.after             a call ran; exit 0 stdout, or exit 2 stderr, is a
//                          note the model reads with the result.
//   approval.needed        a call waits for a person's approval
//   iteration.end          a loop's iteration was validated, or handed off
//   loop.end               a loop (or plan) reached a final status, once
//   plan.awaiting_approval a plan is at its gate
//   worktree.created       loopr made a loop's worktree (the hook runs beside
//                          the loop; what a loop must wait for belongs in
//                          [worktrees] setup)
// Any other exit, a crash, a timeout or a hook that cannot start is a hook
// failure: reported (log and the hook.failed event), never fatal, and the
// call or loop goes on as if the hook had said nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.hpp"

namespace loopr::hooks {

// At most this much of the event reaches a hook's stdin: long strings in it
// (a tool's output) are cut, and say so.
inline constexpr std::size_t kMaxHookInputBytes = 256 * 1024;
// At most this much of what a hook prints is kept (head), per stream.
inline constexpr std::size_t kMaxHookOutputBytes = 16 * 1024;
// A note or refusal message the model reads is cut to this many bytes.
inline constexpr std::size_t kMaxHookMessageBytes = 4000;

// What became of one run of a hook's command.
struct HookRun {
  enum class Ended { exited, signalled, timed_out, not_started };
  Ended ended = Ended::not_started;
  int exit_code = -1;  // exited: its status; signalled: the signal
  std::string out;     // stdout, at most kMaxHookOutputBytes
  std::string err;     // stderr, the same
  std::string why;     // not_started: what stopped it
  std::uint64_t duration_ms = 0;
};

// What a run tells the caller.
struct HookVerdict {
  bool refuse = false;                 // tool.before exited 2
  std::string message;                 // refuse: the error the model reads
  std::string note;                    // a note the model reads with the result ("" none)
  std::optional<std::string> failure;  // a hook failure, for the report
};

// The hooks `event` runs, in the order written: those whose tools filter is
// empty or names `tool`.
std::vector<const config::HookSettings*> hooks_for(const std::vector<config::HookSettings>& hooks,
                                                   std::string_view event, std::string_view tool);

// The JSON text a hook reads on stdin: {"event": EVENT, ...data's members},
// at most kMaxHookInputBytes (the longest strings are cut first, each ending
// with "[loopr: N bytes cut]"; then, if need be, the largest members are
// replaced whole by such a marker).
std::string hook_input(std::string_view event, const nlohmann::json& data);

// What `run` of `hook` on `event` means.
HookVerdict judge(const config::HookSettings& hook, std::string_view event, const HookRun& run);

// "loopr.toml:12 (./check.sh …)": the hook, as a report names it.
std::string hook_label(const config::HookSettings& hook);

}  // namespace loopr::hooks
