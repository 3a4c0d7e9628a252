// Per-repository settings: [[repositories]] in the user's loopr.toml and a
// repository's own .loopr/loopr.toml, read as strictly as loopr.toml, and a
// repository's file refused when it tries to set anything but its commands
// and worktree needs.
#include "config/repository_settings.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "config/settings.hpp"
#include "tests/config/config_error.hpp"
#include "tests/config/settings_merge.hpp"

namespace loopr::config {
namespace {

using test::config_error;
using test::kAdaEnv;
using test::merged_settings;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

RepoSettings repo_file(std::string_view text) {
  std::istringstream in{std::string(text)};
  return parse_repository_file(in, "/src/app/.loopr/loopr.toml");
}

std::string repo_file_error(std::string_view text) {
  return config_error([&] { repo_file(text); });
}

TEST(RepositoryFile, CommandsAndWorktreeNeedsAreRead) {
  const RepoSettings s = repo_file(R"(
[commands]
build = "npm run build"
test = "npx nyc tape test/*.js"
validate = "npm test"
lint = "npx eslint {files}"
lint_files = ["*.js"]

[worktrees]
include = ["node_modules", ".env"]
setup = "npm ci --offline"
)");
  EXPECT_EQ(s.build, "npm run build");
  EXPECT_EQ(s.test, "npx nyc tape test/*.js");
  EXPECT_EQ(s.validate, "npm test");
  EXPECT_EQ(s.lint, "npx eslint {files}");
  EXPECT_THAT(*s.lint_files, ElementsAre("*.js"));
  EXPECT_THAT(*s.include, ElementsAre("node_modules", ".env"));
  EXPECT_EQ(s.setup, "npm ci --offline");
  EXPECT_FALSE(s.empty());
}

TEST(RepositoryFile, UnsetKeysStayUnset) {
  const RepoSettings s = repo_file("[commands]\ntest = \"make check\"\n");
  EXPECT_EQ(s.test, "make check");
  EXPECT_FALSE(s.build);
  EXPECT_FALSE(s.validate);
  EXPECT_FALSE(s.include);
  EXPECT_FALSE(s.setup);
  EXPECT_TRUE(repo_file("").empty());
}

TEST(RepositoryFile, HooksAreNotAllowedThere) {
  // A hook is a program the user chose to run: a repository cannot bring one.
  EXPECT_THAT(
      repo_file_error("[[hooks]]\nevent = \"tool.before\"\ncommand = \"touch x\"\n"),
      AllOf(HasSubstr("hooks: "), HasSubstr("is not allowed in a repository's .loopr/loopr.toml")));
}

TEST(RepositoryFile, PolicyTablesAreNotAllowedThere) {
  for (const std::string table : {"sandbox", "lanes", "egress", "approval", "providers", "budgets",
                                  "daemon", "llm", "web_fetch", "repositories", "loops"}) {
    const std::string text = "[" + table + "]\nx = 1\n";
    EXPECT_THAT(repo_file_error(text),
                AllOf(StartsWith("/src/app/.loopr/loopr.toml:1: " + table + ": "),
                      HasSubstr("is not allowed in a repository's .loopr/loopr.toml"),
                      HasSubstr("may set only [commands]")))
        << table;
  }
  EXPECT_THAT(repo_file_error("[approval.tools]\nrun_command = \"auto\"\n"),
              HasSubstr("approval: is not allowed"));
}

TEST(ProtectedPaths, AreReadFromLooprTomlAndARepositorysFile) {
  const Settings s = merged_settings(
      "[validation]\nprotected_paths = [\"tests/\", \"**/*_test.go\", \"Makefile\"]\n");
  EXPECT_THAT(s.validation.protected_paths, ElementsAre("tests", "**/*_test.go", "Makefile"))
      << "a folder's trailing slash is dropped";
  EXPECT_TRUE(Settings::defaults().validation.protected_paths.empty());
  const RepoSettings file = repo_file("[validation]\nprotected_paths = [\"spec/**\"]\n");
  EXPECT_THAT(file.protected_paths, ElementsAre("spec/**"));
  EXPECT_FALSE(file.empty());
}

TEST(ProtectedPaths, MistakesNameTheKey) {
  struct ProtectedMistake {
    std::string text;
    std::string says;
  };
  const ProtectedMistake mistakes[] = {
      {"protected_paths = [\"../other\"]\n", "outside the checkout"},
      {"protected_paths = [\"/etc/passwd\"]\n", "not relative"},
      {"protected_paths = [\"\"]\n", "must not be empty"},
      {"protected_paths = [\"a{b\"]\n", "a{b"},
      {"protected_paths = \"tests\"\n", "array of strings"},
      {"protected_path = [\"tests\"]\n", "unknown key"},
  };
  for (const ProtectedMistake& m : mistakes) {
    const std::string in_user = config_error([&] { merged_settings("[validation]\n" + m.text); });
    EXPECT_THAT(in_user,
                AllOf(StartsWith("loopr.toml:2: validation.protected_path"), HasSubstr(m.says)))
        << m.text;
    const std::string in_repo = repo_file_error("[validation]\n" + m.text);
    EXPECT_THAT(in_repo,
                AllOf(StartsWith("/src/app/.loopr/loopr.toml:2: validation.protected_path"),
                      HasSubstr(m.says)))
        << m.text;
  }
  std::string many = "[validation]\nprotected_paths = [";
  for (int i = 0; i <= 256; ++i)
    many += "\"f" + std::to_string(i) + "\",";
  many += "]\n";
  EXPECT_THAT(config_error([&] { merged_settings(many); }), HasSubstr("at most 256"));
}

TEST(RepositoryFile, MistakesNameTheKey) {
  struct RepoMistake {
    std::string text;
    std::string start;
    std::string says;
  };
  const RepoMistake mistakes[] = {
      {"[commands]\ntests = \"x\"\n",
       "/src/app/.loopr/loopr.toml:2: commands.tests:", "unknown key"},
      {"[commands]\ntest = 3\n", "/src/app/.loopr/loopr.toml:2: commands.test:", "a string"},
      {"[worktrees]\nfolder = \"/tmp/x\"\n", "/src/app/.loopr/loopr.toml:2: worktrees.folder:",
       "not allowed in a repository's .loopr/loopr.toml"},
      {"[worktrees]\nkeep_finished_s = 1\n",
       "/src/app/.loopr/loopr.toml:2: worktrees.keep_finished_s:", "not allowed"},
      {"[worktrees]\ncopy_limit_mb = 999999\n",
       "/src/app/.loopr/loopr.toml:2: worktrees.copy_limit_mb:", "not allowed"},
      {"[worktrees]\ncopy = []\n", "/src/app/.loopr/loopr.toml:2: worktrees.copy:", "unknown key"},
      {"[worktrees]\ninclude = [\"../secrets\"]\n",
       "/src/app/.loopr/loopr.toml:2: worktrees.include[0]:", "outside the checkout"},
      {"[worktrees]\ninclude = [\"a/../../b\"]\n",
       "/src/app/.loopr/loopr.toml:2: worktrees.include[0]:", "outside the checkout"},
      {"[worktrees]\ninclude = [\"./.git\"]\n",
       "/src/app/.loopr/loopr.toml:2: worktrees.include[0]:", "has a \".\" part"},
      {"[worktrees]\ninclude = [\".\"]\n",
       "/src/app/.loopr/loopr.toml:2: worktrees.include[0]:", "has a \".\" part"},
      {"[worktrees]\ninclude = [\"./src\"]\n",
       "/src/app/.loopr/loopr.toml:2: worktrees.include[0]:", "has a \".\" part"},
      {"[worktrees]\ninclude = [\"sub/.git\"]\n",
       "/src/app/.loopr/loopr.toml:2: worktrees.include[0]:", "git's own folder"},
      {"[worktrees]\ninclude = [\"/etc\"]\n",
       "/src/app/.loopr/loopr.toml:2: worktrees.include[0]:", "not relative"},
      {"[worktrees]\ninclude = [\"~/.ssh\"]\n",
       "/src/app/.loopr/loopr.toml:2: worktrees.include[0]:", "not relative"},
      {"[worktrees]\ninclude = \"node_modules\"\n",
       "/src/app/.loopr/loopr.toml:2: worktrees.include:", "array of strings"},
      {"mode = \"off\"\n", "/src/app/.loopr/loopr.toml:1: mode:", "unknown key"},
      {"[commands\n", "/src/app/.loopr/loopr.toml:1: syntax error", ""},
  };
  for (const RepoMistake& m : mistakes) {
    const std::string error = repo_file_error(m.text);
    EXPECT_THAT(error, AllOf(StartsWith(m.start), HasSubstr(m.says))) << m.text;
  }
}

TEST(SettingsRepositories, EntriesAreReadWithTheirPathsExpanded) {
  const Settings s = merged_settings(R"(
[commands]
test = "ctest"

[[repositories]]
path = "~/src/app/"
[repositories.commands]
test = "npm test"
[repositories.worktrees]
include = ["node_modules"]
setup = "npm ci"

[[repositories]]
path = "/srv/lib"
[repositories.commands]
build = "make -j2"
)");
  EXPECT_EQ(s.commands.test, "ctest");
  ASSERT_EQ(s.repositories.size(), 2u);
  EXPECT_EQ(s.repositories[0].path, "/home/ada/src/app");
  EXPECT_EQ(s.repositories[0].settings.test, "npm test");
  EXPECT_FALSE(s.repositories[0].settings.build);
  EXPECT_THAT(*s.repositories[0].settings.include, ElementsAre("node_modules"));
  EXPECT_EQ(s.repositories[0].settings.setup, "npm ci");
  EXPECT_EQ(s.repositories[0].file, "loopr.toml");
  EXPECT_EQ(s.repositories[0].line, 5u);
  EXPECT_EQ(s.repositories[1].path, "/srv/lib");
  EXPECT_EQ(s.repositories[1].settings.build, "make -j2");
  EXPECT_TRUE(Settings::defaults().repositories.empty());
}

TEST(SettingsRepositories, MistakesNameTheKey) {
  EXPECT_THAT(config_error([] {
                merged_settings("[[repositories]]\n[repositories.commands]\ntest = \"x\"\n");
              }),
              AllOf(StartsWith("loopr.toml:1: repositories[0]:"), HasSubstr("needs path")));
  EXPECT_THAT(config_error([] { merged_settings("[[repositories]]\npath = \"src/app\"\n"); }),
              AllOf(StartsWith("loopr.toml:2: repositories[0].path:"), HasSubstr("absolute")));
  EXPECT_THAT(
      config_error([] { merged_settings("[[repositories]]\npath = \"/a\"\nsandbox = 1\n"); }),
      AllOf(StartsWith("loopr.toml:3: repositories[0].sandbox:"), HasSubstr("unknown key")));
  EXPECT_THAT(
      config_error([] {
        merged_settings("[[repositories]]\npath = \"/a\"\n[repositories.commands]\ntset = \"x\"\n");
      }),
      AllOf(StartsWith("loopr.toml:4: repositories[0].commands.tset:"), HasSubstr("unknown key")));
  EXPECT_THAT(
      config_error([] {
        merged_settings("[[repositories]]\npath = \"/a\"\n[[repositories]]\npath = \"/a/\"\n");
      }),
      AllOf(StartsWith("loopr.toml:4: repositories[1].path:"), HasSubstr("has an entry")));
  EXPECT_THAT(config_error([] { merged_settings("[repositories]\npath = \"/a\"\n"); }),
              HasSubstr("repositories: must be an array of tables"));
}

// [[approval.rules]] (issue 27): read in order with where each was written;
// every mistake names file:line and key; a repository's file only tightens.
TEST(ApprovalRules, AreReadInOrderWithTheirPlace) {
  const Settings s = merged_settings(
      "[approval]\ndefault = \"auto\"\n\n"
      "[[approval.rules]]\ncommand = [\"npm\", \"test\"]\ndecision = \"allow\"\n\n"
      "[[approval.rules]]\ncommand = [\"git\", \"push\"]\nargs_match = \"--force\"\n"
      "decision = \"deny\"\nreason = \"never force-push\"\n");
  ASSERT_EQ(s.approval.rules.size(), 2u);
  const policy::CommandRule& allow = s.approval.rules[0];
  EXPECT_THAT(allow.command, ElementsAre("npm", "test"));
  EXPECT_EQ(allow.decision, policy::Decision::allow);
  EXPECT_EQ(allow.where(), "loopr.toml:4");
  EXPECT_FALSE(allow.from_repository);
  const policy::CommandRule& deny = s.approval.rules[1];
  EXPECT_EQ(deny.decision, policy::Decision::deny);
  EXPECT_EQ(deny.reason, "never force-push");
  ASSERT_TRUE(deny.args_match);
  EXPECT_EQ(deny.args_match->search("origin --force"), RegexMatch::match);
  EXPECT_EQ(deny.where(), "loopr.toml:8");
}

TEST(ApprovalRules, AnExactRuleMatchesItsWordsOnly) {
  const Settings s = merged_settings(
      "[[approval.rules]]\ncommand = [\"npm\", \"test\"]\nexact = true\ndecision = \"allow\"\n");
  ASSERT_EQ(s.approval.rules.size(), 1u);
  EXPECT_TRUE(s.approval.rules[0].exact);
  EXPECT_EQ(policy::evaluate("npm test", s.approval.rules).decision, policy::Decision::allow);
  EXPECT_EQ(policy::evaluate("npm test --watch", s.approval.rules).decision,
            policy::Decision::none);
  EXPECT_THAT(config_error([&] {
                merged_settings(
                    "[[approval.rules]]\ncommand = [\"ls\"]\nexact = true\n"
                    "args_match = \"x\"\ndecision = \"allow\"\n");
              }),
              HasSubstr("takes no args_match"));
}

TEST(ApprovalRules, MistakesNameFileLineAndKey) {
  struct RepoMistake {
    std::string text;
    std::string start;
    std::string says;
  };
  const RepoMistake mistakes[] = {
      {"[approval]\nrules = \"x\"\n", "loopr.toml:2: approval.rules:", "array of tables"},
      {"[[approval.rules]]\ncommand = []\ndecision = \"ask\"\n",
       "loopr.toml:2: approval.rules[0].command:", "list of words"},
      {"[[approval.rules]]\ncommand = \"git push\"\ndecision = \"ask\"\n",
       "loopr.toml:2: approval.rules[0].command:", "array of strings"},
      {"[[approval.rules]]\ncommand = [\"git\", \"\"]\ndecision = \"ask\"\n",
       "loopr.toml:2: approval.rules[0].command:", "empty word"},
      {"[[approval.rules]]\ndecision = \"ask\"\n",
       "loopr.toml:1: approval.rules[0]:", "needs command"},
      {"[[approval.rules]]\ncommand = [\"ls\"]\n",
       "loopr.toml:1: approval.rules[0]:", "needs decision"},
      {"[[approval.rules]]\ncommand = [\"ls\"]\ndecision = \"maybe\"\n",
       "loopr.toml:3: approval.rules[0].decision:", "allow, ask, deny"},
      {"[[approval.rules]]\ncommand = [\"ls\"]\ndecision = \"ask\"\nargs_match = \"(x\"\n",
       "loopr.toml:4: approval.rules[0].args_match:",
       "not a valid regular expression: at offset 2: missing closing parenthesis"},
      {"[[approval.rules]]\ncommand = [\"ls\"]\ndecision = \"ask\"\nargs_not_match = \"[\"\n",
       "loopr.toml:4: approval.rules[0].args_not_match:", "not a valid regular expression"},
      {"[[approval.rules]]\ncommand = [\"ls\"]\ndecision = \"ask\"\ntool = \"x\"\n",
       "loopr.toml:4: approval.rules[0].tool:", "unknown key"},
  };
  for (const RepoMistake& m : mistakes) {
    EXPECT_THAT(config_error([&] { merged_settings(m.text); }),
                AllOf(StartsWith(m.start), HasSubstr(m.says)))
        << m.text;
  }
}

TEST(ApprovalRules, ARepositoryMayAskOrDenyButNeverAllow) {
  const RepoSettings s = repo_file(
      "[[approval.rules]]\ncommand = [\"git\", \"push\"]\ndecision = \"deny\"\n"
      "reason = \"CI pushes\"\n\n"
      "[[approval.rules]]\ncommand = [\"rm\"]\ndecision = \"ask\"\n");
  ASSERT_EQ(s.rules.size(), 2u);
  EXPECT_TRUE(s.rules[0].from_repository);
  EXPECT_EQ(s.rules[0].where(), "/src/app/.loopr/loopr.toml:1");
  EXPECT_FALSE(s.empty());

  EXPECT_THAT(repo_file_error("[[approval.rules]]\ncommand = [\"curl\"]\ndecision = \"allow\"\n"),
              AllOf(StartsWith("/src/app/.loopr/loopr.toml:3: approval.rules[0].decision: "),
                    HasSubstr("never loosen your approval policy")));
  EXPECT_THAT(repo_file_error("[approval]\ndefault = \"auto\"\n"),
              AllOf(HasSubstr("approval: is not allowed"), HasSubstr("it sets approval.default")));
}

}  // namespace
}  // namespace loopr::config
