#include "daemon/hosted_tools.hpp"

#include <unistd.h>

namespace loopr::daemon {

void host_memory_tools(ToolRouter& router, memory::Notebook& notebook) {
  for (const char* tool : {"memory_save", "memory_update", "memory_delete", "memory_search"}) {
    router.host_tool(tool, [&notebook](HostedCall call) -> asio::awaitable<Result<nlohmann::json>> {
      memory::Caller caller;
      caller.uid = static_cast<std::int64_t>(::geteuid());
      caller.repo = call.repo;
      caller.source = call.loop_id.empty() ? "client" : "loop:" + call.loop_id;
      co_return notebook.call(call.tool, call.args, caller,
                              static_cast<std::size_t>(call.max_output_bytes));
    });
  }
}

}  // namespace loopr::daemon
