#include "loops/git/merges.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "common/private_folder.hpp"
#include "common/unique_fd.hpp"
#include "common/worktree_path.hpp"
#include "loops/git/git_command.hpp"
#include "loops/git/git_support.hpp"
#include "loops/git/worktrees.hpp"

namespace loopr::loops {
namespace {

using detail::check_branch;
using detail::find_admin_dir;
using detail::is_sha;
using detail::open_repo;
using detail::real_path;
using detail::Repo;
using detail::repo_git;
using detail::resolve_commit;
using detail::trim;
using detail::worktree_git;

// The protocol's code for "not now, the state forbids it" (control-protocol.md).
constexpr const char* kInvalidState = "invalid_state";

// A conflict marker is a line that starts with exactly this many '<' or '>'
// (git's default conflict-marker-size), then a space or the end of the line.
constexpr int kMarkerSize = 7;

Error invalid_state(std::string message, std::string hint = {}) {
  return make_error(kInvalidState, std::move(message), std::move(hint));
}

// Config for every call that merges or commits: loopr's identity, and no
// setting of the repository's that would change what a merge does behind our
// back (renormalisation through attributes, replayed resolutions, an extra
// shortlog in the message, signature checks, a stash). Merge drivers are
// neutralised by GitCommand itself.
GitRunOptions merge_options() {
  static const std::vector<std::pair<std::string, std::string>> kMergeConfig = {
      {"merge.renormalize", "false"}, {"rerere.enabled", "false"},
      {"rerere.autoUpdate", "false"}, {"merge.conflictStyle", "merge"},
      {"merge.log", "false"},         {"merge.verifySignatures", "false"},
      {"merge.autoStash", "false"},   {"merge.stat", "false"},
  };
  GitRunOptions options;
  options.config = detail::commit_identity();
  options.config.insert(options.config.end(), kMergeConfig.begin(), kMergeConfig.end());
  return options;
}

// `git merge` of commit `sha` with every hook, signature, stash and editor
// switched off on the command line too (--no-verify: no pre-merge-commit or
// commit-msg hook, on top of core.hooksPath=/dev/null).
std::vector<std::string> merge_args(const std::string& sha, const std::string& message,
                                    bool commit) {
  return {"merge",
          "--quiet",
          "--no-ff",
          "--no-edit",
          "--no-verify",
          "--no-stat",
          "--no-log",
          "--no-squash",
          "--no-autostash",
          "--no-verify-signatures",
          "--no-gpg-sign",
          "--no-rerere-autoupdate",
          "--cleanup=whitespace",
          commit ? "--commit" : "--no-commit",
          "--message=" + message,
          "--end-of-options",
          sha};
}

std::vector<std::string> fast_forward_args(const std::string& sha) {
  return {"merge",
          "--quiet",
          "--ff-only",
          "--no-verify",
          "--no-stat",
          "--no-autostash",
          "--no-verify-signatures",
          "--end-of-options",
          sha};
}

Result<void> check_message(const std::string& message) {
  if (message.find('\0') != std::string::npos || trim(message).empty()) {
    return make_error(errc::invalid_arguments, "the merge message is empty or holds a NUL byte",
                      "pass a message naming what is merged");
  }
  return {};
}

// The sha `branch` points at; not_found when there is no such branch.
Result<std::string> branch_sha(const GitCommand& git, const std::string& branch) {
  if (auto ok = check_branch(git, branch); !ok) return std::move(ok).error();
  Result<GitResult> found = git.run({"rev-parse", "--verify", "--quiet", "--end-of-options",
                                     "refs/heads/" + branch + "^{commit}"},
                                    read_only_options());
  if (!found) return std::move(found).error();
  const std::string sha = trim(found->out);
  if (!found->succeeded() || !is_sha(sha)) {
    return make_error(errc::not_found, "there is no branch " + branch,
                      "check the branch name (git branch --list)");
  }
  return sha;
}

// Both arguments are full shas (or already checked revisions).
Result<bool> ancestor_of(const GitCommand& git, const std::string& ancestor,
                         const std::string& of) {
  const std::vector<std::string> args = {"merge-base", "--is-ancestor", ancestor, of};
  Result<GitResult> checked = git.run(args, read_only_options());
  if (!checked) return std::move(checked).error();
  if (checked->exit_code == 0) return true;
  if (checked->exit_code == 1) return false;
  return git_failure(args, *checked);
}

Result<std::string> head_of(const GitCommand& git) {
  Result<std::string> head =
      git.output({"rev-parse", "--verify", "HEAD^{commit}"}, read_only_options());
  if (!head) return std::move(head).error();
  std::string sha = trim(*head);
  if (!is_sha(sha)) {
    return make_error(errc::io, "git rev-parse printed '" + sha + "' for HEAD, not a sha");
  }
  return sha;
}

Result<bool> merging(const GitCommand& git) {
  Result<GitResult> found =
      git.run({"rev-parse", "--verify", "--quiet", "MERGE_HEAD^{commit}"}, read_only_options());
  if (!found) return std::move(found).error();
  return found->succeeded();
}

Result<std::string> complete_listing(const GitCommand& git, const std::vector<std::string>& args) {
  Result<GitResult> listed = git.run(args, read_only_options());
  if (!listed) return std::move(listed).error();
  if (!listed->succeeded()) return git_failure(args, *listed);
  if (listed->out_truncated) {
    return make_error(errc::too_large, "git " + args[0] + " listed too many paths");
  }
  return std::move(listed->out);
}

// The paths with unmerged (stage 1-3) entries in the index, sorted.
Result<std::vector<std::string>> unmerged_paths(const GitCommand& git) {
  Result<std::string> listing = complete_listing(git, {"ls-files", "--unmerged", "-z"});
  if (!listing) return std::move(listing).error();
  std::set<std::string> paths;
  for (std::string_view record : split_nul(*listing)) {
    const std::size_t tab = record.find('\t');  // "<mode> <sha> <stage>\t<path>"
    if (tab != std::string_view::npos) paths.emplace(record.substr(tab + 1));
  }
  return std::vector<std::string>(paths.begin(), paths.end());
}

// Whether tracked files differ from HEAD (untracked ones too when asked).
Result<bool> dirty(const GitCommand& git, bool count_untracked) {
  GitRunOptions options = read_only_options();
  options.output_cap = 4096;  // only emptiness matters
  Result<std::string> status =
      git.output({"status", "--porcelain=v1", "-z",
                  count_untracked ? "--untracked-files=all" : "--untracked-files=no",
                  "--ignore-submodules=dirty"},
                 options);
  if (!status) return std::move(status).error();
  return !status->empty();
}

// Puts a worktree whose tracked files were clean before a failed merge back
// at `head`: `merge --abort`, and `reset --hard` if that was not enough.
// Untracked files the worktree had are left alone.
Result<void> undo_merge(const GitCommand& git, const std::string& head) {
  Result<bool> in_progress = merging(git);
  if (!in_progress) return std::move(in_progress).error();
  if (*in_progress) {
    Result<GitResult> aborted = git.run({"merge", "--abort"});
    if (!aborted) return std::move(aborted).error();
  }
  Result<std::string> now = head_of(git);
  Result<bool> changed = dirty(git, false);
  Result<bool> still = merging(git);
  if (now && *now == head && changed && !*changed && still && !*still) return {};
  if (Result<std::string> reset = git.output({"reset", "--hard", "--quiet", head}); !reset) {
    return std::move(reset).error();
  }
  return {};
}

struct MergeRun {
  bool clean = false;
  std::vector<std::string> conflicts;
};

// Runs `args` (a merge). Exit 0: clean. A failure that left unmerged paths:
// the conflicts. Any other failure is an Error; the caller undoes the merge.
Result<MergeRun> run_merge(const GitCommand& git, const std::vector<std::string>& args) {
  Result<GitResult> merged = git.run(args, merge_options());
  if (!merged) return std::move(merged).error();
  if (merged->succeeded()) return MergeRun{true, {}};
  Result<std::vector<std::string>> conflicts = unmerged_paths(git);
  if (!conflicts) return std::move(conflicts).error();
  if (conflicts->empty()) {
    Error error = git_failure(args, *merged);
    if (merged->err.find("would be overwritten") != std::string::npos) {
      error.code = kInvalidState;
      error.hint = "move or commit the files git names, then merge again";
    }
    return error;
  }
  return MergeRun{false, std::move(*conflicts)};
}

std::string join(const std::vector<std::string>& paths) {
  std::string text;
  for (const std::string& path : paths) {
    if (!text.empty()) text += ", ";
    text += path;
  }
  return text;
}

// What every merge into a loop's worktree checks first: the worktree is on
// its branch, has no changes and no merge in progress; `source` exists.
struct Prepared {
  std::string head;
  std::string source;
};

Result<Prepared> prepare_loop_merge(const GitCommand& git, const WorktreeInfo& target,
                                    const std::string& source, const std::string& message) {
  if (auto ok = check_message(message); !ok) return std::move(ok).error();
  Result<std::string> source_sha = branch_sha(git, source);
  if (!source_sha) return std::move(source_sha).error();
  Result<std::string> branch = git.output({"symbolic-ref", "--quiet", "HEAD"}, read_only_options());
  if (!branch || trim(*branch) != "refs/heads/" + target.branch) {
    return invalid_state("the worktree " + target.path + " is not on the branch " + target.branch,
                         "use the WorktreeInfo of the loop whose branch receives the merge");
  }
  Result<bool> in_progress = merging(git);
  if (!in_progress) return std::move(in_progress).error();
  if (*in_progress) {
    return invalid_state("a merge is already in progress in " + target.path,
                         "commit it (commit_all) or reset the worktree first");
  }
  Result<bool> changed = dirty(git, true);
  if (!changed) return std::move(changed).error();
  if (*changed) {
    return invalid_state("the worktree " + target.path + " has uncommitted changes",
                         "commit them (commit_all) before merging into it");
  }
  Result<std::string> head = head_of(git);
  if (!head) return std::move(head).error();
  return Prepared{std::move(*head), std::move(*source_sha)};
}

Result<MergeOutcome> merge_into_worktree(const WorktreeInfo& target, const std::string& source,
                                         const std::string& message, bool commit) {
  Result<GitCommand> git = worktree_git(target);
  if (!git) return std::move(git).error();
  Result<Prepared> prepared = prepare_loop_merge(*git, target, source, message);
  if (!prepared) return std::move(prepared).error();
  MergeOutcome outcome;
  outcome.commit = prepared->head;
  Result<bool> contained = ancestor_of(*git, prepared->source, prepared->head);
  if (!contained) return std::move(contained).error();
  if (*contained) {
    outcome.already_merged = true;
    return outcome;
  }
  Result<MergeRun> run = run_merge(*git, merge_args(prepared->source, message, commit));
  if (!run) {
    if (auto undone = undo_merge(*git, prepared->head); !undone) return std::move(undone).error();
    return std::move(run).error();
  }
  if (!run->clean && commit) {
    // merge_branch: a conflict leaves the worktree as it was.
    if (auto undone = undo_merge(*git, prepared->head); !undone) return std::move(undone).error();
  }
  outcome.merged = run->clean;
  outcome.conflicts = std::move(run->conflicts);
  if (run->clean && commit) {
    Result<std::string> head = head_of(*git);
    if (!head) return std::move(head).error();
    outcome.commit = std::move(*head);
  }
  return outcome;
}

// Whether the regular file `relative` below `root` has a conflict-marker
// line. Every component is opened with O_NOFOLLOW beneath `root`, so a link
// the job planted leads nowhere; anything but a regular file has no markers.
Result<bool> has_conflict_markers(int root, const std::string& relative) {
  const std::vector<std::string> parts = split_path(relative);
  if (parts.empty()) return false;
  UniqueFd folder;
  int at = root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i] == "..") return false;
    folder.reset(::openat(at, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!folder) return false;
    at = folder.get();
  }
  if (parts.back() == "..") return false;
  UniqueFd file(::openat(at, parts.back().c_str(),
                         O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!file) return false;
  struct stat info {};
  if (::fstat(file.get(), &info) != 0 || !S_ISREG(info.st_mode)) return false;

  // Per line: the run of '<' or '>' it starts with, until the line is decided.
  int run = 0;
  char run_char = 0;
  bool decided = false;
  std::array<char, 65536> buffer{};
  while (true) {
    const ssize_t n = ::read(file.get(), buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_error(errno, "read", relative);
    }
    if (n == 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      const char c = buffer[static_cast<std::size_t>(i)];
      if (c == '\n') {
        if (!decided && run == kMarkerSize) return true;
        run = 0;
        decided = false;
        continue;
      }
      if (decided) continue;
      if (run == 0) {
        if (c != '<' && c != '>') {
          decided = true;
          continue;
        }
        run_char = c;
        run = 1;
      } else if (c == run_char && run < kMarkerSize) {
        ++run;
      } else {
        if (run == kMarkerSize && (c == ' ' || c == '\t' || c == '\r')) return true;
        decided = true;
      }
    }
  }
  return !decided && run == kMarkerSize;
}

// Where `branch` is checked out in the repository: the main worktree or a
// linked one (from `git worktree list`, which reads the repository's own
// admin dirs). nullopt: nowhere.
struct Checkout {
  GitTarget target;
  std::string path;
};

Result<std::optional<Checkout>> find_checkout(const GitCommand& git, const Repo& repo,
                                              const std::string& branch) {
  Result<std::string> listing = complete_listing(git, {"worktree", "list", "--porcelain", "-z"});
  if (!listing) return std::move(listing).error();
  const std::string wanted = "branch refs/heads/" + branch;
  std::string path;
  for (std::string_view field : split_nul(*listing)) {
    if (field.rfind("worktree ", 0) == 0) {
      path = std::string(field.substr(9));
      continue;
    }
    if (field != wanted) continue;
    if (path == repo.top)
      return std::optional<Checkout>(Checkout{{repo.common_dir, repo.top}, path});
    Result<std::string> admin = find_admin_dir(repo.common_dir, path);
    struct stat info {};
    if (!admin || ::stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
      return invalid_state(
          "the branch " + branch + " is checked out in " + path + ", which no longer exists",
          "run `git worktree prune` in " + repo.top + ", then merge again");
    }
    return std::optional<Checkout>(Checkout{{*admin, path}, path});
  }
  return std::optional<Checkout>();
}

std::string conflict_message(const std::vector<std::string>& conflicts) {
  return "the target moved in a way that conflicts with the plan: " + join(conflicts);
}

// merge_into_branch when `target` is checked out (and clean): the merge is
// made there, so the files on disk follow the branch.
Result<MergeOutcome> merge_in_checkout(const Checkout& checkout, const std::string& source_sha,
                                       const std::string& target_sha, bool fast_forward,
                                       const std::string& message) {
  Result<GitCommand> git = GitCommand::bind(checkout.target);
  if (!git) return std::move(git).error();
  Result<bool> in_progress = merging(*git);
  if (!in_progress) return std::move(in_progress).error();
  Result<bool> changed = dirty(*git, false);
  if (!changed) return std::move(changed).error();
  if (*in_progress || *changed) {
    return invalid_state("commit or stash your changes in " + checkout.path + " first",
                         "the branch is checked out there and its files would change");
  }
  Result<std::string> head = head_of(*git);
  if (!head) return std::move(head).error();
  if (*head != target_sha) {
    return invalid_state("the branch moved while merging", "merge again");
  }
  const std::vector<std::string> args =
      fast_forward ? fast_forward_args(source_sha) : merge_args(source_sha, message, true);
  Result<MergeRun> run = run_merge(*git, args);
  if (!run || !run->clean) {
    if (auto undone = undo_merge(*git, target_sha); !undone) return std::move(undone).error();
    if (!run) return std::move(run).error();
    return invalid_state(conflict_message(run->conflicts),
                         "merge the branch yourself and resolve the conflicts, or rebase it");
  }
  Result<std::string> merged = head_of(*git);
  if (!merged) return std::move(merged).error();
  MergeOutcome outcome;
  outcome.merged = true;
  outcome.fast_forward = fast_forward;
  outcome.commit = std::move(*merged);
  return outcome;
}

// Moves refs/heads/<branch> from `old_sha` to `new_sha`, only if it still
// points at `old_sha`.
Result<void> move_branch(const GitCommand& git, const std::string& branch,
                         const std::string& new_sha, const std::string& old_sha,
                         const std::string& why) {
  const std::vector<std::string> args = {"update-ref",           "-m",    why,
                                         "refs/heads/" + branch, new_sha, old_sha};
  Result<GitResult> moved = git.run(args);
  if (!moved) return std::move(moved).error();
  if (!moved->succeeded()) {
    Result<std::string> now = branch_sha(git, branch);
    if (now && *now != old_sha) {
      return invalid_state("the branch " + branch + " moved while merging", "merge again");
    }
    return git_failure(args, *moved);
  }
  return {};
}

// A detached worktree under the scratch folder, removed when this goes away.
class ScratchWorktree {
 public:
  static Result<ScratchWorktree> add(const GitCommand& git, const Repo& repo,
                                     const std::string& scratch_folder, const std::string& commit) {
    if (!detail::is_absolute(scratch_folder)) {
      return make_error(
          errc::invalid_arguments,
          "the scratch folder must be an absolute path, got '" + scratch_folder + "'");
    }
    if (auto ok = make_private_folders(scratch_folder); !ok) return std::move(ok).error();
    Result<std::string> folder = real_path(scratch_folder);
    if (!folder) return std::move(folder).error();
    std::string path = *folder + "/merge-XXXXXX";
    if (::mkdtemp(path.data()) == nullptr) return errno_error(errno, "create a folder in", *folder);
    Result<std::string> added =
        git.output({"worktree", "add", "--quiet", "--detach", "--", path, commit});
    if (!added) {
      ::rmdir(path.c_str());
      return std::move(added).error();
    }
    Result<std::string> admin = find_admin_dir(repo.common_dir, path);
    if (!admin) return std::move(admin).error();  // git just made it: not expected
    return ScratchWorktree(WorktreeInfo{repo.top, path, {}, commit, *admin, repo.common_dir});
  }

