// Merges against the real git, in temporary folders: a child loop's branch
// into its parent's worktree (merge_branch, start_merge + commit_all), a
// plan's branch into the user's branch (merge_into_branch), and the helpers
// around them. The security tests (SECURITY.md classes 4 and 27) plant hooks
// and a merge driver and check that no merge runs them; control tests run
// plain git on the same traps to show they are armed.
#include "loops/git/merges.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "loops/git/git_command.hpp"
#include "loops/git/worktrees.hpp"
#include "tests/loops/git_fixture.hpp"
#include "tests/support/temp_tree.hpp"

namespace loopr::loops {
namespace {

namespace fs = std::filesystem;
using test::is_sha;
using test::make_repo;
using test::must_git;
using test::plain_git;
using test::plain_head;
using test::TempTree;

constexpr const char* kNine = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";

class MergesTest : public ::testing::Test {
 protected:
  void SetUp() override { repo_ = make_repo(tree_); }

  // A loop's worktree at wt/<name> on loop/<name>, branched from `base`.
  WorktreeInfo add(const std::string& name, const std::string& base) {
    Result<WorktreeInfo> info = add_worktree(repo_, tree_.path("wt/" + name), "loop/" + name, base);
    EXPECT_TRUE(info) << info.error().message;
    return info ? *info : WorktreeInfo{};
  }

  // Writes `content` to `file` in the worktree and commits everything.
  std::string commit(const WorktreeInfo& info, const std::string& file, const std::string& content,
                     const std::string& message = "work") {
    tree_.write(fs::relative(info.path, tree_.root()).string() + "/" + file, content);
    Result<CommitOutcome> made = commit_all(info, message);
    EXPECT_TRUE(made) << made.error().message;
    EXPECT_TRUE(made && made->changed);
    return made ? made->commit : std::string();
  }

  std::string file(const WorktreeInfo& info, const std::string& name) {
    return tree_.read(fs::relative(info.path, tree_.root()).string() + "/" + name);
  }

  // `git log -1 --format=FORMAT REV`, without the final newline.
  std::string show(const std::string& rev, const std::string& format) {
    std::string out = plain_git(repo_, {"log", "-1", "--format=" + format, rev, "--"}).output;
    while (!out.empty() && out.back() == '\n')
      out.pop_back();
    return out;
  }

  // The parents of commit `rev`, in order.
  std::vector<std::string> parents(const std::string& rev) {
    const std::string line = show(rev, "%P");
    std::vector<std::string> shas;
    std::size_t start = 0;
    while (start < line.size()) {
      const std::size_t end = std::min(line.find(' ', start), line.size());
      shas.push_back(line.substr(start, end - start));
      start = end + 1;
    }
    return shas;
  }

  bool clean(const WorktreeInfo& info) {
    Result<bool> changed = has_changes(info);
    EXPECT_TRUE(changed) << changed.error().message;
    return changed && !*changed;
  }

  // The user's own commit on branch `branch` (checked out in a throwaway
  // worktree of plain git, so the repository's main worktree stays on main).
  std::string user_commit(const std::string& branch, const std::string& name,
                          const std::string& content) {
    const std::string path = tree_.path("user-" + branch);
    if (!fs::exists(path)) must_git(repo_, {"worktree", "add", "-q", path, branch});
    tree_.write("user-" + branch + "/" + name, content);
    must_git(path, {"add", "-A"});
    must_git(path, {"commit", "-q", "-m", "user work on " + name});
    const std::string head = plain_head(path);
    must_git(repo_, {"worktree", "remove", "--force", path});
    return head;
  }

  std::vector<std::string> scratch_entries() {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(tree_.path("scratch"), ec)) {
      names.push_back(entry.path().filename().string());
    }
    return names;
  }

  // The worktrees git knows of, besides the main one and loop ones.
  std::vector<std::string> other_worktrees() {
    const std::string listing = plain_git(repo_, {"worktree", "list", "--porcelain"}).output;
    std::vector<std::string> paths;
    std::size_t at = 0;
    while ((at = listing.find("worktree ", at)) != std::string::npos) {
      const std::size_t end = listing.find('\n', at);
      const std::string path = listing.substr(at + 9, end - at - 9);
      if (path != repo_ && path.rfind(tree_.path("wt/"), 0) != 0) paths.push_back(path);
      at = end;
    }
    return paths;
  }

