// The control methods (docs/control-protocol.md), one descriptor each, in the
// manner of watchman's command registry: a method is a small type with
//
//   name    its name on the wire
//   flags   whether it needs initialize first, whether looprd still takes it
//           while shutting down
//   Params  the typed request parameters, read by parse() (never throws;
//           a refusal is an Error answered as invalid_params or the rpc_code
//           in its details) and written by to_json() (clients)
//   Reply   the typed result, written by to_json(); Document where the
//           result is a free-form JSON document (a stored loop, a listing)
//
// looprd's dispatch boundary (daemon/methods.hpp) registers one handler per
// descriptor in ControlMethods; docs/control-protocol.md is the contract the
// list is tested against (tests/proto/control_methods_doc_test.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "common/error.hpp"
#include "proto/control_messages.hpp"
#include "proto/loop_messages.hpp"
#include "proto/memory_messages.hpp"
#include "proto/tool_batch_messages.hpp"

namespace loopr::proto {

struct MethodFlags {
  // Refused (invalid_request) on a connection that has not sent initialize.
  bool needs_initialize = true;
  // Still taken once looprd is shutting down (others get `shutting_down`).
  bool allowed_while_shutting_down = false;
  bool operator==(const MethodFlags&) const = default;
};

struct MethodInfo {
  std::string_view name;
  MethodFlags flags;
};

// A result that is a JSON document as it is (a stored record, a listing).
using Document = nlohmann::json;

inline Result<NoParams> parse_no_params(const nlohmann::json&) {
  return NoParams{};
}

inline nlohmann::json to_json(const NoParams&) {
  return nlohmann::json::object();
}

namespace methods {

inline constexpr MethodFlags kBeforeInitialize{false, false};
inline constexpr MethodFlags kAlways{false, true};
inline constexpr MethodFlags kAfterInitialize{true, false};
inline constexpr MethodFlags kAfterInitializeEvenWhenStopping{true, true};

// A descriptor: Name and Flags as above, Params read by Parse.
template <const char* Name, MethodFlags Flags, class P, class R,
          Result<P> (*Parse)(const nlohmann::json&)>
struct Method {
  static constexpr std::string_view name = Name;
  static constexpr MethodFlags flags = Flags;
  using Params = P;
  using Reply = R;
  static Result<P> parse(const nlohmann::json& params) { return Parse(params); }
};

// Names as objects with linkage (a template argument must point at one).
inline constexpr char kInitialize[] = "initialize";
inline constexpr char kPing[] = "ping";
inline constexpr char kToolList[] = "tool.list";
inline constexpr char kToolCall[] = "tool.call";
inline constexpr char kToolBatch[] = "tool.batch";
inline constexpr char kToolCancel[] = "tool.cancel";
inline constexpr char kApprovalList[] = "approval.list";
inline constexpr char kApprovalApprove[] = "approval.approve";
inline constexpr char kApprovalDeny[] = "approval.deny";
inline constexpr char kEventsSubscribe[] = "events.subscribe";
inline constexpr char kMetricsGet[] = "metrics.get";
inline constexpr char kDaemonShutdown[] = "daemon.shutdown";
inline constexpr char kLoopCreate[] = "loop.create";
inline constexpr char kLoopList[] = "loop.list";
inline constexpr char kLoopGet[] = "loop.get";
inline constexpr char kLoopTranscript[] = "loop.transcript";
inline constexpr char kLoopExport[] = "loop.export";
inline constexpr char kLoopDiff[] = "loop.diff";
inline constexpr char kLoopPause[] = "loop.pause";
inline constexpr char kLoopResume[] = "loop.resume";
inline constexpr char kLoopCancel[] = "loop.cancel";
inline constexpr char kLoopDelete[] = "loop.delete";
inline constexpr char kLoopCreatePlan[] = "loop.create_plan";
inline constexpr char kLoopGc[] = "loop.gc";
inline constexpr char kLoopRerun[] = "loop.rerun";
inline constexpr char kPlanGet[] = "plan.get";
inline constexpr char kPlanApprove[] = "plan.approve";
inline constexpr char kPlanReject[] = "plan.reject";
inline constexpr char kPlanIterate[] = "plan.iterate";
inline constexpr char kPlanMerge[] = "plan.merge";
inline constexpr char kMemoryList[] = "memory.list";
inline constexpr char kMemorySearch[] = "memory.search";
inline constexpr char kMemoryGet[] = "memory.get";
inline constexpr char kMemoryDelete[] = "memory.delete";
inline constexpr char kRepoTrust[] = "repo.trust";
inline constexpr char kRepoUntrust[] = "repo.untrust";
inline constexpr char kRepoShow[] = "repo.show";

// ---- looprd itself, tools, approvals, events ----
using Initialize = Method<kInitialize, kBeforeInitialize, InitializeParams, InitializeResult,
                          &parse_initialize_params>;
using Ping = Method<kPing, kAlways, NoParams, PingResult, &parse_no_params>;
using ToolList = Method<kToolList, kAfterInitialize, NoParams, Document, &parse_no_params>;
using ToolCall =
    Method<kToolCall, kAfterInitialize, ToolCallParams, Document, &parse_tool_call_params>;
using ToolBatch =
    Method<kToolBatch, kAfterInitialize, ToolBatchParams, Document, &parse_tool_batch_params>;
using ToolCancel = Method<kToolCancel, kAfterInitialize, ToolCancelParams, ToolCancelResult,
                          &parse_tool_cancel_params>;
using ApprovalList = Method<kApprovalList, kAfterInitialize, NoParams, Document, &parse_no_params>;
using ApprovalApprove = Method<kApprovalApprove, kAfterInitialize, ApprovalDecisionParams,
                               ApprovalDecisionResult, &parse_approval_decision_params>;
using ApprovalDeny = Method<kApprovalDeny, kAfterInitialize, ApprovalDecisionParams,
                            ApprovalDecisionResult, &parse_approval_decision_params>;
using EventsSubscribe = Method<kEventsSubscribe, kAfterInitialize, SubscribeParams, SubscribeParams,
                               &parse_subscribe_params>;
using MetricsGet = Method<kMetricsGet, kAfterInitialize, NoParams, Document, &parse_no_params>;
using DaemonShutdown = Method<kDaemonShutdown, kAfterInitializeEvenWhenStopping, NoParams,
                              ShutdownResult, &parse_no_params>;

// ---- loops and plans ----
using LoopCreate =
    Method<kLoopCreate, kAfterInitialize, LoopCreateParams, Document, &parse_loop_create_params>;
using LoopList =
    Method<kLoopList, kAfterInitialize, LoopListParams, Document, &parse_loop_list_params>;
using LoopGet = Method<kLoopGet, kAfterInitialize, LoopIdParams, Document, &parse_loop_id_params>;
using LoopTranscript = Method<kLoopTranscript, kAfterInitialize, LoopTranscriptParams, Document,
                              &parse_loop_transcript_params>;
using LoopExport =
    Method<kLoopExport, kAfterInitialize, LoopIdParams, Document, &parse_loop_id_params>;
using LoopDiff =
    Method<kLoopDiff, kAfterInitialize, LoopDiffParams, Document, &parse_loop_diff_params>;
using LoopPause =
    Method<kLoopPause, kAfterInitialize, LoopIdParams, Document, &parse_loop_id_params>;
using LoopResume =
    Method<kLoopResume, kAfterInitialize, LoopIdParams, Document, &parse_loop_id_params>;
using LoopCancel =
    Method<kLoopCancel, kAfterInitialize, LoopIdParams, Document, &parse_loop_id_params>;
using LoopDelete =
    Method<kLoopDelete, kAfterInitialize, LoopDeleteParams, Document, &parse_loop_delete_params>;
using LoopCreatePlan = Method<kLoopCreatePlan, kAfterInitialize, LoopCreatePlanParams, Document,
                              &parse_loop_create_plan_params>;
using LoopGc = Method<kLoopGc, kAfterInitialize, LoopGcParams, Document, &parse_loop_gc_params>;
using LoopRerun =
    Method<kLoopRerun, kAfterInitialize, LoopFeedbackParams, Document, &parse_loop_rerun_params>;
using PlanGet = Method<kPlanGet, kAfterInitialize, LoopIdParams, Document, &parse_loop_id_params>;
using PlanApprove =
    Method<kPlanApprove, kAfterInitialize, LoopIdParams, Document, &parse_loop_id_params>;
using PlanReject =
    Method<kPlanReject, kAfterInitialize, PlanRejectParams, Document, &parse_plan_reject_params>;
using PlanIterate = Method<kPlanIterate, kAfterInitialize, LoopFeedbackParams, Document,
                           &parse_plan_iterate_params>;
using PlanMerge =
    Method<kPlanMerge, kAfterInitialize, PlanMergeParams, Document, &parse_plan_merge_params>;

// ---- memory notes, repository settings ----
using MemoryList =
    Method<kMemoryList, kAfterInitialize, MemoryListParams, Document, &parse_memory_list_params>;
using MemorySearch = Method<kMemorySearch, kAfterInitialize, MemorySearchParams, Document,
                            &parse_memory_search_params>;
using MemoryGet =
    Method<kMemoryGet, kAfterInitialize, NoteIdParams, Document, &parse_note_id_params>;
using MemoryDelete =
    Method<kMemoryDelete, kAfterInitialize, NoteIdParams, Document, &parse_note_id_params>;
using RepoTrust = Method<kRepoTrust, kAfterInitialize, RepoParams, Document, &parse_repo_params>;
using RepoUntrust =
    Method<kRepoUntrust, kAfterInitialize, RepoParams, Document, &parse_repo_params>;
using RepoShow = Method<kRepoShow, kAfterInitialize, RepoParams, Document, &parse_repo_params>;

}  // namespace methods

// Every control method; looprd registers a handler for each.
using ControlMethods =
    std::tuple<methods::Initialize, methods::Ping, methods::ToolList, methods::ToolCall,
               methods::ToolBatch, methods::ToolCancel, methods::ApprovalList,
               methods::ApprovalApprove, methods::ApprovalDeny, methods::EventsSubscribe,
               methods::MetricsGet, methods::DaemonShutdown, methods::LoopCreate, methods::LoopList,
               methods::LoopGet, methods::LoopTranscript, methods::LoopExport, methods::LoopDiff,
               methods::LoopPause, methods::LoopResume, methods::LoopCancel, methods::LoopDelete,
               methods::LoopCreatePlan, methods::LoopGc, methods::LoopRerun, methods::PlanGet,
               methods::PlanApprove, methods::PlanReject, methods::PlanIterate, methods::PlanMerge,
               methods::MemoryList, methods::MemorySearch, methods::MemoryGet,
               methods::MemoryDelete, methods::RepoTrust, methods::RepoUntrust, methods::RepoShow>;

// The name and flags of every method in ControlMethods, in its order.
inline constexpr auto kControlMethodInfos = []<class... M>(std::type_identity<std::tuple<M...>>) {
  return std::array<MethodInfo, sizeof...(M)>{MethodInfo{M::name, M::flags}...};
}(std::type_identity<ControlMethods>{});

}  // namespace loopr::proto
