// GitCommand and Worktrees against the real git, in temporary folders. The
// security tests (SECURITY.md classes 4 and 27) plant every way we know for a
// repository or a worktree to make git run a program, and check that none of
// the daemon's calls runs one while the commits still happen. A control test
// runs plain git on the same traps to show they are armed.
#include "loops/git/worktrees.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "loops/git/git_command.hpp"
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
using test::PlainRun;
using test::ScopedEnv;
using test::TempTree;

// ---------------------------------------------------------------- GitCommand

TEST(GitCommandTest, ArgvPutsHardeningBeforeTheSubcommand) {
  TempTree tree;
  const std::string repo = make_repo(tree);
  Result<GitCommand> git = GitCommand::bind({repo + "/.git", repo});
  ASSERT_TRUE(git) << git.error().message;
  const std::vector<std::string> argv = git->argv({"status", "--porcelain"});
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(argv[0].front(), '/');
  EXPECT_EQ(argv[1], "--no-pager");
  EXPECT_EQ(argv[argv.size() - 2], "status");
  EXPECT_EQ(argv.back(), "--porcelain");
  for (const char* setting :
       {"core.hooksPath=/dev/null", "core.fsmonitor=false", "core.untrackedCache=false",
        "core.sshCommand=false", "core.pager=cat", "core.editor=true",
        "core.askPass=", "credential.helper=", "diff.external=", "gpg.program=false",
        "commit.gpgSign=false", "tag.gpgSign=false", "protocol.allow=never"}) {
    const auto it = std::find(argv.begin(), argv.end(), setting);
    ASSERT_NE(it, argv.end()) << setting;
    EXPECT_EQ(*(it - 1), "-c") << setting;
  }
}

TEST(GitCommandTest, EnvironmentIsAnAllowlistAndIgnoresTheDaemonsGitVariables) {
  TempTree tree;
  const std::string repo = make_repo(tree);
  ScopedEnv git_dir("GIT_DIR", "/nonexistent/evil");
  ScopedEnv work_tree("GIT_WORK_TREE", "/");
  ScopedEnv exec_path("GIT_EXEC_PATH", "/nonexistent/evil");
  ScopedEnv parameters("GIT_CONFIG_PARAMETERS", "'alias.evil'='!touch /tmp/evil'");
  ScopedEnv count("GIT_CONFIG_COUNT", "1");
  ScopedEnv key("GIT_CONFIG_KEY_0", "core.fsmonitor");
  ScopedEnv value("GIT_CONFIG_VALUE_0", "/nonexistent/evil");
  ScopedEnv preload("LD_PRELOAD", "/nonexistent/evil.so");
  ScopedEnv secret("ANTHROPIC_API_KEY", "sk-secret");
  ScopedEnv path("PATH", "/nonexistent/evil:/usr/bin");
  ScopedEnv locale("LC_MESSAGES", "C");

  Result<GitCommand> git = GitCommand::bind({repo + "/.git", repo});
  ASSERT_TRUE(git) << git.error().message;
  const std::set<std::string> allowed = {"PATH",
                                         "HOME",
                                         "LANG",
                                         "TZ",
                                         "GIT_DIR",
                                         "GIT_WORK_TREE",
                                         "GIT_CONFIG_NOSYSTEM",
                                         "GIT_CONFIG_SYSTEM",
                                         "GIT_CONFIG_GLOBAL",
                                         "GIT_ATTR_NOSYSTEM",
                                         "GIT_TERMINAL_PROMPT",
                                         "GIT_ALLOW_PROTOCOL",
                                         "GIT_LITERAL_PATHSPECS",
                                         "GIT_OPTIONAL_LOCKS",
                                         "GIT_NO_LAZY_FETCH"};
  bool saw_locale = false;
  for (const std::string& entry : git->environment()) {
    const std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("LC_", 0) == 0) {
      saw_locale = true;
      continue;
    }
    EXPECT_TRUE(allowed.count(name)) << entry;
  }
  EXPECT_TRUE(saw_locale);
  const std::vector<std::string> env = git->environment();
  EXPECT_NE(std::find(env.begin(), env.end(), "PATH=/usr/bin:/bin"), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "GIT_DIR=" + repo + "/.git"), env.end());

  // And git itself sees none of the daemon's GIT_* variables.
  Result<std::string> dir = git->output({"rev-parse", "--absolute-git-dir"});
  ASSERT_TRUE(dir) << dir.error().message;
  EXPECT_EQ(*dir, repo + "/.git\n");
  Result<GitResult> alias = git->run({"config", "--get", "alias.evil"});
  ASSERT_TRUE(alias);
  EXPECT_EQ(alias->exit_code, 1) << alias->out;
  Result<std::string> fsmonitor = git->output({"config", "--get", "core.fsmonitor"});
  ASSERT_TRUE(fsmonitor) << fsmonitor.error().message;
  EXPECT_EQ(*fsmonitor, "false\n");
}

