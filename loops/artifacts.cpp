#include "loops/artifacts.hpp"

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <utility>

#include "common/ascii_text.hpp"
#include "common/json_text.hpp"
#include "loops/method_errors.hpp"

namespace loopr::loops {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxSpecs = 10;
constexpr std::size_t kMinPhases = 1;
constexpr std::size_t kMaxPhases = 7;
constexpr std::size_t kMaxNameLength = 40;

constexpr const char* kNameRule =
    "a name is 1 to 40 characters of a-z, 0-9 and -, starting with a letter or digit, "
    "without \"--\"";
constexpr const char* kNameHint = "use a short lowercase name such as 'auth-tokens'";

std::string in_quotes(std::string_view text) {
  return "'" + std::string(text) + "'";
}

std::string trimmed(std::string_view text) {
  return std::string(trim_space(text));
}

bool present(const json& object, const char* field) {
  return object.contains(field) && !object.at(field).is_null();
}

// A string field of `object` (found at `where`), trimmed. A required field
// must be there and not blank; an optional one defaults to "".
Result<std::string> text_field(const json& object, const char* field, const std::string& where,
                               bool required) {
  if (!present(object, field)) {
    if (!required) return std::string();
    return invalid(where + " has no " + field, "send " + std::string(field) + " as a string");
  }
  const json& value = object.at(field);
  if (!value.is_string()) {
    return invalid("the " + std::string(field) + " of " + where + " must be a string",
                   "send " + std::string(field) + " as a string");
  }
  std::string text = trimmed(value.get_ref<const std::string&>());
  if (required && text.empty()) {
    return invalid("the " + std::string(field) + " of " + where + " must not be blank",
                   "write the " + std::string(field) + " out");
  }
  return text;
}

// A name field, as given (not trimmed): it must be usable in a branch name.
Result<std::string> name_field(const json& object, const std::string& what,
                               const std::string& where) {
  if (!present(object, "name") || !object.at("name").is_string()) {
    return invalid("the name of " + where + " must be a string", kNameHint);
  }
  const std::string& name = object.at("name").get_ref<const std::string&>();
  if (!is_valid_artifact_name(name)) {
    return invalid(what + " name " + in_quotes(name) + " is not valid: " + kNameRule, kNameHint);
  }
  return name;
}

Result<const json*> array_field(const json& object, const char* field, const std::string& where) {
  if (!present(object, field) || !object.at(field).is_array()) {
    return invalid("the " + std::string(field) + " of " + where + " must be an array",
                   "send " + std::string(field) + " as a JSON array");
  }
  return &object.at(field);
}

// The first cycle among the dependencies, as "a -> b -> a"; "" if none.
// `deps` holds indexes into `names`.
std::string find_cycle(const std::vector<std::string>& names,
                       const std::vector<std::vector<std::size_t>>& deps) {
  enum class Mark { unseen, on_path, done };
  std::vector<Mark> marks(names.size(), Mark::unseen);
  std::vector<std::size_t> path;
  std::string cycle;
  auto visit = [&](auto& self, std::size_t at) -> bool {
    marks[at] = Mark::on_path;
    path.push_back(at);
    for (std::size_t next : deps[at]) {
      if (marks[next] == Mark::on_path) {
        auto from = std::find(path.begin(), path.end(), next);
        for (auto it = from; it != path.end(); ++it)
          cycle += names[*it] + " -> ";
        cycle += names[next];
        return true;
      }
      if (marks[next] == Mark::unseen && self(self, next)) return true;
    }
    path.pop_back();
    marks[at] = Mark::done;
    return false;
  };
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (marks[i] == Mark::unseen && visit(visit, i)) return cycle;
  }
  return {};
}

