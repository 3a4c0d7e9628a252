#include "loopr-tool/tool_registry.hpp"

#include <array>

namespace loopr::tool {
namespace {

constexpr std::array kTools = {
    ToolEntry{"read_file", &read_file},
    ToolEntry{"write_file", &write_file},
    ToolEntry{"edit_file", &edit_file},
    ToolEntry{"file_delete", &file_delete},
    ToolEntry{"list_directory", &list_directory},
    ToolEntry{"glob", &glob},
    ToolEntry{"grep", &grep},
    ToolEntry{"run_command", &run_command},
    ToolEntry{"run_command_isolated", &run_command_isolated},
    ToolEntry{"build", &build},
    ToolEntry{"test", &test},
    ToolEntry{"validate", &validate},
    ToolEntry{"hook", &hook},
};

}  // namespace

std::span<const ToolEntry> all_tools() {
  return kTools;
}

const ToolEntry* find_tool(std::string_view name) {
  for (const ToolEntry& entry : kTools) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

}  // namespace loopr::tool