TEST(GitCommandTest, FilterDriversOfTheConfigAreNeutralised) {
  TempTree tree;
  const std::string repo = make_repo(tree);
  must_git(repo, {"config", "filter.evil.clean", "/nonexistent/clean"});
  must_git(repo, {"config", "filter.evil.required", "true"});
  must_git(repo, {"config", "filter.odd=name.with.dots.process", "/nonexistent/process"});
  Result<GitCommand> git = GitCommand::bind({repo + "/.git", repo});
  ASSERT_TRUE(git) << git.error().message;
  EXPECT_EQ(git->filter_drivers(), (std::vector<std::string>{"evil", "odd=name.with.dots"}));
  Result<std::string> clean = git->output({"config", "--get", "filter.evil.clean"});
  ASSERT_TRUE(clean) << clean.error().message;
  EXPECT_EQ(*clean, "\n");
  Result<std::string> required = git->output({"config", "--get", "filter.evil.required"});
  ASSERT_TRUE(required) << required.error().message;
  EXPECT_EQ(*required, "false\n");
  Result<std::string> process =
      git->output({"config", "--get", "filter.odd=name.with.dots.process"});
  ASSERT_TRUE(process) << process.error().message;
  EXPECT_EQ(*process, "\n");
}

TEST(GitCommandTest, NonZeroExitIsAResultAndOutputNamesTheSubcommand) {
  TempTree tree;
  const std::string repo = make_repo(tree);
  Result<GitCommand> git = GitCommand::bind({repo + "/.git", repo});
  ASSERT_TRUE(git);
  Result<GitResult> run = git->run({"rev-parse", "--verify", "no-such-ref"});
  ASSERT_TRUE(run);
  EXPECT_NE(run->exit_code, 0);
  EXPECT_FALSE(run->err.empty());
  Result<std::string> out = git->output({"rev-parse", "--verify", "no-such-ref"});
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, errc::io);
  EXPECT_NE(out.error().message.find("git rev-parse failed (exit"), std::string::npos)
      << out.error().message;
}

TEST(GitCommandTest, BindRefusesRelativeOrMissingFolders) {
  EXPECT_FALSE(GitCommand::bind({"relative/.git", ""}));
  EXPECT_FALSE(GitCommand::bind({"/nonexistent/loopr/.git", ""}));
}

