// Internal helpers shared by the daemon's git operations (worktrees.cpp,
// merges.cpp): how a repository and a worktree are opened for GitCommand,
// how names given to git are checked, and the commit identity. Not an API of
// loopr_loops: include it only from loops/*.cpp.
//
// Every function is synchronous and keeps no state; any thread may call it.
#pragma once

#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "common/small_file.hpp"
#include "loops/git/git_command.hpp"
#include "loops/git/worktree_info.hpp"

namespace loopr::loops::detail {

// The author and committer of every commit the daemon makes.
inline const std::vector<std::pair<std::string, std::string>>& commit_identity() {
  static const std::vector<std::pair<std::string, std::string>> identity = {
      {"user.name", "loopr"},      {"user.email", "loopr@localhost"},
      {"author.name", "loopr"},    {"author.email", "loopr@localhost"},
      {"committer.name", "loopr"}, {"committer.email", "loopr@localhost"},
  };
  return identity;
}

inline bool is_absolute(const std::string& path) {
  return !path.empty() && path.front() == '/';
}

// `text` without the line breaks and spaces git prints around a value.
inline std::string trim(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.remove_suffix(1);
  }
  while (!text.empty() && (text.front() == '\n' || text.front() == ' '))
    text.remove_prefix(1);
  return std::string(text);
}