  TempTree tree_;
  std::string repo_;
};

// ------------------------------------------------------------- merge_branch

TEST_F(MergesTest, MergeBranchMakesAMergeCommitThenReportsAlreadyMerged) {
  const WorktreeInfo parent = add("p", "main");
  commit(parent, "parent.txt", "parent\n");
  const WorktreeInfo child = add("c", "loop/p");
  const std::string child_head = commit(child, "child.txt", "child\n");
  const std::string parent_head = plain_head(repo_, "loop/p");

  Result<MergeOutcome> merged = merge_branch(parent, "loop/c", "merge loop/c into loop/p");
  ASSERT_TRUE(merged) << merged.error().message;
  EXPECT_TRUE(merged->merged);
  EXPECT_FALSE(merged->already_merged);
  EXPECT_FALSE(merged->fast_forward);
  EXPECT_TRUE(merged->conflicts.empty());
  EXPECT_TRUE(is_sha(merged->commit));
  EXPECT_EQ(plain_head(repo_, "loop/p"), merged->commit);
  EXPECT_EQ(parents(merged->commit), (std::vector<std::string>{parent_head, child_head}));
  EXPECT_EQ(show(merged->commit, "%B"), "merge loop/c into loop/p");
  EXPECT_EQ(show(merged->commit, "%an <%ae>|%cn <%ce>"),
            "loopr <loopr@localhost>|loopr <loopr@localhost>");
  EXPECT_EQ(file(parent, "child.txt"), "child\n");
  EXPECT_TRUE(clean(parent));

  Result<MergeOutcome> again = merge_branch(parent, "loop/c", "merge loop/c into loop/p");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->merged);
  EXPECT_TRUE(again->already_merged);
  EXPECT_EQ(again->commit, merged->commit);
  EXPECT_EQ(plain_head(repo_, "loop/p"), merged->commit);
}

TEST_F(MergesTest, MergeBranchMakesAMergeCommitEvenWhenItCouldFastForward) {
  const WorktreeInfo parent = add("p", "main");
  const WorktreeInfo child = add("c", "loop/p");
  const std::string child_head = commit(child, "child.txt", "child\n");
  Result<MergeOutcome> merged = merge_branch(parent, "loop/c", "merge c");
  ASSERT_TRUE(merged) << merged.error().message;
  EXPECT_TRUE(merged->merged);
  EXPECT_EQ(parents(merged->commit), (std::vector<std::string>{parent.base_commit, child_head}));
}

TEST_F(MergesTest, MergeBranchConflictAbortsAndListsThePaths) {
  const WorktreeInfo parent = add("p", "main");
  const WorktreeInfo child = add("c", "loop/p");
  commit(child, "README.md", "hello from the child\n");
  commit(child, "only-child.txt", "child\n");
  const std::string parent_head = commit(parent, "README.md", "hello from the parent\n");

  Result<MergeOutcome> merged = merge_branch(parent, "loop/c", "merge loop/c");
  ASSERT_TRUE(merged) << merged.error().message;
  EXPECT_FALSE(merged->merged);
  EXPECT_FALSE(merged->already_merged);
  EXPECT_EQ(merged->conflicts, std::vector<std::string>{"README.md"});
  EXPECT_EQ(merged->commit, parent_head);
  EXPECT_EQ(plain_head(repo_, "loop/p"), parent_head);
  Result<std::string> head = head_commit(parent);
  ASSERT_TRUE(head);
  EXPECT_EQ(*head, parent_head);
  EXPECT_TRUE(clean(parent));
  EXPECT_EQ(file(parent, "README.md"), "hello from the parent\n");
  EXPECT_FALSE(fs::exists(parent.path + "/only-child.txt"));
  Result<bool> merging = merge_in_progress(parent);
  ASSERT_TRUE(merging);
  EXPECT_FALSE(*merging);
}

TEST_F(MergesTest, MergeBranchRefusesADirtyParentAndBadArguments) {
  const WorktreeInfo parent = add("p", "main");
  const WorktreeInfo child = add("c", "loop/p");
  commit(child, "child.txt", "child\n");

  tree_.write("wt/p/untracked.txt", "new\n");
  Result<MergeOutcome> untracked = merge_branch(parent, "loop/c", "merge");
  ASSERT_FALSE(untracked);
  EXPECT_EQ(untracked.error().code, "invalid_state");
  ASSERT_EQ(::unlink(tree_.path("wt/p/untracked.txt").c_str()), 0);

  tree_.write("wt/p/README.md", "edited\n");
  Result<MergeOutcome> modified = merge_branch(parent, "loop/c", "merge");
  ASSERT_FALSE(modified);
  EXPECT_EQ(modified.error().code, "invalid_state");
  EXPECT_NE(modified.error().message.find("uncommitted"), std::string::npos);
  EXPECT_EQ(plain_head(repo_, "loop/p"), parent.base_commit);
  tree_.write("wt/p/README.md", "hello\n");

  Result<MergeOutcome> missing = merge_branch(parent, "loop/nothing", "merge");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, errc::not_found);
  for (const std::string& message : {std::string(), std::string(" \n"), std::string("a\0b", 3)}) {
    Result<MergeOutcome> blank = merge_branch(parent, "loop/c", message);
    ASSERT_FALSE(blank);
    EXPECT_EQ(blank.error().code, errc::invalid_arguments);
  }
  Result<MergeOutcome> option = merge_branch(parent, "--no-verify", "merge");
  ASSERT_FALSE(option);
  EXPECT_EQ(option.error().code, errc::invalid_arguments);
  EXPECT_TRUE(clean(parent));
}

// ------------------------------------------------------------ start_merge

