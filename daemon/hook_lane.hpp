// The sandbox a user's hook runs in unless it is trusted
// (hooks/hook_runner.hpp): a job of loopr-tool's `hook` tool in the no-net
// lane — the lane's sandbox (no network, Landlock to the worktree, seccomp,
// no capabilities, hidden home and daemon folders) and, like every job, a
// PID and mount namespace of its own. The job works in the event's worktree,
// which must lie beneath [sandbox] worktree_roots like any job's. `hook` is
// no catalog tool: only this code sends it, never a model or a client.
#pragma once

#include "daemon/runner_link.hpp"
#include "hooks/hook_runner.hpp"

namespace loopr::daemon {

// Runs hooks as jobs on `lane` (which must outlive the function).
hooks::HookRunner::SandboxedRun hooks_in_lane(RunnerLink& lane);

// What a hook job's reply says of the hook's run (exposed for tests).
hooks::HookRun hook_run_from_reply(const LaneReply& reply);

}  // namespace loopr::daemon
