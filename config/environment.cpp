#include "config/environment.hpp"

#include <cstdlib>
#include <filesystem>

namespace loopr::config {

EnvLookup process_env() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

EnvLookup fixed_env(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](std::string_view name) -> std::optional<std::string> {
    auto it = variables.find(std::string(name));
    if (it == variables.end()) return std::nullopt;
    return it->second;
  };
}

std::optional<std::string> expand_home(std::string_view path, const EnvLookup& env) {
  if (path != "~" && !path.starts_with("~/")) return std::string(path);
  auto value = env("HOME");
  if (!value || value->empty()) return std::nullopt;
  const std::string_view rest = path.size() > 1 ? path.substr(2) : std::string_view();
  std::string out = (std::filesystem::path(*value) / std::string(rest)).lexically_normal().string();
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace loopr::config