  ScratchWorktree(ScratchWorktree&& other) noexcept
      : info_(std::move(other.info_)), armed_(std::exchange(other.armed_, false)) {}
  ScratchWorktree& operator=(ScratchWorktree&&) = delete;
  ScratchWorktree(const ScratchWorktree&) = delete;
  ScratchWorktree& operator=(const ScratchWorktree&) = delete;
  ~ScratchWorktree() {
    if (armed_) (void)remove_worktree(info_, false);
  }

  const WorktreeInfo& info() const { return info_; }

 private:
  explicit ScratchWorktree(WorktreeInfo info) : info_(std::move(info)) {}

  WorktreeInfo info_;
  bool armed_ = true;
};

// merge_into_branch when `target` is not checked out: merged in a scratch
// worktree detached at `target_sha`, then the branch moved with a CAS.
Result<MergeOutcome> merge_in_scratch(const GitCommand& git, const Repo& repo,
                                      const std::string& target, const std::string& source_sha,
                                      const std::string& target_sha, const std::string& message,
                                      const std::string& scratch_folder) {
  Result<ScratchWorktree> scratch = ScratchWorktree::add(git, repo, scratch_folder, target_sha);
  if (!scratch) return std::move(scratch).error();
  Result<GitCommand> scratch_git =
      GitCommand::bind({scratch->info().admin_dir, scratch->info().path});
  if (!scratch_git) return std::move(scratch_git).error();
  Result<MergeRun> run = run_merge(*scratch_git, merge_args(source_sha, message, true));
  if (!run) return std::move(run).error();
  if (!run->clean) {
    return invalid_state(conflict_message(run->conflicts),
                         "merge the branch yourself and resolve the conflicts, or rebase it");
  }
  Result<std::string> merged = head_of(*scratch_git);
  if (!merged) return std::move(merged).error();
  if (auto moved = move_branch(git, target, *merged, target_sha, "loopr: " + message); !moved) {
    return std::move(moved).error();
  }
  MergeOutcome outcome;
  outcome.merged = true;
  outcome.commit = std::move(*merged);
  return outcome;
}

}  // namespace

