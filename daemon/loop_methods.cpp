// The loop.* and plan.* control methods (docs/control-protocol.md "Loops",
// "Plans"): each method's handler is the LoopEngine's own.
#include "daemon/methods.hpp"

namespace loopr::daemon {

using nlohmann::json;

void MethodRegistry::add_loop_methods() {
  namespace methods = proto::methods;
  loops::LoopEngine& loops = services_.loops;
  add<methods::LoopCreate>(
      [&loops](ClientSession&, proto::UntypedParams params) -> asio::awaitable<Result<json>> {
        co_return co_await loops.create(params);
      });
  add<methods::LoopList>(
      [&loops](ClientSession&, proto::UntypedParams params) { return loops.list(params); });
  add<methods::LoopGet>(
      [&loops](ClientSession&, proto::UntypedParams params) { return loops.get(params); });
  add<methods::LoopTranscript>(
      [&loops](ClientSession&, proto::UntypedParams params) { return loops.transcript(params); });
  add<methods::LoopExport>(
      [&loops](ClientSession&, proto::UntypedParams params) { return loops.export_turns(params); });
  add<methods::LoopDiff>(
      [&loops](ClientSession&, proto::UntypedParams params) -> asio::awaitable<Result<json>> {
        co_return co_await loops.diff(params);
      });
  add<methods::LoopPause>(
      [&loops](ClientSession&, proto::UntypedParams params) { return loops.pause(params); });
  add<methods::LoopResume>(
      [&loops](ClientSession&, proto::UntypedParams params) { return loops.resume(params); });
  add<methods::LoopCancel>(
      [&loops](ClientSession&, proto::UntypedParams params) { return loops.cancel(params); });
  add<methods::LoopDelete>(
      [&loops](ClientSession&, proto::UntypedParams params) -> asio::awaitable<Result<json>> {
        co_return co_await loops.remove(params);
      });
  add<methods::LoopCreatePlan>(
      [&loops](ClientSession&, proto::UntypedParams params) -> asio::awaitable<Result<json>> {
        co_return co_await loops.create_plan(params);
      });
  add<methods::LoopGc>(
      [&loops](ClientSession&, proto::UntypedParams params) -> asio::awaitable<Result<json>> {
        co_return co_await loops.gc(params);
      });
  add<methods::LoopRerun>(
      [&loops](ClientSession&, proto::UntypedParams params) -> asio::awaitable<Result<json>> {
        co_return co_await loops.rerun(params);
      });
  add<methods::PlanGet>(
      [&loops](ClientSession&, proto::UntypedParams params) { return loops.plan_get(params); });
  add<methods::PlanApprove>(
      [&loops](ClientSession&, proto::UntypedParams params) -> asio::awaitable<Result<json>> {
        co_return co_await loops.plan_approve(params);
      });
  add<methods::PlanReject>(
      [&loops](ClientSession&, proto::UntypedParams params) -> asio::awaitable<Result<json>> {
        co_return co_await loops.plan_reject(params);
      });
  add<methods::PlanIterate>(
      [&loops](ClientSession&, proto::UntypedParams params) -> asio::awaitable<Result<json>> {
        co_return co_await loops.plan_iterate(params);
      });
  add<methods::PlanMerge>(
      [&loops](ClientSession&, proto::UntypedParams params) -> asio::awaitable<Result<json>> {
        co_return co_await loops.plan_merge(params);
      });
}

}  // namespace loopr::daemon