TEST(GitCommandTest, OutputIsCappedKeepingHeadAndTail) {
  TempTree tree;
  const std::string repo = make_repo(tree);
  std::string big = "HEAD-MARK";
  big.append(200'000, 'x');
  big += "TAIL-MARK";
  tree.write("repo/big.txt", big);
  Result<GitCommand> git = GitCommand::bind({repo + "/.git", repo});
  ASSERT_TRUE(git);
  Result<std::string> blob = git->output({"hash-object", "-w", "--", "big.txt"});
  ASSERT_TRUE(blob) << blob.error().message;
  GitRunOptions options;
  options.output_cap = 1000;
  Result<GitResult> shown = git->run({"cat-file", "blob", blob->substr(0, 40)}, options);
  ASSERT_TRUE(shown) << shown.error().message;
  EXPECT_EQ(shown->exit_code, 0);
  EXPECT_TRUE(shown->out_truncated);
  EXPECT_LT(shown->out.size(), 1200u);
  EXPECT_EQ(shown->out.rfind("HEAD-MARK", 0), 0u);
  EXPECT_EQ(shown->out.substr(shown->out.size() - 9), "TAIL-MARK");
}

TEST(GitCommandTest, TimeoutKillsGitAndSaysSo) {
  TempTree tree;
  const std::string repo = make_repo(tree);
  // Opening a FIFO for reading blocks until a writer comes: git hangs.
  ASSERT_EQ(::mkfifo(tree.path("repo/fifo").c_str(), 0600), 0);
  Result<GitCommand> git = GitCommand::bind({repo + "/.git", repo});
  ASSERT_TRUE(git);
  GitRunOptions options;
  options.timeout = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  Result<GitResult> run = git->run({"hash-object", "--", "fifo"}, options);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().code, errc::timeout);
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

// ----------------------------------------------------------------- Worktrees

TEST(WorktreesTest, AddCommitDiffAndRemoveKeepingTheBranch) {
  TempTree tree;
  const std::string repo = make_repo(tree);
  const std::string base = plain_head(repo);
  const std::string path = tree.path("worktrees/deep/x");

  Result<WorktreeInfo> info = add_worktree(repo, path, "loop/x", "");
  ASSERT_TRUE(info) << info.error().message << " / " << info.error().hint;
  EXPECT_EQ(info->path, path);
  EXPECT_EQ(info->repo, repo);
  EXPECT_EQ(info->branch, "loop/x");
  EXPECT_EQ(info->base_commit, base);
  EXPECT_EQ(info->common_dir, repo + "/.git");
  EXPECT_EQ(info->admin_dir, repo + "/.git/worktrees/x");
  EXPECT_TRUE(tree.exists("worktrees/deep/x/README.md"));
  struct stat parent {};
  ASSERT_EQ(::stat(tree.path("worktrees/deep").c_str(), &parent), 0);
  EXPECT_EQ(parent.st_mode & 0777, 0700u);
  EXPECT_EQ(plain_head(repo, "refs/heads/loop/x"), base);

  Result<bool> clean = has_changes(*info);
  ASSERT_TRUE(clean) << clean.error().message;
  EXPECT_FALSE(*clean);

  tree.write("worktrees/deep/x/src/main.cpp", "int main() { return 0; }\n");
  tree.write("worktrees/deep/x/README.md", "hello\nworld\n");
  Result<bool> dirty = has_changes(*info);
  ASSERT_TRUE(dirty) << dirty.error().message;
  EXPECT_TRUE(*dirty);

  Result<CommitOutcome> first = commit_all(*info, "iteration 1");
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(first->changed);
  EXPECT_TRUE(is_sha(first->commit)) << first->commit;
  EXPECT_NE(first->commit, base);
  EXPECT_EQ(plain_head(repo, "refs/heads/loop/x"), first->commit);
  EXPECT_EQ(plain_head(repo, "refs/heads/main"), base);  // the user's branch is untouched
  Result<std::string> head = head_commit(*info);
  ASSERT_TRUE(head);
  EXPECT_EQ(*head, first->commit);
  const PlainRun log = plain_git(repo, {"log", "-1", "--format=%an <%ae>|%cn <%ce>|%s", "loop/x"});
  EXPECT_EQ(log.output, "loopr <loopr@localhost>|loopr <loopr@localhost>|iteration 1\n");

  Result<bool> after = has_changes(*info);
  ASSERT_TRUE(after);
  EXPECT_FALSE(*after);
  Result<CommitOutcome> second = commit_all(*info, "iteration 2");
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_FALSE(second->changed);
  EXPECT_EQ(second->commit, first->commit);

  Result<std::string> patch = diff(*info, base, first->commit);
  ASSERT_TRUE(patch) << patch.error().message;
  EXPECT_NE(patch->find("diff --git a/src/main.cpp b/src/main.cpp"), std::string::npos) << *patch;
  EXPECT_NE(patch->find("+int main() { return 0; }"), std::string::npos);
  EXPECT_NE(patch->find("+world"), std::string::npos);
  Result<std::string> stat = diff_stat(*info, base, "loop/x");
  ASSERT_TRUE(stat) << stat.error().message;
  EXPECT_NE(stat->find("src/main.cpp"), std::string::npos) << *stat;
  EXPECT_NE(stat->find("2 files changed"), std::string::npos) << *stat;

  // An empty `to`: the worktree as it is now.
  tree.write("worktrees/deep/x/README.md", "changed again\n");
  Result<std::string> live = diff(*info, first->commit, "");
  ASSERT_TRUE(live) << live.error().message;
  EXPECT_NE(live->find("+changed again"), std::string::npos) << *live;

  Result<void> removed = remove_worktree(*info, false);
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(info->admin_dir));
  EXPECT_EQ(plain_head(repo, "refs/heads/loop/x"), first->commit);  // branch kept
  EXPECT_EQ(plain_git(repo, {"worktree", "list", "--porcelain"}).output.find(path),
            std::string::npos);
  // Removing again is not an error.
  EXPECT_TRUE(remove_worktree(*info, false));
}

