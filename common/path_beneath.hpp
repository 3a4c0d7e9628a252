// Whether one absolute, normalized path (no "." or ".." parts, no trailing
// '/', no doubled '/') is a folder's own path or lies beneath it: a purely
// lexical test (no file system access; resolve links first where they
// matter). "/" holds every path; "/a/b" is beneath "/a", "/ab" is not.
#pragma once

#include <string_view>

namespace loopr {

inline bool same_or_beneath(std::string_view path, std::string_view folder) {
  if (folder == "/") return !path.empty() && path.front() == '/';
  return path == folder || (path.size() > folder.size() &&
                            path.substr(0, folder.size()) == folder && path[folder.size()] == '/');
}

}  // namespace loopr