Result<MergeOutcome> merge_branch(const WorktreeInfo& target, const std::string& source,
                                  const std::string& message) {
  return merge_into_worktree(target, source, message, true);
}

Result<MergeOutcome> start_merge(const WorktreeInfo& target, const std::string& source,
                                 const std::string& message) {
  return merge_into_worktree(target, source, message, false);
}

Result<bool> merge_in_progress(const WorktreeInfo& target) {
  Result<GitCommand> git = worktree_git(target);
  if (!git) return std::move(git).error();
  return merging(*git);
}

// The candidates are the paths a conflict or its resolution can touch: the
// unmerged ones, tracked files that differ from the index (a loop edits files
// but never stages them), and untracked files that are not ignored. Files the
// merge staged untouched come verbatim from a branch and are not read, so a
// committed file that quotes conflict markers never blocks a resolution.
Result<std::vector<std::string>> unresolved_paths(const WorktreeInfo& target) {
  Result<GitCommand> git = worktree_git(target);
  if (!git) return std::move(git).error();
  std::set<std::string> candidates;
  Result<std::vector<std::string>> unmerged = unmerged_paths(*git);
  if (!unmerged) return std::move(unmerged).error();
  candidates.insert(unmerged->begin(), unmerged->end());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"diff", "--name-only", "-z", "--no-ext-diff", "--no-textconv",
                                 "--no-renames", "--ignore-submodules=all"},
        std::vector<std::string>{"ls-files", "-z", "--others", "--exclude-standard"}}) {
    Result<std::string> listing = complete_listing(*git, args);
    if (!listing) return std::move(listing).error();
    for (std::string_view path : split_nul(*listing)) {
      if (!path.empty()) candidates.emplace(path);
    }
  }
  UniqueFd root(::open(target.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!root) return errno_error(errno, "open the worktree", target.path);
  std::vector<std::string> unresolved;
  for (const std::string& path : candidates) {
    Result<bool> marked = has_conflict_markers(root.get(), path);
    if (!marked) return std::move(marked).error();
    if (*marked) unresolved.push_back(path);
  }
  return unresolved;
}

