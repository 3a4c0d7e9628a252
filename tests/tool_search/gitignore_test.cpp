#include "loopr-tool/gitignore.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>

#include "common/unique_fd.hpp"
#include "tests/support/temp_tree.hpp"

namespace loopr::tool {
namespace {

struct Case {
  const char* rules;
  const char* path;
  bool is_dir;
  IgnoreVerdict expected;
};

TEST(tool_search_GitignoreFile, SemanticsTable) {
  const Case cases[] = {
      {"*.o\n", "a.o", false, IgnoreVerdict::ignore},
      {"*.o\n", "deep/er/a.o", false, IgnoreVerdict::ignore},  // basename rule: any depth
      {"*.o\n", "a.c", false, IgnoreVerdict::none},
      {"*.o\n!keep.o\n", "keep.o", false, IgnoreVerdict::include},  // negation
      {"!keep.o\n*.o\n", "keep.o", false, IgnoreVerdict::ignore},   // last rule wins
      {"build/\n", "build", true, IgnoreVerdict::ignore},           // directory only
      {"build/\n", "build", false, IgnoreVerdict::none},
      {"build/\n", "src/build", true, IgnoreVerdict::ignore},
      {"/build\n", "build", true, IgnoreVerdict::ignore},  // anchored
      {"/build\n", "src/build", true, IgnoreVerdict::none},
      {"doc/out\n", "doc/out", false, IgnoreVerdict::ignore},  // a middle slash anchors
      {"doc/out\n", "x/doc/out", false, IgnoreVerdict::none},
      {"**/gen\n", "a/b/gen", true, IgnoreVerdict::ignore},
      {"a/**/z\n", "a/b/c/z", false, IgnoreVerdict::ignore},
      {"logs/**\n", "logs/x/y.log", false, IgnoreVerdict::ignore},
      {"# comment\n", "# comment", false, IgnoreVerdict::none},
      {"\\#hash\n", "#hash", false, IgnoreVerdict::ignore},
      {"\\!bang\n", "!bang", false, IgnoreVerdict::ignore},
      {"trail   \n", "trail", false, IgnoreVerdict::ignore},  // trailing spaces dropped
      {"sp\\ \n", "sp ", false, IgnoreVerdict::ignore},       // escaped one kept
      {"crlf\r\n", "crlf", false, IgnoreVerdict::ignore},
      {"\n\n   \n", "x", false, IgnoreVerdict::none},
      {"{a,b}\n", "{a,b}", false, IgnoreVerdict::ignore},  // no alternation in gitignore
  };
  for (const Case& c : cases) {
    const GitignoreFile file = GitignoreFile::parse(c.rules);
    EXPECT_EQ(file.match(c.path, c.is_dir), c.expected)
        << "rules " << testing::PrintToString(std::string(c.rules)) << " path " << c.path;
  }
}

TEST(tool_search_IgnoreScope, NestedFilesAndExclude) {
  test::TempTree tree;
  tree.write(".gitignore", "*.log\n/top-only\n");
  tree.write("sub/.gitignore", "!keep.log\nlocal\n");
  tree.write(".git/info/exclude", "excluded\n");
  UniqueFd root(::open(tree.root().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(root);
  auto scope = IgnoreScope::for_root(root.get());
  UniqueFd sub(::openat(root.get(), "sub", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto sub_scope = IgnoreScope::child(scope, "sub", read_gitignore(sub.get(), ".gitignore"));

  EXPECT_TRUE(scope->ignored("a.log", false));
  EXPECT_TRUE(scope->ignored("top-only", false));
  EXPECT_TRUE(scope->ignored("excluded", false));
  EXPECT_TRUE(sub_scope->ignored("sub/a.log", false));
  EXPECT_FALSE(sub_scope->ignored("sub/keep.log", false));  // deeper file wins
  EXPECT_TRUE(sub_scope->ignored("sub/local", false));
  EXPECT_FALSE(scope->ignored("local", false));             // sub's rule stays in sub
  EXPECT_FALSE(sub_scope->ignored("sub/top-only", false));  // anchored to the root
}

TEST(tool_search_ReadGitignore, SymlinkedFileIsNotRead) {
  test::TempTree tree;
  tree.write("real", "*.x\n");
  tree.symlink("real", ".gitignore");
  UniqueFd root(::open(tree.root().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  EXPECT_TRUE(read_gitignore(root.get(), ".gitignore").empty());
  EXPECT_EQ(read_gitignore(root.get(), "real").size(), 1u);
  EXPECT_TRUE(read_gitignore(root.get(), "missing").empty());
}

}  // namespace
}  // namespace loopr::tool