TEST_F(MergesTest, StartMergeLeavesMarkersUntilTheFileIsRewrittenThenCommitAllMerges) {
  const WorktreeInfo parent = add("p", "main");
  const WorktreeInfo child = add("c", "loop/p");
  const std::string child_head = commit(child, "README.md", "hello from the child\n");
  const std::string parent_head = commit(parent, "README.md", "hello from the parent\n");

  Result<MergeOutcome> started = start_merge(parent, "loop/c", "merge loop/c");
  ASSERT_TRUE(started) << started.error().message;
  EXPECT_FALSE(started->merged);
  EXPECT_EQ(started->conflicts, std::vector<std::string>{"README.md"});
  EXPECT_EQ(started->commit, parent_head);
  Result<bool> merging = merge_in_progress(parent);
  ASSERT_TRUE(merging) << merging.error().message;
  EXPECT_TRUE(*merging);
  const std::string marked = file(parent, "README.md");
  EXPECT_NE(marked.find("<<<<<<< "), std::string::npos) << marked;
  EXPECT_NE(marked.find(">>>>>>> "), std::string::npos) << marked;

  Result<std::vector<std::string>> unresolved = unresolved_paths(parent);
  ASSERT_TRUE(unresolved) << unresolved.error().message;
  EXPECT_EQ(*unresolved, std::vector<std::string>{"README.md"});

  tree_.write("wt/p/README.md", "hello from both\n");
  unresolved = unresolved_paths(parent);
  ASSERT_TRUE(unresolved) << unresolved.error().message;
  EXPECT_EQ(*unresolved, std::vector<std::string>{});

  Result<CommitOutcome> committed = commit_all(parent, "merge loop/c (resolved)");
  ASSERT_TRUE(committed) << committed.error().message;
  EXPECT_TRUE(committed->changed);
  EXPECT_EQ(parents(committed->commit), (std::vector<std::string>{parent_head, child_head}));
  EXPECT_EQ(show(committed->commit, "%s"), "merge loop/c (resolved)");
  merging = merge_in_progress(parent);
  ASSERT_TRUE(merging);
  EXPECT_FALSE(*merging);
  EXPECT_TRUE(clean(parent));
}

TEST_F(MergesTest, StartMergeWithoutConflictsIsStagedAndCommitAllMakesTheMergeCommit) {
  const WorktreeInfo parent = add("p", "main");
  const WorktreeInfo child = add("c", "loop/p");
  const std::string child_head = commit(child, "child.txt", "child\n");
  const std::string parent_head = commit(parent, "parent.txt", "parent\n");

  Result<MergeOutcome> started = start_merge(parent, "loop/c", "merge loop/c");
  ASSERT_TRUE(started) << started.error().message;
  EXPECT_TRUE(started->merged);
  EXPECT_TRUE(started->conflicts.empty());
  EXPECT_EQ(plain_head(repo_, "loop/p"), parent_head);  // nothing committed yet
  Result<bool> merging = merge_in_progress(parent);
  ASSERT_TRUE(merging);
  EXPECT_TRUE(*merging);
  Result<CommitOutcome> committed = commit_all(parent, "merge loop/c");
  ASSERT_TRUE(committed) << committed.error().message;
  EXPECT_EQ(parents(committed->commit), (std::vector<std::string>{parent_head, child_head}));

  Result<MergeOutcome> again = start_merge(parent, "loop/c", "merge loop/c");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->already_merged);
  merging = merge_in_progress(parent);
  ASSERT_TRUE(merging);
  EXPECT_FALSE(*merging);
}

// A resolution that keeps the parent's tree as it was still ends the merge
// with a two-parent commit (commit_all commits whenever MERGE_HEAD exists).
TEST_F(MergesTest, CommitAllEndsAMergeWhoseResolutionKeepsTheParentsTree) {
  const WorktreeInfo parent = add("p", "main");
  const WorktreeInfo child = add("c", "loop/p");
  const std::string child_head = commit(child, "README.md", "child\n");
  const std::string parent_head = commit(parent, "README.md", "parent\n");
  Result<MergeOutcome> started = start_merge(parent, "loop/c", "merge loop/c");
  ASSERT_TRUE(started) << started.error().message;
  ASSERT_FALSE(started->merged);
  tree_.write("wt/p/README.md", "parent\n");
  Result<CommitOutcome> committed = commit_all(parent, "keep the parent's version");
  ASSERT_TRUE(committed) << committed.error().message;
  EXPECT_TRUE(committed->changed);
  EXPECT_EQ(parents(committed->commit), (std::vector<std::string>{parent_head, child_head}));
  Result<bool> merging = merge_in_progress(parent);
  ASSERT_TRUE(merging);
  EXPECT_FALSE(*merging);
}