Result<json> check_plan(const json& args) {
  auto title = text_field(args, "title", "the plan", true);
  if (!title) return std::move(title).error();
  auto overview = text_field(args, "overview", "the plan", true);
  if (!overview) return std::move(overview).error();
  auto specs_in = array_field(args, "specs", "the plan");
  if (!specs_in) return std::move(specs_in).error();
  const json& specs = **specs_in;
  if (specs.empty() || specs.size() > kMaxSpecs) {
    return invalid("a plan has 1 to 10 specs: got " + std::to_string(specs.size()),
                   specs.empty() ? "give the plan at least one spec"
                                 : "merge related specs so that there are at most 10");
  }

  json out_specs = json::array();
  std::vector<std::string> names;
  std::map<std::string, std::size_t> index_of;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const json& spec = specs[i];
    const std::string where = "spec " + std::to_string(i + 1);
    if (!spec.is_object()) {
      return invalid(where + " must be an object", "send each spec as {name, title, description}");
    }
    auto name = name_field(spec, "spec", where);
    if (!name) return std::move(name).error();
    if (!index_of.emplace(*name, i).second) {
      return invalid("spec names must be unique: " + in_quotes(*name) + " appears twice",
                     "give each spec its own name");
    }
    const std::string named = "spec " + in_quotes(*name);
    auto spec_title = text_field(spec, "title", named, true);
    if (!spec_title) return std::move(spec_title).error();
    auto description = text_field(spec, "description", named, true);
    if (!description) return std::move(description).error();
    json dependencies = json::array();
    if (present(spec, "dependencies")) {
      const json& listed = spec.at("dependencies");
      if (!listed.is_array()) {
        return invalid("the dependencies of " + named + " must be an array of spec names",
                       "send dependencies as a JSON array of names, e.g. [\"db\"]");
      }
      std::set<std::string> seen;
      for (const json& dependency : listed) {
        if (!dependency.is_string()) {
          return invalid("the dependencies of " + named + " must be spec names (strings)",
                         "send dependencies as a JSON array of names, e.g. [\"db\"]");
        }
        const std::string& dep = dependency.get_ref<const std::string&>();
        if (seen.insert(dep).second) dependencies.push_back(dep);
      }
    }
    names.push_back(*name);
    out_specs.push_back({{"name", *name},
                         {"title", *spec_title},
                         {"description", *description},
                         {"dependencies", std::move(dependencies)}});
  }

  std::vector<std::vector<std::size_t>> deps(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (const json& dependency : out_specs[i]["dependencies"]) {
      const std::string& dep = dependency.get_ref<const std::string&>();
      if (dep == names[i]) {
        return invalid("a spec cannot depend on itself: " + in_quotes(dep) +
                           " lists itself in its dependencies",
                       "remove " + in_quotes(dep) + " from its own dependencies");
      }
      auto found = index_of.find(dep);
      if (found == index_of.end()) {
        std::string all;
        for (const std::string& n : names)
          all += (all.empty() ? "" : ", ") + n;
        return invalid("a dependency must name another spec of this plan: spec " +
                           in_quotes(names[i]) + " depends on " + in_quotes(dep) +
                           ", which is not one",
                       "the plan's specs are " + all + "; add " + in_quotes(dep) +
                           " as a spec or remove the dependency");
      }
      deps[i].push_back(found->second);
    }
  }
  if (const std::string cycle = find_cycle(names, deps); !cycle.empty()) {
    return invalid("the dependencies form a cycle: " + cycle,
                   "remove one of these dependencies so that one of the specs can start first");
  }
  return json{{"title", *title}, {"overview", *overview}, {"specs", std::move(out_specs)}};
}

