#include "loops/protected_files.hpp"

#include <algorithm>

namespace loopr::loops {

Result<ProtectedPaths> ProtectedPaths::compile(const std::vector<std::string>& patterns) {
  ProtectedPaths out;
  for (const std::string& source : patterns) {
    auto compiled = GlobPattern::compile(source);
    if (!compiled) {
      return make_error(errc::invalid_arguments,
                        "[validation] protected_paths: \"" + source.substr(0, 200) +
                            "\": " + compiled.error().message,
                        "fix the pattern in loopr.toml or the repository's .loopr/loopr.toml");
    }
    out.sources_.push_back(source);
    out.patterns_.push_back(std::move(*compiled));
  }
  return out;
}

std::optional<std::string> ProtectedPaths::protecting(const std::string& path) const {
  if (path.empty()) return std::nullopt;
  // The path itself, then each folder above it: a pattern that matches a
  // folder protects what is in it.
  std::string_view candidate = path;
  while (true) {
    for (std::size_t i = 0; i < patterns_.size(); ++i) {
      if (patterns_[i].match(candidate)) return sources_[i];
    }
    const std::size_t slash = candidate.rfind('/');
    if (slash == std::string_view::npos || slash == 0) return std::nullopt;
    candidate = candidate.substr(0, slash);
  }
}

bool ProtectedPaths::may_protect_beneath(const std::string& folder) const {
  for (const std::string& source : sources_) {
    // The pattern's parts before its first one with a glob character (a
    // pattern names a folder as well as a file: what it names protects
    // everything beneath).
    std::string literal;
    std::size_t from = 0;
    while (from <= source.size()) {
      const std::size_t slash = std::min(source.find('/', from), source.size());
      const std::string part = source.substr(from, slash - from);
      if (part.find_first_of("*?[{\\") != std::string::npos) break;
      literal += (literal.empty() ? "" : "/") + part;
      from = slash + 1;
    }
    if (literal.empty() || literal == folder || literal.rfind(folder + "/", 0) == 0 ||
        folder.rfind(literal + "/", 0) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace loopr::loops
