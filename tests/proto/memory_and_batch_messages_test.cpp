// proto/memory_messages.hpp and proto/tool_batch_messages.hpp: requests
// read back as written, refusals with the messages looprd has always sent.
#include <gtest/gtest.h>

#include "proto/memory_messages.hpp"
#include "proto/tool_batch_messages.hpp"

namespace loopr::proto {
namespace {

using nlohmann::json;

TEST(MemoryMessages, RoundTripAndRefusals) {
  const MemorySearchParams search{"retry budget", "/src/app", 5, true};
  EXPECT_EQ(*parse_memory_search_params(to_json(search)), search);
  const MemoryListParams list{std::nullopt, 20};
  EXPECT_EQ(*parse_memory_list_params(to_json(list)), list);
  EXPECT_EQ(to_json(MemoryListParams{}), json::object());
  EXPECT_EQ(parse_memory_list_params(json{{"limit", 0}}).error().message,
            "limit must be a whole number from 1 to 1000, got 0");
  EXPECT_EQ(parse_memory_list_params(json{{"repo", "rel"}}).error().message,
            "repo must be an absolute path, got 'rel'");
  EXPECT_EQ(parse_memory_search_params(json::object()).error().message,
            "memory.search needs `query`, the words to look for");
  EXPECT_EQ(parse_note_id_params(json{{"note_id", ""}}).error().code, errc::invalid_arguments);
  EXPECT_EQ(parse_repo_params(json::object()).error().message,
            "the request needs `repo`, the absolute path of the repository's folder");
}

TEST(ToolBatchMessages, RoundTripAndRefusals) {
  ToolBatchParams batch;
  batch.calls = {{"read_file", {{"path", "a"}}}, {"grep", json::object()}};
  batch.worktree = "/src/app";
  batch.loop_id = "c1";
  EXPECT_EQ(*parse_tool_batch_params(to_json(batch)), batch);
  EXPECT_EQ(parse_tool_batch_params(json{{"calls", json::array()}}).error().message,
            "tool.batch needs `calls`, a non-empty array of {tool, args}");
  EXPECT_EQ(parse_tool_batch_params(json{{"calls", {{{"tool", "grep"}}}}}).error().message,
            "tool.batch needs `worktree`, an absolute path");
  EXPECT_EQ(parse_tool_batch_params(json{{"calls", {{{"tool", ""}}}}, {"worktree", "/w"}})
                .error()
                .message,
            "calls[0] must be {tool: string of 1 to 256 bytes, args?: object}");
}

}  // namespace
}  // namespace loopr::proto