Result<json> check_spec(const json& args) {
  auto name = name_field(args, "spec", "the spec");
  if (!name) return std::move(name).error();
  auto title = text_field(args, "title", "the spec", true);
  if (!title) return std::move(title).error();
  auto overview = text_field(args, "overview", "the spec", true);
  if (!overview) return std::move(overview).error();
  auto phases_in = array_field(args, "phases", "the spec");
  if (!phases_in) return std::move(phases_in).error();
  const json& phases = **phases_in;
  if (phases.size() < kMinPhases || phases.size() > kMaxPhases) {
    return invalid("a spec has 1 to 7 phases: got " + std::to_string(phases.size()),
                   phases.size() < kMinPhases ? "give the spec at least one phase"
                                              : "merge related phases so that there are at most 7");
  }
  json out_phases = json::array();
  std::set<std::string> seen;
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const json& phase = phases[i];
    const std::string where = "phase " + std::to_string(i + 1);
    if (!phase.is_object()) {
      return invalid(where + " must be an object",
                     "send each phase as {name, title, description, validation?}");
    }
    auto phase_name = name_field(phase, "phase", where);
    if (!phase_name) return std::move(phase_name).error();
    if (!seen.insert(*phase_name).second) {
      return invalid("phase names must be unique: " + in_quotes(*phase_name) + " appears twice",
                     "give each phase its own name");
    }
    const std::string named = "phase " + in_quotes(*phase_name);
    auto phase_title = text_field(phase, "title", named, true);
    if (!phase_title) return std::move(phase_title).error();
    auto description = text_field(phase, "description", named, true);
    if (!description) return std::move(description).error();
    auto validation = text_field(phase, "validation", named, false);
    if (!validation) return std::move(validation).error();
    out_phases.push_back({{"name", *phase_name},
                          {"title", *phase_title},
                          {"description", *description},
                          {"validation", *validation}});
  }
  return json{{"name", *name},
              {"title", *title},
              {"overview", *overview},
              {"phases", std::move(out_phases)}};
}

// A task's file: relative, inside the worktree. "" (no file) is allowed.
bool is_relative_inside(const std::string& file) {
  if (file.empty()) return true;
  if (file.front() == '/') return false;
  std::size_t start = 0;
  while (start <= file.size()) {
    std::size_t end = file.find('/', start);
    if (end == std::string::npos) end = file.size();
    if (file.compare(start, end - start, "..") == 0) return false;
    start = end + 1;
  }
  return true;
}

Result<json> check_phase(const json& args) {
  auto name = name_field(args, "phase", "the phase");
  if (!name) return std::move(name).error();
  auto title = text_field(args, "title", "the phase", true);
  if (!title) return std::move(title).error();
  auto objective = text_field(args, "objective", "the phase", true);
  if (!objective) return std::move(objective).error();
  auto tasks_in = array_field(args, "tasks", "the phase");
  if (!tasks_in) return std::move(tasks_in).error();
  const json& tasks = **tasks_in;
  if (tasks.empty()) {
    return invalid("a phase has at least 1 task: got 0",
                   "list the tasks the phase consists of, in order");
  }
  json out_tasks = json::array();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const json& task = tasks[i];
    const std::string where = "task " + std::to_string(i + 1);
    if (!task.is_object()) {
      return invalid(where + " must be an object",
                     "send each task as {description, file?, action?}");
    }
    auto description = text_field(task, "description", where, true);
    if (!description) return std::move(description).error();
    auto file = text_field(task, "file", where, false);
    if (!file) return std::move(file).error();
    if (!is_relative_inside(*file)) {
      return invalid("the file of " + where +
                         " must be a relative path inside the repository, without "
                         "\"..\" and not starting with \"/\": got " +
                         in_quotes(*file),
                     "write the path relative to the repository's root, e.g. src/main.cpp");
    }
    auto action = text_field(task, "action", where, false);
    if (!action) return std::move(action).error();
    if (!action->empty() && *action != "create" && *action != "modify" && *action != "delete") {
      return invalid(
          "the action of " + where + " must be create, modify or delete: got " + in_quotes(*action),
          "use create, modify or delete, or leave action out");
    }
    out_tasks.push_back({{"description", *description}, {"file", *file}, {"action", *action}});
  }
  if (!present(args, "validation_command") || !args.at("validation_command").is_string()) {
    return invalid("the phase's validation_command must be a string",
                   "send the shell command whose exit code 0 means the phase is done");
  }
  const std::string validation =
      trimmed(args.at("validation_command").get_ref<const std::string&>());
  if (validation.empty()) {
    return invalid("the phase's validation_command must not be blank",
                   "send the shell command whose exit code 0 means the phase is done, e.g. "
                   "\"make test\"");
  }
  return json{{"name", *name},
              {"title", *title},
              {"objective", *objective},
              {"tasks", std::move(out_tasks)},
              {"validation_command", validation}};
}

// --- Markdown ----------------------------------------------------------------