TEST_F(MergesTest, UnresolvedPathsReadsOnlyChangedFilesAndNeverFollowsLinks) {
  const WorktreeInfo parent = add("p", "main");
  // A committed file that quotes markers is content, not a conflict.
  commit(parent, "docs/conflicts.md", "<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> other\n");
  Result<std::vector<std::string>> none = unresolved_paths(parent);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(*none, std::vector<std::string>{});

  tree_.write("outside/marked.txt", "<<<<<<< HEAD\nx\n>>>>>>> theirs\n");
  tree_.symlink(tree_.path("outside/marked.txt"), "wt/p/link.txt");
  tree_.symlink(tree_.path("outside"), "wt/p/dir-link");
  ASSERT_EQ(::mkfifo(tree_.path("wt/p/fifo").c_str(), 0600), 0);
  tree_.write("wt/p/new/untracked.txt", "text\n>>>>>>> theirs\n");
  tree_.write("wt/p/not-a-marker.txt", "<<<<<<<< eight\n<<<<<<<x\n<<<<<<\n");
  tree_.write("wt/p/README.md", "edited\n<<<<<<<");  // at the end, without a newline
  tree_.write("wt/p/.gitignore", "ignored.txt\n");
  tree_.write("wt/p/ignored.txt", "<<<<<<< HEAD\n");
  Result<std::vector<std::string>> found = unresolved_paths(parent);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(*found, (std::vector<std::string>{"README.md", "new/untracked.txt"}));
}

// ------------------------------------------- branch_head, is_ancestor, reset

TEST_F(MergesTest, BranchHeadAndIsAncestor) {
  const std::string base = plain_head(repo_, "main");
  Result<std::string> head = branch_head(repo_, "main");
  ASSERT_TRUE(head) << head.error().message;
  EXPECT_EQ(*head, base);
  Result<std::string> missing = branch_head(repo_, "no-such-branch");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, errc::not_found);
  Result<std::string> bad = branch_head(repo_, "-x");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, errc::invalid_arguments);
  Result<std::string> no_repo = branch_head(tree_.path("nothing"), "main");
  ASSERT_FALSE(no_repo);
  EXPECT_EQ(no_repo.error().code, errc::not_found);

  const WorktreeInfo child = add("c", "main");
  const std::string later = commit(child, "c.txt", "c\n");
  Result<bool> yes = is_ancestor(repo_, base, later);
  ASSERT_TRUE(yes) << yes.error().message;
  EXPECT_TRUE(*yes);
  Result<bool> no = is_ancestor(repo_, later, "main");
  ASSERT_TRUE(no) << no.error().message;
  EXPECT_FALSE(*no);
  Result<bool> equal = is_ancestor(repo_, "loop/c", later);
  ASSERT_TRUE(equal) << equal.error().message;
  EXPECT_TRUE(*equal);
  Result<bool> unknown = is_ancestor(repo_, "nothing", "main");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, errc::invalid_arguments);
  EXPECT_FALSE(is_ancestor(repo_, "--help", "main"));
}

TEST_F(MergesTest, ResetWorktreeRestoresACommitAndRemovesUntrackedFiles) {
  const WorktreeInfo info = add("r", "main");
  commit(info, "first.txt", "first\n");
  const std::string keep = plain_head(repo_, "loop/r");
  commit(info, "second.txt", "second\n");
  tree_.write("wt/r/first.txt", "changed\n");
  tree_.write("wt/r/untracked/deep/file.txt", "u\n");
  tree_.write("wt/r/.gitignore", "build/\n");
  tree_.write("wt/r/build/out.o", "o\n");
  tree_.write("wt/r/nested/file.txt", "n\n");
  must_git(tree_.path("wt/r/nested"), {"init", "-q"});
  tree_.write("outside/keep.txt", "keep\n");
  tree_.symlink(tree_.path("outside"), "wt/r/link");

  Result<void> reset = reset_worktree(info, keep);
  ASSERT_TRUE(reset) << reset.error().message;
  Result<std::string> head = head_commit(info);
  ASSERT_TRUE(head);
  EXPECT_EQ(*head, keep);
  EXPECT_EQ(plain_head(repo_, "loop/r"), keep);
  EXPECT_EQ(file(info, "first.txt"), "first\n");
  for (const char* gone : {"second.txt", "untracked", ".gitignore", "build", "nested", "link"}) {
    EXPECT_FALSE(fs::exists(fs::symlink_status(info.path + "/" + gone))) << gone;
  }
  EXPECT_EQ(tree_.read("outside/keep.txt"), "keep\n");
  EXPECT_TRUE(clean(info));

  Result<void> bad = reset_worktree(info, "no-such-commit");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, errc::invalid_arguments);
}

TEST_F(MergesTest, ResetWorktreeEndsAMergeInProgress) {
  const WorktreeInfo parent = add("p", "main");
  const WorktreeInfo child = add("c", "loop/p");
  commit(child, "README.md", "child\n");
  const std::string parent_head = commit(parent, "README.md", "parent\n");
  Result<MergeOutcome> started = start_merge(parent, "loop/c", "merge");
  ASSERT_TRUE(started);
  ASSERT_FALSE(started->merged);
  ASSERT_TRUE(reset_worktree(parent, parent_head));
  Result<bool> merging = merge_in_progress(parent);
  ASSERT_TRUE(merging);
  EXPECT_FALSE(*merging);
  EXPECT_TRUE(clean(parent));
  EXPECT_EQ(file(parent, "README.md"), "parent\n");
}

// -------------------------------------------------------- merge_into_branch

