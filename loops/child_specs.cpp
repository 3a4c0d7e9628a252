#include "loops/child_specs.hpp"

#include <map>
#include <nlohmann/json.hpp>

#include "common/json_text.hpp"

namespace loopr::loops {
namespace {

using nlohmann::json;

// The grep a resolver's validation starts with: no conflict marker is left.
constexpr const char* kNoConflictMarkers =
    "! grep -rIlE --exclude-dir=.git '^(<<<<<<<|>>>>>>>)( |$)' .";

std::string spec_task(const json& plan, const json& entry) {
  return "Write the spec '" + text_member(entry, "name") + "': " + text_member(entry, "title") +
         "\n\n" + text_member(entry, "description") + "\n\nIt is part of the plan '" +
         text_member(plan, "title") + "': " + text_member(plan, "overview") +
         "\n\nRead the code it touches, then call create_spec with 1 to 7 phases (one "
         "for a small change, each phase costs a build and a review), in the order "
         "they must be done; each phase small enough for one focused code "
         "change that can be validated.";
}

std::string phase_task(const json& spec, const json& entry) {
  std::string task = "Plan the phase '" + text_member(entry, "name") +
                     "': " + text_member(entry, "title") + "\n\n" +
                     text_member(entry, "description");
  if (!text_member(entry, "validation").empty()) {
    task += "\n\nHow to check it: " + text_member(entry, "validation");
  }
  task += "\n\nIt is part of the spec '" + text_member(spec, "title") +
          "': " + text_member(spec, "overview") +
          "\n\nRead the code it touches, then call create_phase with the tasks (each with its "
          "file and whether it creates, modifies or deletes it) and a shell command whose exit "
          "code 0 shows the phase is done.";
  return task;
}

std::string code_task(const json& phase) {
  std::string task =
      text_member(phase, "title") + "\n\n" + text_member(phase, "objective") + "\n\nTasks:";
  for (const json& item : phase.value("tasks", json::array())) {
    task += "\n- " + text_member(item, "description");
    const std::string file = text_member(item, "file");
    const std::string action = text_member(item, "action");
    if (!file.empty())
      task += " (" + (action.empty() ? std::string("touch") : action) + " " + file + ")";
  }
  task +=
      "\n\nThe phase is done when `" + text_member(phase, "validation_command") + "` exits with 0.";
  return task;
}

// An artifact's list member, or an empty list when it is missing or not one.
json list_member(const json& artifact, const char* key) {
  if (!artifact.is_object()) return json::array();
  const json list = artifact.value(key, json::array());
  return list.is_array() ? list : json::array();
}

}  // namespace

std::string loop_id_prefix(const LoopSpec& spec) {
  if (spec.role == "resolver") return "m";
  if (spec.type == "plan") return "p";
  if (spec.type == "spec") return "s";
  if (spec.type == "phase") return "ph";
  return "c";
}

LoopSpec child_spec(const LoopSpec& parent, const LoopProgress& parent_progress,
                    const std::string& type, const config::Settings& settings) {
  const config::LoopSettings& loop_settings = settings.loops.at(type);
  LoopSpec spec;
  spec.type = type;
  spec.repo = parent.repo;
  spec.provider = parent.provider;
  spec.model = parent.model;
  spec.validate = loop_settings.validation_command;
  spec.prompt_template = loop_settings.prompt_template;
  spec.tools = loop_settings.tools;
  spec.max_iterations = loop_settings.max_iterations;
  spec.budget = settings.budgets.loop;
  spec.plan_id = parent.root_plan();
  spec.parent_branch = parent.branch;
  spec.generation = parent_progress.generation;
  spec.validate_timeout_s = parent.validate_timeout_s;
  spec.user_branch = parent.user_branch;
  // The repository's settings as the plan resolved them (repos/).
  spec.repo_settings = parent.repo_settings;
  spec.commands = parent.commands;
  spec.prep = parent.prep;
  spec.protected_paths = parent.protected_paths;
  return spec;
}

std::vector<LoopSpec> children_from_artifact(const LoopSpec& parent,
                                             const LoopProgress& parent_progress,
                                             const config::Settings& settings,
                                             const NameLoop& name) {
  const json& artifact = parent_progress.artifact;
  std::vector<LoopSpec> specs;
  auto child = [&](const std::string& type, std::string task, json input) {
    LoopSpec spec = child_spec(parent, parent_progress, type, settings);
    spec.task = std::move(task);
    spec.input = std::move(input);
    name(spec, static_cast<std::int64_t>(specs.size()));
    return spec;
  };
  if (parent.type == "plan") {
    std::map<std::string, std::string> id_of_name;
    for (const json& entry : list_member(artifact, "specs")) {
      specs.push_back(child("spec", spec_task(artifact, entry), entry));
      id_of_name[text_member(entry, "name")] = specs.back().id;
    }
    for (LoopSpec& spec : specs) {
      for (const json& dependency : list_member(spec.input, "dependencies")) {
        if (!dependency.is_string()) continue;
        auto it = id_of_name.find(dependency.get<std::string>());
        if (it != id_of_name.end()) spec.depends_on.push_back(it->second);
      }
    }
  } else if (parent.type == "spec") {
    for (const json& entry : list_member(artifact, "phases")) {
      specs.push_back(child("phase", phase_task(artifact, entry), entry));
      // Phases run one after the other: each starts from its spec's branch
      // once the one before it is merged there.
      if (specs.size() > 1) specs.back().depends_on.push_back(specs[specs.size() - 2].id);
    }
  } else if (parent.type == "phase" && artifact.is_object()) {
    specs.push_back(child("code", code_task(artifact), artifact));
    specs.back().validate = text_member(artifact, "validation_command");
  }
  return specs;
}

LoopSpec resolver_spec(const LoopSpec& parent, const LoopProgress& parent_progress,
                       const LoopSpec& child, const std::vector<std::string>& conflicts,
                       const config::Settings& settings) {
  LoopSpec resolver = child_spec(parent, parent_progress, "code", settings);
  resolver.role = "resolver";
  resolver.merge_child = child.id;
  resolver.max_iterations = settings.merges.resolve_max_iterations;
  resolver.input = {{"child", child.id}, {"files", conflicts}};
  std::string list;
  for (const std::string& file : conflicts)
    list += "\n- " + file;
  resolver.task = "Merging " + child.branch + " into " + parent.branch +
                  " conflicted. This worktree holds the merge in progress; these files have "
                  "conflict markers (<<<<<<< ... ======= ... >>>>>>>):" +
                  list +
                  "\n\nRead each file, resolve every conflict so that both sides' intent is kept, "
                  "remove all the markers, then call complete_task.";
  resolver.validate = kNoConflictMarkers;
  if (parent.type == "phase") {
    const std::string phase_check = text_member(parent_progress.artifact, "validation_command");
    if (!phase_check.empty()) resolver.validate += " && (" + phase_check + ")";
  }
  return resolver;
}

}  // namespace loopr::loops