// A commit leaves out new paths within its kept_out list (a validation's
// by-products) unless the model wrote them; once the model's file is in a
// commit, its later changes there are committed too, whatever made them.
TEST(WorktreesTest, KeptOutPathsStayOutButTheModelsTrackedFileThereKeepsItsEdits) {
  TempTree tree;
  const std::string repo = make_repo(tree);
  Result<WorktreeInfo> info = add_worktree(repo, tree.path("wt/k"), "loop/k", "");
  ASSERT_TRUE(info) << info.error().message;
  auto names_in = [&](const std::string& commit) {
    return plain_git(repo, {"ls-tree", "-r", "--name-only", commit}).output;
  };

  tree.write("wt/k/coverage/report.html", "by-product\n");
  tree.write("wt/k/coverage/keep.txt", "the model's\n");
  tree.write("wt/k/answer.txt", "42\n");
  const CommitScope first_scope{{"coverage/"}, {"coverage/keep.txt"}};
  Result<CommitOutcome> first = commit_all(*info, "iteration 1", first_scope);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(names_in(first->commit), "README.md\nanswer.txt\ncoverage/keep.txt\n");

  // Iteration 2: the model changes its file with a command (not a file
  // tool, so it is not in `written`), and a validation adds another report.
  tree.write("wt/k/coverage/keep.txt", "the model's, edited by sed\n");
  tree.write("wt/k/coverage/index.html", "by-product\n");
  const CommitScope second_scope{{"coverage/"}, {}};
  Result<CommitOutcome> second = commit_all(*info, "iteration 2", second_scope);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_TRUE(second->changed);
  EXPECT_EQ(plain_git(repo, {"show", second->commit + ":coverage/keep.txt"}).output,
            "the model's, edited by sed\n");
  EXPECT_EQ(names_in(second->commit), "README.md\nanswer.txt\ncoverage/keep.txt\n");

  // Its deletion by a command is the model's too.
  ASSERT_TRUE(fs::remove(tree.path("wt/k/coverage/keep.txt")));
  Result<CommitOutcome> third = commit_all(*info, "iteration 3", second_scope);
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ(names_in(third->commit), "README.md\nanswer.txt\n");
  EXPECT_TRUE(tree.exists("wt/k/coverage/index.html"));  // left in the worktree, warm
}

TEST(WorktreesTest, RemoveCanDeleteTheBranch) {
  TempTree tree;
  const std::string repo = make_repo(tree);
  Result<WorktreeInfo> info = add_worktree(repo, tree.path("wt/y"), "loop/y", "main");
  ASSERT_TRUE(info) << info.error().message;
  ASSERT_TRUE(remove_worktree(*info, true));
  EXPECT_EQ(plain_head(repo, "refs/heads/loop/y"), "");
  EXPECT_FALSE(fs::exists(tree.path("wt/y")));
}

TEST(WorktreesTest, BaseMayBeAnyCommit) {
  TempTree tree;
  const std::string repo = make_repo(tree);
  const std::string first = plain_head(repo);
  tree.write("repo/second.txt", "2\n");
  must_git(repo, {"add", "-A"});
  must_git(repo, {"commit", "-q", "-m", "second"});
  Result<WorktreeInfo> info = add_worktree(repo, tree.path("wt/old"), "loop/old", first);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->base_commit, first);
  EXPECT_FALSE(tree.exists("wt/old/second.txt"));
}