TEST_F(MergesTest, MergeIntoABranchNotCheckedOutFastForwards) {
  must_git(repo_, {"branch", "feature", "main"});
  const WorktreeInfo plan = add("p", "feature");
  const std::string plan_head = commit(plan, "plan.txt", "plan\n");

  Result<MergeOutcome> merged =
      merge_into_branch(repo_, "loop/p", "feature", "merge plan p", tree_.path("scratch"));
  ASSERT_TRUE(merged) << merged.error().message;
  EXPECT_TRUE(merged->merged);
  EXPECT_TRUE(merged->fast_forward);
  EXPECT_FALSE(merged->already_merged);
  EXPECT_EQ(merged->commit, plan_head);
  EXPECT_EQ(plain_head(repo_, "feature"), plan_head);
  EXPECT_EQ(scratch_entries(), std::vector<std::string>{});

  Result<MergeOutcome> again =
      merge_into_branch(repo_, "loop/p", "feature", "merge plan p", tree_.path("scratch"));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->already_merged);
  EXPECT_FALSE(again->merged);
  EXPECT_EQ(again->commit, plan_head);
}

TEST_F(MergesTest, MergeIntoABranchNotCheckedOutMakesAMergeCommitInAScratchWorktree) {
  must_git(repo_, {"branch", "feature", "main"});
  const WorktreeInfo plan = add("p", "feature");
  const std::string plan_head = commit(plan, "plan.txt", "plan\n");
  const std::string user_head = user_commit("feature", "user.txt", "user\n");

  Result<MergeOutcome> merged =
      merge_into_branch(repo_, "loop/p", "feature", "merge plan p", tree_.path("scratch"));
  ASSERT_TRUE(merged) << merged.error().message;
  EXPECT_TRUE(merged->merged);
  EXPECT_FALSE(merged->fast_forward);
  EXPECT_EQ(plain_head(repo_, "feature"), merged->commit);
  EXPECT_EQ(parents(merged->commit), (std::vector<std::string>{user_head, plan_head}));
  EXPECT_EQ(show(merged->commit, "%B"), "merge plan p");
  EXPECT_EQ(show(merged->commit, "%an <%ae>"), "loopr <loopr@localhost>");
  const std::string tree = plain_git(repo_, {"ls-tree", "--name-only", merged->commit}).output;
  EXPECT_EQ(tree, "README.md\nplan.txt\nuser.txt\n");
  EXPECT_EQ(scratch_entries(), std::vector<std::string>{});
  EXPECT_EQ(other_worktrees(), std::vector<std::string>{});
  EXPECT_EQ(plain_head(repo_, "main"), plain_head(repo_, "HEAD"));  // main worktree untouched
}

TEST_F(MergesTest, MergeIntoABranchThatConflictsIsRefusedAndLeavesItAlone) {
  must_git(repo_, {"branch", "feature", "main"});
  const WorktreeInfo plan = add("p", "feature");
  commit(plan, "README.md", "the plan's readme\n");
  const std::string user_head = user_commit("feature", "README.md", "the user's readme\n");

  Result<MergeOutcome> merged =
      merge_into_branch(repo_, "loop/p", "feature", "merge plan p", tree_.path("scratch"));
  ASSERT_FALSE(merged);
  EXPECT_EQ(merged.error().code, "invalid_state");
  EXPECT_NE(merged.error().message.find("conflicts with the plan"), std::string::npos)
      << merged.error().message;
  EXPECT_NE(merged.error().message.find("README.md"), std::string::npos) << merged.error().message;
  EXPECT_EQ(plain_head(repo_, "feature"), user_head);
  EXPECT_EQ(scratch_entries(), std::vector<std::string>{});
  EXPECT_EQ(other_worktrees(), std::vector<std::string>{});
}

TEST_F(MergesTest, MergeIntoTheBranchOfTheMainWorktreeUpdatesItsFiles) {
  const WorktreeInfo plan = add("p", "main");
  const std::string plan_head = commit(plan, "plan.txt", "plan\n");

  Result<MergeOutcome> forward =
      merge_into_branch(repo_, "loop/p", "main", "merge plan p", tree_.path("scratch"));
  ASSERT_TRUE(forward) << forward.error().message;
  EXPECT_TRUE(forward->merged);
  EXPECT_TRUE(forward->fast_forward);
  EXPECT_EQ(forward->commit, plan_head);
  EXPECT_EQ(plain_head(repo_, "main"), plan_head);
  EXPECT_EQ(tree_.read("repo/plan.txt"), "plan\n");
  EXPECT_EQ(plain_git(repo_, {"status", "--porcelain"}).output, "");

  // Both moved, without a conflict: a merge commit, made in the main worktree.
  tree_.write("repo/user.txt", "user\n");
  must_git(repo_, {"add", "-A"});
  must_git(repo_, {"commit", "-q", "-m", "user"});
  const std::string user_head = plain_head(repo_, "main");
  const std::string second = commit(plan, "plan.txt", "plan 2\n");
  tree_.write("repo/scribble.txt", "an untracked file of the user's\n");
  Result<MergeOutcome> merged =
      merge_into_branch(repo_, "loop/p", "main", "merge plan p again", tree_.path("scratch"));
  ASSERT_TRUE(merged) << merged.error().message;
  EXPECT_TRUE(merged->merged);
  EXPECT_FALSE(merged->fast_forward);
  EXPECT_EQ(plain_head(repo_, "main"), merged->commit);
  EXPECT_EQ(parents(merged->commit), (std::vector<std::string>{user_head, second}));
  EXPECT_EQ(tree_.read("repo/plan.txt"), "plan 2\n");
  EXPECT_EQ(tree_.read("repo/user.txt"), "user\n");
  EXPECT_EQ(tree_.read("repo/scribble.txt"), "an untracked file of the user's\n");
  EXPECT_EQ(plain_git(repo_, {"status", "--porcelain", "--untracked-files=no"}).output, "");
  EXPECT_FALSE(fs::exists(tree_.path("scratch")));  // no scratch worktree was needed
}

