// mcp/tool_listing.hpp: looprd's tool.list as MCP Tool objects, and tool.call
// outcomes as CallToolResults.
#include "mcp/tool_listing.hpp"

#include <gtest/gtest.h>

namespace loopr::mcp {
namespace {

using nlohmann::json;

json entry(const std::string& name, const std::string& lane, const std::string& tier,
           bool enabled = true, bool callable = true) {
  return {{"name", name},
          {"description", name + " does things"},
          {"lane", lane},
          {"tier", tier},
          {"enabled", enabled},
          {"callable", callable},
          {"input_schema", {{"type", "object"}, {"properties", {{"path", {{"type", "string"}}}}}}}};
}

json catalog() {
  json read = entry("read_file", "no-net", "read-only");
  read["output_schema"] = {{"type", "object"}, {"properties", {{"content", {{"type", "string"}}}}}};
  return json::array({read, entry("write_file", "no-net", "side-effecting"),
                      entry("web_fetch", "net", "read-only"),
                      entry("disabled_tool", "no-net", "read-only", false),
                      entry("complete_task", "daemon", "read-only", true, false),
                      entry("run_command", "net", "privileged")});
}

std::vector<std::string> names_of(const std::vector<PublishedTool>& tools) {
  std::vector<std::string> names;
  for (const PublishedTool& tool : tools)
    names.push_back(tool.name);
  return names;
}

TEST(PublishTools, OnlyEnabledCallableToolsInCatalogOrder) {
  auto published = publish_tools(catalog(), {});
  ASSERT_TRUE(published) << published.error().message;
  EXPECT_EQ(names_of(*published),
            (std::vector<std::string>{"read_file", "write_file", "web_fetch", "run_command"}));
}

TEST(PublishTools, ToolsNarrowsTheListAndANameNotOfferedIsAnErrorNamingThoseThereAre) {
  auto narrowed = publish_tools(catalog(), {"run_command", "read_file"});
  ASSERT_TRUE(narrowed);
  EXPECT_EQ(names_of(*narrowed), (std::vector<std::string>{"read_file", "run_command"}));

  for (const char* wrong : {"no_such_tool", "complete_task", "disabled_tool"}) {
    auto refused = publish_tools(catalog(), {"read_file", wrong});
    ASSERT_FALSE(refused) << wrong;
    EXPECT_EQ(refused.error().code, errc::invalid_arguments);
    EXPECT_NE(refused.error().message.find(wrong), std::string::npos) << refused.error().message;
    EXPECT_EQ(refused.error().hint,
              "tools you can name: read_file, write_file, web_fetch, run_command");
  }
}

TEST(PublishTools, NotAnArrayIsAProtocolError) {
  auto refused = publish_tools(json::object(), {});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, errc::protocol);
}

TEST(PublishTools, EachToolCarriesItsSchemasAndAnnotations) {
  auto published = publish_tools(catalog(), {});
  ASSERT_TRUE(published);
  const json& read = (*published)[0].tool;
  EXPECT_EQ(read["name"], "read_file");
  EXPECT_EQ(read["title"], "Read file");
  EXPECT_EQ(read["description"], "read_file does things");
  EXPECT_EQ(read["inputSchema"], catalog()[0]["input_schema"]);
  EXPECT_EQ(read["outputSchema"], catalog()[0]["output_schema"]);
  EXPECT_TRUE((*published)[0].has_output_schema);
  EXPECT_EQ(read["annotations"]["readOnlyHint"], true);
  EXPECT_EQ(read["annotations"]["destructiveHint"], false);
  EXPECT_EQ(read["annotations"]["openWorldHint"], false);

  const json& write = (*published)[1].tool;
  EXPECT_FALSE(write.contains("outputSchema"));
  EXPECT_FALSE((*published)[1].has_output_schema);
  EXPECT_EQ(write["annotations"]["readOnlyHint"], false);
  EXPECT_EQ(write["annotations"]["destructiveHint"], true);

  const json& fetch = (*published)[2].tool;
  EXPECT_EQ(fetch["annotations"]["openWorldHint"], true);
  EXPECT_EQ(fetch["annotations"]["readOnlyHint"], true);
  const json& command = (*published)[3].tool;
  EXPECT_EQ(command["annotations"]["destructiveHint"], true);
  EXPECT_EQ(command["annotations"]["openWorldHint"], true);
}

TEST(ToolResult, ASuccessfulCallGivesStructuredContentAndTheSameJsonAsText) {
  const json output = {{"content", "     1|x\n"}, {"total_lines", 1}};
  const json result = tool_result({{"ok", true},
                                   {"call_id", "c-1"},
                                   {"tool", "read_file"},
                                   {"lane", "no-net"},
                                   {"status", "success"},
                                   {"duration_ms", 12},
                                   {"output", output}});
  EXPECT_EQ(result["isError"], false);
  EXPECT_EQ(result["structuredContent"], output);
  ASSERT_EQ(result["content"].size(), 1u);
  EXPECT_EQ(result["content"][0]["type"], "text");
  EXPECT_EQ(json::parse(result["content"][0]["text"].get<std::string>()), output);
  EXPECT_EQ(
      result["_meta"]["loopr/call"],
      json({{"call_id", "c-1"}, {"lane", "no-net"}, {"status", "success"}, {"duration_ms", 12}}));
}

TEST(ToolResult, TheHooksNotesAreATextBlockOfTheirOwn) {
  const json output = {{"exit_code", 0}};
  const json result = tool_result({{"ok", true},
                                   {"status", "success"},
                                   {"output", output},
                                   {"hook_notes", {"lint is clean", "formatted"}}});
  ASSERT_EQ(result["content"].size(), 2u);
  EXPECT_EQ(json::parse(result["content"][0]["text"].get<std::string>()), output);
  EXPECT_EQ(result["content"][1]["text"], "[hook: lint is clean]\n[hook: formatted]");
  EXPECT_EQ(result["_meta"]["loopr/call"]["hook_notes"], json({"lint is clean", "formatted"}));
}

TEST(ToolResult, ASuccessfulCallWithTextOutputHasNoStructuredContent) {
  const json result = tool_result({{"ok", true}, {"status", "success"}, {"output", "plain"}});
  EXPECT_EQ(result["isError"], false);
  EXPECT_FALSE(result.contains("structuredContent"));
  EXPECT_EQ(result["content"][0]["text"], "plain");
}

TEST(ToolResult, AFailureIsAnErrorResultWithCodeMessageHintAndOutput) {
  const json result = tool_result({{"ok", false},
                                   {"tool", "edit_file"},
                                   {"status", "invalid"},
                                   {"error",
                                    {{"code", "not_read_first"},
                                     {"message", "a.c was not read"},
                                     {"hint", "read it with read_file first"}}},
                                   {"output", {{"exit_code", 2}}}});
  EXPECT_EQ(result["isError"], true);
  EXPECT_FALSE(result.contains("structuredContent"));
  const std::string text = result["content"][0]["text"];
  EXPECT_EQ(text,
            "edit_file invalid (not_read_first): a.c was not read\n"
            "hint: read it with read_file first\n"
            "output: {\"exit_code\":2}");
}

TEST(ToolResult, AFailureWithoutAMessageStillSaysItDidNotSucceed) {
  const json result = tool_result({{"ok", false}, {"tool", "build"}, {"status", "cancelled"}});
  EXPECT_EQ(result["isError"], true);
  EXPECT_EQ(result["content"][0]["text"], "build cancelled: the call did not succeed");
}

TEST(ErrorResult, CarriesTheMessageAndHint) {
  const json result = error_result("loopr: no worktree", "pass --worktree");
  EXPECT_EQ(result["isError"], true);
  EXPECT_EQ(result["content"][0]["text"], "loopr: no worktree\nhint: pass --worktree");
}

}  // namespace
}  // namespace loopr::mcp