TEST(WorktreesTest, ErrorsForANonRepositoryAnExistingBranchAndABadBase) {
  TempTree tree;
  const std::string repo = make_repo(tree);
  tree.mkdir("plain");

  Result<WorktreeInfo> not_repo = add_worktree(tree.path("plain"), tree.path("wt/a"), "loop/a", "");
  ASSERT_FALSE(not_repo);
  EXPECT_EQ(not_repo.error().code, errc::not_found);
  EXPECT_NE(not_repo.error().message.find("not a git repository"), std::string::npos);

  Result<WorktreeInfo> missing =
      add_worktree(tree.path("nothing"), tree.path("wt/a"), "loop/a", "");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, errc::not_found);

  Result<WorktreeInfo> existing = add_worktree(repo, tree.path("wt/a"), "main", "");
  ASSERT_FALSE(existing);
  EXPECT_EQ(existing.error().code, errc::invalid_arguments);
  EXPECT_NE(existing.error().message.find("already exists"), std::string::npos);

  for (const char* base : {"no-such-branch", "--output=/tmp/x", "HEAD~5", "deadbeef"}) {
    Result<WorktreeInfo> bad = add_worktree(repo, tree.path("wt/a"), "loop/a", base);
    ASSERT_FALSE(bad) << base;
    EXPECT_EQ(bad.error().code, errc::invalid_arguments) << base;
  }
  for (const char* branch : {"", "-f", "loop/a..b", "loop/a b", "loop/"}) {
    Result<WorktreeInfo> bad = add_worktree(repo, tree.path("wt/a"), branch, "");
    ASSERT_FALSE(bad) << branch;
    EXPECT_EQ(bad.error().code, errc::invalid_arguments) << branch;
  }
  Result<WorktreeInfo> relative = add_worktree(repo, "wt/a", "loop/a", "");
  ASSERT_FALSE(relative);
  EXPECT_EQ(relative.error().code, errc::invalid_arguments);

  tree.write("wt/full/file", "x");
  Result<WorktreeInfo> occupied = add_worktree(repo, tree.path("wt/full"), "loop/a", "");
  ASSERT_FALSE(occupied);
  EXPECT_EQ(occupied.error().code, errc::invalid_arguments);

  // None of the failures left a branch or a worktree behind.
  EXPECT_EQ(plain_head(repo, "refs/heads/loop/a"), "");
  EXPECT_FALSE(fs::exists(tree.path("wt/a")));
}

TEST(WorktreesTest, EmptyRepositoryHasNoBase) {
  TempTree tree;
  must_git(tree.root(), {"init", "-q", "-b", "main", tree.path("empty")});
  Result<WorktreeInfo> info = add_worktree(tree.path("empty"), tree.path("wt/e"), "loop/e", "");
  ASSERT_FALSE(info);
  EXPECT_EQ(info.error().code, errc::invalid_arguments);
  EXPECT_NE(info.error().message.find("no commit"), std::string::npos);
}

TEST(WorktreesTest, CommitMessageMustNotBeBlank) {
  TempTree tree;
  const std::string repo = make_repo(tree);
  Result<WorktreeInfo> info = add_worktree(repo, tree.path("wt/m"), "loop/m", "");
  ASSERT_TRUE(info);
  tree.write("wt/m/a", "a");
  EXPECT_FALSE(commit_all(*info, " \n"));
  EXPECT_FALSE(commit_all(*info, std::string("a\0b", 3)));
  // A message that looks like an option is just a message.
  Result<CommitOutcome> odd = commit_all(*info, "--amend -m evil");
  ASSERT_TRUE(odd) << odd.error().message;
  EXPECT_TRUE(odd->changed);
  EXPECT_EQ(plain_git(repo, {"log", "-1", "--format=%s", "loop/m"}).output, "--amend -m evil\n");
}

TEST(WorktreesTest, OpenRederivesTheInfoFromTheRepository) {
  TempTree tree;
  const std::string repo = make_repo(tree);
  Result<WorktreeInfo> info = add_worktree(repo, tree.path("wt/o"), "loop/o", "");
  ASSERT_TRUE(info);
  tree.write("wt/o/new.txt", "new\n");
  ASSERT_TRUE(commit_all(*info, "work"));

  Result<WorktreeInfo> opened = open_worktree(repo, tree.path("wt/o"), "loop/o");
  ASSERT_TRUE(opened) << opened.error().message;
  EXPECT_EQ(opened->path, info->path);
  EXPECT_EQ(opened->admin_dir, info->admin_dir);
  EXPECT_EQ(opened->common_dir, info->common_dir);
  EXPECT_EQ(opened->base_commit, info->base_commit);
  EXPECT_EQ(opened->repo, info->repo);

  // The worktree's own `.git` file does not matter: it is never read.
  tree.write("wt/o/.git", "gitdir: /nonexistent\n");
  Result<WorktreeInfo> again = open_worktree(repo, tree.path("wt/o"), "loop/o");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->admin_dir, info->admin_dir);

  Result<WorktreeInfo> wrong_branch = open_worktree(repo, tree.path("wt/o"), "loop/other");
  ASSERT_FALSE(wrong_branch);
  EXPECT_EQ(wrong_branch.error().code, errc::invalid_arguments);
  tree.mkdir("wt/stranger");
  Result<WorktreeInfo> stranger = open_worktree(repo, tree.path("wt/stranger"), "loop/o");
  ASSERT_FALSE(stranger);
  EXPECT_EQ(stranger.error().code, errc::not_found);
}

