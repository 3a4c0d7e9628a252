#include "mcp/tool_listing.hpp"

#include <algorithm>
#include <utility>

#include "common/json_text.hpp"

namespace loopr::mcp {

using json = nlohmann::json;

namespace {

// "read_file" -> "Read file".
std::string title_of(const std::string& name) {
  std::string title = name;
  std::replace(title.begin(), title.end(), '_', ' ');
  if (!title.empty() && title[0] >= 'a' && title[0] <= 'z') title[0] = char(title[0] - 'a' + 'A');
  return title;
}

json text_content(std::string text) {
  return json::array({{{"type", "text"}, {"text", std::move(text)}}});
}

}  // namespace

Result<std::vector<PublishedTool>> publish_tools(const json& catalog_tools,
                                                 const std::vector<std::string>& only) {
  if (!catalog_tools.is_array()) {
    return make_error(errc::protocol, "looprd's tool.list gave no `tools` array");
  }
  std::vector<PublishedTool> published;
  for (const json& entry : catalog_tools) {
    if (!entry.is_object()) continue;
    const std::string name = text_member(entry, "name");
    if (name.empty() || !entry.value("enabled", true) || !entry.value("callable", true)) continue;
    if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
    const std::string tier = text_member(entry, "tier");
    const bool read_only = tier == "read-only";
    json tool = {{"name", name},
                 {"title", title_of(name)},
                 {"description", text_member(entry, "description")},
                 {"inputSchema", entry.value("input_schema", json{{"type", "object"}})},
                 {"annotations",
                  {{"title", title_of(name)},
                   {"readOnlyHint", read_only},
                   {"destructiveHint", !read_only},
                   {"openWorldHint", text_member(entry, "lane") == "net"}}}};
    const bool has_output_schema =
        entry.contains("output_schema") && entry["output_schema"].is_object();
    if (has_output_schema) tool["outputSchema"] = entry["output_schema"];
    published.push_back({name, std::move(tool), has_output_schema});
  }
  for (const std::string& wanted : only) {
    const bool found = std::any_of(published.begin(), published.end(),
                                   [&](const PublishedTool& tool) { return tool.name == wanted; });
    if (!found) {
      std::string names;
      for (const json& entry : catalog_tools) {
        if (!entry.is_object() || !entry.value("enabled", true) || !entry.value("callable", true))
          continue;
        names += (names.empty() ? "" : ", ") + text_member(entry, "name");
      }
      return make_error(errc::invalid_arguments,
                        "--tools names '" + wanted + "', which looprd does not offer",
                        "tools you can name: " + names);
    }
  }
  return published;
}

json tool_result(const json& outcome) {
  const bool ok = outcome.value("ok", false);
  const json output = outcome.contains("output") ? outcome["output"] : json(nullptr);
  json meta = {{"call_id", text_member(outcome, "call_id")},
               {"lane", text_member(outcome, "lane")},
               {"status", text_member(outcome, "status")}};
  if (outcome.contains("duration_ms")) meta["duration_ms"] = outcome["duration_ms"];
  json result;
  if (ok) {
    std::string text = output.is_string()
                           ? output.get<std::string>()
                           : output.dump(-1, ' ', false, json::error_handler_t::replace);
    result = {{"content", text_content(std::move(text))}, {"isError", false}};
    if (output.is_object()) result["structuredContent"] = output;
  } else {
    const json error = outcome.contains("error") && outcome["error"].is_object() ? outcome["error"]
                                                                                 : json::object();
    std::string text = text_member(outcome, "tool") + " " + text_member(outcome, "status");
    if (const std::string code = text_member(error, "code"); !code.empty())
      text += " (" + code + ")";
    const std::string message = text_member(error, "message");
    text += ": " + (message.empty() ? std::string("the call did not succeed") : message);
    if (const std::string hint = text_member(error, "hint"); !hint.empty())
      text += "\nhint: " + hint;
    if (!output.is_null()) {
      text += "\noutput: " + (output.is_string()
                                  ? output.get<std::string>()
                                  : output.dump(-1, ' ', false, json::error_handler_t::replace));
    }
    result = {{"content", text_content(std::move(text))}, {"isError", true}};
  }
  // What the user's hooks said (hooks/): a text block of its own, so the
  // first stays the output's JSON as structuredContent has it.
  if (const auto notes = outcome.find("hook_notes"); notes != outcome.end() && notes->is_array()) {
    std::string said;
    for (const json& note : *notes) {
      if (note.is_string())
        said += (said.empty() ? "" : "\n") + ("[hook: " + note.get<std::string>() + "]");
    }
    if (!said.empty()) {
      result["content"].push_back(text_content(said).at(0));
      meta["hook_notes"] = *notes;
    }
  }
  result["_meta"] = {{"loopr/call", std::move(meta)}};
  return result;
}

json error_result(const std::string& message, const std::string& hint) {
  std::string text = message;
  if (!hint.empty()) text += "\nhint: " + hint;
  return {{"content", text_content(std::move(text))}, {"isError", true}};
}

}  // namespace loopr::mcp
