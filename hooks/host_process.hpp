// run_on_host(): runs a trusted hook's command as the user, outside any
// sandbox, the way looprd itself would run it: `/bin/sh -c COMMAND` with
// looprd's environment (plus LOOPR_HOOK_EVENT), in `cwd`, the event's JSON
// on its stdin (a memory file), stdout and stderr kept up to kMaxHookOutputBytes
// each (the rest is read and dropped, so a chatty hook never blocks on a
// full pipe), in a process group of its own that is SIGKILLed when the
// timeout passes. Once the shell exits, what it left running keeps running
// (a trusted hook may start a notifier and return) but is no longer waited
// for.
//
// Why not GitCommand's runner (loops/git/git_command.hpp): that one is
// hardened for git on job-written worktrees (no shell, a built environment,
// stdin /dev/null); a hook is a shell line the user wrote for their own
// environment, with input.
//
// Blocking: call it from a worker thread (HookRunner does), never the io
// thread. Safe to call from several threads at once (posix_spawn).
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include "hooks/hook_events.hpp"

namespace loopr::hooks {

// `stop`, when set to true while the hook runs, kills it as the timeout does.
HookRun run_on_host(const std::string& command, const std::string& event, const std::string& input,
                    const std::string& cwd, std::chrono::milliseconds timeout,
                    const std::atomic<bool>* stop = nullptr);

}  // namespace loopr::hooks