TEST(WorktreesTest, RemoveNeverFollowsLinksAndCopesWithHostileTrees) {
  TempTree tree;
  const std::string repo = make_repo(tree);
  tree.write("outside/keep.txt", "precious\n");
  Result<WorktreeInfo> info = add_worktree(repo, tree.path("wt/h"), "loop/h", "");
  ASSERT_TRUE(info);
  tree.symlink(tree.path("outside"), "wt/h/link-abs");
  tree.symlink("../../outside", "wt/h/link-rel");
  tree.symlink(tree.path("outside/keep.txt"), "wt/h/file-link");
  // A tree deeper than the remover keeps open at once.
  std::string deep = "wt/h/d";
  for (int i = 0; i < 150; ++i)
    deep += "/d";
  tree.write(deep + "/leaf", "leaf");
  // Folders the job made unreadable and unwritable.
  tree.write("wt/h/locked/inner/file", "x");
  ASSERT_EQ(::chmod(tree.path("wt/h/locked/inner").c_str(), 0), 0);
  ASSERT_EQ(::chmod(tree.path("wt/h/locked").c_str(), 0500), 0);
  ASSERT_EQ(::mkfifo(tree.path("wt/h/fifo").c_str(), 0600), 0);
  // A replaced .git folder.
  ASSERT_EQ(::unlink(tree.path("wt/h/.git").c_str()), 0);
  tree.write("wt/h/.git/config", "[core]\n\tbare = false\n");

  Result<CommitOutcome> committed = commit_all(*info, "hostile tree");
  ASSERT_TRUE(committed) << committed.error().message;
  Result<void> removed = remove_worktree(*info, false);
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_FALSE(fs::exists(tree.path("wt/h")));
  EXPECT_FALSE(fs::exists(info->admin_dir));
  EXPECT_EQ(tree.read("outside/keep.txt"), "precious\n");
}

TEST(WorktreesTest, RemoveRefusesAPathTheRepositoryDoesNotKnow) {
  TempTree tree;
  const std::string repo = make_repo(tree);
  Result<WorktreeInfo> info = add_worktree(repo, tree.path("wt/r"), "loop/r", "");
  ASSERT_TRUE(info);
  tree.write("important/file", "keep\n");
  WorktreeInfo wrong = *info;
  wrong.path = tree.path("important");
  Result<void> removed = remove_worktree(wrong, false);
  ASSERT_FALSE(removed);
  EXPECT_EQ(tree.read("important/file"), "keep\n");
  EXPECT_TRUE(fs::exists(tree.path("wt/r/README.md")));
}

// -------------------------------------------------- Security: classes 4, 27

class WorktreesSecurityTest : public ::testing::Test {
 protected:
  void trap(const std::string& relative, const std::string& marker) {
    test::plant_trap(tree_, relative, marker);
  }

  std::vector<std::string> markers() const { return test::traps_that_ran(tree_); }

  void config(const std::string& file, const std::string& key, const std::string& value) {
    test::set_config(tree_, file, key, value);
  }

