// A TempTree with a Worktree opened on it, and a shortcut to call a tool.
#pragma once

#include <gtest/gtest.h>

#include "loopr-tool/tools.hpp"
#include "tests/support/temp_tree.hpp"

namespace loopr::test {

class ToolTest : public ::testing::Test {
 protected:
  ToolTest() : worktree_(std::move(*tool::Worktree::open(tree_.root()))) {}

  using ToolFn = Result<nlohmann::json> (*)(const tool::Worktree&, const nlohmann::json&);

  // The tool's result; fails the test if the tool returned an error.
  nlohmann::json ok(ToolFn tool, const nlohmann::json& args) {
    auto result = tool(worktree_, args);
    if (!result) {
      ADD_FAILURE() << "tool error: " << result.error().to_json().dump();
      return nullptr;
    }
    return *result;
  }
  // The tool's error; fails the test if it succeeded.
  Error err(ToolFn tool, const nlohmann::json& args) {
    auto result = tool(worktree_, args);
    if (result) {
      ADD_FAILURE() << "expected an error, got " << result->dump();
      return make_error("none", "");
    }
    return result.error();
  }

  TempTree tree_;
  TempTree outside_;
  tool::Worktree worktree_;
};

}  // namespace loopr::test
