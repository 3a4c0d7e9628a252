#include "config/tool_traits.hpp"

#include <array>
#include <cstddef>

namespace loopr::config {
namespace {

// Each enum's text forms, indexed by its value (the enums count from 0).
constexpr std::array<std::string_view, 5> kToolCommandNames = {"none", "from-arguments", "build",
                                                               "test", "validate"};
constexpr std::array<std::string_view, 4> kFileAccessNames = {"none", "read", "write", "delete"};
constexpr std::array<std::string_view, 3> kWebFacilityNames = {"none", "fetch", "search"};
constexpr std::array<std::string_view, 5> kMemoryAccessNames = {"none", "search", "save", "update",
                                                                "delete"};
constexpr std::array<std::string_view, 6> kResultViewNames = {"json",      "command", "file",
                                                              "directory", "paths",   "grep"};

template <class Enum, std::size_t N>
std::string_view name_of(const std::array<std::string_view, N>& names, Enum value) {
  const auto index = static_cast<std::size_t>(value);
  return index < N ? names[index] : names[0];
}

template <class Enum, std::size_t N>
std::optional<Enum> parse_name(const std::array<std::string_view, N>& names,
                               std::string_view text) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == text) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(ToolCommand command) {
  return name_of(kToolCommandNames, command);
}
std::string_view to_string(FileAccess access) {
  return name_of(kFileAccessNames, access);
}
std::string_view to_string(WebFacility web) {
  return name_of(kWebFacilityNames, web);
}
std::string_view to_string(ResultView view) {
  return name_of(kResultViewNames, view);
}
std::string_view to_string(MemoryAccess access) {
  return name_of(kMemoryAccessNames, access);
}

std::optional<ToolCommand> parse_tool_command(std::string_view text) {
  return parse_name<ToolCommand>(kToolCommandNames, text);
}
std::optional<FileAccess> parse_file_access(std::string_view text) {
  return parse_name<FileAccess>(kFileAccessNames, text);
}
std::optional<WebFacility> parse_web_facility(std::string_view text) {
  return parse_name<WebFacility>(kWebFacilityNames, text);
}
std::optional<ResultView> parse_result_view(std::string_view text) {
  return parse_name<ResultView>(kResultViewNames, text);
}
std::optional<MemoryAccess> parse_memory_access(std::string_view text) {
  return parse_name<MemoryAccess>(kMemoryAccessNames, text);
}

std::span<const std::string_view> tool_command_choices() {
  return kToolCommandNames;
}
std::span<const std::string_view> result_view_choices() {
  return kResultViewNames;
}

}  // namespace loopr::config