Result<std::string> branch_head(const std::string& repo, const std::string& branch) {
  Result<Repo> found = open_repo(repo);
  if (!found) return std::move(found).error();
  Result<GitCommand> git = repo_git(*found);
  if (!git) return std::move(git).error();
  return branch_sha(*git, branch);
}

Result<bool> is_ancestor(const std::string& repo, const std::string& ancestor,
                         const std::string& of) {
  Result<Repo> found = open_repo(repo);
  if (!found) return std::move(found).error();
  Result<GitCommand> git = repo_git(*found);
  if (!git) return std::move(git).error();
  Result<std::string> ancestor_sha = resolve_commit(*git, ancestor, "the ancestor");
  if (!ancestor_sha) return std::move(ancestor_sha).error();
  Result<std::string> of_sha = resolve_commit(*git, of, "the descendant");
  if (!of_sha) return std::move(of_sha).error();
  return ancestor_of(*git, *ancestor_sha, *of_sha);
}

Result<void> reset_worktree(const WorktreeInfo& target, const std::string& commit) {
  Result<GitCommand> git = worktree_git(target);
  if (!git) return std::move(git).error();
  Result<std::string> sha = resolve_commit(*git, commit, "the commit to reset to");
  if (!sha) return std::move(sha).error();
  // reset --hard also ends a merge in progress (MERGE_HEAD). clean -ff
  // removes nested repositories too: git only reads their `.git` to see that
  // they are one, it runs nothing in them.
  if (Result<std::string> reset = git->output({"reset", "--hard", "--quiet", *sha}); !reset) {
    return std::move(reset).error();
  }
  if (Result<std::string> cleaned = git->output({"clean", "-ffdxq"}); !cleaned) {
    return std::move(cleaned).error();
  }
  Result<bool> changed = dirty(*git, true);
  if (!changed) return std::move(changed).error();
  if (*changed) {
    return make_error(errc::io, "the worktree " + target.path + " still has changes after a reset",
                      "a folder in it may not be writable; remove the worktree instead");
  }
  return {};
}

