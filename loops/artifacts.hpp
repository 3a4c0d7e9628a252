// Artifacts (DESIGN.md §8, seed 003): what a document loop produces through
// its artifact tool — a plan (create_plan), a spec (create_spec) or a phase
// (create_phase). The tool's JSON schema (config/builtin_catalog.cpp) is
// checked by the caller first; check_artifact() adds the rules a schema
// cannot say, and each violation names its rule so the model can correct
// it: 1-10 specs with unique names usable in a branch name, every
// dependency another spec of the plan, no cycle; 1-7 phases with unique
// names; 1 or more tasks with an action of create|modify|delete, a relative
// file path, and a validation command that is not blank; the whole artifact
// at most kMaxArtifactBytes of JSON.
//
// An artifact is kept as the normalised JSON check_artifact() returns (the
// store's format: fields may be added, never renamed) and rendered as
// Markdown for people (plan.md, spec.md, phase.md).
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace loopr::loops {

inline constexpr std::size_t kMaxArtifactBytes = 256 * 1024;

// "create_plan" for a plan loop, "create_spec" for spec, "create_phase" for
// phase; "" for code (and any other type).
std::string_view artifact_tool_for(std::string_view loop_type);
// complete_task and the create_* tools: the loop engine answers them itself
// (they change the loop); every other tool goes through the ToolGateway.
bool is_loop_engine_tool(std::string_view tool);
// "plan", "spec", "phase" for the three artifact tools; "" otherwise.
std::string_view artifact_kind_of(std::string_view tool);

// Checks `args` (already valid against the tool's schema) against the rules
// above. Returns the normalised artifact: every optional field present
// (dependencies [], validation "", file "", action ""), strings trimmed of
// surrounding blanks, names as given. Errors: invalid_arguments whose
// message names the rule broken and the offending value, e.g.
// "spec names must be unique: 'api' appears twice" or
// "the dependencies form a cycle: a -> b -> a", and whose hint says what to
// send instead.
Result<nlohmann::json> check_artifact(std::string_view tool, const nlohmann::json& args);

// Whether `name` may be a spec or phase name: 1-40 characters of [a-z0-9-],
// starting with a letter or digit, no "--" (usable in a branch name and a
// loop id).
bool is_valid_artifact_name(std::string_view name);

// The plan's spec names in an order that puts every spec after the specs it
// depends on (stable: plan order otherwise). `plan` is a checked plan.
std::vector<std::string> specs_in_dependency_order(const nlohmann::json& plan);

// Markdown for people: title, overview, then the specs (with their
// dependencies), the phases (with validation) or the tasks (with file and
// action) and the validation command. `loop_id` appears in the heading.
// Never fails: missing fields render as empty.
std::string render_artifact_markdown(std::string_view kind, const nlohmann::json& artifact,
                                     std::string_view loop_id);

}  // namespace loopr::loops
