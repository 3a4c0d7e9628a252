#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "loopr-tool/tools.hpp"
#include "tests/support/temp_tree.hpp"
#include "tests/support/tool_front_end.hpp"

namespace loopr::tool {
namespace {

void set_mtime(const test::TempTree& tree, const std::string& relative, time_t seconds) {
  const struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, tree.path(relative).c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
}

class tool_search_GlobTool : public testing::Test {
 protected:
  Result<Json> run(const Json& args) { return tools.call(glob, args); }
  test::TempTree tree;
  test::ToolFrontEnd tools{tree.root()};
};

TEST_F(tool_search_GlobTool, NewestFirstThenPath) {
  tree.write("old.cpp", "a");
  tree.write("new.cpp", "b");
  tree.write("mid_b.cpp", "c");
  tree.write("mid_a.cpp", "d");
  tree.write("skip.h", "e");
  set_mtime(tree, "old.cpp", 1000);
  set_mtime(tree, "new.cpp", 3000);
  set_mtime(tree, "mid_a.cpp", 2000);
  set_mtime(tree, "mid_b.cpp", 2000);
  auto result = run({{"pattern", "*.cpp"}});
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ((*result)["matches"], (Json{"new.cpp", "mid_a.cpp", "mid_b.cpp", "old.cpp"}));
  EXPECT_EQ((*result)["count"], 4);
  EXPECT_EQ((*result)["truncated"], false);
}

TEST_F(tool_search_GlobTool, RecursiveAndRelativeToPath) {
  tree.write("src/a/x.cpp", "x");
  tree.write("src/y.cpp", "y");
  tree.write("z.cpp", "z");
  auto result = run({{"pattern", "**/*.cpp"}, {"path", "src"}});
  ASSERT_TRUE(result.ok());
  Json matches = (*result)["matches"];
  std::vector<std::string> got = matches.get<std::vector<std::string>>();
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"src/a/x.cpp", "src/y.cpp"}));
  EXPECT_EQ((*result)["path"], "src");
}

TEST_F(tool_search_GlobTool, NoMatchWithoutSlashHintsGlobstar) {
  tree.write("src/a.cpp", "x");
  auto result = run({{"pattern", "*.cpp"}});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ((*result)["count"], 0);
  EXPECT_NE((*result)["hint"].get<std::string>().find("**/*.cpp"), std::string::npos);
}

TEST_F(tool_search_GlobTool, CapAndTruncated) {
  for (int i = 0; i < 1005; ++i)
    tree.write("f/" + std::to_string(i) + ".txt", "x");
  auto result = run({{"pattern", "f/*.txt"}});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ((*result)["matches"].size(), 1000u);
  EXPECT_EQ((*result)["count"], 1005);
  EXPECT_EQ((*result)["truncated"], true);
  EXPECT_TRUE((*result).contains("hint"));
}

TEST_F(tool_search_GlobTool, GitignoreHonoured) {
  tree.write(".gitignore", "*.log\nbuild/\n");
  tree.write("a.log", "x");
  tree.write("build/b.txt", "x");
  tree.write("c.txt", "x");
  auto result = run({{"pattern", "**"}});
  ASSERT_TRUE(result.ok());
  std::vector<std::string> got = (*result)["matches"].get<std::vector<std::string>>();
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{".gitignore", "c.txt"}));
}

TEST_F(tool_search_GlobTool, BinarySkippedUnlessIncluded) {
  tree.write("text.dat", "hello");
  tree.write("blob.dat", std::string("ab\0cd", 5));
  auto skipped = run({{"pattern", "*.dat"}});
  ASSERT_TRUE(skipped.ok());
  EXPECT_EQ((*skipped)["matches"], Json{"text.dat"});
  EXPECT_EQ((*skipped)["skipped_binary"], 1);
  EXPECT_NE((*skipped)["hint"].get<std::string>().find("include_binary"), std::string::npos);
  auto included = run({{"pattern", "*.dat"}, {"include_binary", true}});
  ASSERT_TRUE(included.ok());
  EXPECT_EQ((*included)["matches"].size(), 2u);
}

TEST_F(tool_search_GlobTool, SymlinksNotFollowedOutOfTheTree) {
  test::TempTree outside;
  outside.write("secret.txt", "s");
  tree.symlink(outside.root(), "out");
  tree.symlink(outside.path("secret.txt"), "secret.txt");
  tree.write("in.txt", "i");
  auto result = run({{"pattern", "**/*.txt"}});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ((*result)["matches"], Json{"in.txt"});
  EXPECT_EQ((*result)["skipped_symlinks"], 2);
}

TEST_F(tool_search_GlobTool, PathEscapes) {
  tree.symlink("/", "root-link");
  for (const char* path : {"..", "/etc", "root-link", "a/../../x"}) {
    auto result = run({{"pattern", "*"}, {"path", path}});
    ASSERT_FALSE(result.ok()) << path;
    EXPECT_EQ(result.error().code, errc::path_outside_worktree) << path;
  }
}

TEST_F(tool_search_GlobTool, BadArguments) {
  for (const Json& args :
       {Json::object(), Json{{"pattern", 3}}, Json{{"pattern", "*"}, {"nope", 1}},
        Json{{"pattern", "*"}, {"path", false}}, Json{{"pattern", "*"}, {"include_binary", "yes"}},
        Json{{"pattern", "{a,b"}}, Json::array()}) {
    auto result = run(args);
    ASSERT_FALSE(result.ok()) << args.dump();
    EXPECT_EQ(result.error().code, errc::invalid_arguments) << args.dump();
    EXPECT_FALSE(result.error().hint.empty()) << args.dump();
  }
  auto missing = run({{"pattern", "*"}, {"path", "missing-dir"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, errc::not_found);
}

}  // namespace
}  // namespace loopr::tool
