// Typed params of the loop.* and plan.* control methods
// (docs/control-protocol.md "Loops", "Plans"). parse_* read the wire shape
// of a request — types, ranges, what is required — and refuse as
// invalid_params (-32602) with the messages looprd has always answered;
// what a value means (a folder that exists, a provider that is configured, a
// loop whose state allows it) is the LoopEngine's to check. Never throw.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/error.hpp"

namespace loopr::proto {

// loop.get, loop.export, loop.pause, loop.resume, loop.cancel, plan.get,
// plan.approve: {id}.
struct LoopIdParams {
  std::string id;
  bool operator==(const LoopIdParams&) const = default;
};

// What loop.create and loop.create_plan share: where and how the loop runs.
// Unset optionals take the configured defaults (loops/loop_engine.cpp).
struct LoopSpecParams {
  std::string repo;  // "" when absent: refused by the engine as not absolute
  std::string base;
  std::optional<std::string> provider;
  std::optional<std::string> model;
  std::optional<std::int64_t> max_iterations;  // 1 to 10000
  std::optional<std::string> validate;
  bool include_uncommitted = false;
  std::optional<std::int64_t> validate_timeout_s;  // 1 to 86400
  // Budget objects as sent (null: none), read by loops/budget.hpp's
  // merge_limits, which owns their keys.
  nlohmann::json budget = nullptr;
  nlohmann::json plan_budget = nullptr;
  bool operator==(const LoopSpecParams&) const = default;
};

// loop.create: {type, task, ...LoopSpecParams}.
struct LoopCreateParams {
  std::string type = "code";
  std::string task;
  LoopSpecParams spec;
  bool operator==(const LoopCreateParams&) const = default;
};

// loop.create_plan: {description, ...LoopSpecParams}.
struct LoopCreatePlanParams {
  std::string description;
  LoopSpecParams spec;
  bool operator==(const LoopCreatePlanParams&) const = default;
};

// loop.list: filters, "" for none.
struct LoopListParams {
  std::string status;
  std::string type;
  bool include_deleted = false;
  bool operator==(const LoopListParams&) const = default;
};

// loop.transcript.
struct LoopTranscriptParams {
  std::string id;
  std::optional<std::int64_t> iteration;
  std::int64_t after = 0;             // a step id
  std::optional<std::int64_t> limit;  // at least 1; the engine caps it
  bool operator==(const LoopTranscriptParams&) const = default;
};

// loop.diff.
struct LoopDiffParams {
  std::string id;
  bool stat_only = false;
  bool operator==(const LoopDiffParams&) const = default;
};

// loop.delete.
struct LoopDeleteParams {
  std::string id;
  bool remove_worktree = false;
  bool remove_branch = false;
  bool operator==(const LoopDeleteParams&) const = default;
};

// loop.gc.
struct LoopGcParams {
  bool dry_run = false;
  bool operator==(const LoopGcParams&) const = default;
};

// loop.rerun, plan.iterate: {id, feedback}; "" when absent.
struct LoopFeedbackParams {
  std::string id;
  std::string feedback;
  bool operator==(const LoopFeedbackParams&) const = default;
};

// plan.reject: {id, reason}; "" when absent.
struct PlanRejectParams {
  std::string id;
  std::string reason;
  bool operator==(const PlanRejectParams&) const = default;
};

// plan.merge: into is "" when absent (the plan's own user branch).
struct PlanMergeParams {
  std::string id;
  std::string into;
  bool operator==(const PlanMergeParams&) const = default;
};

nlohmann::json to_json(const LoopIdParams& params);
nlohmann::json to_json(const LoopCreateParams& params);
nlohmann::json to_json(const LoopCreatePlanParams& params);
nlohmann::json to_json(const LoopListParams& params);
nlohmann::json to_json(const LoopTranscriptParams& params);
nlohmann::json to_json(const LoopDiffParams& params);
nlohmann::json to_json(const LoopDeleteParams& params);
nlohmann::json to_json(const LoopGcParams& params);
nlohmann::json to_json(const PlanMergeParams& params);
nlohmann::json to_json(const LoopFeedbackParams& params);
nlohmann::json to_json(const PlanRejectParams& params);

Result<LoopIdParams> parse_loop_id_params(const nlohmann::json& params);
Result<LoopCreateParams> parse_loop_create_params(const nlohmann::json& params);
Result<LoopCreatePlanParams> parse_loop_create_plan_params(const nlohmann::json& params);
// include_deleted of another type throws nlohmann's type_error — answered
// by the dispatch boundary as an internal error, as looprd always did — the
// one exception to "never throw", kept so the wire does not change.
Result<LoopListParams> parse_loop_list_params(const nlohmann::json& params);
Result<LoopTranscriptParams> parse_loop_transcript_params(const nlohmann::json& params);
Result<LoopDiffParams> parse_loop_diff_params(const nlohmann::json& params);
Result<LoopDeleteParams> parse_loop_delete_params(const nlohmann::json& params);
Result<LoopGcParams> parse_loop_gc_params(const nlohmann::json& params);
// feedback: a string or null; another type is refused.
Result<LoopFeedbackParams> parse_loop_rerun_params(const nlohmann::json& params);
// feedback (plan.iterate) or reason (plan.reject): another type counts as
// absent, as looprd always read it.
Result<LoopFeedbackParams> parse_plan_iterate_params(const nlohmann::json& params);
Result<PlanRejectParams> parse_plan_reject_params(const nlohmann::json& params);
Result<PlanMergeParams> parse_plan_merge_params(const nlohmann::json& params);

}  // namespace loopr::proto
