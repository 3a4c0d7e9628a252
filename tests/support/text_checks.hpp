// Test support: the small checks on text and files that many tests make,
// shared so no test file keeps a private copy (a unity build would see two).
#pragma once

#include <sys/stat.h>

#include <string>
#include <string_view>

namespace loopr::test {

// Whether `part` occurs in `text`.
inline bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

// The permission bits (07777) of the file at `path`; 0 when it cannot be
// stat'ed.
inline mode_t mode_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

}  // namespace loopr::test