TEST_F(MergesTest, MergeIntoACheckedOutBranchWithChangesOrAConflictIsRefused) {
  const WorktreeInfo plan = add("p", "main");
  commit(plan, "README.md", "the plan's readme\n");
  const std::string before = plain_head(repo_, "main");

  tree_.write("repo/README.md", "uncommitted\n");
  Result<MergeOutcome> dirty =
      merge_into_branch(repo_, "loop/p", "main", "merge plan p", tree_.path("scratch"));
  ASSERT_FALSE(dirty);
  EXPECT_EQ(dirty.error().code, "invalid_state");
  EXPECT_NE(dirty.error().message.find("commit or stash"), std::string::npos)
      << dirty.error().message;
  EXPECT_NE(dirty.error().message.find(repo_), std::string::npos) << dirty.error().message;
  EXPECT_EQ(plain_head(repo_, "main"), before);
  EXPECT_EQ(tree_.read("repo/README.md"), "uncommitted\n");

  must_git(repo_, {"commit", "-q", "-a", "-m", "user"});
  const std::string user_head = plain_head(repo_, "main");
  Result<MergeOutcome> conflict =
      merge_into_branch(repo_, "loop/p", "main", "merge plan p", tree_.path("scratch"));
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().code, "invalid_state");
  EXPECT_NE(conflict.error().message.find("README.md"), std::string::npos);
  EXPECT_EQ(plain_head(repo_, "main"), user_head);
  EXPECT_EQ(tree_.read("repo/README.md"), "uncommitted\n");
  EXPECT_EQ(plain_git(repo_, {"status", "--porcelain"}).output, "");
}

TEST_F(MergesTest, MergeIntoABranchCheckedOutInALinkedWorktreeUpdatesThatWorktree) {
  must_git(repo_, {"branch", "feature", "main"});
  must_git(repo_, {"worktree", "add", "-q", tree_.path("mine"), "feature"});
  const WorktreeInfo plan = add("p", "feature");
  const std::string plan_head = commit(plan, "plan.txt", "plan\n");
  Result<MergeOutcome> merged =
      merge_into_branch(repo_, "loop/p", "feature", "merge plan p", tree_.path("scratch"));
  ASSERT_TRUE(merged) << merged.error().message;
  EXPECT_TRUE(merged->fast_forward);
  EXPECT_EQ(plain_head(tree_.path("mine")), plan_head);
  EXPECT_EQ(tree_.read("mine/plan.txt"), "plan\n");
  EXPECT_EQ(plain_git(tree_.path("mine"), {"status", "--porcelain"}).output, "");
}

TEST_F(MergesTest, MergeIntoBranchRefusesLoopBranchesAndUnknownBranches) {
  const WorktreeInfo plan = add("p", "main");
  commit(plan, "plan.txt", "plan\n");
  const WorktreeInfo other = add("o", "main");

  Result<MergeOutcome> loop =
      merge_into_branch(repo_, "loop/p", "loop/o", "merge", tree_.path("scratch"));
  ASSERT_FALSE(loop);
  EXPECT_EQ(loop.error().code, errc::invalid_arguments);
  Result<MergeOutcome> no_target =
      merge_into_branch(repo_, "loop/p", "nothing", "merge", tree_.path("scratch"));
  ASSERT_FALSE(no_target);
  EXPECT_EQ(no_target.error().code, errc::not_found);
  Result<MergeOutcome> no_source =
      merge_into_branch(repo_, "loop/nothing", "main", "merge", tree_.path("scratch"));
  ASSERT_FALSE(no_source);
  EXPECT_EQ(no_source.error().code, errc::not_found);
  Result<MergeOutcome> option =
      merge_into_branch(repo_, "loop/p", "-f", "merge", tree_.path("scratch"));
  ASSERT_FALSE(option);
  EXPECT_EQ(option.error().code, errc::invalid_arguments);
  EXPECT_EQ(plain_head(repo_, "main"), other.base_commit);
}

// -------------------------------------------------- Security: classes 4, 27

