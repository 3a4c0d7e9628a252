#include "proto/loop_messages.hpp"

#include <utility>

#include "proto/control_messages.hpp"

namespace loopr::proto {
namespace {

using nlohmann::json;

// params[key], absent or null → nullptr.
const json* field(const json& params, const char* key) {
  if (!params.is_object()) return nullptr;
  auto it = params.find(key);
  return it == params.end() || it->is_null() ? nullptr : &*it;
}

Result<std::string> loop_id(const json& params) {
  auto it = params.is_object() ? params.find("id") : params.end();
  if (it == params.end() || !it->is_string()) {
    return invalid_params("the request needs `id`, a loop id (see looprctl loops)");
  }
  return it->get<std::string>();
}

// A string; absent or null → `fallback`.
Result<std::string> string_param(const json& params, const char* key, std::string fallback = {}) {
  const json* value = field(params, key);
  if (value == nullptr) return fallback;
  if (!value->is_string()) return invalid_params(std::string(key) + " must be a string");
  return value->get<std::string>();
}

Result<std::optional<std::string>> optional_string(const json& params, const char* key) {
  const json* value = field(params, key);
  if (value == nullptr) return std::optional<std::string>();
  if (!value->is_string()) return invalid_params(std::string(key) + " must be a string");
  return std::optional<std::string>(value->get<std::string>());
}

// A string, anything else → "".
std::string text_or_empty(const json& params, const char* key) {
  const json* value = field(params, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

// A whole number in [min, max]; absent or null → nullopt.
Result<std::optional<std::int64_t>> ranged_integer(const json& params, const char* key,
                                                   std::int64_t min, std::int64_t max,
                                                   const char* refusal) {
  const json* value = field(params, key);
  if (value == nullptr) return std::optional<std::int64_t>();
  if (!value->is_number_integer() || value->get<std::int64_t>() < min ||
      value->get<std::int64_t>() > max) {
    return invalid_params(refusal);
  }
  return std::optional<std::int64_t>(value->get<std::int64_t>());
}

#define LOOPR_TRY_ASSIGN(target, expression)                   \
  do {                                                         \
    auto loopr_result = (expression);                          \
    if (!loopr_result) return std::move(loopr_result).error(); \
    target = std::move(*loopr_result);                         \
  } while (false)

// In the order the engine has always checked them. The engine's own checks
// (a folder that exists, a configured provider) come after all of these.
Result<LoopSpecParams> spec_params(const json& params) {
  LoopSpecParams spec;
  LOOPR_TRY_ASSIGN(spec.repo, string_param(params, "repo"));
  LOOPR_TRY_ASSIGN(spec.base, string_param(params, "base"));
  LOOPR_TRY_ASSIGN(spec.provider, optional_string(params, "provider"));
  LOOPR_TRY_ASSIGN(spec.model, optional_string(params, "model"));
  LOOPR_TRY_ASSIGN(spec.max_iterations,
                   ranged_integer(params, "max_iterations", 1, 10000,
                                  "max_iterations must be a whole number from 1 to 10000"));
  LOOPR_TRY_ASSIGN(spec.validate, optional_string(params, "validate"));
  LOOPR_TRY_ASSIGN(spec.include_uncommitted, flag_param(params, "include_uncommitted"));
  LOOPR_TRY_ASSIGN(
      spec.validate_timeout_s,
      ranged_integer(params, "validate_timeout_s", 1, 86400,
                     "validate_timeout_s must be a whole number of seconds from 1 to 86400"));
  spec.budget = params.value("budget", json());
  spec.plan_budget = params.value("plan_budget", json());
  return spec;
}

void put_spec(json& out, const LoopSpecParams& spec) {
  out["repo"] = spec.repo;
  if (!spec.base.empty()) out["base"] = spec.base;
  if (spec.provider) out["provider"] = *spec.provider;
  if (spec.model) out["model"] = *spec.model;
  if (spec.max_iterations) out["max_iterations"] = *spec.max_iterations;
  if (spec.validate) out["validate"] = *spec.validate;
  if (spec.include_uncommitted) out["include_uncommitted"] = true;
  if (spec.validate_timeout_s) out["validate_timeout_s"] = *spec.validate_timeout_s;
  if (!spec.budget.is_null()) out["budget"] = spec.budget;
  if (!spec.plan_budget.is_null()) out["plan_budget"] = spec.plan_budget;
}

}  // namespace

json to_json(const LoopIdParams& params) {
  return json{{"id", params.id}};
}

json to_json(const LoopCreateParams& params) {
  json out = {{"type", params.type}, {"task", params.task}};
  put_spec(out, params.spec);
  return out;
}

json to_json(const LoopCreatePlanParams& params) {
  json out = {{"description", params.description}};
  put_spec(out, params.spec);
  return out;
}

json to_json(const LoopListParams& params) {
  json out = {{"include_deleted", params.include_deleted}};
  if (!params.status.empty()) out["status"] = params.status;
  if (!params.type.empty()) out["type"] = params.type;
  return out;
}

json to_json(const LoopTranscriptParams& params) {
  json out = {{"id", params.id}};
  if (params.iteration) out["iteration"] = *params.iteration;
  if (params.after != 0) out["after"] = params.after;
  if (params.limit) out["limit"] = *params.limit;
  return out;
}

json to_json(const LoopDiffParams& params) {
  json out = {{"id", params.id}};
  if (params.stat_only) out["stat_only"] = true;
  return out;
}

json to_json(const LoopDeleteParams& params) {
  return json{{"id", params.id},
              {"remove_worktree", params.remove_worktree},
              {"remove_branch", params.remove_branch}};
}

json to_json(const LoopGcParams& params) {
  return json{{"dry_run", params.dry_run}};
}

json to_json(const PlanMergeParams& params) {
  json out = {{"id", params.id}};
  if (!params.into.empty()) out["into"] = params.into;
  return out;
}

json to_json(const LoopFeedbackParams& params) {
  json out = {{"id", params.id}};
  if (!params.feedback.empty()) out["feedback"] = params.feedback;
  return out;
}

json to_json(const PlanRejectParams& params) {
  json out = {{"id", params.id}};
  if (!params.reason.empty()) out["reason"] = params.reason;
  return out;
}

Result<LoopIdParams> parse_loop_id_params(const json& params) {
  auto id = loop_id(params);
  if (!id) return std::move(id).error();
  return LoopIdParams{std::move(*id)};
}

Result<LoopCreateParams> parse_loop_create_params(const json& params) {
  if (!params.is_object()) return invalid_params("loop.create needs an object of parameters");
  LoopCreateParams out;
  LOOPR_TRY_ASSIGN(out.type, string_param(params, "type", "code"));
  LOOPR_TRY_ASSIGN(out.task, string_param(params, "task"));
  LOOPR_TRY_ASSIGN(out.spec, spec_params(params));
  return out;
}

Result<LoopCreatePlanParams> parse_loop_create_plan_params(const json& params) {
  if (!params.is_object()) return invalid_params("loop.create_plan needs an object of parameters");
  auto description = params.find("description");
  if (description != params.end() && !description->is_string()) {
    return invalid_params("description must be a string");
  }
  LoopCreatePlanParams out;
  out.description = text_or_empty(params, "description");
  LOOPR_TRY_ASSIGN(out.spec, spec_params(params));
  return out;
}

Result<LoopListParams> parse_loop_list_params(const json& params) {
  const json filters = params.is_object() ? params : json::object();
  LoopListParams out;
  LOOPR_TRY_ASSIGN(out.status, string_param(filters, "status"));
  LOOPR_TRY_ASSIGN(out.type, string_param(filters, "type"));
  out.include_deleted = filters.value("include_deleted", false);
  return out;
}

Result<LoopTranscriptParams> parse_loop_transcript_params(const json& params) {
  LoopTranscriptParams out;
  LOOPR_TRY_ASSIGN(out.id, loop_id(params));
  if (const json* iteration = field(params, "iteration")) {
    if (!iteration->is_number_integer()) return invalid_params("iteration must be a whole number");
    out.iteration = iteration->get<std::int64_t>();
  }
  if (const json* after = field(params, "after")) {
    if (!after->is_number_integer()) return invalid_params("after must be a step id");
    out.after = after->get<std::int64_t>();
  }
  if (const json* limit = field(params, "limit")) {
    if (!limit->is_number_integer() || limit->get<std::int64_t>() < 1) {
      return invalid_params("limit must be a whole number of at least 1");
    }
    out.limit = limit->get<std::int64_t>();
  }
  return out;
}

Result<LoopDiffParams> parse_loop_diff_params(const json& params) {
  LoopDiffParams out;
  LOOPR_TRY_ASSIGN(out.id, loop_id(params));
  LOOPR_TRY_ASSIGN(out.stat_only, flag_param(params, "stat_only"));
  return out;
}

Result<LoopDeleteParams> parse_loop_delete_params(const json& params) {
  LoopDeleteParams out;
  LOOPR_TRY_ASSIGN(out.id, loop_id(params));
  LOOPR_TRY_ASSIGN(out.remove_worktree, flag_param(params, "remove_worktree"));
  LOOPR_TRY_ASSIGN(out.remove_branch, flag_param(params, "remove_branch"));
  return out;
}

Result<LoopGcParams> parse_loop_gc_params(const json& params) {
  LoopGcParams out;
  LOOPR_TRY_ASSIGN(out.dry_run, flag_param(params, "dry_run"));
  return out;
}

Result<LoopFeedbackParams> parse_loop_rerun_params(const json& params) {
  LoopFeedbackParams out;
  LOOPR_TRY_ASSIGN(out.id, loop_id(params));
  const json* feedback = field(params, "feedback");
  if (feedback != nullptr && !feedback->is_string()) {
    return invalid_params("feedback must be a string");
  }
  out.feedback = text_or_empty(params, "feedback");
  return out;
}

Result<LoopFeedbackParams> parse_plan_iterate_params(const json& params) {
  LoopFeedbackParams out;
  LOOPR_TRY_ASSIGN(out.id, loop_id(params));
  out.feedback = text_or_empty(params, "feedback");
  return out;
}

Result<PlanRejectParams> parse_plan_reject_params(const json& params) {
  PlanRejectParams out;
  LOOPR_TRY_ASSIGN(out.id, loop_id(params));
  out.reason = text_or_empty(params, "reason");
  return out;
}

Result<PlanMergeParams> parse_plan_merge_params(const json& params) {
  PlanMergeParams out;
  LOOPR_TRY_ASSIGN(out.id, loop_id(params));
  const json* into = field(params, "into");
  if (into != nullptr && !into->is_string()) return invalid_params("into must be a branch name");
  out.into = text_or_empty(params, "into");
  return out;
}

#undef LOOPR_TRY_ASSIGN

}  // namespace loopr::proto
