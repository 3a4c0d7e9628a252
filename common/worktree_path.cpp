#include "common/worktree_path.hpp"

namespace loopr {

std::vector<std::string> split_path(std::string_view relative) {
  std::vector<std::string> parts;
  std::size_t i = 0;
  while (i <= relative.size()) {
    const std::size_t slash = relative.find('/', i);
    const std::size_t end = slash == std::string_view::npos ? relative.size() : slash;
    const std::string_view part = relative.substr(i, end - i);
    if (!part.empty() && part != ".") parts.emplace_back(part);
    i = end + 1;
  }
  return parts;
}

Result<std::string> worktree_relative_path(std::string_view root_path, std::string_view argument) {
  if (argument.empty()) {
    return make_error(errc::invalid_arguments, "path is empty",
                      "give a path relative to the worktree, e.g. \"src/main.cpp\"");
  }
  if (argument.find('\0') != std::string_view::npos) {
    return make_error(errc::invalid_arguments, "path contains a NUL byte", "remove the NUL byte");
  }
  const std::string root(root_path);
  std::string_view rest = argument;
  if (argument.front() == '/') {
    const bool under_root =
        root == "/" || (argument.substr(0, root.size()) == root &&
                        (argument.size() == root.size() || argument[root.size()] == '/'));
    if (!under_root) {
      return make_error(errc::path_outside_worktree,
                        "path '" + std::string(argument) + "' is outside the worktree " + root,
                        "use a path relative to the worktree, or an absolute path under " + root);
    }
    rest = root == "/" ? argument : argument.substr(root.size());
  }
  std::vector<std::string> parts;
  for (std::string& part : split_path(rest)) {
    if (part == "..") {
      if (parts.empty()) {
        return make_error(errc::path_outside_worktree,
                          "path '" + std::string(argument) + "' climbs above the worktree root",
                          "use a path inside the worktree");
      }
      parts.pop_back();
    } else {
      parts.push_back(std::move(part));
    }
  }
  if (parts.empty()) return std::string(".");
  std::string joined;
  for (const std::string& part : parts) {
    if (!joined.empty()) joined += '/';
    joined += part;
  }
  return joined;
}

}  // namespace loopr