TEST(GitCommandMergeDriversTest, MergeDriversOfTheConfigAreNeutralised) {
  TempTree tree;
  const std::string repo = make_repo(tree);
  must_git(repo, {"config", "merge.evil.driver", "touch /nonexistent/evil"});
  must_git(repo, {"config", "merge.odd=name.with.dots.driver", "touch /nonexistent/odd"});
  must_git(repo, {"config", "merge.named.name", "a driver without a command"});
  must_git(repo, {"config", "merge.renormalize", "true"});  // not a driver
  must_git(repo, {"config", "filter.f.clean", "cat"});
  Result<GitCommand> git = GitCommand::bind({repo + "/.git", repo});
  ASSERT_TRUE(git) << git.error().message;
  EXPECT_EQ(git->merge_drivers(),
            (std::vector<std::string>{"evil", "named", "odd=name.with.dots"}));
  EXPECT_EQ(git->filter_drivers(), std::vector<std::string>{"f"});
  for (const char* key :
       {"merge.evil.driver", "merge.odd=name.with.dots.driver", "merge.named.driver"}) {
    Result<std::string> driver = git->output({"config", "--get", key});
    ASSERT_TRUE(driver) << key << ": " << driver.error().message;
    EXPECT_EQ(*driver, "false\n") << key;
  }
}

class MergesSecurityTest : public MergesTest {
 protected:
  // Hooks a merge or a commit could run, in .git/hooks and in the folder a
  // core.hooksPath in the repository's config names.
  void plant_hooks(bool hooks_path) {
    for (const char* hook :
         {"pre-merge-commit", "prepare-commit-msg", "commit-msg", "post-merge", "pre-commit",
          "post-commit", "post-checkout", "reference-transaction", "post-index-change"}) {
      test::plant_trap(tree_, "repo/.git/hooks/" + std::string(hook),
                       "repo-hook-" + std::string(hook));
      test::plant_trap(tree_, "traps/hooks/" + std::string(hook), "hookspath-" + std::string(hook));
    }
    if (hooks_path) {
      test::set_config(tree_, repo_ + "/.git/config", "core.hooksPath", tree_.path("traps/hooks"));
    }
  }

  // A merge driver in the repository's config; `.gitattributes` on a child
  // branch names it for every file. Returns the parent and a child whose
  // merge needs the driver for b.txt (both changed it, in different lines).
  std::pair<WorktreeInfo, WorktreeInfo> plant_merge_driver() {
    test::plant_trap(tree_, "traps/merge-driver", "merge-driver");
    test::set_config(tree_, repo_ + "/.git/config", "merge.evil.driver",
                     tree_.path("traps/merge-driver") + " %O %A %B");
    test::set_config(tree_, repo_ + "/.git/config", "merge.evil.name", "evil");
    const WorktreeInfo parent = add("p", "main");
    commit(parent, "b.txt", kNine);
    // First child: adds the attributes. Git reads attributes from the
    // worktree it merges in, which does not have them yet: no driver needed.
    const WorktreeInfo first = add("c1", "loop/p");
    tree_.write("wt/c1/.gitattributes", "* merge=evil\n");
    commit(first, "a.txt", "alpha\n");
    Result<MergeOutcome> merged = merge_branch(parent, "loop/c1", "merge c1");
    EXPECT_TRUE(merged && merged->merged);
    EXPECT_EQ(file(parent, ".gitattributes"), "* merge=evil\n");
    // Second child: both sides change b.txt; now the attributes are there.
    const WorktreeInfo second = add("c2", "loop/p");
    commit(second, "b.txt", "one\n2\n3\n4\n5\n6\n7\n8\n9\n");
    commit(parent, "b.txt", "1\n2\n3\n4\n5\n6\n7\n8\nnine\n");
    return {parent, second};
  }
};

TEST_F(MergesSecurityTest, NoHookRunsInAnyMerge) {
  // The user's work, with plain git, before the traps are planted: a commit
  // on feature (not checked out) and one on main (the main worktree's).
  must_git(repo_, {"branch", "feature", "main"});
  user_commit("feature", "user.txt", "user\n");
  tree_.write("repo/main.txt", "user on main\n");
  must_git(repo_, {"add", "-A"});
  must_git(repo_, {"commit", "-q", "-m", "user"});
  plant_hooks(true);

  const WorktreeInfo parent = add("p", "main");
  const WorktreeInfo child = add("c", "loop/p");
  commit(child, "child.txt", "child\n");
  commit(parent, "parent.txt", "parent\n");
  Result<MergeOutcome> merged = merge_branch(parent, "loop/c", "merge c");
  ASSERT_TRUE(merged) << merged.error().message;
  EXPECT_TRUE(merged->merged);

  const WorktreeInfo conflicting = add("d", "loop/p");
  commit(conflicting, "README.md", "d\n");
  commit(parent, "README.md", "p\n");
  Result<MergeOutcome> aborted = merge_branch(parent, "loop/d", "merge d");
  ASSERT_TRUE(aborted) << aborted.error().message;
  EXPECT_FALSE(aborted->merged);
  Result<MergeOutcome> started = start_merge(parent, "loop/d", "merge d");
  ASSERT_TRUE(started) << started.error().message;
  tree_.write("wt/p/README.md", "resolved\n");
  ASSERT_TRUE(commit_all(parent, "merge d"));

  Result<MergeOutcome> into_feature =
      merge_into_branch(repo_, "loop/p", "feature", "merge plan", tree_.path("scratch"));
  ASSERT_TRUE(into_feature) << into_feature.error().message;
  EXPECT_TRUE(into_feature->merged);
  EXPECT_FALSE(into_feature->fast_forward);
  Result<MergeOutcome> into_main =
      merge_into_branch(repo_, "loop/p", "main", "merge plan", tree_.path("scratch"));
  ASSERT_TRUE(into_main) << into_main.error().message;
  EXPECT_TRUE(into_main->merged);
  EXPECT_TRUE(into_main->fast_forward);
  // And a merge commit in the main worktree.
  const WorktreeInfo later = add("l", "main");
  commit(later, "later.txt", "later\n");
  commit(parent, "parent2.txt", "parent\n");
  ASSERT_TRUE(merge_into_branch(repo_, "loop/l", "main", "merge l", tree_.path("scratch")));
  Result<MergeOutcome> merge_in_main =
      merge_into_branch(repo_, "loop/p", "main", "merge plan", tree_.path("scratch"));
  ASSERT_TRUE(merge_in_main) << merge_in_main.error().message;
  EXPECT_FALSE(merge_in_main->fast_forward);
  EXPECT_EQ(tree_.read("repo/parent2.txt"), "parent\n");
  ASSERT_TRUE(reset_worktree(parent, parent.base_commit));

  EXPECT_EQ(test::traps_that_ran(tree_), std::vector<std::string>{}) << "a planted hook ran";
}

