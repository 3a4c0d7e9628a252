// ToolRegistry: the one table of tools loopr-tool knows, by name.
#pragma once

#include <span>
#include <string_view>

#include "loopr-tool/tools.hpp"

namespace loopr::tool {

using ToolFunction = Result<Json> (*)(const Worktree&, const Json&);

struct ToolEntry {
  std::string_view name;
  ToolFunction run;
};

std::span<const ToolEntry> all_tools();
const ToolEntry* find_tool(std::string_view name);

}  // namespace loopr::tool