Result<MergeOutcome> merge_into_branch(const std::string& repo, const std::string& source,
                                       const std::string& target, const std::string& message,
                                       const std::string& scratch_folder) {
  if (target.rfind("loop/", 0) == 0) {
    return make_error(errc::invalid_arguments,
                      "the target " + target + " is a loop's branch, not one of yours",
                      "merge into the branch you work on, e.g. main");
  }
  if (auto ok = check_message(message); !ok) return std::move(ok).error();
  Result<Repo> found = open_repo(repo);
  if (!found) return std::move(found).error();
  Result<GitCommand> git = repo_git(*found);
  if (!git) return std::move(git).error();
  Result<std::string> target_sha = branch_sha(*git, target);
  if (!target_sha) return std::move(target_sha).error();
  Result<std::string> source_sha = branch_sha(*git, source);
  if (!source_sha) return std::move(source_sha).error();

  MergeOutcome outcome;
  outcome.commit = *target_sha;
  Result<bool> contained = ancestor_of(*git, *source_sha, *target_sha);
  if (!contained) return std::move(contained).error();
  if (*contained) {
    outcome.already_merged = true;
    return outcome;
  }
  Result<bool> fast_forward = ancestor_of(*git, *target_sha, *source_sha);
  if (!fast_forward) return std::move(fast_forward).error();

  Result<std::optional<Checkout>> checkout = find_checkout(*git, *found, target);
  if (!checkout) return std::move(checkout).error();
  if (*checkout) {
    return merge_in_checkout(**checkout, *source_sha, *target_sha, *fast_forward, message);
  }
  if (*fast_forward) {
    if (auto moved =
            move_branch(*git, target, *source_sha, *target_sha, "loopr: fast-forward to " + source);
        !moved) {
      return std::move(moved).error();
    }
    outcome.merged = true;
    outcome.fast_forward = true;
    outcome.commit = *source_sha;
    return outcome;
  }
  return merge_in_scratch(*git, *found, target, *source_sha, *target_sha, message, scratch_folder);
}

}  // namespace loopr::loops