  // The repository, planted before the worktree exists: hooks in .git/hooks,
  // program-running settings in .git/config, a global config in $HOME, and a
  // committed .gitattributes naming filter and diff drivers the config defines.
  void plant_repository() {
    repo_ = make_repo(tree_);
    tree_.write("repo/.gitattributes", "*.txt filter=evil diff=evil\n*.bin filter=evilproc\n");
    tree_.write("repo/a.txt", "alpha\n");
    must_git(repo_, {"add", "-A"});
    must_git(repo_, {"commit", "-q", "-m", "attributes"});

    const std::vector<std::string> hooks = {
        "pre-commit",    "prepare-commit-msg",    "commit-msg",        "post-commit",
        "post-checkout", "reference-transaction", "post-index-change", "pre-auto-gc"};
    for (const std::string& hook : hooks) {
      trap("repo/.git/hooks/" + hook, "repo-hook-" + hook);
      trap("traps/hooks/" + hook, "hookspath-" + hook);
      trap("fake/hooks/" + hook, "fake-hook-" + hook);
    }
    const std::string git_config = repo_ + "/.git/config";
    trap("traps/fsmonitor", "fsmonitor");
    config(git_config, "core.fsmonitor", tree_.path("traps/fsmonitor"));
    config(git_config, "core.hooksPath", tree_.path("traps/hooks"));
    trap("traps/diff-external", "diff-external");
    config(git_config, "diff.external", tree_.path("traps/diff-external"));
    trap("traps/ssh", "ssh-command");
    config(git_config, "core.sshCommand", tree_.path("traps/ssh"));
    trap("traps/pager", "pager");
    config(git_config, "core.pager", tree_.path("traps/pager"));
    config(git_config, "pager.diff", tree_.path("traps/pager"));
    trap("traps/editor", "editor");
    config(git_config, "core.editor", tree_.path("traps/editor"));
    trap("traps/gpg", "gpg");
    config(git_config, "gpg.program", tree_.path("traps/gpg"));
    config(git_config, "commit.gpgSign", "true");
    trap("traps/credential", "credential");
    config(git_config, "credential.helper", tree_.path("traps/credential"));
    trap("traps/filter-clean", "filter-clean");
    trap("traps/filter-smudge", "filter-smudge");
    config(git_config, "filter.evil.clean", tree_.path("traps/filter-clean"));
    config(git_config, "filter.evil.smudge", tree_.path("traps/filter-smudge"));
    config(git_config, "filter.evil.required", "true");
    trap("traps/filter-process", "filter-process");
    config(git_config, "filter.evilproc.process", tree_.path("traps/filter-process"));
    trap("traps/textconv", "textconv");
    config(git_config, "diff.evil.textconv", tree_.path("traps/textconv"));
    trap("traps/diff-command", "diff-command");
    config(git_config, "diff.evil.command", tree_.path("traps/diff-command"));
    trap("traps/textconv-only", "textconv-only");
    config(git_config, "diff.tc.textconv", tree_.path("traps/textconv-only"));
    config(git_config, "gc.auto", "1");
    config(git_config, "gc.autoDetach", "false");
    config(git_config, "core.repositoryformatversion", "1");
    config(git_config, "extensions.worktreeConfig", "true");

    // $HOME/.gitconfig and the XDG config: never read by the daemon's calls.
    trap("traps/global-fsmonitor", "global-fsmonitor");
    tree_.write("home/.gitconfig", "[core]\n\tfsmonitor = " + tree_.path("traps/global-fsmonitor") +
                                       "\n\thooksPath = " + tree_.path("traps/hooks") + "\n");
    tree_.write("home/.config/git/attributes", "* filter=evil\n");
  }

  // The worktree, planted by "the job" after it exists: its `.git` file now
  // points at a fake git dir with hooks and fsmonitor of its own, the admin
  // dir has a config.worktree, and new files fall under the filter drivers.
  void plant_worktree(const WorktreeInfo& info) {
    must_git(tree_.root(), {"init", "-q", "--bare", tree_.path("fake")});
    trap("traps/fake-fsmonitor", "fake-fsmonitor");
    const std::string fake_config = tree_.path("fake/config");
    config(fake_config, "core.bare", "false");
    config(fake_config, "core.fsmonitor", tree_.path("traps/fake-fsmonitor"));
    config(fake_config, "core.hooksPath", tree_.path("fake/hooks"));
    tree_.write("wt/x/.git", "gitdir: " + tree_.path("fake") + "\n");

    trap("traps/worktree-fsmonitor", "worktree-fsmonitor");
    const std::string worktree_config = info.admin_dir + "/config.worktree";
    config(worktree_config, "core.fsmonitor", tree_.path("traps/worktree-fsmonitor"));
    config(worktree_config, "core.hooksPath", tree_.path("traps/hooks"));

    tree_.write("wt/x/a.txt", "alpha changed\n");
    tree_.write("wt/x/b.txt", "bravo\n");
    tree_.write("wt/x/c.bin", "charlie\n");
    tree_.write("wt/x/README.md", "hello\nfrom the job\n");
    tree_.write("wt/x/.gitattributes",
                "* diff=evil\n*.txt filter=evil diff=evil\n*.bin filter=evilproc\n*.md diff=tc\n");
  }

  TempTree tree_;
  std::string repo_;
};

