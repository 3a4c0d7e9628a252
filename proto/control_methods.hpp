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

#include <algorithm>
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

// A method's name as a template argument: a string literal held by value,
// so each descriptor names its method once, where it is declared.
template <std::size_t N>
struct MethodName {
  // NOLINTNEXTLINE(google-explicit-constructor): built from a literal on purpose
  constexpr MethodName(const char (&text)[N]) { std::copy_n(text, N, chars); }
  constexpr std::string_view view() const { return {chars, N - 1}; }
  char chars[N] = {};
};

// A descriptor: Name and Flags as above, Params read by Parse.
template <MethodName Name, MethodFlags Flags, class P, class R,
          Result<P> (*Parse)(const nlohmann::json&)>
struct Method {
  static constexpr std::string_view name = Name.view();
  static constexpr MethodFlags flags = Flags;
  using Params = P;
  using Reply = R;
  static Result<P> parse(const nlohmann::json& params) { return Parse(params); }
};

// ---- looprd itself, tools, approvals, events ----
using Initialize = Method<"initialize", kBeforeInitialize, InitializeParams, InitializeResult,
                          &parse_initialize_params>;
using Ping = Method<"ping", kAlways, NoParams, PingResult, &parse_no_params>;
using ToolList = Method<"tool.list", kAfterInitialize, NoParams, Document, &parse_no_params>;
using ToolCall =
    Method<"tool.call", kAfterInitialize, ToolCallParams, Document, &parse_tool_call_params>;
using ToolBatch =
    Method<"tool.batch", kAfterInitialize, ToolBatchParams, Document, &parse_tool_batch_params>;
using ToolCancel = Method<"tool.cancel", kAfterInitialize, ToolCancelParams, ToolCancelResult,
                          &parse_tool_cancel_params>;
using ApprovalList =
    Method<"approval.list", kAfterInitialize, NoParams, Document, &parse_no_params>;
using ApprovalApprove = Method<"approval.approve", kAfterInitialize, ApprovalDecisionParams,
                               ApprovalDecisionResult, &parse_approval_decision_params>;
using ApprovalDeny = Method<"approval.deny", kAfterInitialize, ApprovalDecisionParams,
                            ApprovalDecisionResult, &parse_approval_decision_params>;
using ApprovalAlways = Method<"approval.always", kAfterInitialize, ApprovalAlwaysParams, Document,
                              &parse_approval_always_params>;
using PolicyRules = Method<"policy.rules", kAfterInitialize, PolicyRulesParams, Document,
                           &parse_policy_rules_params>;
using PolicyForget = Method<"policy.forget", kAfterInitialize, PolicyForgetParams, Document,
                            &parse_policy_forget_params>;
using EventsSubscribe = Method<"events.subscribe", kAfterInitialize, SubscribeParams,
                               SubscribeParams, &parse_subscribe_params>;
using MetricsGet = Method<"metrics.get", kAfterInitialize, NoParams, Document, &parse_no_params>;
using DaemonShutdown = Method<"daemon.shutdown", kAfterInitializeEvenWhenStopping, NoParams,
                              ShutdownResult, &parse_no_params>;

// ---- loops and plans ----
using LoopCreate =
    Method<"loop.create", kAfterInitialize, LoopCreateParams, Document, &parse_loop_create_params>;
using LoopList =
    Method<"loop.list", kAfterInitialize, LoopListParams, Document, &parse_loop_list_params>;
using LoopGet = Method<"loop.get", kAfterInitialize, LoopIdParams, Document, &parse_loop_id_params>;
using LoopTranscript = Method<"loop.transcript", kAfterInitialize, LoopTranscriptParams, Document,
                              &parse_loop_transcript_params>;
using LoopExport =
    Method<"loop.export", kAfterInitialize, LoopIdParams, Document, &parse_loop_id_params>;
using LoopDiff =
    Method<"loop.diff", kAfterInitialize, LoopDiffParams, Document, &parse_loop_diff_params>;
using LoopPause =
    Method<"loop.pause", kAfterInitialize, LoopIdParams, Document, &parse_loop_id_params>;
using LoopResume =
    Method<"loop.resume", kAfterInitialize, LoopIdParams, Document, &parse_loop_id_params>;
using LoopCancel =
    Method<"loop.cancel", kAfterInitialize, LoopIdParams, Document, &parse_loop_id_params>;
using LoopDelete =
    Method<"loop.delete", kAfterInitialize, LoopDeleteParams, Document, &parse_loop_delete_params>;
using LoopCreatePlan = Method<"loop.create_plan", kAfterInitialize, LoopCreatePlanParams, Document,
                              &parse_loop_create_plan_params>;
using LoopGc = Method<"loop.gc", kAfterInitialize, LoopGcParams, Document, &parse_loop_gc_params>;
using LoopRerun =
    Method<"loop.rerun", kAfterInitialize, LoopFeedbackParams, Document, &parse_loop_rerun_params>;
using PlanGet = Method<"plan.get", kAfterInitialize, LoopIdParams, Document, &parse_loop_id_params>;
using PlanApprove =
    Method<"plan.approve", kAfterInitialize, LoopIdParams, Document, &parse_loop_id_params>;
using PlanReject =
    Method<"plan.reject", kAfterInitialize, PlanRejectParams, Document, &parse_plan_reject_params>;
using PlanIterate = Method<"plan.iterate", kAfterInitialize, LoopFeedbackParams, Document,
                           &parse_plan_iterate_params>;
using PlanMerge =
    Method<"plan.merge", kAfterInitialize, PlanMergeParams, Document, &parse_plan_merge_params>;

// ---- memory notes, repository settings ----
using MemoryList =
    Method<"memory.list", kAfterInitialize, MemoryListParams, Document, &parse_memory_list_params>;
using MemorySearch = Method<"memory.search", kAfterInitialize, MemorySearchParams, Document,
                            &parse_memory_search_params>;
using MemoryGet =
    Method<"memory.get", kAfterInitialize, NoteIdParams, Document, &parse_note_id_params>;
using MemoryDelete =
    Method<"memory.delete", kAfterInitialize, NoteIdParams, Document, &parse_note_id_params>;
using RepoTrust = Method<"repo.trust", kAfterInitialize, RepoParams, Document, &parse_repo_params>;
using RepoUntrust =
    Method<"repo.untrust", kAfterInitialize, RepoParams, Document, &parse_repo_params>;
using RepoShow = Method<"repo.show", kAfterInitialize, RepoParams, Document, &parse_repo_params>;

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
               methods::MemoryDelete, methods::RepoTrust, methods::RepoUntrust, methods::RepoShow,
               methods::ApprovalAlways, methods::PolicyRules, methods::PolicyForget>;

// The name and flags of every method in ControlMethods, in its order.
inline constexpr auto kControlMethodInfos = []<class... M>(std::type_identity<std::tuple<M...>>) {
  return std::array<MethodInfo, sizeof...(M)>{MethodInfo{M::name, M::flags}...};
}(std::type_identity<ControlMethods>{});

}  // namespace loopr::proto
