// ToolRegistry: the one table of tools loopr-tool knows, by name.
#pragma once

#include <span>
#include <string_view>

#include "loopr-tool/tool_main.hpp"
#include "loopr-tool/tools.hpp"

namespace loopr::tool {

std::span<const ToolEntry> all_tools();
const ToolEntry* find_tool(std::string_view name);

}  // namespace loopr::tool
