// A TempTree and a way to call a tool on it through the front end the test
// run selects (tests/support/tool_front_end.hpp: inline, process or worker).
#pragma once

#include <gtest/gtest.h>

#include "loopr-tool/tools.hpp"
#include "tests/support/temp_tree.hpp"
#include "tests/support/tool_front_end.hpp"

namespace loopr::test {

class ToolTest : public ::testing::Test {
 protected:
  using ToolFn = tool::ToolFunction;

  // The tool's result or error, through the selected front end.
  Result<nlohmann::json> call(ToolFn tool, const nlohmann::json& args) {
    return tools_.call(tool, args);
  }
  // The tool's result; fails the test if the tool returned an error.
  nlohmann::json ok(ToolFn tool, const nlohmann::json& args) {
    auto result = call(tool, args);
    if (!result) {
      ADD_FAILURE() << "tool error: " << result.error().to_json().dump();
      return nullptr;
    }
    return *result;
  }
  // The tool's error; fails the test if it succeeded.
  Error err(ToolFn tool, const nlohmann::json& args) {
    auto result = call(tool, args);
    if (result) {
      ADD_FAILURE() << "expected an error, got " << result->dump();
      return make_error("none", "");
    }
    return result.error();
  }

  TempTree tree_;
  TempTree outside_;
  ToolFrontEnd tools_{tree_.root()};
};

}  // namespace loopr::test