// A full sha-1 or sha-256 object name, lower case.
inline bool is_sha(std::string_view text) {
  if (text.size() != 40 && text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

inline Result<std::string> real_path(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return errno_error(errno, "resolve", path);
  return std::string(resolved);
}

struct Repo {
  std::string top;         // realpath of the repository
  std::string common_dir;  // <top>/.git
};

// For a linked worktree's `.git` file ("gitdir: <common>/worktrees/<name>"):
// the main checkout's folder and the branch the linked worktree is on ("" if
// detached); nullopt when the file does not read as one. Read only to word
// a refusal: nothing here is trusted further.
inline std::optional<std::pair<std::string, std::string>> main_checkout_of_linked(
    const std::string& dot_git_file) {
  // The file is a job's to write when `repo` is a loop's worktree.
  const std::string line = first_line_of_small_file(dot_git_file);
  if (line.rfind("gitdir: ", 0) != 0) return std::nullopt;
  const std::string admin = line.substr(8);
  const std::size_t at = admin.rfind("/worktrees/");
  if (admin.empty() || admin[0] != '/' || at == std::string::npos) return std::nullopt;
  const std::string common = admin.substr(0, at);
  const std::size_t slash = common.rfind('/');
  if (slash == std::string::npos || common.substr(slash) != "/.git") return std::nullopt;
  std::string branch;
  if (const std::string ref = first_line_of_small_file(admin + "/HEAD");
      ref.rfind("ref: refs/heads/", 0) == 0) {
    branch = ref.substr(16);
  }
  return std::make_pair(slash == 0 ? std::string("/") : common.substr(0, slash), branch);
}

// The branch `repo`'s HEAD is on ("" when detached or unreadable). Read from
// the file rather than by running git: nothing here may run a program.
inline std::string current_branch(const std::string& repo) {
  const std::string line = first_line_of_small_file(repo + "/.git/HEAD");
  const std::string prefix = "ref: refs/heads/";
  if (line.rfind(prefix, 0) != 0) return {};
  return line.substr(prefix.size());
}

// A normal (non-bare) repository whose `.git` is a folder.
inline Result<Repo> open_repo(const std::string& repo) {
  if (repo.empty()) {
    return make_error(errc::invalid_arguments, "the repository path is empty",
                      "pass the folder of a git repository");
  }
  Result<std::string> top = real_path(repo);
  if (!top) {
    return make_error(errc::not_found, "the repository " + repo + " does not exist",
                      "pass the folder of an existing git repository");
  }
  Repo found{*top, *top + "/.git"};
  struct stat info {};
  if (::lstat(found.common_dir.c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
    if (auto main = main_checkout_of_linked(found.common_dir)) {
      return make_error(
          errc::invalid_arguments,
          repo + " is a linked worktree of " + main->first + " (on " +
              (main->second.empty() ? std::string("a detached HEAD") : "branch " + main->second) +
              "); loops work from a repository's main checkout",
          "pass --repo " + main->first +
              (main->second.empty() ? std::string() : " --base " + main->second) +
              " (the loop starts from that branch; commit what it needs first)");
    }
  }
  if (::lstat(found.common_dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return make_error(errc::not_found, repo + " is not a git repository (it has no .git folder)",
                      "pass the top folder of a normal (non-bare) git repository; a linked "
                      "worktree or a submodule, whose .git is a file, is not supported");
  }
  return found;
}

// git on the repository's main worktree: GIT_DIR=<top>/.git.
inline Result<GitCommand> repo_git(const Repo& repo) {
  return GitCommand::bind({repo.common_dir, repo.top});
}

// git on a linked worktree: GIT_DIR=<admin dir>, never the worktree's `.git`.
inline Result<GitCommand> worktree_git(const WorktreeInfo& info) {
  if (!is_absolute(info.path) || !is_absolute(info.admin_dir) ||
      info.admin_dir.rfind(info.common_dir + "/worktrees/", 0) != 0) {
    return make_error(errc::invalid_arguments,
                      "the worktree info is incomplete (path " + info.path + ", admin dir " +
                          info.admin_dir + ")",
                      "use the WorktreeInfo returned by add_worktree or open_worktree");
  }
  return GitCommand::bind({info.admin_dir, info.path});
}

// Branch names are checked before git sees them: no option-like name, and
// git's own rules for a ref name.
inline Result<void> check_branch(const GitCommand& git, const std::string& branch) {
  if (branch.empty() || branch.front() == '-' || branch.find('\0') != std::string::npos) {
    return make_error(errc::invalid_arguments, "'" + branch + "' is not a valid branch name",
                      "use a name like loop/<id>");
  }
  Result<GitResult> checked = git.run({"check-ref-format", "refs/heads/" + branch});
  if (!checked) return std::move(checked).error();
  if (!checked->succeeded()) {
    return make_error(errc::invalid_arguments, "'" + branch + "' is not a valid branch name",
                      "see git-check-ref-format(1); use a name like loop/<id>");
  }
  return {};
}

inline Result<bool> branch_exists(const GitCommand& git, const std::string& branch) {
  GitRunOptions read_only;
  read_only.read_only = true;
  Result<GitResult> found = git.run(
      {"rev-parse", "--verify", "--quiet", "--end-of-options", "refs/heads/" + branch}, read_only);
  if (!found) return std::move(found).error();
  return found->succeeded();
}

// The full sha of the commit `rev` names. `rev` never reaches git in option
// position: it may not start with '-', and --end-of-options precedes it.
inline Result<std::string> resolve_commit(const GitCommand& git, const std::string& rev,
                                          std::string_view what) {
  if (rev.empty() || rev.front() == '-' || rev.find('\0') != std::string::npos ||
      rev.size() > 1024) {
    return make_error(errc::invalid_arguments,
                      std::string(what) + " '" + rev + "' is not a valid revision",
                      "pass a commit sha, a branch or a tag");
  }
  GitRunOptions read_only;
  read_only.read_only = true;
  Result<GitResult> resolved = git.run(
      {"rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}"}, read_only);
  if (!resolved) return std::move(resolved).error();
  const std::string sha = trim(resolved->out);
  if (!resolved->succeeded() || !is_sha(sha)) {
    return make_error(errc::invalid_arguments,
                      std::string(what) + " '" + rev + "' does not name a commit",
                      "pass a commit sha, a branch or a tag of the repository");
  }
  return sha;
}

// The admin dir of the worktree at `worktree` (a realpath): the folder under
// <common>/worktrees/ whose `gitdir` file names <worktree>/.git. Read from the
// repository only; the worktree's own `.git` file is never consulted.
inline Result<std::string> find_admin_dir(const std::string& common_dir,
                                          const std::string& worktree) {
  namespace fs = std::filesystem;
  const std::string wanted = worktree + "/.git";
  std::error_code ec;
  fs::directory_iterator it(common_dir + "/worktrees", ec);
  if (!ec) {
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) break;
      std::ifstream file(it->path() / "gitdir");
      if (!file) continue;
      std::string line;
      std::getline(file, line);
      if (line.size() > PATH_MAX) continue;
      line = trim(line);
      fs::path named(line);
      if (named.is_relative()) named = (it->path() / named).lexically_normal();
      if (named.string() == wanted) return it->path().string();
    }
  }
  return make_error(errc::not_found,
                    "the repository " + common_dir + " has no worktree at " + worktree,
                    "the worktree was removed or pruned; create it again with add_worktree");
}

}  // namespace loopr::loops::detail