TEST_F(WorktreesSecurityTest, PlantedHooksConfigAndFiltersRunNothing) {
  plant_repository();
  ScopedEnv home("HOME", tree_.path("home").c_str());
  ScopedEnv xdg("XDG_CONFIG_HOME", tree_.path("home/.config").c_str());

  Result<WorktreeInfo> info = add_worktree(repo_, tree_.path("wt/x"), "loop/x", "");
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(tree_.read("wt/x/a.txt"), "alpha\n");  // checked out without the smudge filter
  plant_worktree(*info);

  Result<bool> changed = has_changes(*info);
  ASSERT_TRUE(changed) << changed.error().message;
  EXPECT_TRUE(*changed);
  Result<CommitOutcome> commit = commit_all(*info, "iteration 1");
  ASSERT_TRUE(commit) << commit.error().message;
  EXPECT_TRUE(commit->changed);
  EXPECT_NE(commit->commit, info->base_commit);
  tree_.write("wt/x/a.txt", "alpha changed twice\n");  // the work-tree diff cleans it
  Result<std::string> patch = diff(*info, info->base_commit, commit->commit);
  ASSERT_TRUE(patch) << patch.error().message;
  EXPECT_NE(patch->find("+bravo"), std::string::npos) << *patch;
  Result<std::string> live = diff(*info, commit->commit, "");
  ASSERT_TRUE(live) << live.error().message;
  EXPECT_NE(live->find("+alpha changed twice"), std::string::npos) << *live;
  ASSERT_TRUE(diff_stat(*info, info->base_commit, commit->commit));
  Result<CommitOutcome> second = commit_all(*info, "iteration 2");
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_TRUE(second->changed);
  ASSERT_TRUE(head_commit(*info));
  Result<WorktreeInfo> reopened = open_worktree(repo_, tree_.path("wt/x"), "loop/x");
  ASSERT_TRUE(reopened) << reopened.error().message;
  EXPECT_EQ(reopened->admin_dir, info->admin_dir);

  // What was committed is what the job wrote, unfiltered, and the planted
  // `.git` file is neither committed (no gitlink, no .git entry) nor followed.
  Result<GitCommand> git = GitCommand::bind({repo_ + "/.git", repo_});
  ASSERT_TRUE(git);
  Result<std::string> listing = git->output({"ls-tree", "-r", commit->commit});
  ASSERT_TRUE(listing) << listing.error().message;
  EXPECT_EQ(listing->find(".git\n"), std::string::npos) << *listing;
  EXPECT_EQ(listing->find("160000"), std::string::npos) << *listing;
  EXPECT_NE(listing->find("\tb.txt\n"), std::string::npos) << *listing;
  EXPECT_NE(listing->find("\tc.bin\n"), std::string::npos) << *listing;
  Result<std::string> bravo = git->output({"cat-file", "blob", commit->commit + ":b.txt"});
  ASSERT_TRUE(bravo) << bravo.error().message;
  EXPECT_EQ(*bravo, "bravo\n");
  std::size_t fake_objects = 0;
  for (const auto& entry : fs::recursive_directory_iterator(tree_.path("fake/objects"))) {
    if (entry.is_regular_file()) ++fake_objects;
  }
  EXPECT_EQ(fake_objects, 0u);
  EXPECT_FALSE(fs::exists(tree_.path("fake/index")));

  Result<void> removed = remove_worktree(*info, false);
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_FALSE(fs::exists(tree_.path("wt/x")));
  EXPECT_EQ(plain_head(repo_, "refs/heads/loop/x"), second->commit);

  EXPECT_EQ(markers(), std::vector<std::string>{}) << "a planted program ran";
}

// The control: plain git on the same traps runs them. If this test fails, the
// traps above are not armed and the security test proves nothing.
TEST_F(WorktreesSecurityTest, ControlPlainGitRunsTheTraps) {
  plant_repository();
  Result<WorktreeInfo> info = add_worktree(repo_, tree_.path("wt/x"), "loop/x", "");
  ASSERT_TRUE(info) << info.error().message;
  plant_worktree(*info);
  ASSERT_EQ(markers(), std::vector<std::string>{});

  plain_git(tree_.path("wt/x"), {"status"});  // follows the planted .git file
  tree_.write("repo/d.txt", "delta\n");
  plain_git(repo_, {"add", "-A"});
  plain_git(repo_, {"commit", "-q", "-m", "plain"});

  // (The commit itself fails: the planted gpg.program signs nothing.)
  const std::vector<std::string> ran = markers();
  for (const char* expected :
       {"fake-fsmonitor", "fsmonitor", "filter-clean", "hookspath-pre-commit", "gpg"}) {
    EXPECT_NE(std::find(ran.begin(), ran.end(), expected), ran.end()) << expected;
  }
}

}  // namespace
}  // namespace loopr::loops