// The control: plain git runs the hooks of .git/hooks, and those of a
// core.hooksPath once it is set. If this fails, the test above proves nothing.
TEST_F(MergesSecurityTest, ControlPlainGitMergeRunsTheHooks) {
  plant_hooks(false);
  const WorktreeInfo parent = add("p", "main");
  const WorktreeInfo child = add("c", "loop/p");
  commit(child, "child.txt", "child\n");
  commit(child, "child2.txt", "child\n");
  commit(parent, "parent.txt", "parent\n");
  plain_git(parent.path, {"merge", "--no-ff", "-m", "plain", "loop/c~1"});
  test::set_config(tree_, repo_ + "/.git/config", "core.hooksPath", tree_.path("traps/hooks"));
  plain_git(parent.path, {"merge", "--no-ff", "-m", "plain", "loop/c"});
  const std::vector<std::string> ran = test::traps_that_ran(tree_);
  for (const char* expected :
       {"repo-hook-pre-merge-commit", "repo-hook-commit-msg", "repo-hook-post-merge",
        "hookspath-pre-merge-commit", "hookspath-commit-msg", "hookspath-post-merge"}) {
    EXPECT_NE(std::find(ran.begin(), ran.end(), expected), ran.end()) << expected;
  }
}

TEST_F(MergesSecurityTest, AMergeDriverNamedByTheBranchNeverRuns) {
  auto [parent, child] = plant_merge_driver();
  const std::string parent_head = plain_head(repo_, "loop/p");

  Result<MergeOutcome> merged = merge_branch(parent, "loop/c2", "merge c2");
  ASSERT_TRUE(merged) << merged.error().message;
  EXPECT_FALSE(merged->merged);  // the driver is `false`: the file is in conflict
  EXPECT_EQ(merged->conflicts, std::vector<std::string>{"b.txt"});
  EXPECT_EQ(plain_head(repo_, "loop/p"), parent_head);
  EXPECT_TRUE(clean(parent));

  Result<MergeOutcome> started = start_merge(parent, "loop/c2", "merge c2");
  ASSERT_TRUE(started) << started.error().message;
  EXPECT_EQ(started->conflicts, std::vector<std::string>{"b.txt"});
  ASSERT_TRUE(reset_worktree(parent, parent_head));

  // The plan's branch into the user's: in a scratch worktree, then in the
  // main worktree; the driver is named there too.
  must_git(repo_, {"branch", "-f", "feature", "loop/p"});
  Result<MergeOutcome> scratch =
      merge_into_branch(repo_, "loop/c2", "feature", "merge", tree_.path("scratch"));
  ASSERT_FALSE(scratch);
  EXPECT_EQ(scratch.error().code, "invalid_state");
  EXPECT_NE(scratch.error().message.find("b.txt"), std::string::npos);
  must_git(repo_, {"merge", "-q", "--ff-only", "loop/p"});
  Result<MergeOutcome> in_main =
      merge_into_branch(repo_, "loop/c2", "main", "merge", tree_.path("scratch"));
  ASSERT_FALSE(in_main);
  EXPECT_EQ(in_main.error().code, "invalid_state");
  EXPECT_EQ(plain_head(repo_, "main"), parent_head);

  EXPECT_EQ(test::traps_that_ran(tree_), std::vector<std::string>{}) << "the merge driver ran";
}

TEST_F(MergesSecurityTest, ControlPlainGitMergeRunsTheMergeDriver) {
  auto [parent, child] = plant_merge_driver();
  ASSERT_EQ(test::traps_that_ran(tree_), std::vector<std::string>{});
  plain_git(parent.path, {"merge", "--no-ff", "-m", "plain", "loop/c2"});
  EXPECT_EQ(test::traps_that_ran(tree_), std::vector<std::string>{"merge-driver"});
}

}  // namespace
}  // namespace loopr::loops
