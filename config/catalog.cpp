#include "config/catalog.hpp"

#include <algorithm>
#include <filesystem>
#include <istream>

#include "common/error.hpp"
#include "config/schema_check.hpp"
#include "config/toml_reader.hpp"

namespace loopr::config {

namespace {

using detail::fail;

// Defaults for a tool a file adds, for the keys it may leave out. An unknown
// tool may do anything, so it is privileged until the file says otherwise.
constexpr std::int64_t kNewToolTimeoutMs = 30000;
constexpr std::int64_t kNewToolMaxOutputBytes = 100000;

// Tool names are sent to LLM APIs, which accept ^[a-zA-Z0-9_-]{1,64}$.
bool is_valid_tool_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

std::string lane_list() {
  std::string out;
  for (const auto lane : kLanes)
    out += (out.empty() ? "\"" : ", \"") + std::string(lane) + "\"";
  return out;
}

std::string tool_names(const std::vector<ToolSpec>& tools) {
  std::vector<std::string> names;
  for (const auto& tool : tools)
    names.push_back(tool.name);
  return detail::join(names);
}

nlohmann::json read_schema(const toml::value& v, const std::string& key) {
  const std::string text = detail::read_string(v, key);
  nlohmann::json schema;
  try {
    schema = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail(v, key,
         "must be a JSON object (a JSON Schema) written as a string; the JSON does not parse at "
         "byte " +
             std::to_string(e.byte) + " of the string");
  }
  if (!schema.is_object()) {
    fail(v, key,
         "must be a JSON object (a JSON Schema), got JSON " + std::string(schema.type_name()));
  }
  if (auto problem = check_tool_schema(schema)) fail(v, key, "is not a usable schema: " + *problem);
  return schema;
}

// Applies one [tools.<name>] table to `tools`, field by field.
int strictness(SafetyTier tier) {
  switch (tier) {
    case SafetyTier::read_only:
      return 0;
    case SafetyTier::side_effecting:
      return 1;
    case SafetyTier::privileged:
      return 2;
  }
  return 2;
}

// file_access, web, warm_worker, consults_model and memory describe what loopr's own
// implementation of a built-in tool does (tool_traits.hpp); no file sets them.
void refuse_implementation_traits(const toml::value& table, const std::string& base) {
  for (const char* key : {"file_access", "web", "warm_worker", "consults_model", "memory"}) {
    if (!table.contains(key)) continue;
    fail(table.at(key), base + "." + key,
         "is set by loopr for its built-in tools (it says what the tool's own implementation "
         "does), so a catalog file cannot set it; remove the key");
  }
}

constexpr const char* kTightenOnly =
    "a repository's .loopr/catalog.toml may only tighten the catalog (lower timeout_ms or "
    "max_output_bytes, enabled = false, a stricter tier); change this in your own "
    "catalog.toml instead";

// Refuses what a repository's file may not do to `spec` (see CatalogTrust).
void check_tightening(const ToolSpec& spec, const toml::value& table, const std::string& base,
                      bool is_new) {
  if (is_new) fail(table, base, std::string("adds a tool: ") + kTightenOnly);
  for (const auto& entry : detail::entries(table)) {
    const toml::value& v = *entry.value;
    const std::string key = base + "." + entry.key;
    if (entry.key == "lane" || entry.key == "description" || entry.key == "input_schema" ||
        entry.key == "output_schema" || entry.key == "command" || entry.key == "result_view") {
      fail(v, key, std::string("cannot be changed here: ") + kTightenOnly);
    } else if (entry.key == "timeout_ms") {
      if (detail::read_integer_in(v, key, 1, kMaxTimeoutMs, "milliseconds") > spec.timeout_ms) {
        fail(v, key,
             "raises the limit of " + std::to_string(spec.timeout_ms) + ": " + kTightenOnly);
      }
    } else if (entry.key == "max_output_bytes") {
      if (detail::read_integer_in(v, key, 1, kMaxOutputBytesLimit, "bytes") >
          spec.max_output_bytes) {
        fail(v, key,
             "raises the limit of " + std::to_string(spec.max_output_bytes) + ": " + kTightenOnly);
      }
    } else if (entry.key == "enabled") {
      if (detail::read_bool(v, key) && !spec.enabled) {
        fail(v, key, std::string("enables a disabled tool: ") + kTightenOnly);
      }
    } else if (entry.key == "tier") {
      const auto text = detail::read_choice(v, key, {"read-only", "side-effecting", "privileged"});
      if (strictness(*parse_safety_tier(text)) < strictness(spec.tier)) {
        fail(v, key,
             "lowers the tier from \"" + std::string(to_string(spec.tier)) + "\": " + kTightenOnly);
      }
    }
  }
}

void merge_tool(std::vector<ToolSpec>& tools, const std::string& name, const toml::value& table,
                CatalogTrust trust) {
  const std::string base = "tools." + name;
  detail::require_table(table, base);
  detail::refuse_unknown_keys(table, base,
                              {"lane", "timeout_ms", "max_output_bytes", "description", "enabled",
                               "tier", "command", "result_view", "input_schema", "output_schema",
                               "file_access", "web", "warm_worker", "consults_model", "memory"});
  refuse_implementation_traits(table, base);

  auto existing =
      std::find_if(tools.begin(), tools.end(), [&](const ToolSpec& t) { return t.name == name; });
  const bool is_new = existing == tools.end();
  ToolSpec spec;
  if (is_new) {
    if (!is_valid_tool_name(name)) {
      fail(table, base,
           "a tool name may use only letters, digits, '_' and '-' (at most 64 characters)");
    }
    std::vector<std::string> missing;
    for (const char* key : {"lane", "description", "input_schema"}) {
      if (!table.contains(key)) missing.emplace_back(key);
    }
    if (!missing.empty()) {
      fail(table, base,
           "is not a built-in tool, so it must set lane, description and input_schema; missing: " +
               detail::join(missing) + " (built-in tools: " + tool_names(tools) + ")");
    }
    spec.name = name;
    spec.timeout_ms = kNewToolTimeoutMs;
    spec.max_output_bytes = kNewToolMaxOutputBytes;
    spec.tier = SafetyTier::privileged;
    spec.enabled = true;
  } else {
    spec = *existing;
  }
  if (trust == CatalogTrust::repository) check_tightening(spec, table, base, is_new);

  for (const auto& entry : detail::entries(table)) {
    const toml::value& v = *entry.value;
    const std::string key = base + "." + entry.key;
    if (entry.key == "lane") {
      const std::string lane = detail::read_string(v, key);
      if (!is_known_lane(lane)) {
        fail(v, key, "unknown lane \"" + lane + "\"; lanes are " + lane_list());
      }
      if (is_new && lane == lanes::daemon) {
        fail(v, key,
             "lane \"daemon\" is reserved for tools built into looprd; a new tool runs in a "
             "runner lane: \"no-net\", \"net\" or \"heavy\"");
      }
      if (!is_new && is_runner_lane(lane) != is_runner_lane(spec.lane)) {
        fail(v, key,
             spec.lane == lanes::daemon
                 ? "tool " + name +
                       " is handled inside looprd (lane \"daemon\") and cannot move "
                       "to a runner lane, got \"" +
                       lane + "\""
                 : "tool " + name +
                       " runs in a runner lane and cannot move to lane \"daemon\"; "
                       "choose \"no-net\", \"net\" or \"heavy\"");
      }
      spec.lane = lane;
    } else if (entry.key == "timeout_ms") {
      spec.timeout_ms = detail::read_integer_in(v, key, 1, kMaxTimeoutMs, "milliseconds");
    } else if (entry.key == "max_output_bytes") {
      spec.max_output_bytes = detail::read_integer_in(v, key, 1, kMaxOutputBytesLimit, "bytes");
    } else if (entry.key == "description") {
      spec.description = detail::read_string(v, key);
      if (spec.description.empty()) fail(v, key, "must not be empty: the model reads it");
    } else if (entry.key == "enabled") {
      spec.enabled = detail::read_bool(v, key);
    } else if (entry.key == "tier") {
      const auto text = detail::read_choice(v, key, {"read-only", "side-effecting", "privileged"});
      spec.tier = *parse_safety_tier(text);
    } else if (entry.key == "command") {
      spec.command = *parse_tool_command(detail::read_choice(v, key, tool_command_choices()));
      // The sandbox's set-ID sweep and the approval rules follow this trait:
      // a tool that runs a command cannot be said to run none.
      if (!is_new && spec.command == ToolCommand::none && builtin_runs_commands(name)) {
        fail(v, key,
             "tool " + name +
                 " runs a shell command, so it cannot be \"none\" (the sandbox's set-ID sweep "
                 "and the approval rules rely on it); choose from-arguments, build, test or "
                 "validate, or set enabled = false");
      }
      // A new command tool prints what the built-in ones print.
      if (is_new && !table.contains("result_view")) {
        spec.result_view =
            spec.command == ToolCommand::none ? ResultView::json : ResultView::command;
      }
    } else if (entry.key == "result_view") {
      spec.result_view = *parse_result_view(detail::read_choice(v, key, result_view_choices()));
    } else if (entry.key == "input_schema") {
      spec.input_schema = read_schema(v, key);
    } else if (entry.key == "output_schema") {
      // "" takes a built-in tool's output schema away (say, its command
      // now prints something else); nothing else is optional here.
      spec.output_schema =
          detail::read_string(v, key).empty() ? nlohmann::json() : read_schema(v, key);
    }
  }

  if (is_new) {
    tools.push_back(std::move(spec));
  } else {
    *existing = std::move(spec);
  }
}

// `tools` with one catalog document applied; `tools` itself is untouched, so a
// file with a mistake changes nothing.
std::vector<ToolSpec> merged(const std::vector<ToolSpec>& tools, const toml::value& document,
                             CatalogTrust trust) {
  std::vector<ToolSpec> next = tools;
  for (const auto& entry : detail::entries(document)) {
    if (entry.key != "tools") {
      fail(*entry.value, entry.key,
           "unknown table; a catalog file holds only [tools.<name>] tables");
    }
    detail::require_table(*entry.value, "tools");
    for (const auto& tool : detail::entries(*entry.value)) {
      merge_tool(next, tool.key, *tool.value, trust);
    }
  }
  return next;
}

}  // namespace

std::string_view to_string(SafetyTier tier) {
  switch (tier) {
    case SafetyTier::read_only:
      return "read-only";
    case SafetyTier::side_effecting:
      return "side-effecting";
    case SafetyTier::privileged:
      return "privileged";
  }
  return "privileged";
}

std::optional<SafetyTier> parse_safety_tier(std::string_view text) {
  if (text == "read-only") return SafetyTier::read_only;
  if (text == "side-effecting") return SafetyTier::side_effecting;
  if (text == "privileged") return SafetyTier::privileged;
  return std::nullopt;
}

bool is_known_lane(std::string_view lane) {
  return std::find(std::begin(kLanes), std::end(kLanes), lane) != std::end(kLanes);
}

bool is_runner_lane(std::string_view lane) {
  return std::find(std::begin(kRunnerLanes), std::end(kRunnerLanes), lane) !=
         std::end(kRunnerLanes);
}

Catalog Catalog::load(const std::vector<std::string>& user_files,
                      const std::string& repository_file) {
  Catalog catalog = builtin();
  const auto merge_if_present = [&](const std::string& file, CatalogTrust trust) {
    std::error_code ec;
    const bool present = std::filesystem::exists(file, ec);
    if (ec && ec != std::errc::no_such_file_or_directory) {
      throw ConfigError(file + ": cannot check the file: " + ec.message());
    }
    if (present) catalog.merge_file(file, trust);
  };
  for (const auto& file : user_files)
    merge_if_present(file, CatalogTrust::user);
  if (!repository_file.empty()) merge_if_present(repository_file, CatalogTrust::repository);
  return catalog;
}

void Catalog::merge_file(const std::string& path, CatalogTrust trust) {
  tools_ = merged(tools_, detail::parse_document_file(path), trust);
}

void Catalog::merge_toml(std::istream& in, const std::string& name, CatalogTrust trust) {
  tools_ = merged(tools_, detail::parse_document(in, name), trust);
}

const ToolSpec* Catalog::find(std::string_view name) const {
  for (const auto& tool : tools_) {
    if (tool.name == name) return &tool;
  }
  return nullptr;
}

const ToolSpec* Catalog::first_enabled_with(ToolCommand command) const {
  for (const auto& tool : tools_) {
    if (tool.enabled && tool.command == command) return &tool;
  }
  return nullptr;
}

std::vector<const ToolSpec*> Catalog::enabled_tools() const {
  std::vector<const ToolSpec*> out;
  for (const auto& tool : tools_) {
    if (tool.enabled) out.push_back(&tool);
  }
  return out;
}

nlohmann::json llm_tool_definitions(const Catalog& catalog, const std::vector<std::string>& only) {
  auto definition = [](const ToolSpec& tool) {
    return nlohmann::json{{"name", tool.name},
                          {"description", tool.description},
                          {"input_schema", tool.input_schema}};
  };
  nlohmann::json out = nlohmann::json::array();
  if (only.empty()) {
    for (const auto* tool : catalog.enabled_tools())
      out.push_back(definition(*tool));
    return out;
  }
  for (const auto& name : only) {
    const ToolSpec* tool = catalog.find(name);
    if (tool == nullptr) {
      throw ConfigError("tool list names unknown tool '" + name +
                        "'; known tools: " + tool_names(catalog.tools()));
    }
    if (tool->enabled) out.push_back(definition(*tool));
  }
  return out;
}

}  // namespace loopr::config
