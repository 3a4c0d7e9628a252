// The loop.* control methods (docs/control-protocol.md "Loops"): thin
// handlers over the LoopEngine, which owns their parameters' rules.
#include "daemon/methods.hpp"

namespace loopr::daemon {

using nlohmann::json;

asio::awaitable<Result<json>> MethodRegistry::loop_create(ClientSession&, const json& params) {
  co_return co_await services_.loops.create(params);
}

asio::awaitable<Result<json>> MethodRegistry::loop_list(ClientSession&, const json& params) {
  co_return services_.loops.list(params);
}

asio::awaitable<Result<json>> MethodRegistry::loop_get(ClientSession&, const json& params) {
  co_return services_.loops.get(params);
}

asio::awaitable<Result<json>> MethodRegistry::loop_transcript(ClientSession&, const json& params) {
  co_return services_.loops.transcript(params);
}

asio::awaitable<Result<json>> MethodRegistry::loop_export(ClientSession&, const json& params) {
  co_return services_.loops.export_turns(params);
}

asio::awaitable<Result<json>> MethodRegistry::loop_pause(ClientSession&, const json& params) {
  co_return services_.loops.pause(params);
}

asio::awaitable<Result<json>> MethodRegistry::loop_resume(ClientSession&, const json& params) {
  co_return services_.loops.resume(params);
}

asio::awaitable<Result<json>> MethodRegistry::loop_cancel(ClientSession&, const json& params) {
  co_return services_.loops.cancel(params);
}

asio::awaitable<Result<json>> MethodRegistry::loop_delete(ClientSession&, const json& params) {
  co_return co_await services_.loops.remove(params);
}

}  // namespace loopr::daemon
