// looprctl call, looprctl tools.
#include <filesystem>
#include <istream>
#include <ostream>

#include "client/client_paths.hpp"
#include "client/commands.hpp"
#include "client/text_format.hpp"
#include "client/tool_result_view.hpp"
#include "proto/json_bounded.hpp"
#include "proto/line_codec.hpp"

namespace loopr::client {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kArgumentsHint =
    R"(pass the tool's arguments as one JSON object, e.g. '{"path": "README.md"}', or - to read it from stdin)";

// Reads at most `cap` + 1 bytes, so an oversize input is detected without
// holding more than that.
std::string read_capped(std::istream& in, std::size_t cap) {
  std::string text;
  char buffer[64 * 1024];
  while (text.size() <= cap && in) {
    in.read(buffer, sizeof buffer);
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
  }
  return text;
}

Result<json> read_arguments(const std::optional<std::string>& argument, std::istream& in) {
  if (!argument) return json::object();
  std::string text = *argument;
  std::string source = "the arguments";
  if (text == "-") {
    text = read_capped(in, proto::kMaxLineBytes);
    source = "the arguments on stdin";
    if (text.size() > proto::kMaxLineBytes) {
      return make_error(failure::usage,
                        source + " exceed " + std::to_string(proto::kMaxLineBytes) + " bytes",
                        "a control line holds at most 16 MiB; pass smaller arguments");
    }
  }
  auto parsed = proto::parse_json_bounded(text);
  if (!parsed) {
    return make_error(failure::usage, source + " are not valid JSON: " + parsed.error().message,
                      kArgumentsHint);
  }
  if (!parsed->is_object()) {
    return make_error(failure::usage,
                      source + " must be a JSON object, not " + std::string(parsed->type_name()),
                      kArgumentsHint);
  }
  return std::move(parsed).value();
}

// The description's first line, for a one-line table cell.
std::string summary(const json& tool) {
  const auto it = tool.find("description");
  if (it == tool.end() || !it->is_string()) return "-";
  const std::string& text = it->get_ref<const std::string&>();
  return printable(text.substr(0, text.find('\n')));
}

}  // namespace

int run_call(const CommandContext& context, const CallOptions& options) {
  auto args = read_arguments(options.args, context.in);
  if (!args) return context.fail(args.error());
  auto worktree = absolute_folder(options.worktree, "the worktree", "--worktree");
  if (!worktree) return context.fail(worktree.error());
  const proto::ToolCallParams params{options.tool,    std::move(*args),   std::move(*worktree),
                                     options.loop_id, options.timeout_ms, std::nullopt};

  auto client = context.open();
  if (!client) return context.fail(client.error());
  // No client-side limit: looprd ends every call itself (the tool's timeout,
  // the approval timeout), and closes the socket if it stops.
  auto result = client->call("tool.call", proto::to_json(params), Milliseconds::max());
  if (!result) return context.fail(result.error());
  auto ok = tool_call_succeeded(*result);
  if (!ok) return context.fail(ok.error());
  if (context.json) {
    context.print_json(*result);
    if (!*ok) print_tool_error(*result, context.err);
    return to_int(*ok ? ExitStatus::ok : ExitStatus::call_failed);
  }
  return to_int(print_tool_result(*result, context.out, context.err));
}

int run_tools(const CommandContext& context) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call("tool.list");
  if (!result) return context.fail(result.error());
  auto tools = objects_in(*result, "tools", "tool.list");
  if (!tools) return context.fail(tools.error());
  if (context.json) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  TextTable table({"NAME", "LANE", "TIER", "TIMEOUT", "DESCRIPTION"});
  for (const json& tool : *tools) {
    std::string name = cell(tool, "name");
    if (tool.contains("enabled") && tool["enabled"] == false) name += " (disabled)";
    table.add_row({name, cell(tool, "lane"), cell(tool, "tier"),
                   format_duration_ms(tool.value("timeout_ms", json())), summary(tool)});
  }
  table.print(context.out);
  return to_int(ExitStatus::ok);
}

}  // namespace loopr::client