const json& field_array(const json& object, const char* field) {
  static const json kEmpty = json::array();
  if (!object.is_object()) return kEmpty;
  auto it = object.find(field);
  if (it == object.end() || !it->is_array()) return kEmpty;
  return *it;
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\r', ' ');
  return text;
}

std::size_t longest_backtick_run(std::string_view text) {
  std::size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

// `text` as inline code whatever backticks it holds (CommonMark code spans).
std::string code_span(std::string_view text) {
  const std::string fence(longest_backtick_run(text) + 1, '`');
  const bool pad = !text.empty() && (text.front() == '`' || text.back() == '`');
  const std::string space = pad ? " " : "";
  return fence + space + one_line(std::string(text)) + space + fence;
}

std::string code_block(std::string_view text, std::string_view info) {
  const std::string fence(std::max<std::size_t>(3, longest_backtick_run(text) + 1), '`');
  return fence + std::string(info) + "\n" + std::string(text) + "\n" + fence + "\n";
}

// Continuation lines of a list item are indented to stay inside it.
std::string indented(const std::string& text, std::string_view indent) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += indent;
  }
  return out;
}

std::string heading(std::string_view kind, std::string_view loop_id, const json& artifact) {
  std::string line = "# " + std::string(kind);
  if (!loop_id.empty()) line += " " + std::string(loop_id);
  return line + ": " + one_line(text_member(artifact, "title")) + "\n\n";
}

std::string paragraph(const std::string& text) {
  return text.empty() ? std::string() : text + "\n\n";
}

std::string render_plan(const json& plan, std::string_view loop_id) {
  std::string out = heading("Plan", loop_id, plan);
  out += paragraph(text_member(plan, "overview"));
  out += "## Specs\n\n";
  std::size_t number = 0;
  for (const json& spec : field_array(plan, "specs")) {
    out += "### " + std::to_string(++number) + ". " + code_span(text_member(spec, "name")) + ": " +
           one_line(text_member(spec, "title")) + "\n\n";
    out += paragraph(text_member(spec, "description"));
    std::string depends;
    for (const json& dependency : field_array(spec, "dependencies")) {
      if (!dependency.is_string()) continue;
      depends += (depends.empty() ? "" : ", ") + code_span(dependency.get<std::string>());
    }
    out += "Depends on: " + (depends.empty() ? std::string("nothing") : depends) + "\n\n";
  }
  return out;
}

std::string render_spec(const json& spec, std::string_view loop_id) {
  std::string out = heading("Spec", loop_id, spec);
  out += "Name: " + code_span(text_member(spec, "name")) + "\n\n";
  out += paragraph(text_member(spec, "overview"));
  out += "## Phases\n\n";
  std::size_t number = 0;
  for (const json& phase : field_array(spec, "phases")) {
    out += "### " + std::to_string(++number) + ". " + code_span(text_member(phase, "name")) + ": " +
           one_line(text_member(phase, "title")) + "\n\n";
    out += paragraph(text_member(phase, "description"));
    const std::string validation = text_member(phase, "validation");
    if (!validation.empty()) out += "Validation: " + validation + "\n\n";
  }
  return out;
}

std::string render_phase(const json& phase, std::string_view loop_id) {
  std::string out = heading("Phase", loop_id, phase);
  out += "Name: " + code_span(text_member(phase, "name")) + "\n\n";
  out += "## Objective\n\n" + paragraph(text_member(phase, "objective"));
  out += "## Tasks\n\n";
  std::size_t number = 0;
  for (const json& task : field_array(phase, "tasks")) {
    const std::string file = text_member(task, "file");
    const std::string action = text_member(task, "action");
    std::string where;
    if (!action.empty()) where = action;
    if (!file.empty()) where += (where.empty() ? "" : " ") + code_span(file);
    out += std::to_string(++number) + ". " + indented(text_member(task, "description"), "   ") +
           (where.empty() ? "" : " (" + where + ")") + "\n";
  }
  out += "\n## Validation\n\n" + code_block(text_member(phase, "validation_command"), "sh");
  return out;
}

}  // namespace

