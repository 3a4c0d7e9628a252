// The loop.* and plan.* control methods (docs/control-protocol.md "Loops",
// "Plans"): each descriptor's handler is the LoopEngine's own method, which
// takes the typed params of proto/loop_messages.hpp.
#include "daemon/methods.hpp"

namespace loopr::daemon {

void MethodRegistry::add_loop_methods() {
  namespace methods = proto::methods;
  loops::LoopEngine& loops = services_.loops;
  // Synchronous methods are called here; a coroutine takes its params by
  // value, so nothing it holds refers to this lambda's arguments.
  add<methods::LoopCreate>([&loops](ClientSession&, proto::LoopCreateParams params) {
    return loops.create(std::move(params));
  });
  add<methods::LoopList>(
      [&loops](ClientSession&, const proto::LoopListParams& params) { return loops.list(params); });
  add<methods::LoopGet>(
      [&loops](ClientSession&, const proto::LoopIdParams& params) { return loops.get(params.id); });
  add<methods::LoopTranscript>([&loops](ClientSession&, const proto::LoopTranscriptParams& params) {
    return loops.transcript(params);
  });
  add<methods::LoopExport>([&loops](ClientSession&, const proto::LoopIdParams& params) {
    return loops.export_turns(params.id);
  });
  add<methods::LoopDiff>([&loops](ClientSession&, proto::LoopDiffParams params) {
    return loops.diff(std::move(params));
  });
  add<methods::LoopPause>([&loops](ClientSession&, const proto::LoopIdParams& params) {
    return loops.pause(params.id);
  });
  add<methods::LoopResume>([&loops](ClientSession&, const proto::LoopIdParams& params) {
    return loops.resume(params.id);
  });
  add<methods::LoopCancel>([&loops](ClientSession&, const proto::LoopIdParams& params) {
    return loops.cancel(params.id);
  });
  add<methods::LoopDelete>([&loops](ClientSession&, proto::LoopDeleteParams params) {
    return loops.remove(std::move(params));
  });
  add<methods::LoopCreatePlan>([&loops](ClientSession&, proto::LoopCreatePlanParams params) {
    return loops.create_plan(std::move(params));
  });
  add<methods::LoopGc>(
      [&loops](ClientSession&, proto::LoopGcParams params) { return loops.gc(params); });
  add<methods::LoopRerun>([&loops](ClientSession&, proto::LoopFeedbackParams params) {
    return loops.rerun(std::move(params));
  });
  add<methods::PlanGet>([&loops](ClientSession&, const proto::LoopIdParams& params) {
    return loops.plan_get(params.id);
  });
  add<methods::PlanApprove>([&loops](ClientSession&, proto::LoopIdParams params) {
    return loops.plan_approve(std::move(params.id));
  });
  add<methods::PlanReject>([&loops](ClientSession&, proto::PlanRejectParams params) {
    return loops.plan_reject(std::move(params));
  });
  add<methods::PlanIterate>([&loops](ClientSession&, proto::LoopFeedbackParams params) {
    return loops.plan_iterate(std::move(params));
  });
  add<methods::PlanMerge>([&loops](ClientSession&, proto::PlanMergeParams params) {
    return loops.plan_merge(std::move(params));
  });
}

}  // namespace loopr::daemon
