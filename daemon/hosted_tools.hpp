// The tools looprd runs itself, made callable through its ToolRouter
// (HostedCall, tool_router.hpp): the memory notes (memory/notebook.hpp),
// whose owner is the user looprd serves (its effective uid: the control
// socket admits only that user) and whose repository is the call's.
// Threads: io thread only.
#pragma once

#include "daemon/tool_router.hpp"
#include "memory/notebook.hpp"

namespace loopr::daemon {

// memory_save, memory_update, memory_delete, memory_search. `notebook`
// must outlive `router`'s calls.
void host_memory_tools(ToolRouter& router, memory::Notebook& notebook);

}  // namespace loopr::daemon
