// A repository's .loopr/loopr.toml, read from the user's checkout (issue 25).
//
// The checkout is not trusted: the file may come from anyone who wrote to
// the repository. So it is read without following any symbolic link below
// the repository's folder (.loopr or loopr.toml being a link is refused, it
// could point anywhere), only when it is a regular file of at most
// config::kMaxRepoFileBytes (a FIFO or a device would block or never end),
// and parsed with config::parse_repository_file(), which allows only the keys
// a repository may set. Threads: any; it blocks on the file system briefly.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "config/repository_settings.hpp"

namespace loopr::repos {

inline constexpr std::string_view kRepoFileName = ".loopr/loopr.toml";

struct RepoFile {
  std::string path;                              // <repo>/.loopr/loopr.toml
  bool exists = false;                           // something is there (a link or a bad file too)
  std::string hash;                              // "sha256:<hex>" of its bytes; empty when not read
  std::optional<config::RepoSettings> settings;  // when read and valid
  // Why the file cannot be used (a link, too large, not a regular file,
  // unreadable, or the parser's "FILE:LINE: KEY: ..."); empty when it can.
  std::string error;
};

// `repo` is the repository's realpath.
RepoFile read_repo_file(const std::string& repo);

// Whether read_repo_file(repo) would find something there (a link or a bad
// file too: exists), looked at without following a link and without reading
// the file: a cheap check for a caller that needs the settings only when a
// file is there.
bool repo_file_present(const std::string& repo);

}  // namespace loopr::repos
