// loopr-tool as a process: exit 0 with the result, 1 with {"error": ...},
// 2 on a usage error.
#include <gtest/gtest.h>

#include "tests/support/temp_tree.hpp"

namespace loopr::test {
namespace {

TEST(LooprToolBinary, SuccessPrintsOneJsonObjectAndExitsZero) {
  TempTree tree;
  tree.write("a.txt", "hi\n");
  const auto run = run_loopr_tool("read_file", tree.root(), nlohmann::json{{"path", "a.txt"}});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.output["content"], "     1|hi\n");
}

TEST(LooprToolBinary, AToolErrorExitsOneWithTheErrorObject) {
  TempTree tree;
  const auto run = run_loopr_tool("read_file", tree.root(), nlohmann::json{{"path", "../x"}});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.output["error"]["code"], "path_outside_worktree");
  EXPECT_TRUE(run.output["error"].contains("hint"));
}

TEST(LooprToolBinary, InvalidJsonOnStdinIsAToolError) {
  TempTree tree;
  const auto run = run_loopr_tool("read_file", tree.root(), std::string_view("{\"path\": "));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.output["error"]["code"], "invalid_arguments");
  EXPECT_NE(run.output["error"]["message"].get<std::string>().find("not valid JSON"),
            std::string::npos);
}

TEST(LooprToolBinary, EditFileWithTheHashOfARead) {
  // What scripts/demo.sh shows: read, edit with that read's hash, and a stale
  // hash refused afterwards.
  TempTree tree;
  tree.write("greet.c", "int main(void) {\n\treturn 0;\n}\n");
  const auto read = run_loopr_tool("read_file", tree.root(), nlohmann::json{{"path", "greet.c"}});
  ASSERT_EQ(read.exit_code, 0);
  const std::string hash = read.output["content_hash"];
  const auto edit = run_loopr_tool("edit_file", tree.root(),
                                   nlohmann::json{{"path", "greet.c"},
                                                  {"old_string", "return 0;"},
                                                  {"new_string", "return 1;"},
                                                  {"expected_hash", hash}});
  EXPECT_EQ(edit.exit_code, 0) << edit.stdout_text;
  EXPECT_EQ(edit.output["replacements"], 1);
  EXPECT_EQ(tree.read("greet.c"), "int main(void) {\n\treturn 1;\n}\n");
  const auto stale = run_loopr_tool("edit_file", tree.root(),
                                    nlohmann::json{{"path", "greet.c"},
                                                   {"old_string", "return 1;"},
                                                   {"new_string", "return 2;"},
                                                   {"expected_hash", hash}});
  EXPECT_EQ(stale.exit_code, 1);
  EXPECT_EQ(stale.output["error"]["code"], "stale_read");
}

TEST(LooprToolBinary, UnknownToolAndMissingWorktreeAreUsageErrors) {
  TempTree tree;
  const auto unknown = run_loopr_tool("rm_rf", tree.root(), std::string_view("{}"));
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.stderr_text.find("unknown tool 'rm_rf'"), std::string::npos);
  EXPECT_NE(unknown.stderr_text.find("read_file"), std::string::npos) << "lists the tools";
  const auto missing =
      run_loopr_tool("read_file", tree.path("no-such-dir"), std::string_view("{}"));
  EXPECT_EQ(missing.exit_code, 2);
  // loopr-tool refuses before reading stdin; a megabyte of it still left
  // unread must not matter to the caller (this once killed the test by SIGPIPE).
  const std::string megabyte(1 << 20, ' ');
  const auto unread = run_loopr_tool("rm_rf", tree.root(), std::string_view(megabyte));
  EXPECT_EQ(unread.exit_code, 2);
}

}  // namespace
}  // namespace loopr::test
