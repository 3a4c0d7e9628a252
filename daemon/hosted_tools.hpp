// The tools looprd runs itself, made callable through its ToolRouter
// (HostedCall, tool_router.hpp): the memory notes (memory/notebook.hpp),
// whose owner is the user looprd serves (its effective uid: the control
// socket admits only that user) and whose repository is the call's; and
// the oracle (oracle/oracle.hpp), whose files are read with read_file
// through the same router.
// Threads: io thread only.
#pragma once

#include "daemon/read_tracker.hpp"
#include "daemon/tool_router.hpp"
#include "memory/notebook.hpp"
#include "oracle/oracle.hpp"

namespace loopr::daemon {

// memory_save, memory_update, memory_delete, memory_search. `notebook`
// must outlive `router`'s calls.
void host_memory_tools(ToolRouter& router, memory::Notebook& notebook);

// oracle. It reads the files it attaches as calls of read_file in the
// call's worktree, of its loop (loop_id), made for it (parent_call_id: a
// cancel of the oracle ends them) under the read-before-edit session
// "oracle:<call_id>", which is forgotten when the oracle ends: so each read
// is sandboxed, capped, recorded and evented like a model's own. Hosted even
// when [oracle] is not configured, so that a call says which keys to set.
// `router`, `reads` and `settings` must outlive the router's calls.
void host_oracle(ToolRouter& router, ReadTracker& reads, const config::Settings& settings,
                 oracle::Oracle::ProviderLookup providers);

}  // namespace loopr::daemon