bool is_loop_engine_tool(std::string_view tool) {
  return tool == "complete_task" || tool == "read_output" || tool == "create_plan" ||
         tool == "create_spec" || tool == "create_phase";
}

std::string_view artifact_tool_for(std::string_view loop_type) {
  if (loop_type == "plan") return "create_plan";
  if (loop_type == "spec") return "create_spec";
  if (loop_type == "phase") return "create_phase";
  return "";
}

std::string_view artifact_kind_of(std::string_view tool) {
  if (tool == "create_plan") return "plan";
  if (tool == "create_spec") return "spec";
  if (tool == "create_phase") return "phase";
  return "";
}

bool is_valid_artifact_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength || name.front() == '-') return false;
  if (name.find("--") != std::string_view::npos) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

Result<nlohmann::json> check_artifact(std::string_view tool, const nlohmann::json& args) {
  const std::string_view kind = artifact_kind_of(tool);
  if (kind.empty()) {
    return invalid(in_quotes(tool) + " is not an artifact tool",
                   "record an artifact with create_plan, create_spec or create_phase");
  }
  if (!args.is_object()) {
    return invalid("the " + std::string(kind) + " must be a JSON object",
                   "send the arguments " + std::string(tool) + "'s schema describes");
  }
  // The artifact is kept with every journal step of its loop and copied into
  // its children's specs: a bound keeps those rows small.
  if (const std::size_t bytes =
          args.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size();
      bytes > kMaxArtifactBytes) {
    return invalid("an artifact is at most " + std::to_string(kMaxArtifactBytes / 1024) +
                       " KiB: this " + std::string(kind) + " is " + std::to_string(bytes / 1024) +
                       " KiB",
                   "keep descriptions short: the loops that carry it out read the code themselves");
  }
  if (kind == "plan") return check_plan(args);
  if (kind == "spec") return check_spec(args);
  return check_phase(args);
}

std::vector<std::string> specs_in_dependency_order(const nlohmann::json& plan) {
  std::vector<std::string> names;
  for (const json& spec : field_array(plan, "specs"))
    names.push_back(text_member(spec, "name"));
  std::map<std::string, std::size_t> index_of;
  for (std::size_t i = 0; i < names.size(); ++i)
    index_of.emplace(names[i], i);
  std::vector<std::vector<std::size_t>> deps(names.size());
  std::size_t i = 0;
  for (const json& spec : field_array(plan, "specs")) {
    for (const json& dependency : field_array(spec, "dependencies")) {
      if (!dependency.is_string()) continue;
      auto found = index_of.find(dependency.get<std::string>());
      if (found != index_of.end() && found->second != i) deps[i].push_back(found->second);
    }
    ++i;
  }
  // Each step takes the earliest spec (in plan order) whose dependencies are
  // all placed; a cycle (not in a checked plan) leaves the rest in plan order.
  std::vector<bool> placed(names.size(), false);
  std::vector<std::string> order;
  while (order.size() < names.size()) {
    std::size_t next = names.size();
    for (std::size_t candidate = 0; candidate < names.size() && next == names.size(); ++candidate) {
      if (placed[candidate]) continue;
      const auto& needs = deps[candidate];
      if (std::all_of(needs.begin(), needs.end(), [&](std::size_t d) { return placed[d]; })) {
        next = candidate;
      }
    }
    if (next == names.size()) {
      for (std::size_t rest = 0; rest < names.size(); ++rest) {
        if (!placed[rest]) order.push_back(names[rest]);
      }
      break;
    }
    placed[next] = true;
    order.push_back(names[next]);
  }
  return order;
}

std::string render_artifact_markdown(std::string_view kind, const nlohmann::json& artifact,
                                     std::string_view loop_id) {
  if (kind == "plan") return render_plan(artifact, loop_id);
  if (kind == "spec") return render_spec(artifact, loop_id);
  if (kind == "phase") return render_phase(artifact, loop_id);
  std::string out = heading("Artifact", loop_id, artifact);
  out += paragraph(text_member(artifact, "overview"));
  return out;
}

}  // namespace loopr::loops
