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

void host_oracle(ToolRouter& router, ReadTracker& reads, const config::Settings& settings,
                 oracle::Oracle::ProviderLookup providers) {
  auto consultant = std::make_shared<const oracle::Oracle>(settings, std::move(providers));
  router.host_tool(
      "oracle",
      [&router, &reads, consultant](HostedCall call) -> asio::awaitable<Result<nlohmann::json>> {
        const std::string session = "oracle:" + call.call_id;
        const oracle::FileReader read =
            [&router, &call, &session](
                const std::string& path, std::int64_t offset,
                std::int64_t limit) -> asio::awaitable<Result<nlohmann::json>> {
          ToolCallRequest request;
          request.tool = "read_file";
          request.args = {{"path", path}, {"offset", offset}, {"limit", limit}};
          request.worktree = call.worktree;
          request.session = session;
          request.loop_id = call.loop_id;
          request.parent_call_id = call.call_id;
          ToolCallOutcome outcome = co_await router.call(std::move(request));
          if (outcome.ok) co_return std::move(outcome.output);
          co_return outcome.error.value_or(make_error(
              errc::internal, "read_file ended " + outcome.status + " without an error"));
        };
        // The oracle's cancel (tool.cancel, its loop's or client's end, its
        // timeout) also ends the read it waits for.
        const llm::CancelHook cascade(
            call.cancel.get(), [&router, id = call.call_id] { router.cancel_calls_of_parent(id); });
        oracle::OracleCall consultation;
        consultation.args = std::move(call.args);
        consultation.allowance = std::move(call.allowance);
        consultation.conversation = call.call_id;
        consultation.max_output_bytes = static_cast<std::size_t>(call.max_output_bytes);
        consultation.cancel = call.cancel.get();
        Result<nlohmann::json> result = co_await consultant->consult(std::move(consultation), read);
        reads.forget_session(session);
        co_return result;
      });
}

}  // namespace loopr::daemon
