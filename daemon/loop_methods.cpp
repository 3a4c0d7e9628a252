// The loop.* and plan.* control methods (docs/control-protocol.md "Loops",
// "Plans"): thin
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

asio::awaitable<Result<json>> MethodRegistry::loop_diff(ClientSession&, const json& params) {
  co_return co_await services_.loops.diff(params);
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

asio::awaitable<Result<json>> MethodRegistry::loop_create_plan(ClientSession&, const json& params) {
  co_return co_await services_.loops.create_plan(params);
}

asio::awaitable<Result<json>> MethodRegistry::loop_gc(ClientSession&, const json& params) {
  co_return co_await services_.loops.gc(params);
}

asio::awaitable<Result<json>> MethodRegistry::loop_rerun(ClientSession&, const json& params) {
  co_return co_await services_.loops.rerun(params);
}

asio::awaitable<Result<json>> MethodRegistry::plan_get(ClientSession&, const json& params) {
  co_return services_.loops.plan_get(params);
}

asio::awaitable<Result<json>> MethodRegistry::plan_approve(ClientSession&, const json& params) {
  co_return co_await services_.loops.plan_approve(params);
}

asio::awaitable<Result<json>> MethodRegistry::plan_reject(ClientSession&, const json& params) {
  co_return co_await services_.loops.plan_reject(params);
}

asio::awaitable<Result<json>> MethodRegistry::plan_iterate(ClientSession&, const json& params) {
  co_return co_await services_.loops.plan_iterate(params);
}

asio::awaitable<Result<json>> MethodRegistry::plan_merge(ClientSession&, const json& params) {
  co_return co_await services_.loops.plan_merge(params);
}

}  // namespace loopr::daemon
